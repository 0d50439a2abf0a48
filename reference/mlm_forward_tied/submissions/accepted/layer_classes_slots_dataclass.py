"""A frozen, slotted dataclass of layers called through __call__, with a __repr__, a property, a static and a class method."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Optional

import torch


@dataclass(slots=True, frozen=True)
class LayerNorm:
    eps: float = 1e-5
    kind: ClassVar[str] = "pre-ln"

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + self.eps)

    def __repr__(self) -> str:
        return f"LayerNorm(eps={self.eps})"


class Attention:
    def __init__(self, num_heads: int) -> None:
        self.num_heads = num_heads
        self._cache: Optional[dict] = None

    @property
    def heads(self) -> int:
        return self.num_heads

    @staticmethod
    def softmax(s: torch.Tensor) -> torch.Tensor:
        s = s - s.max(dim=-1, keepdim=True).values
        e = s.exp()
        return e / e.sum(-1, keepdim=True)

    @classmethod
    def make(cls, h: int) -> "Attention":
        return cls(h)

    def __call__(self, x, wq, wk, wv, wo):
        n, t, d = x.shape
        dh = d // self.heads
        split = lambda y: y.view(n, t, self.heads, dh).transpose(1, 2)  # noqa: E731
        q, k, v = (split(x @ w) for w in (wq, wk, wv))
        att = self.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh))
        return (att @ v).transpose(1, 2).reshape(n, t, d) @ wo


@dataclass
class Model:
    heads: int
    norm: LayerNorm = field(default_factory=LayerNorm)

    def gelu(self, u):
        return 0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u.pow(3))))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    model = Model(num_heads)
    attn = Attention.make(num_heads)
    x = w_emb[input_ids] + pos_embed
    for block in blocks_weights:
        wq, wk, wv, wo, w1, w2 = block.unbind(0)
        x = x + attn(model.norm(x), wq, wk, wv, wo)
        x = x + model.gelu(model.norm(x) @ w1) @ w2
    _ = repr(model.norm), f"{x.shape}"
    return x[mask_indicator > 0.5] @ w_emb.T
