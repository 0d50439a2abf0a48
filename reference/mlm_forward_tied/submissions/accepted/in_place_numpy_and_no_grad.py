"""In-place operations on its own tensors, numpy for a side computation, and a check under torch.no_grad()."""

import math

import numpy as np
import torch


def softmax_(s):
    s = s - s.amax(-1, keepdim=True)
    e = s.exp()
    total = e.sum(-1, keepdim=True)
    total.clamp_(min=1e-30)  # in place on a tensor autograd did not save
    return e / total


def ln(x):
    c = x - x.mean(-1, keepdim=True)
    v = (c * c).mean(-1, keepdim=True)
    return c / (v + 1e-5).sqrt()


def gelu(u):
    inner = u.pow(3)
    inner = inner.mul(0.044715).add(u).mul(math.sqrt(2.0 / math.pi))
    return u.mul(0.5).mul(inner.tanh().add(1.0))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    with torch.no_grad():
        counter = torch.zeros(1)
        counter.add_(1)
        counter.mul_(2)
        assert counter.item() == 2.0
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    dh = d // num_heads
    for b in range(blocks_weights.shape[0]):
        wq, wk, wv, wo, w1, w2 = [blocks_weights[b, i] for i in range(6)]
        h = ln(x)
        q, k, v = [(h @ w).view(n, t, num_heads, dh).permute(0, 2, 1, 3) for w in (wq, wk, wv)]
        a = softmax_(q @ k.transpose(-2, -1) * (1.0 / math.sqrt(dh)))
        x = x + (a @ v).permute(0, 2, 1, 3).reshape(n, t, d) @ wo
        x = x + gelu(ln(x) @ w1) @ w2
    mask = np.asarray(mask_indicator.detach().numpy() > 0.5).reshape(-1)
    idx = torch.from_numpy(np.flatnonzero(mask).astype(np.int64))
    print(f"selected {idx.numel()} rows: {idx}")
    return x.reshape(-1, d)[idx] @ w_emb.t()
