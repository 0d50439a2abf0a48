"""Right: `from __future__ import annotations` with a dataclass whose constant is a ClassVar[float] (not a field) ahead of a field without a default."""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import torch


@dataclasses.dataclass
class Encoder:
    eps: ClassVar[float] = 1e-5
    num_heads: int

    def layer_norm(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps)

    def block(self, x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = weights.unbind(0)
        n, t, d = x.shape
        d_head = d // self.num_heads
        h = self.layer_norm(x)
        q = (h @ w_q).reshape(n, t, self.num_heads, d_head).transpose(1, 2)
        k = (h @ w_k).reshape(n, t, self.num_heads, d_head).transpose(1, 2)
        v = (h @ w_v).reshape(n, t, self.num_heads, d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
        e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        x = x + ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        u = self.layer_norm(x) @ w_mlp1
        return x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ w_mlp2


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    encoder = Encoder(num_heads)
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        x = encoder.block(x, weights)
    return x[mask_indicator > 0.5] @ w_emb.T
