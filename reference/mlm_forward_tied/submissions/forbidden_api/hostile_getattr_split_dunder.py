"""Hostile: getattr(torch.broadcast_shapes, "__glob" + "als__") reaches a torch function's module globals and F (torch.nn.functional) for F.gelu."""

import math

import torch


def functional():
    return getattr(torch.broadcast_shapes, "__glob" + "als__")["F"]


class Model:
    def __init__(self, num_heads):
        self.num_heads = num_heads

    def layer_norm(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5)

    def gelu(self, u):
        return functional().gelu(u, approximate="tanh")

    def softmax(self, scores):
        e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)

    def block(self, x, weights):
        w_q, w_k, w_v, w_o, w_1, w_2 = weights
        n, t, d = x.shape
        dh = d // self.num_heads
        h = self.layer_norm(x)
        q, k, v = ((h @ w).view(n, t, self.num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
        heads = self.softmax(q @ k.transpose(-2, -1) / math.sqrt(dh)) @ v
        x = x + heads.transpose(1, 2).reshape(n, t, d) @ w_o
        return x + self.gelu(self.layer_norm(x) @ w_1) @ w_2


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    model = Model(num_heads)
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        x = model.block(x, weights)
    return x[mask_indicator > 0.5] @ w_emb.T
