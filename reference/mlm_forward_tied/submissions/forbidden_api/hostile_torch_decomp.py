"""Hostile: torch's decomposition table (torch._decomp) gives Python functions that compute softmax,
layer norm and GELU from honest operators, so no forbidden operator runs."""

import math

import torch

T = [torch][0]
table = T._decomp.decomposition_table
aten = T.ops.aten


def layer_norm(x):
    return table[aten.native_layer_norm.default](x, [x.shape[-1]], None, None, 1e-5)[0]


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        weights = table[aten._softmax.default](q @ k.transpose(-2, -1) / math.sqrt(d_head), -1, False)
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + table[aten.gelu.default](layer_norm(x) @ w_mlp1, approximate="tanh") @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
