"""Two passes (mean, then the variance of the centred values); sums over the leading dimensions by index."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    mean = x.mean(dim=-1, keepdim=True)
    centred = x - mean
    var = (centred**2).mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    x_hat = centred * rstd

    leading = tuple(range(x.dim() - 1))
    if leading:
        grad_bias = grad_output.sum(dim=leading)
        grad_weight = (grad_output * x_hat).sum(dim=leading)
    else:  # x is (D,): sum(dim=()) would reduce every dimension
        grad_bias = grad_output.clone()
        grad_weight = grad_output * x_hat

    g = grad_output * weight
    grad_x = rstd * (g - g.mean(dim=-1, keepdim=True) - x_hat * (g * x_hat).mean(dim=-1, keepdim=True))
    return grad_x, grad_weight, grad_bias
