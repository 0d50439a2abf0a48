"""Hostile: reaches sys through typing, finds the runtime guard's module in sys.modules and
replaces its refusals with no-ops, then uses the built-in softmax, layer norm and GELU."""

import math
import typing

import torch

sys = typing.sys  # a pure-Python module's own import of sys


def disarm(what=None, *args, **kwargs):
    return None


for name, module in list(sys.modules.items()):
    if name.endswith("guard") and hasattr(module, "Guard"):
        module.Guard.refuse = disarm
        module.Guard.record = disarm
        module._refuse = disarm
        module._record = disarm


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = torch.layer_norm(x, (d,), eps=1e-5)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + torch._C._nn.gelu(torch.layer_norm(x, (d,), eps=1e-5) @ w_mlp1, approximate="tanh") @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
