"""Hostile: torch's own Python references (torch._refs) build softmax, layer norm and GELU from
honest operators, so no forbidden operator runs."""

import math

import torch

refs = [torch][0]._refs


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = refs.nn.functional.layer_norm(x, (d,), eps=1e-5)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        weights = refs.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), -1)
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + refs.nn.functional.gelu(refs.nn.functional.layer_norm(x, (d,), eps=1e-5) @ w_mlp1, approximate="tanh") @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
