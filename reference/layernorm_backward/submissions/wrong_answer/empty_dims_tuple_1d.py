"""Mistake: sums over dim=tuple(range(x.dim() - 1)), which for x of shape (D,) is dim=() and reduces everything to a scalar."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    sigma = torch.sqrt(var + eps)
    x_hat = (x - mean) / sigma
    leading = tuple(range(x.dim() - 1))
    grad_weight = (grad_output * x_hat).sum(dim=leading)
    grad_bias = grad_output.sum(dim=leading)
    g = grad_output * weight
    grad_x = (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True)) / sigma
    return grad_x, grad_weight, grad_bias
