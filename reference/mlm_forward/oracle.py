"""An independent float64 implementation of the untied-head MLM forward pass, in NumPy.

Written from the statement (problem/mlm-forward/README.md), not from the reference: explicit loops
over sequences and heads, the masked rows collected one by one in row-major order, and the head
applied last. It shares no code with reference.py or with the tied package, so a convention the
reference got wrong would show as a disagreement in `verify`.
"""

import math

import numpy as np

EPS = 1e-5
GELU_C = math.sqrt(2.0 / math.pi)


def _array(value: object) -> np.ndarray:
    """A tensor (or array) as a float64 NumPy array, detached; integer arrays stay integers."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    return array.astype(np.float64) if array.dtype.kind == "f" else array


def _norm(y: np.ndarray) -> np.ndarray:
    mu = y.mean(axis=-1, keepdims=True)
    var = ((y - mu) ** 2).mean(axis=-1, keepdims=True)  # population variance
    return (y - mu) / np.sqrt(var + EPS)


def _gelu(u: np.ndarray) -> np.ndarray:
    return 0.5 * u * (1.0 + np.tanh(GELU_C * (u + 0.044715 * u**3)))


def oracle(input_ids, w_emb, pos_embed, blocks_weights, w_head, mask_indicator, num_heads):  # noqa: ANN001, ANN201 - tensors or arrays in, a NumPy array out
    """The logits (M, V) as a float64 NumPy array."""
    ids, emb, pos, blocks, head, mask = (_array(a) for a in (input_ids, w_emb, pos_embed, blocks_weights, w_head, mask_indicator))
    n, t = ids.shape
    d = emb.shape[1]
    dh = d // num_heads
    x = np.stack([np.stack([emb[ids[b, s]] + pos[s] for s in range(t)]) for b in range(n)]) if n * t else np.zeros((n, t, d))
    for wq, wk, wv, wo, w1, w2 in blocks:
        h = _norm(x)
        q, k, v = h @ wq, h @ wk, h @ wv
        mixed = np.zeros_like(x)
        for b in range(n):
            for j in range(num_heads):
                cols = slice(j * dh, (j + 1) * dh)
                s = q[b, :, cols] @ k[b, :, cols].T / math.sqrt(dh)  # (T queries, T keys)
                p = np.exp(s - s.max(axis=-1, keepdims=True))
                p /= p.sum(axis=-1, keepdims=True)
                mixed[b, :, cols] = p @ v[b, :, cols]
        x = x + mixed @ wo
        x = x + _gelu(_norm(x) @ w1) @ w2
    rows = [x[b, s] for b in range(n) for s in range(t) if mask[b, s] > 0.5]
    hidden = np.array(rows, dtype=np.float64).reshape(len(rows), d)
    return hidden @ head
