"""Honest: an enum.Enum naming the six block matrices (indexed by .value), itertools.starmap for the projections, itertools.chain and itertools.product to interleave the sublayers."""

import enum
import itertools
import math

import torch


class W(enum.Enum):
    Q = 0
    K = 1
    V = 2
    O = 3
    MLP1 = 4
    MLP2 = 5


class Part(enum.IntEnum):
    ATTENTION = 1
    FEED_FORWARD = 2


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def project(h, w, n, t, heads):
    return (h @ w).view(n, t, heads, -1).transpose(1, 2)


def sublayer(part, x, block, num_heads):
    h = layer_norm(x)
    if part is Part.ATTENTION:
        n, t, d = h.shape
        q, k, v = itertools.starmap(project, ((h, block[w.value], n, t, num_heads) for w in (W.Q, W.K, W.V)))
        s = q @ k.transpose(-2, -1) / math.sqrt(d // num_heads)
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        return ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ block[W.O.value]
    u = h @ block[W.MLP1.value]
    return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ block[W.MLP2.value]


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    steps = itertools.chain.from_iterable(itertools.product([block], Part) for block in blocks_weights)
    for block, part in steps:
        x = x + sublayer(part, x, block, num_heads)
    return x[mask_indicator > 0.5] @ w_emb.T
