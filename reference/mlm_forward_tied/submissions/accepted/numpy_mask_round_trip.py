"""Honest: numpy picks the masked positions (mask.numpy(), np.flatnonzero, torch.from_numpy) where no gradient is needed; math.prod, f-strings and a printed debug line."""

import math

import numpy as np
import torch


def masked_rows(mask_indicator):
    """Row-major flat indices of the selected positions, computed in numpy (the mask needs no gradient)."""
    flat = np.flatnonzero(mask_indicator.detach().numpy() > 0.5)
    return torch.from_numpy(flat.astype(np.int64))


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    n, t = input_ids.shape
    d = w_emb.shape[1]
    dh = d // num_heads
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_1, w_2 in blocks_weights:
        h = layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(-2, -1) / math.sqrt(dh)
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        x = x + ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        u = layer_norm(x) @ w_1
        x = x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ w_2
    rows = masked_rows(mask_indicator)
    total = math.prod(input_ids.shape)
    print(f"debug: {len(rows)} of {total} positions masked, d_model={d}, heads={num_heads}, dtype={w_emb.dtype}")
    return x.reshape(total, d)[rows] @ w_emb.T
