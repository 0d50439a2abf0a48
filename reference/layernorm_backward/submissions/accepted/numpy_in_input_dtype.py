"""Computed in NumPy, in the input's dtype, and handed back as torch tensors of that dtype."""

import numpy as np
import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    a = x.numpy()
    dy = grad_output.numpy()
    w = weight.numpy()
    d = a.shape[-1]
    dt = a.dtype

    mu = a.mean(axis=-1, keepdims=True)
    var = np.square(a - mu).mean(axis=-1, keepdims=True)
    sigma = np.sqrt(var + dt.type(eps))
    x_hat = (a - mu) / sigma

    flat = (-1, d)
    grad_weight = (dy * x_hat).reshape(flat).sum(axis=0)
    grad_bias = dy.reshape(flat).sum(axis=0)

    g = dy * w
    grad_x = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    return tuple(torch.from_numpy(np.ascontiguousarray(t, dtype=dt)) for t in (grad_x, grad_weight, grad_bias))
