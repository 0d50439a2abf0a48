"""Numerically careful: Welford's running mean and variance, one feature at a time, then the closed form."""

import torch


def _welford(x):
    mean = torch.zeros_like(x[..., 0])
    m2 = torch.zeros_like(x[..., 0])
    for j in range(x.shape[-1]):
        column = x[..., j]
        delta = column - mean
        mean = mean + delta / (j + 1)
        m2 = m2 + delta * (column - mean)
    return mean, m2 / x.shape[-1]


def layer_norm_backward(x, weight, bias, grad_output, eps):
    mean, var = _welford(x)
    sigma = (var + eps).sqrt().unsqueeze(-1)
    x_hat = (x - mean.unsqueeze(-1)) / sigma

    flat_dy = grad_output.reshape(-1, x.shape[-1])
    grad_bias = flat_dy.sum(dim=0)
    grad_weight = (flat_dy * x_hat.reshape(flat_dy.shape)).sum(dim=0)

    g = grad_output * weight
    proj = (g * x_hat).mean(dim=-1, keepdim=True)
    grad_x = (g - g.mean(dim=-1, keepdim=True) - x_hat * proj) / sigma
    return grad_x, grad_weight, grad_bias
