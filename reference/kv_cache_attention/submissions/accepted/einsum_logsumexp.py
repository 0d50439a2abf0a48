"""Correct: einsum for the scores and the weighted sum, the softmax as exp(s - logsumexp(s))."""

import torch


def attention_decode_step(x, w_qkv, w_o, k_cache, v_cache, num_heads):
    b, dm = x.shape
    d = dm // num_heads
    q, k, v = (x @ w_qkv).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, num_heads, d) for t in (q, k, v))
    keys = torch.cat([k_cache, k.unsqueeze(2)], dim=2)
    values = torch.cat([v_cache, v.unsqueeze(2)], dim=2)
    s = torch.einsum("bhd,bhtd->bht", q, keys) * d**-0.5
    p = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
    out = torch.einsum("bht,bhtd->bhd", p, values).reshape(b, dm)
    return out @ w_o, keys, values
