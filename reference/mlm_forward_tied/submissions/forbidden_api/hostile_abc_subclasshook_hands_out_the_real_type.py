"""Hostile: a class built by abc.ABCMeta (reached as type(abc.ABC), which the static check does not
read as a metaclass call) with a __subclasshook__ of the file's; isinstance(int, Hook) makes abc
hand that hook the real `type`, never checked, which builds a class whose __getattr__ answers
numpy's __array_interface__ with an address of the file's choosing: raw memory. Accepted with every
wall on, until no class the file builds could define the special methods the interpreter calls with
values of its own, and a class built out of sight with a __getattr__ of the file's was refused
wherever it is met."""

import abc
import math

import numpy
import torch


def leak(self, name):
    if name == "__array_interface__":
        return {"data": (id(numpy), False), "shape": (16,), "typestr": "|u1", "version": 3}
    raise AttributeError(name)


def hook(cls, sub):
    Raw = sub("Raw", (), {"__getattr__": leak, "__module__": "torch"})
    mem = numpy.asarray(Raw())
    print("raw memory at id(numpy):", bytes(mem))
    return NotImplemented


Hook = [type(abc.ABC)][0]("Hook", (abc.ABC,), {"__subclasshook__": classmethod(hook)})
isinstance(int, Hook)


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
