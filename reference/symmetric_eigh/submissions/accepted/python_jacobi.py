"""Correct: the cyclic Jacobi method on Python lists of floats, rows and columns rotated in place."""

import math

import torch


def eigh(a):
    n = a.shape[0]
    m = [[float(a[i, j]) for j in range(n)] for i in range(n)]
    v = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    scale = max((abs(x) for row in m for x in row), default=0.0)
    for _ in range(50):
        if all(abs(m[p][q]) <= 1e-17 * scale for p in range(n) for q in range(n) if p != q):
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                if abs(m[p][q]) <= 1e-17 * scale:
                    continue
                theta = (m[q][q] - m[p][p]) / (2 * m[p][q])
                t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1))
                c = 1 / math.sqrt(t * t + 1)
                s = t * c
                for k in range(n):  # columns p and q
                    mkp, mkq = m[k][p], m[k][q]
                    m[k][p], m[k][q] = c * mkp - s * mkq, s * mkp + c * mkq
                for k in range(n):  # rows p and q
                    mpk, mqk = m[p][k], m[q][k]
                    m[p][k], m[q][k] = c * mpk - s * mqk, s * mpk + c * mqk
                for k in range(n):
                    vkp, vkq = v[k][p], v[k][q]
                    v[k][p], v[k][q] = c * vkp - s * vkq, s * vkp + c * vkq
    order = sorted(range(n), key=lambda i: m[i][i])
    values = torch.tensor([m[i][i] for i in order], dtype=a.dtype)
    vectors = torch.tensor([[v[k][i] for i in order] for k in range(n)], dtype=a.dtype)
    return values, vectors.reshape(n, n)
