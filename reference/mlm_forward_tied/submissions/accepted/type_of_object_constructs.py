"""Honest: builds values through the type of an object, type(shape)(...) on a torch.Size and type(x) checks on tensors."""

import math

import torch


def split_heads(y, num_heads):
    shape = y.shape
    new_shape = type(shape)((shape[0], shape[1], num_heads, shape[2] // num_heads))
    return y.reshape(new_shape).transpose(1, 2)


def merge_heads(y):
    n, h, t, dh = y.shape
    return y.transpose(1, 2).reshape(type(y.shape)([n, t, h * dh]))


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    tensor_type = type(w_emb)
    if not isinstance(mask_indicator, tensor_type):
        raise TypeError("mask_indicator must be a tensor like w_emb")
    weights_per_block = type(())(blocks_weights)
    x = w_emb[input_ids] + pos_embed
    for block in weights_per_block:
        w_q, w_k, w_v, w_o, w_1, w_2 = type([])(block)
        h = layer_norm(x)
        q, k, v = split_heads(h @ w_q, num_heads), split_heads(h @ w_k, num_heads), split_heads(h @ w_v, num_heads)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        p = torch.exp(s - s.amax(dim=-1, keepdim=True))
        p = p / p.sum(dim=-1, keepdim=True)
        x = x + merge_heads(p @ v) @ w_o
        u = layer_norm(x) @ w_1
        x = x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u * u * u))) @ w_2
    return x[mask_indicator > 0.5] @ w_emb.T
