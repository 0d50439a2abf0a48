"""Everything with einsum and an ellipsis, which also covers x of shape (D,) and zero rows."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    d = x.shape[-1]
    ones = torch.ones(d, dtype=x.dtype)
    mean = torch.einsum("...d,d->...", x, ones)[..., None] / d
    c = x - mean
    var = torch.einsum("...d,...d->...", c, c)[..., None] / d
    inv_sigma = 1.0 / torch.sqrt(var + eps)
    x_hat = c * inv_sigma

    grad_weight = torch.einsum("...d,...d->d", grad_output, x_hat)
    grad_bias = torch.einsum("...d->d", grad_output)

    g = torch.einsum("...d,d->...d", grad_output, weight)
    mean_g = torch.einsum("...d->...", g)[..., None] / d
    mean_gx = torch.einsum("...d,...d->...", g, x_hat)[..., None] / d
    grad_x = inv_sigma * (g - mean_g - x_hat * mean_gx)
    return grad_x, grad_weight, grad_bias
