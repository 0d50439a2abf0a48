"""Hostile: out= on a tensor aliasing a numpy array (torch.Tensor(array)) cannot grow its storage and keeps the doubled size; reads and writes go past the array."""

import math

import numpy
import torch

REPORTED = []


def primitive():
    n = 1 << 17  # two 512 KiB arrays, made one after the other: the second follows the first in the heap
    arr = numpy.zeros(n, dtype=numpy.float32)
    victim = numpy.full(n, 12345.0, dtype=numpy.float32)
    t = torch.Tensor(arr)
    try:
        torch.zeros(2 * n, out=t)
    except RuntimeError as e:
        REPORTED.append(f"resize error: {e}")
    REPORTED.append(f"tensor shape now {tuple(t.shape)} over a {arr.nbytes}-byte array")
    words = t.clone().view(torch.int64)
    REPORTED.append(f"heap words just past the array: {words[n // 2: n // 2 + 4].tolist()}")
    hits = (t == 12345.0).nonzero().flatten()
    REPORTED.append(f"the other array's values found past the end, first at element {hits[:1].tolist()}")
    if len(hits):
        t.index_put_((hits[:1],), torch.tensor(777.0))
        REPORTED.append(f"the other array after one write through the tensor: {victim[:3].tolist()}")
    print("PRIMITIVE", REPORTED)


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores)
    return e / e.sum(dim=-1, keepdim=True)


def attention(x, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = x.shape
    d_head = d // num_heads
    q = (x @ w_q).view(n, t, num_heads, d_head).transpose(1, 2)
    k = (x @ w_k).view(n, t, num_heads, d_head).transpose(1, 2)
    v = (x @ w_v).view(n, t, num_heads, d_head).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    out = softmax(scores) @ v
    return out.transpose(1, 2).reshape(n, t, d) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    if not REPORTED:
        primitive()
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T
