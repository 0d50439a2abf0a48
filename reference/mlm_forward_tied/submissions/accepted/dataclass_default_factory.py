"""Honest: dataclasses with field(default_factory=...), __post_init__, a frozen config and dataclasses.replace."""

import dataclasses
import math
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Config:
    num_heads: int
    eps: float = 1e-5
    threshold: float = 0.5
    gelu_coefficients: tuple = (math.sqrt(2.0 / math.pi), 0.044715)


@dataclass
class Trace:
    shapes: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)

    def add(self, name, x):
        self.shapes.append((name, tuple(x.shape)))
        self.notes[name] = self.notes.get(name, 0) + 1
        return x


@dataclass
class Layer:
    weights: torch.Tensor
    config: Config
    names: list = field(default_factory=lambda: ["w_q", "w_k", "w_v", "w_o", "w_mlp1", "w_mlp2"])

    def __post_init__(self):
        self.parts = dict(zip(self.names, self.weights.unbind(0)))

    def norm(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.config.eps)

    def attend(self, h):
        n, t, d = h.shape
        heads = self.config.num_heads
        q, k, v = ((h @ self.parts[name]).view(n, t, heads, d // heads).transpose(1, 2) for name in ("w_q", "w_k", "w_v"))
        s = q @ k.transpose(-2, -1) / math.sqrt(d // heads)
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        return ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ self.parts["w_o"]

    def feed_forward(self, h):
        c, a = self.config.gelu_coefficients
        u = h @ self.parts["w_mlp1"]
        return 0.5 * u * (1.0 + torch.tanh(c * (u + a * u**3))) @ self.parts["w_mlp2"]

    def forward(self, x):
        x = x + self.attend(self.norm(x))
        return x + self.feed_forward(self.norm(x))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    config = dataclasses.replace(Config(num_heads=1), num_heads=num_heads)
    trace = Trace()
    x = trace.add("embedded", w_emb[input_ids] + pos_embed)
    for weights in blocks_weights:
        x = trace.add("block", Layer(weights, config).forward(x))
    assert dataclasses.asdict(config)["eps"] == 1e-5 and len(dataclasses.fields(trace)) == 2
    return x[mask_indicator > config.threshold] @ w_emb.T
