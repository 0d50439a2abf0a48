"""Hostile: a class pattern captures `mro` on the file's `type` (the unbound type.mro, a
pattern capture is checked only as a value: a method descriptor passes), and calling it on the
stand-in returns a list holding the real `type` (a list is not checked item by item). The list is
star-unpacked into functools.partial, so the real `type` never lands in a name of the file's; a
chain of map/operator.call builds a class with __array_interface__ (a plain dict) and an instance,
and numpy.asarray reads memory at an address of the file's choosing, all in C. Accepted with every
wall on, until a class pattern could no longer read mro (nor __mro__, __bases__) and a container was
checked with every item it holds, wherever a value is checked."""

import functools
import math
import operator

import numpy
import torch

match type:
    case object(mro=m):
        pass
classes = m(type)
namespace = {"__array_interface__": {"data": (id(numpy), False), "shape": (16,), "typestr": "|u1", "version": 3}}
make = functools.partial(*classes[1:2], "Raw", (), namespace)
arrays = list(map(numpy.asarray, map(operator.call, map(operator.call, [make]))))
print("raw memory at id(numpy):", bytes(arrays[0]))


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
