"""Hostile: functools.cached_property writes the value its function returns into the instance's
own __dict__ under its `attrname`, with no check; a subclass of the file's makes the property the
file's own, so `attrname` may be written: "__array_interface__". numpy then reads an address of the
file's choosing from the instance. Accepted with every wall on, until every class of the file's
answered numpy's and torch's raw-memory names from its classes alone (an instance's own __dict__
holding one is refused when read)."""

import functools
import math

import numpy
import torch


class CP(functools.cached_property):
    pass


def make(self):
    return {"data": (id(numpy), False), "shape": (16,), "typestr": "|u1", "version": 3}


cp = CP(make)


class Holder:
    data = cp


cp.attrname = "__array_interface__"
h = Holder()
h.data
print("raw memory at id(numpy):", bytes(numpy.asarray(h)))


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
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T
