"""A small layer-norm class of its own with forward and backward methods (names the rules leave to the candidate)."""

import torch


class LayerNorm:
    def __init__(self, weight, bias, eps):
        self.weight, self.bias, self.eps = weight, bias, eps
        self.cache = None

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
        rstd = (var + self.eps).rsqrt()
        x_hat = (x - mean) * rstd
        self.cache = (x_hat, rstd)
        return x_hat * self.weight + self.bias

    def backward(self, grad):
        x_hat, rstd = self.cache
        d = x_hat.shape[-1]
        flat = (-1, d)
        grad_weight = (grad * x_hat).reshape(flat).sum(dim=0)
        grad_bias = grad.reshape(flat).sum(dim=0)
        g = grad * self.weight
        grad_x = rstd / d * (d * g - g.sum(-1, keepdim=True) - x_hat * (g * x_hat).sum(-1, keepdim=True))
        return grad_x, grad_weight, grad_bias


def layer_norm_backward(x, weight, bias, grad_output, eps):
    norm = LayerNorm(weight, bias, eps)
    norm.forward(x)
    return norm.backward(grad_output)
