"""Honest: functools.reduce folds the blocks, functools.partial fixes arguments, functools.wraps keeps a decorated helper's name, functools.lru_cache caches constants."""

import functools
import math

import torch


def checked(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if out.dim() != 3:
            raise ValueError(f"{fn.__name__} returned a {out.dim()}-d tensor")
        return out

    return wrapper


@functools.lru_cache(maxsize=None)
def gelu_constant():
    return math.sqrt(2.0 / math.pi)


def layer_norm(x, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


norm = functools.partial(layer_norm, eps=1e-5)


@checked
def attention(h, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = h.shape
    dh = d // num_heads
    q, k, v = ((h @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
    s = q @ k.transpose(-2, -1) / math.sqrt(dh)
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o


@checked
def feed_forward(h, w_1, w_2):
    u = h @ w_1
    return 0.5 * u * (1.0 + torch.tanh(gelu_constant() * (u + 0.044715 * u**3))) @ w_2


def block(x, weights, num_heads):
    w_q, w_k, w_v, w_o, w_1, w_2 = weights
    x = x + attention(norm(x), w_q, w_k, w_v, w_o, num_heads)
    return x + feed_forward(norm(x), w_1, w_2)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    step = functools.partial(block, num_heads=num_heads)
    x = functools.reduce(step, blocks_weights, w_emb[input_ids] + pos_embed)
    assert attention.__name__ == "attention"
    return x[mask_indicator > 0.5] @ w_emb.T
