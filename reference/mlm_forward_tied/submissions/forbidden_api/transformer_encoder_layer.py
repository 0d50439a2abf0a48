"""Forbidden: nn.TransformerEncoderLayer does the whole block."""

import torch
from torch import nn


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    d = w_emb.shape[1]
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        layer = nn.TransformerEncoderLayer(d, num_heads, dim_feedforward=d, dropout=0.0, activation="gelu", batch_first=True, norm_first=True, bias=False, dtype=x.dtype)
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(torch.cat([weights[0].T, weights[1].T, weights[2].T]))
            layer.self_attn.out_proj.weight.copy_(weights[3].T)
            layer.linear1.weight.copy_(weights[4].T)
            layer.linear2.weight.copy_(weights[5].T)
        x = layer(x)
    return x[mask_indicator > 0.5] @ w_emb.T
