"""Mistake: computed in float32 whatever the input's dtype, then cast back (float64 cases lose precision)."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    dtype = x.dtype
    x, weight, grad_output = x.float(), weight.float(), grad_output.float()
    d = x.shape[-1]
    rows, dy = x.reshape(-1, d), grad_output.reshape(-1, d)
    mean = rows.mean(dim=1, keepdim=True)
    var = ((rows - mean) ** 2).mean(dim=1, keepdim=True)
    sigma = torch.sqrt(var + eps)
    x_hat = (rows - mean) / sigma
    g = dy * weight
    grad_rows = (g - g.mean(1, keepdim=True) - x_hat * (g * x_hat).mean(1, keepdim=True)) / sigma
    results = grad_rows.reshape(x.shape), (dy * x_hat).sum(0), dy.sum(0)
    return tuple(t.to(dtype) for t in results)
