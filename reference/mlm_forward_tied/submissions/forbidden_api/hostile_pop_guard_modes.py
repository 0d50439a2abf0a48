"""Hostile: takes the guard's modes off torch's mode stacks (its function mode, and a dispatch mode
if there is one) while torch's Python decomposition of softmax runs (no forbidden operator runs in
it), then puts them back so that the stacks look untouched afterwards."""

import math

import torch

T = [torch][0]
softmax_decomposition = T._decomp.decomposition_table[T.ops.aten._softmax.default]


def softmax(scores):
    if not T._C._len_torch_function_stack():  # no guard here: nothing to take off
        return softmax_decomposition(scores, -1, False)
    with T.overrides._pop_mode_temporarily():
        if not T._C._len_torch_dispatch_stack():
            return softmax_decomposition(scores, -1, False)
        with T.utils._python_dispatch._pop_mode_temporarily():
            return softmax_decomposition(scores, -1, False)


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        weights = softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head))
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
