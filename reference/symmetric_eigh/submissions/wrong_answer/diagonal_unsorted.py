"""Wrong: the Jacobi diagonal as it comes, not sorted in ascending order (right only by luck)."""

import numpy as np
import torch


def eigh(a):
    m = a.numpy().astype(np.float64)
    n = m.shape[0]
    v = np.eye(n)
    tiny = 1e-16 * np.abs(m).max(initial=0.0)
    for _ in range(40):
        for p in range(n - 1):
            for q in range(p + 1, n):
                if abs(m[p, q]) <= tiny:
                    continue
                theta = (m[q, q] - m[p, p]) / (2 * m[p, q])
                t = np.sign(theta) / (abs(theta) + np.hypot(theta, 1.0)) if theta != 0 else 1.0
                c, s = 1 / np.hypot(t, 1.0), t / np.hypot(t, 1.0)
                r = np.eye(n)
                r[p, p] = r[q, q] = c
                r[p, q], r[q, p] = s, -s
                m, v = r.T @ m @ r, v @ r
    return torch.from_numpy(np.diag(m).copy()).to(a.dtype), torch.from_numpy(np.ascontiguousarray(v)).to(a.dtype)
