"""Every contraction written with torch.einsum; heads split with unflatten."""

import math

import torch


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed[None, :, :]
    c = math.sqrt(2.0 / math.pi)
    for wq, wk, wv, wo, w1, w2 in blocks_weights.unbind(0):
        mu = x.mean(-1, keepdim=True)
        h = (x - mu) * torch.rsqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
        q = torch.einsum("ntd,de->nte", h, wq).unflatten(-1, (num_heads, -1))
        k = torch.einsum("ntd,de->nte", h, wk).unflatten(-1, (num_heads, -1))
        v = torch.einsum("ntd,de->nte", h, wv).unflatten(-1, (num_heads, -1))
        s = torch.einsum("nqhc,nkhc->nhqk", q, k) / math.sqrt(q.shape[-1])
        s = torch.exp(s - s.max(dim=-1, keepdim=True).values)
        p = s / s.sum(-1, keepdim=True)
        o = torch.einsum("nhqk,nkhc->nqhc", p, v).flatten(-2)
        x = x + torch.einsum("nte,ed->ntd", o, wo)
        mu = x.mean(-1, keepdim=True)
        h = (x - mu) * torch.rsqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
        u = torch.einsum("ntd,de->nte", h, w1)
        g = 0.5 * u * (1.0 + torch.tanh(c * (u + 0.044715 * u**3)))
        x = x + torch.einsum("nte,ed->ntd", g, w2)
    rows = x[mask_indicator > 0.5]
    return torch.einsum("md,vd->mv", rows, w_emb)
