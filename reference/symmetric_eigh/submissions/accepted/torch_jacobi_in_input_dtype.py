"""Correct: Jacobi in torch, in the dtype of a, each sweep's rotations built as full matrices."""

import torch


def eigh(a):
    n = a.shape[0]
    m = a.clone()
    v = torch.eye(n, dtype=a.dtype)
    tiny = float(torch.finfo(a.dtype).eps) * float(a.abs().max()) if n else 0.0
    for _ in range(40):
        off = (m - torch.diag(torch.diagonal(m))).abs()
        if n < 2 or float(off.max()) <= tiny:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = float(m[p, q])
                if abs(apq) <= tiny:
                    continue
                theta = (float(m[q, q]) - float(m[p, p])) / (2 * apq)
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + (theta * theta + 1) ** 0.5)
                c = 1 / (t * t + 1) ** 0.5
                s = t * c
                j = torch.eye(n, dtype=a.dtype)
                j[p, p] = c
                j[q, q] = c
                j[p, q] = s
                j[q, p] = -s
                m = j.T @ m @ j
                v = v @ j
    w = torch.diagonal(m).clone()
    order = torch.argsort(w)
    return w[order], v[:, order]
