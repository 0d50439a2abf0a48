"""Wrong: the heads taken interleaved (view as (B, d, H)), not head-major as (B, H, d)."""

import math

import torch


def attention_decode_step(x, w_qkv, w_o, k_cache, v_cache, num_heads):
    b, dm = x.shape
    d = dm // num_heads
    q, k, v = ((t.reshape(b, d, num_heads).transpose(1, 2)) for t in (x @ w_qkv).split(dm, dim=-1))
    keys = torch.cat([k_cache, k[:, :, None, :]], dim=2)
    values = torch.cat([v_cache, v[:, :, None, :]], dim=2)
    s = q[:, :, None, :] @ keys.transpose(-2, -1) / math.sqrt(d)
    p = (s - s.amax(-1, keepdim=True)).exp()
    p = p / p.sum(-1, keepdim=True)
    return (p @ values).reshape(b, dm) @ w_o, keys, values
