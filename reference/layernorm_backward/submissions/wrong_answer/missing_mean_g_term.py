"""Mistake: grad_x without the mean(g) term (the gradient through the mean is left out)."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    d = x.shape[-1]
    rows, dy = x.reshape(-1, d), grad_output.reshape(-1, d)
    mean = rows.mean(dim=1, keepdim=True)
    var = ((rows - mean) ** 2).mean(dim=1, keepdim=True)
    sigma = torch.sqrt(var + eps)
    x_hat = (rows - mean) / sigma
    g = dy * weight
    grad_rows = (g - x_hat * (g * x_hat).mean(1, keepdim=True)) / sigma
    return grad_rows.reshape(x.shape), (dy * x_hat).sum(0), dy.sum(0)
