"""Honest: heads split with torch.chunk and x.unflatten, scores and mixing with torch.einsum, heads joined with torch.cat."""

import math

import torch


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = torch.einsum("ntd,ntd->nt", x - mean, x - mean).unsqueeze(-1) / x.shape[-1]
    return (x - mean) / torch.sqrt(var + 1e-5)


def attention(h, w_q, w_k, w_v, w_o, num_heads):
    d = h.shape[-1]
    qkv = torch.einsum("ntd,de->nte", h, torch.cat([w_q, w_k, w_v], dim=1))
    q, k, v = (y.unflatten(-1, (num_heads, d // num_heads)) for y in torch.chunk(qkv, 3, dim=-1))
    s = torch.einsum("nqhe,nkhe->nhqk", q, k) / math.sqrt(d // num_heads)
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    p = e / e.sum(dim=-1, keepdim=True)
    heads = torch.einsum("nhqk,nkhe->nqhe", p, v)
    return torch.cat(heads.unbind(2), dim=-1) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for block in blocks_weights:
        w_q, w_k, w_v, w_o, w_1, w_2 = torch.chunk(block, 6, dim=0)
        w_q, w_k, w_v, w_o, w_1, w_2 = (w.squeeze(0) for w in (w_q, w_k, w_v, w_o, w_1, w_2))
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        u = torch.einsum("ntd,de->nte", layer_norm(x), w_1)
        x = x + torch.einsum("nte,ed->ntd", 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))), w_2)
    return torch.einsum("md,vd->mv", x[mask_indicator > 0.5], w_emb)
