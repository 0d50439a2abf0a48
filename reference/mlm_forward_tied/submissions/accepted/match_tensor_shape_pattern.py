"""Honest: structural pattern matching on the inputs, `case torch.Tensor(shape=(n, t)):` and friends."""

import math

import torch


def describe(input_ids, pos_embed):
    match input_ids:
        case torch.Tensor(shape=(n, t)):
            pass
        case _:
            raise ValueError("input_ids must be (N, T)")
    match pos_embed:
        case torch.Tensor(shape=(t_pos, d)) if t_pos == t:
            return n, t, d
        case _:
            raise ValueError("pos_embed must be (T, d_model)")


def norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    n, t, d = describe(input_ids, pos_embed)
    dh = d // num_heads
    x = w_emb[input_ids] + pos_embed
    for block in blocks_weights:
        match block.unbind(0):
            case (w_q, w_k, w_v, w_o, w_1, w_2):
                h = norm(x)
                q, k, v = ((h @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
                s = q @ k.transpose(-2, -1) / math.sqrt(dh)
                e = torch.exp(s - s.amax(dim=-1, keepdim=True))
                x = x + ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o
                u = norm(x) @ w_1
                x = x + (0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))) @ w_2
    return x[mask_indicator > 0.5] @ w_emb.T
