"""Honest: collections.namedtuple built from a list of field names with defaults=, and its documented _make, _asdict, _fields and _replace."""

import collections
import math

import torch

BLOCK_FIELDS = ["w_q", "w_k", "w_v", "w_o", "w_mlp1", "w_mlp2"]
Block = collections.namedtuple("Block", BLOCK_FIELDS)
Settings = collections.namedtuple("Settings", ["num_heads", "eps", "threshold"], defaults=[1e-5, 0.5])


def layer_norm(x, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


def gelu(u):
    return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))


def softmax(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def attention(h, block, settings):
    n, t, d = h.shape
    d_head = d // settings.num_heads
    projected = {name: (h @ w).view(n, t, settings.num_heads, d_head).transpose(1, 2) for name, w in block._asdict().items() if name in ("w_q", "w_k", "w_v")}
    scores = projected["w_q"] @ projected["w_k"].transpose(-2, -1) / math.sqrt(d_head)
    heads = softmax(scores) @ projected["w_v"]
    return heads.transpose(1, 2).reshape(n, t, d) @ block.w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    settings = Settings(num_heads)
    assert Block._fields == tuple(BLOCK_FIELDS)
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        block = Block._make(weights.unbind(0))
        x = x + attention(layer_norm(x, settings.eps), block, settings)
        x = x + gelu(layer_norm(x, settings.eps) @ block.w_mlp1) @ block.w_mlp2
    settings = settings._replace(threshold=0.5)
    return x[mask_indicator > settings.threshold] @ w_emb.T
