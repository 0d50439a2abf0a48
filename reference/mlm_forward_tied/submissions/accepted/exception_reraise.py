"""Honest: validates its inputs, catches an exception to add context and re-raises it (raise ... from ...), with try/finally bookkeeping."""

import math

import torch


class ShapeError(ValueError):
    pass


CALLS = {"started": 0, "finished": 0}


def validate(input_ids, w_emb, pos_embed, blocks_weights, num_heads):
    try:
        n, t = input_ids.shape
        vocab, d = w_emb.shape
        if pos_embed.shape != (t, d) or blocks_weights.shape[1:] != (6, d, d):
            raise ShapeError(f"inconsistent shapes: pos_embed {tuple(pos_embed.shape)}, blocks {tuple(blocks_weights.shape)}")
        if d % num_heads:
            raise ShapeError(f"num_heads={num_heads} does not divide d_model={d}")
    except ValueError as error:
        raise ShapeError(f"bad arguments to mlm_forward_tied: {error}") from error
    return n, t, d


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def block(x, weights, n, t, d, num_heads):
    w_q, w_k, w_v, w_o, w_1, w_2 = weights
    dh = d // num_heads
    try:
        h = layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
    except RuntimeError:
        print("projection failed for shapes", tuple(x.shape), tuple(w_q.shape))
        raise
    s = q @ k.transpose(-2, -1) / math.sqrt(dh)
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    x = x + ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o
    u = layer_norm(x) @ w_1
    return x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ w_2


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    CALLS["started"] += 1
    try:
        n, t, d = validate(input_ids, w_emb, pos_embed, blocks_weights, num_heads)
        x = w_emb[input_ids] + pos_embed
        for weights in blocks_weights:
            x = block(x, weights, n, t, d, num_heads)
        return x[mask_indicator > 0.5] @ w_emb.T
    finally:
        CALLS["finished"] += 1
