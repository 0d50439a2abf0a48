"""Forbidden: with __name__ set to "torch", enum.global_enum writes the members of the file's enum into torch's module namespace (torch.PLANTED), past the check that refuses changes to modules."""

import enum
import math

import torch

__name__ = "torch"  # classes made from here on name torch as their module


class Planted(enum.IntEnum):
    PLANTED = 1


enum.global_enum(Planted)  # sys.modules["torch"].__dict__.update(Planted.__members__)
__name__ = "candidate_submission"


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        x = x + (softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
