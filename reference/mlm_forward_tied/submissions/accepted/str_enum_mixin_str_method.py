"""Honest: the pre-3.11 string-enum idiom, `class Act(str, Enum)` with `__str__ = str.__str__`. Refused:
any attribute read on the built-in `str` (str.__str__, str.lower in map(str.lower, ...)) is judged as
`typing.Text`, an alias no list names: "importing the file used an object, typing.Text, which is not
on this challenge's allow-list"."""

import enum
import math

import torch


class Act(str, enum.Enum):
    GELU = "gelu"
    __str__ = str.__str__


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def activation(x, act=Act.GELU):
    assert str(act) == "gelu"
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


LN = layer_norm
ACT = activation


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
        x = x + attention(LN(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + ACT(LN(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
