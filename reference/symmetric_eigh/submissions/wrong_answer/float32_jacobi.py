"""Wrong: Jacobi in float32 whatever the dtype of a: far from float64 precision."""

import numpy as np
import torch


def eigh(a):
    m = a.numpy().astype(np.float32)
    n = m.shape[0]
    v = np.eye(n, dtype=np.float32)
    tiny = np.float32(1e-7) * np.abs(m).max(initial=np.float32(0))
    for _ in range(40):
        for p in range(n - 1):
            for q in range(p + 1, n):
                if abs(m[p, q]) <= tiny:
                    continue
                theta = (m[q, q] - m[p, p]) / (2 * m[p, q])
                t = np.sign(theta) / (abs(theta) + np.hypot(theta, np.float32(1))) if theta != 0 else np.float32(1)
                c, s = np.float32(1) / np.hypot(t, np.float32(1)), t / np.hypot(t, np.float32(1))
                r = np.eye(n, dtype=np.float32)
                r[p, p] = r[q, q] = c
                r[p, q], r[q, p] = s, -s
                m, v = r.T @ m @ r, v @ r
    w = np.diag(m)
    order = np.argsort(w)
    return torch.from_numpy(w[order].copy()).to(a.dtype), torch.from_numpy(np.ascontiguousarray(v[:, order])).to(a.dtype)
