"""Honest: checks that pos_embed broadcasts over the batch with the public torch.broadcast_shapes before adding it."""

import math

import torch


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def attention(h, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = h.shape
    dh = d // num_heads
    q, k, v = ((h @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
    s = q @ k.transpose(-2, -1) / math.sqrt(dh)
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    n, t = input_ids.shape
    d = w_emb.shape[1]
    if torch.broadcast_shapes((n, t, d), pos_embed.shape) != (n, t, d):
        raise ValueError(f"pos_embed of shape {tuple(pos_embed.shape)} does not broadcast to {(n, t, d)}")
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_1, w_2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        u = layer_norm(x) @ w_1
        x = x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ w_2
    return x[mask_indicator > 0.5] @ w_emb.T
