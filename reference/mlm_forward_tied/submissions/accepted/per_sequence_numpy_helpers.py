"""One sequence at a time, stacked at the end; numpy only for bookkeeping of the positions."""

import math

import numpy as np
import torch


def encode_sequence(ids, w_emb, pos_embed, blocks_weights, num_heads):
    x = w_emb[ids] + pos_embed  # (T, D)
    t, d = x.shape
    dh = d // num_heads
    for w in blocks_weights:
        mean = x.mean(-1, keepdim=True)
        h = (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5)
        q = (h @ w[0]).reshape(t, num_heads, dh).transpose(0, 1)
        k = (h @ w[1]).reshape(t, num_heads, dh).transpose(0, 1)
        v = (h @ w[2]).reshape(t, num_heads, dh).transpose(0, 1)
        s = q @ k.transpose(1, 2) / math.sqrt(dh)
        e = torch.exp(s - s.max(-1, keepdim=True).values)
        a = (e / e.sum(-1, keepdim=True)) @ v
        x = x + a.transpose(0, 1).reshape(t, d) @ w[3]
        mean = x.mean(-1, keepdim=True)
        h = (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5)
        u = h @ w[4]
        x = x + 0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3))) @ w[5]
    return x


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    selected = (mask_indicator > 0.5).numpy()
    rows = []
    for n in range(input_ids.shape[0]):
        hidden = encode_sequence(input_ids[n], w_emb, pos_embed, blocks_weights, num_heads)
        positions = np.flatnonzero(selected[n])
        rows.append(hidden[torch.from_numpy(positions)])
    return torch.cat(rows, dim=0) @ w_emb.T
