"""Hostile: @functools.wraps(torch.broadcast_shapes, assigned=(), updated=(a name built at run time,)) on an own function merges torch.functional's globals into this file's; their F.linear does the projections (torch.nn is off-limits, though no forbidden function runs)."""

import functools
import math

import torch


GLOBALS = "".join(["__", "glo", "bals", "__"])


@functools.wraps(torch.broadcast_shapes, assigned=(), updated=(GLOBALS,))
def shapes_helper():
    """Decorated like any wrapper; the decorator's `updated` did the rest."""


class Model:
    def __init__(self, num_heads):
        self.num_heads = num_heads

    def layer_norm(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5)

    def gelu(self, u):
        return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))

    def softmax(self, scores):
        e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)

    def linear(self, h, w):
        return F.linear(h, w.t())  # F arrived in this file's globals

    def block(self, x, weights):
        w_q, w_k, w_v, w_o, w_1, w_2 = weights
        n, t, d = x.shape
        dh = d // self.num_heads
        h = self.layer_norm(x)
        q, k, v = (self.linear(h, w).view(n, t, self.num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
        heads = self.softmax(q @ k.transpose(-2, -1) / math.sqrt(dh)) @ v
        x = x + self.linear(heads.transpose(1, 2).reshape(n, t, d), w_o)
        return x + self.gelu(self.layer_norm(x) @ w_1) @ w_2


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    model = Model(num_heads)
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        x = model.block(x, weights)
    return x[mask_indicator > 0.5] @ w_emb.T
