"""Hostile: a class built by type() with a `__dataclass_fields__` entry of its own (no
dataclasses.dataclass call, so no field-name check), on a tensor subclass; dataclasses.replace
then reads `getattr(obj, f.name)` for each "field" in its own code, unchecked, and hands the
values to the class's __new__, which returns them as a dict: a tensor's raw storage method.
Accepted with the static check off, until a class the file builds could not define
__dataclass_fields__."""

import dataclasses
import math

import torch

NAME = "untyped" + "_storage"


class Fld:
    _field_type = None
    init = True
    default = None

    def __init__(self, name):
        self.name = name


def grab(**kw):
    return kw


T = type("T", (torch.Tensor,), {"__data" + "class_fields__": {NAME: Fld(NAME)}, "__ne" + "w__": lambda cls, **kw: kw})
LEAK = []


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
    if not LEAK:
        got = dataclasses.replace(w_emb.detach().as_subclass(T))
        s = got[NAME]()
        LEAK.append(s)
        print("GOT STORAGE", type(s), s.nbytes())
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T
