"""Wrong: a single Jacobi sweep, which leaves the off-diagonal part far from zero."""

import numpy as np
import torch


def eigh(a):
    m = a.numpy().astype(np.float64)
    n = m.shape[0]
    v = np.eye(n)
    for p in range(n - 1):
        for q in range(p + 1, n):
            if m[p, q] == 0:
                continue
            theta = (m[q, q] - m[p, p]) / (2 * m[p, q])
            t = np.sign(theta) / (abs(theta) + np.hypot(theta, 1.0)) if theta != 0 else 1.0
            c, s = 1 / np.hypot(t, 1.0), t / np.hypot(t, 1.0)
            r = np.eye(n)
            r[p, p] = r[q, q] = c
            r[p, q], r[q, p] = s, -s
            m, v = r.T @ m @ r, v @ r
    w = np.diag(m)
    order = np.argsort(w)
    return torch.from_numpy(w[order].copy()).to(a.dtype), torch.from_numpy(np.ascontiguousarray(v[:, order])).to(a.dtype)
