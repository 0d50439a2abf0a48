"""Mistake: grad_weight and grad_bias summed over the first dimension only, not over every leading dimension."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    sigma = torch.sqrt(var + eps)
    x_hat = (x - mean) / sigma
    grad_weight = (grad_output * x_hat).sum(dim=0)  # right for (N, D) only
    grad_bias = grad_output.sum(dim=0)
    g = grad_output * weight
    grad_x = (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True)) / sigma
    return grad_x, grad_weight, grad_bias
