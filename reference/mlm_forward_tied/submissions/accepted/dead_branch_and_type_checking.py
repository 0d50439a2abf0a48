"""Honest: a typing.TYPE_CHECKING import block and a debugging branch that never runs, calling an attribute that does not exist."""

from __future__ import annotations

import math
import typing

import torch

if typing.TYPE_CHECKING:
    from collections.abc import Sequence

    from torch import Tensor

DEBUG = False


def layer_norm(x: Tensor) -> Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def softmax(s: Tensor) -> Tensor:
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    if DEBUG:
        e.check_rows_sum_to_one_please()  # a note to self; never runs
    return e / e.sum(dim=-1, keepdim=True)


def gelu(u: Tensor) -> Tensor:
    return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))


def block(x: Tensor, weights: Sequence[Tensor], num_heads: int) -> Tensor:
    w_q, w_k, w_v, w_o, w_1, w_2 = weights
    n, t, d = x.shape
    dh = d // num_heads
    h = layer_norm(x)
    q, k, v = ((h @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
    x = x + (softmax(q @ k.transpose(-2, -1) / math.sqrt(dh)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o
    if False:
        x.not_a_real_attribute()
    return x + gelu(layer_norm(x) @ w_1) @ w_2


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        x = block(x, weights, num_heads)
    return x[mask_indicator > 0.5] @ w_emb.T
