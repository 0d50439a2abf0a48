"""Honest: a small class hierarchy with super().__init__(), @property, @staticmethod, @classmethod alternative constructors and an abc.ABC with an abstractmethod."""

import abc
import math

import torch


class Sublayer(abc.ABC):
    def __init__(self, eps=1e-5):
        self.eps = eps

    @staticmethod
    def centre(x):
        return x - x.mean(dim=-1, keepdim=True)

    def normalise(self, x):
        c = self.centre(x)
        return c / torch.sqrt((c * c).mean(dim=-1, keepdim=True) + self.eps)

    @abc.abstractmethod
    def transform(self, h):
        """The sublayer's own computation on the normalised input."""

    def apply(self, x):
        return x + self.transform(self.normalise(x))


class Attention(Sublayer):
    def __init__(self, w_q, w_k, w_v, w_o, num_heads):
        super().__init__()
        self.w_q, self.w_k, self.w_v, self.w_o = w_q, w_k, w_v, w_o
        self.num_heads = num_heads

    @property
    def d_head(self):
        return self.w_q.shape[1] // self.num_heads

    @property
    def scale(self):
        return 1.0 / math.sqrt(self.d_head)

    def transform(self, h):
        n, t, d = h.shape
        q, k, v = ((h @ w).view(n, t, self.num_heads, self.d_head).transpose(1, 2) for w in (self.w_q, self.w_k, self.w_v))
        s = (q @ k.transpose(-2, -1)) * self.scale
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        return ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ self.w_o


class FeedForward(Sublayer):
    def __init__(self, w_1, w_2):
        super().__init__()
        self.w_1, self.w_2 = w_1, w_2

    @staticmethod
    def gelu(u):
        return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))

    def transform(self, h):
        return self.gelu(h @ self.w_1) @ self.w_2


class EncoderBlock:
    def __init__(self, attention, feed_forward):
        self.attention = attention
        self.feed_forward = feed_forward

    @classmethod
    def from_stacked(cls, weights, num_heads):
        w_q, w_k, w_v, w_o, w_1, w_2 = weights.unbind(0)
        return cls(Attention(w_q, w_k, w_v, w_o, num_heads), FeedForward(w_1, w_2))

    def apply(self, x):
        return self.feed_forward.apply(self.attention.apply(x))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        x = EncoderBlock.from_stacked(weights, num_heads).apply(x)
    return x[mask_indicator > 0.5] @ w_emb.T
