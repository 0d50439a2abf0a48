"""Honest: typing.NamedTuple class syntax with typed fields, a default and a method, plus typing.Optional and typing.Final annotations."""

import math
from typing import Final, NamedTuple, Optional

import torch

EPS: Final = 1e-5


class BlockWeights(NamedTuple):
    w_q: torch.Tensor
    w_k: torch.Tensor
    w_v: torch.Tensor
    w_o: torch.Tensor
    w_mlp1: torch.Tensor
    w_mlp2: torch.Tensor

    def qkv(self):
        return self.w_q, self.w_k, self.w_v


class Shape(NamedTuple):
    n: int
    t: int
    d: int
    heads: int = 1

    @property
    def d_head(self) -> int:
        return self.d // self.heads


def layer_norm(x: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


def attention(h: torch.Tensor, block: BlockWeights, shape: Shape, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    q, k, v = (h @ w for w in block.qkv())
    q, k, v = (y.view(shape.n, shape.t, shape.heads, shape.d_head).transpose(1, 2) for y in (q, k, v))
    s = q @ k.transpose(-2, -1) / math.sqrt(shape.d_head)
    if mask is not None:
        s = s + mask
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(shape.n, shape.t, shape.d) @ block.w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    shape = Shape(*input_ids.shape, w_emb.shape[1], heads=num_heads)
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        block = BlockWeights(*weights)
        x = x + attention(layer_norm(x), block, shape)
        u = layer_norm(x) @ block.w_mlp1
        x = x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ block.w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
