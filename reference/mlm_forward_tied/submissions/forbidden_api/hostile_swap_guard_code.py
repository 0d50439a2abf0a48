"""Hostile: gives the guard's checks the code of a function that does nothing (the guard's module is
found in sys.modules, reached through typing), then uses the built-in softmax."""

import math
import typing

import torch


def nothing(*args, **kwargs):
    return None


for name, module in list(typing.sys.modules.items()):
    if name.endswith("guard") and hasattr(module, "Guard"):
        for method in ("check_function", "check_types", "check_arguments", "refuse", "record"):
            try:
                getattr(module.Guard, method).__code__ = nothing.__code__
            except Exception:
                pass


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
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
