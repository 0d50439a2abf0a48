"""Mistake: one row at a time and torch.stack of the rows, which raises on zero rows (stack of an empty list)."""

import torch


def _row(x, w, dy, eps):
    mean = x.mean()
    sigma = torch.sqrt(((x - mean) ** 2).mean() + eps)
    x_hat = (x - mean) / sigma
    g = dy * w
    return (g - g.mean() - x_hat * (g * x_hat).mean()) / sigma, dy * x_hat


def layer_norm_backward(x, weight, bias, grad_output, eps):
    d = x.shape[-1]
    rows, dys = x.reshape(-1, d), grad_output.reshape(-1, d)
    results = [_row(rows[i], weight, dys[i], eps) for i in range(rows.shape[0])]
    grad_x = torch.stack([r[0] for r in results])
    grad_weight = torch.stack([r[1] for r in results]).sum(0)
    return grad_x.reshape(x.shape), grad_weight, dys.sum(0)
