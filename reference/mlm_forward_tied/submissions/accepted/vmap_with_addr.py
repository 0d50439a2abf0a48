"""Honest: torch.vmap over the sequences of a per-sequence helper that centres the rows for the layer norm with torch.addr (x - mean as a rank-one update)."""

import math

import torch


def centre_one_sequence(x, mean):
    """x (T, D), mean (T,): x - mean[:, None] as a rank-one update."""
    return torch.addr(x, mean, torch.ones_like(x[0]), alpha=-1)


centre = torch.vmap(centre_one_sequence)


def layer_norm(x):
    centred = centre(x, x.mean(dim=-1))
    var = (centred * centred).mean(dim=-1, keepdim=True)
    return centred / torch.sqrt(var + 1e-5)


def attention(h, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = h.shape
    dh = d // num_heads
    q, k, v = ((h @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
    s = q @ k.transpose(-2, -1) / math.sqrt(dh)
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_1, w_2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        u = layer_norm(x) @ w_1
        x = x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ w_2
    return x[mask_indicator > 0.5] @ w_emb.T
