"""Forbidden: y.backward(grad_output) through a hand-written forward, reading the leaves' .grad."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    x = x.detach().clone()
    weight = weight.detach().clone()
    bias = bias.detach().clone()
    for t in (x, weight, bias):
        t.requires_grad = True
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps) * weight + bias
    y.backward(grad_output)
    return x.grad, weight.grad, bias.grad
