"""Honest: a generator yields the blocks' weights, closures capture the head count and eps, and a nonlocal counter counts the blocks."""

import math

import torch


def block_weights(blocks_weights):
    for i in range(blocks_weights.shape[0]):
        yield i, blocks_weights[i].unbind(0)


def make_norm(eps):
    def norm(x):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + eps)

    return norm


def make_attention(num_heads):
    def attend(h, w_q, w_k, w_v, w_o):
        n, t, d = h.shape
        dh = d // num_heads

        def heads(w):
            return (h @ w).view(n, t, num_heads, dh).transpose(1, 2)

        s = heads(w_q) @ heads(w_k).transpose(-2, -1) / math.sqrt(dh)
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        return ((e / e.sum(dim=-1, keepdim=True)) @ heads(w_v)).transpose(1, 2).reshape(n, t, d) @ w_o

    return attend


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    norm = make_norm(1e-5)
    attend = make_attention(num_heads)
    seen = 0

    def count():
        nonlocal seen
        seen += 1

    x = w_emb[input_ids] + pos_embed
    for _, (w_q, w_k, w_v, w_o, w_1, w_2) in block_weights(blocks_weights):
        count()
        x = x + attend(norm(x), w_q, w_k, w_v, w_o)
        u = norm(x) @ w_1
        x = x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ w_2
    assert seen == blocks_weights.shape[0]
    rows = (x[n, t] for n, t in ((n, t) for n in range(x.shape[0]) for t in range(x.shape[1])) if mask_indicator[n, t] > 0.5)
    picked = list(rows)
    if not picked:
        return x.flatten(0, 1)[:0] @ w_emb.T  # no masked position: an empty (0, V) result
    return torch.stack(picked) @ w_emb.T
