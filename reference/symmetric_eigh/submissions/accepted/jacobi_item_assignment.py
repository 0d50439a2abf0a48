"""Cyclic Jacobi rotations written with item assignment, copy_ and itertools.combinations."""

import itertools
import math

import torch


def _rotate(a, v, p, q):
    if a[p, q].abs().item() < 1e-300:
        return
    theta = (a[q, q] - a[p, p]).item() / (2.0 * a[p, q].item())
    t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1.0))
    c = 1.0 / math.sqrt(t * t + 1.0)
    s = t * c
    rot = torch.eye(a.shape[0], dtype=a.dtype)
    rot[p, p] = c
    rot[q, q] = c
    rot[p, q] = s
    rot[q, p] = -s
    a.copy_(rot.T @ a @ rot)
    v.copy_(v @ rot)


def eigh(a):
    n = a.shape[0]
    work = a.detach().to(torch.float64).clone()
    v = torch.eye(n, dtype=torch.float64)
    for _sweep in range(100):
        off = (work - torch.diag(torch.diagonal(work))).pow(2).sum().sqrt().item()
        if off < 1e-15 * max(1.0, work.abs().max().item()):
            break
        for p, q in itertools.combinations(range(n), 2):
            _rotate(work, v, p, q)
    w = torch.diagonal(work).clone()
    order = torch.argsort(w)
    return w[order].to(a.dtype), v[:, order].to(a.dtype)
