"""Honest: collections.OrderedDict, defaultdict and deque, operator.itemgetter, operator.matmul and operator.add, and a numbers.Integral check on num_heads."""

import collections
import math
import numbers
import operator

import torch

ORDER = ("w_q", "w_k", "w_v", "w_o", "w_mlp1", "w_mlp2")
pick_qkv = operator.itemgetter("w_q", "w_k", "w_v")


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return operator.truediv(x - mean, torch.sqrt(var + 1e-5))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    if not isinstance(num_heads, numbers.Integral):
        raise TypeError("num_heads must be an integer")
    n, t = input_ids.shape
    d = w_emb.shape[1]
    dh = d // num_heads
    pending = collections.deque(collections.OrderedDict(zip(ORDER, weights.unbind(0))) for weights in blocks_weights)
    uses = collections.defaultdict(int)
    x = operator.add(w_emb[input_ids], pos_embed)
    while pending:
        block = pending.popleft()
        h = layer_norm(x)
        q, k, v = (operator.matmul(h, w).view(n, t, num_heads, dh).transpose(1, 2) for w in pick_qkv(block))
        s = q @ k.transpose(-2, -1) / math.sqrt(dh)
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        x = x + ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ block["w_o"]
        u = layer_norm(x) @ block["w_mlp1"]
        x = x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ block["w_mlp2"]
        for name in block:
            uses[name] += 1
    return operator.matmul(x[mask_indicator > 0.5], w_emb.T)
