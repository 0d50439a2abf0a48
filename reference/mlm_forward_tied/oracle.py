"""An independent float64 implementation of the tied-head forward pass, in NumPy, written from the
statement rather than from reference.py: loops over sequences and heads, the layer norm, softmax
and GELU spelled out again, the gather as a list of rows. `python -m grader verify` and
tests/test_reference.py compare the reference with it."""

import math

import numpy as np
import torch
from torch import Tensor


def encode(ids: np.ndarray, emb: np.ndarray, pos: np.ndarray, blocks: np.ndarray, heads: int) -> np.ndarray:
    """The final hidden states (N, T, D) of the pre-LN encoder."""
    x = emb[ids] + pos
    n, t, d = x.shape
    dh = d // heads

    def norm(y: np.ndarray) -> np.ndarray:
        mu = y.mean(-1, keepdims=True)
        return (y - mu) / np.sqrt(((y - mu) ** 2).mean(-1, keepdims=True) + 1e-5)

    for wq, wk, wv, wo, w1, w2 in blocks:
        h = norm(x)
        q, k, v = h @ wq, h @ wk, h @ wv
        out = np.zeros_like(x)
        for b in range(n):
            for j in range(heads):
                cols = slice(j * dh, (j + 1) * dh)
                s = q[b, :, cols] @ k[b, :, cols].T / math.sqrt(dh)
                p = np.exp(s - s.max(-1, keepdims=True))
                p /= p.sum(-1, keepdims=True)
                out[b, :, cols] = p @ v[b, :, cols]
        x = x + out @ wo
        u = norm(x) @ w1
        x = x + 0.5 * u * (1 + np.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3))) @ w2
    return x


def masked_rows(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The hidden states of the masked positions, (M, D), in row-major (sequence, position) order."""
    n, t, d = x.shape
    rows = [x[b, s] for b in range(n) for s in range(t) if mask[b, s] > 0.5]
    return np.array(rows).reshape(len(rows), d)


def numpy_forward(ids: np.ndarray, emb: np.ndarray, pos: np.ndarray, blocks: np.ndarray, mask: np.ndarray, heads: int) -> np.ndarray:
    return masked_rows(encode(ids, emb, pos, blocks, heads), mask) @ emb.T


def oracle(input_ids: Tensor, w_emb: Tensor, pos_embed: Tensor, blocks_weights: Tensor, mask_indicator: Tensor, num_heads: int) -> Tensor:
    arrays = (t.detach().numpy() for t in (input_ids, w_emb, pos_embed, blocks_weights, mask_indicator))
    return torch.from_numpy(numpy_forward(*arrays, num_heads))
