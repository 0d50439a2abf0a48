"""Forbidden: torch.svd of a + shift * I (positive definite, so its SVD is its eigendecomposition)."""

import torch


def eigh(a):
    n = a.shape[0]
    shift = float(a.abs().sum()) + 1.0
    u, s, _ = torch.svd(a + shift * torch.eye(n, dtype=a.dtype))
    order = torch.argsort(s)
    return s[order] - shift, u[:, order]
