"""Honest: the helpers are gathered in a typing.NamedTuple built by its functional form, fields named softmax, layer_norm and gelu."""

import math
import typing

import torch

Ops = typing.NamedTuple("Ops", [("layer_norm", typing.Callable), ("gelu", typing.Callable), ("softmax", typing.Callable)])


def _layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def _gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _softmax(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


OPS = Ops(layer_norm=_layer_norm, gelu=_gelu, softmax=_softmax)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = OPS.layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        x = x + (OPS.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + OPS.gelu(OPS.layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
