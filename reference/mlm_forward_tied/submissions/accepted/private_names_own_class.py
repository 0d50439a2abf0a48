"""Honest: a class that uses its own private names, self._dtype, self._check() and a name-mangled self.__cache."""

import math

import torch


class Encoder:
    def __init__(self, w_emb, pos_embed, num_heads):
        self._w_emb = w_emb
        self._pos = pos_embed
        self._dtype = w_emb.dtype
        self._heads = num_heads
        self.__cache = {}

    def _check(self, x):
        if x.dtype != self._dtype:
            raise TypeError(f"expected {self._dtype}, got {x.dtype}")
        return x

    def _constant(self, name, value):
        if name not in self.__cache:
            self.__cache[name] = value
        return self.__cache[name]

    def _norm(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self._constant("eps", 1e-5))

    def _gelu(self, u):
        c = self._constant("gelu", math.sqrt(2.0 / math.pi))
        return 0.5 * u * (1.0 + torch.tanh(c * (u + 0.044715 * u**3)))

    def _attend(self, h, w_q, w_k, w_v, w_o):
        n, t, d = h.shape
        dh = d // self._heads
        q, k, v = ((h @ w).reshape(n, t, self._heads, dh).permute(0, 2, 1, 3) for w in (w_q, w_k, w_v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
        scores = scores - scores.max(dim=-1, keepdim=True).values
        p = scores.exp()
        p = p / p.sum(dim=-1, keepdim=True)
        return (p @ v).permute(0, 2, 1, 3).reshape(n, t, d) @ w_o

    def run(self, input_ids, blocks_weights):
        x = self._check(self._w_emb[input_ids] + self._pos)
        for w_q, w_k, w_v, w_o, w_1, w_2 in blocks_weights:
            x = x + self._attend(self._norm(x), w_q, w_k, w_v, w_o)
            x = self._check(x + self._gelu(self._norm(x) @ w_1) @ w_2)
        return x


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    hidden = Encoder(w_emb, pos_embed, num_heads).run(input_ids, blocks_weights)
    return hidden[mask_indicator > 0.5] @ w_emb.T
