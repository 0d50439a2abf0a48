"""Forbidden: torch.func.vjp of a hand-written forward pass."""

import torch


def _forward(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def layer_norm_backward(x, weight, bias, grad_output, eps):
    _, pullback = torch.func.vjp(lambda a, w, b: _forward(a, w, b, eps), x, weight, bias)
    return pullback(grad_output)
