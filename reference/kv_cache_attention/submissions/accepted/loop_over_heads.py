"""Correct: one head at a time, by column slices, concatenated head-major at the end."""

import math

import torch


def attention_decode_step(x, w_qkv, w_o, k_cache, v_cache, num_heads):
    b, dm = x.shape
    d = dm // num_heads
    qkv = x @ w_qkv
    new_k, new_v, outs = [], [], []
    for h in range(num_heads):
        q = qkv[:, h * d : (h + 1) * d]
        k = qkv[:, dm + h * d : dm + (h + 1) * d]
        v = qkv[:, 2 * dm + h * d : 2 * dm + (h + 1) * d]
        keys = torch.cat([k_cache[:, h], k[:, None, :]], dim=1)  # (b, T + 1, d)
        values = torch.cat([v_cache[:, h], v[:, None, :]], dim=1)
        s = (keys * q[:, None, :]).sum(-1) / math.sqrt(d)  # (b, T + 1)
        w = torch.exp(s - s.amax(-1, keepdim=True))
        w = w / w.sum(-1, keepdim=True)
        outs.append((w[:, :, None] * values).sum(1))
        new_k.append(keys)
        new_v.append(values)
    return torch.cat(outs, dim=-1) @ w_o, torch.stack(new_k, dim=1), torch.stack(new_v, dim=1)
