"""A more structured style: type hints, a dataclass for the block weights, functools.reduce."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
from torch import Tensor

EPS = 1e-5
GELU_C = math.sqrt(2.0 / math.pi)


@dataclass(frozen=True)
class Block:
    q: Tensor
    k: Tensor
    v: Tensor
    o: Tensor
    up: Tensor
    down: Tensor


def layer_norm(x: Tensor) -> Tensor:
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt((centred * centred).mean(-1, keepdim=True) + EPS)


def gelu(x: Tensor) -> Tensor:
    return 0.5 * x * (1.0 + torch.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    z = torch.exp(x - torch.amax(x, dim=dim, keepdim=True))
    return z / torch.sum(z, dim=dim, keepdim=True)


def apply_block(x: Tensor, block: Block, heads: int) -> Tensor:
    n, t, d = x.shape
    hd = d // heads
    h = layer_norm(x)

    def heads_of(w: Tensor) -> Tensor:
        return (h @ w).reshape(n, t, heads, hd).transpose(1, 2)

    q, k, v = heads_of(block.q), heads_of(block.k), heads_of(block.v)
    att = softmax(q @ k.transpose(2, 3) / math.sqrt(hd))
    x = x + (att @ v).transpose(1, 2).reshape(n, t, d) @ block.o
    return x + gelu(layer_norm(x) @ block.up) @ block.down


def mlm_forward_tied(
    input_ids: Tensor,
    w_emb: Tensor,
    pos_embed: Tensor,
    blocks_weights: Tensor,
    mask_indicator: Tensor,
    num_heads: int,
) -> Tensor:
    blocks = [Block(*w.unbind(0)) for w in blocks_weights]
    x = functools.reduce(lambda acc, b: apply_block(acc, b, num_heads), blocks, w_emb[input_ids] + pos_embed)
    return x[mask_indicator > 0.5] @ w_emb.T
