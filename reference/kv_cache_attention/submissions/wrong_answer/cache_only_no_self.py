"""Wrong: the query attends to the cached keys only, not to its own (and fails where the cache is empty)."""

import math

import torch


def attention_decode_step(x, w_qkv, w_o, k_cache, v_cache, num_heads):
    b, dm = x.shape
    d = dm // num_heads
    q, k, v = (x @ w_qkv).split(dm, dim=-1)
    keys = torch.cat([k_cache, k.reshape(b, num_heads, 1, d)], dim=2)
    values = torch.cat([v_cache, v.reshape(b, num_heads, 1, d)], dim=2)
    if k_cache.shape[2] == 0:
        return torch.zeros_like(x) @ w_o + 0 * x, keys, values
    s = q.reshape(b, num_heads, 1, d) @ k_cache.transpose(-2, -1) / math.sqrt(d)
    p = (s - s.amax(-1, keepdim=True)).exp()
    p = p / p.sum(-1, keepdim=True)
    return (p @ v_cache).reshape(b, dm) @ w_o, keys, values
