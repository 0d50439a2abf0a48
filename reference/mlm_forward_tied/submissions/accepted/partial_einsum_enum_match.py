"""functools.partial, einsum, an Enum, a match statement, a generator and nested functions."""

import enum
import functools
import itertools
import math

import torch


class Part(enum.Enum):
    Q = 0
    K = 1
    V = 2
    O = 3
    UP = 4
    DOWN = 5


def _norm(x, eps):
    mu = x.mean(-1, keepdim=True)
    return (x - mu) * torch.rsqrt(((x - mu) ** 2).mean(-1, keepdim=True) + eps)


norm = functools.partial(_norm, eps=1e-5)


def heads_of(x, h):
    n, t, d = x.shape
    return torch.einsum("nthd->nhtd", x.reshape(n, t, h, d // h))


def blocks(weights):
    for w in weights:
        yield {p: w[p.value] for p in Part}


def act(u, kind="tanh"):
    match kind:
        case "tanh":
            c = math.sqrt(2.0 / math.pi)
            return 0.5 * u * (1.0 + torch.tanh(c * (u + 0.044715 * u * u * u)))
        case _:
            raise ValueError(kind)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape

    def mha(h, w):
        q, k, v = (heads_of(h @ w[p], num_heads) for p in (Part.Q, Part.K, Part.V))
        s = torch.einsum("nhqd,nhkd->nhqk", q, k) / math.sqrt(d // num_heads)
        s = s - torch.amax(s, dim=-1, keepdim=True)
        p = torch.exp(s)
        p = p / p.sum(dim=-1, keepdim=True)
        o = torch.einsum("nhqk,nhkd->nqhd", p, v).reshape(n, t, d)
        return o @ w[Part.O]

    for w, _ in zip(blocks(blocks_weights), itertools.count()):
        x = x + mha(norm(x), w)
        x = x + act(norm(x) @ w[Part.UP]) @ w[Part.DOWN]
    idx = torch.nonzero(mask_indicator.flatten() > 0.5).squeeze(-1)
    rows = x.reshape(n * t, d).index_select(0, idx)
    return torch.einsum("md,vd->mv", rows, w_emb)
