"""Mistake: the variance as mean(x**2) - mean(x)**2, which cancels catastrophically when the mean is large against the spread."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    d = x.shape[-1]
    rows, dy = x.reshape(-1, d), grad_output.reshape(-1, d)
    mean = rows.mean(dim=1, keepdim=True)
    var = (rows * rows).mean(dim=1, keepdim=True) - mean * mean
    sigma = torch.sqrt(var + eps)
    x_hat = (rows - mean) / sigma
    g = dy * weight
    grad_rows = (g - g.mean(1, keepdim=True) - x_hat * (g * x_hat).mean(1, keepdim=True)) / sigma
    return grad_rows.reshape(x.shape), (dy * x_hat).sum(0), dy.sum(0)
