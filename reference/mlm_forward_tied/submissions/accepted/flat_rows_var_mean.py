"""Works on flattened (N*T, D) rows; var_mean for the norm; gathers with nonzero indices."""

import math

import torch


def _norm(rows):
    var, mean = torch.var_mean(rows, dim=-1, keepdim=True, correction=0)
    return (rows - mean) / (var + 1e-5).sqrt()


def _gelu(u):
    inner = math.sqrt(2 / math.pi) * (u + 0.044715 * torch.pow(u, 3))
    return u * 0.5 * (torch.tanh(inner) + 1)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    n, t = input_ids.shape
    d = w_emb.shape[1]
    dh = d // num_heads
    rows = (w_emb[input_ids] + pos_embed).reshape(n * t, d)
    for block in blocks_weights:
        h = _norm(rows)
        qkv = [(h @ block[i]).reshape(n, t, num_heads, dh).permute(0, 2, 1, 3) for i in range(3)]
        scores = torch.matmul(qkv[0], qkv[1].permute(0, 1, 3, 2)) * (1.0 / math.sqrt(dh))
        scores = scores - scores.max(dim=3, keepdim=True)[0]
        weights = scores.exp()
        weights = weights / weights.sum(dim=3, keepdim=True)
        mixed = torch.matmul(weights, qkv[2]).permute(0, 2, 1, 3).reshape(n * t, d)
        rows = rows + mixed @ block[3]
        rows = rows + _gelu(_norm(rows) @ block[4]) @ block[5]
    picked = torch.nonzero(mask_indicator.reshape(-1) > 0.5).reshape(-1)
    return rows[picked] @ w_emb.t()
