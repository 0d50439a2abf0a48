"""Symmetric eigendecomposition by hand: the reference, the cyclic Jacobi method in NumPy float64,
its results in the dtype of its input.

Each rotation in the plane (p, q) zeroes a[p, q]: with theta = (a_qq - a_pp) / (2 a_pq), the smaller
root t = sign(theta) / (|theta| + sqrt(theta**2 + 1)) of t**2 + 2 t theta - 1 = 0 gives c = 1 /
sqrt(t**2 + 1), s = t * c, and a <- J^T a J, V <- V J. Sweeps over every pair until the off-diagonal
part is at float64 rounding level; then the eigenvalues (the diagonal) in ascending order,
the columns of V with them.
"""

import numpy as np
import torch
from torch import Tensor

SWEEPS = 30  # Jacobi converges quadratically: about 6 to 10 sweeps at n = 12
ROUNDING = 1e-16  # relative to max|a|: an off-diagonal element this small is float64 rounding


def eigh(a: Tensor) -> tuple[Tensor, Tensor]:
    m = a.detach().cpu().numpy().astype(np.float64)
    n = m.shape[0]
    v = np.eye(n)
    for _ in range(SWEEPS):
        small = ROUNDING * np.abs(m).max(initial=0.0)  # below this, an off-diagonal element is rounding
        if np.abs(m - np.diag(np.diag(m))).max(initial=0.0) <= small:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                if abs(m[p, q]) <= small:
                    continue
                theta = (m[q, q] - m[p, p]) / (2.0 * m[p, q])
                t = np.copysign(1.0, theta) / (abs(theta) + np.sqrt(theta * theta + 1.0))
                c = 1.0 / np.sqrt(t * t + 1.0)
                s = t * c
                rotation = np.eye(n)
                rotation[p, p] = rotation[q, q] = c
                rotation[p, q], rotation[q, p] = s, -s
                m = rotation.T @ m @ rotation
                v = v @ rotation
    order = np.argsort(np.diag(m), kind="stable")
    values, vectors = np.diag(m)[order], v[:, order]
    return torch.from_numpy(np.ascontiguousarray(values)).to(a.dtype), torch.from_numpy(np.ascontiguousarray(vectors)).to(a.dtype)
