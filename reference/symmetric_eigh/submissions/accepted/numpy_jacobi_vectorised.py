"""Correct: Jacobi in NumPy float64, each rotation applied to two rows and two columns at once."""

import numpy as np
import torch


def eigh(a):
    m = a.numpy().astype(np.float64)
    n = m.shape[0]
    v = np.eye(n)
    tiny = 1e-16 * np.abs(m).max(initial=0.0)
    for _ in range(40):
        off = np.abs(m - np.diag(np.diag(m)))
        if off.max(initial=0.0) <= tiny:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                if abs(m[p, q]) <= tiny:
                    continue
                theta = (m[q, q] - m[p, p]) / (2 * m[p, q])
                t = np.sign(theta) / (abs(theta) + np.hypot(theta, 1.0)) if theta != 0 else 1.0
                c = 1 / np.hypot(t, 1.0)
                s = t * c
                cols = m[:, [p, q]] @ np.array([[c, s], [-s, c]])
                m[:, [p, q]] = cols
                rows = np.array([[c, -s], [s, c]]) @ m[[p, q], :]
                m[[p, q], :] = rows
                v[:, [p, q]] = v[:, [p, q]] @ np.array([[c, s], [-s, c]])
    w = np.diag(m).copy()
    order = np.argsort(w)
    return torch.from_numpy(w[order]).to(a.dtype), torch.from_numpy(np.ascontiguousarray(v[:, order])).to(a.dtype)
