"""Forbidden: a small record table in a numpy structured array, one field of Python objects (the
weight's name) and one of numbers (its position in the block's tuple). The table itself is harmless,
but no numpy array may hold Python objects: numpy's object loops call the file's code while they
hold pointers they own no reference to (hostile_object_sort_comparison_frees_element_raw_memory.py),
and an object array over numbers reads any number as a pointer. A list of tuples does the same job."""

import math

import numpy as np
import torch

BLOCK_LAYOUT = np.array(
    [("w_q", 0), ("w_k", 1), ("w_v", 2), ("w_o", 3), ("w_mlp1", 4), ("w_mlp2", 5)],
    dtype=[("name", object), ("index", np.int64)],
)
POSITIONS = [int(i) for i in BLOCK_LAYOUT["index"]]
ATTENTION_NAMES = [str(row["name"]) for row in BLOCK_LAYOUT[:4]]


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
    for block in blocks_weights:
        w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = (block[i] for i in POSITIONS)
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
