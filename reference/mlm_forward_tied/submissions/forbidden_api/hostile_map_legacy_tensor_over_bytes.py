"""Hostile: numpy.ndarray((2,), float32, buffer=some_bytes) made inside `map` and handed straight to
the legacy constructor torch.Tensor by an outer `map`, so the own-memory check (which refuses an
array over a bytes object where a call returns it to the file) never sees the array: the file gets
a writable float32 tensor over the memory of an immutable bytes object, and rewrites it with mul_.
The same route revives every array the own-memory rule refuses (over bytes, a bytearray that later
moves, a numpy scalar). The file proves the write, then answers honestly."""

import math

import numpy as np
import torch

constant = b"\x00\x00\x80?\x00\x00\x00@"  # float32 1.0 and 2.0, an immutable bytes object
alias = list(map(torch.Tensor, map(np.ndarray, [(2,)], [np.float32], [constant])))[0]
alias.mul_(2.0)
assert constant == b"\x00\x00\x00@\x00\x00\x80@", constant  # the immutable bytes changed
print("wrote into an immutable bytes object through a tensor")


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
