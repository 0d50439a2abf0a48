"""Forbidden: torch.autograd.grad through a hand-written forward pass."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    x, weight, bias = (t.detach().clone().requires_grad_(True) for t in (x, weight, bias))
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps) * weight + bias
    grads = torch.autograd.grad(y, (x, weight, bias), grad_output)
    return tuple(g.detach() for g in grads)
