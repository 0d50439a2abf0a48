"""The expanded form many libraries use: grad_x = a * g + b * x + c per row, from sums of g and g * x."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    d = x.shape[-1]
    rows = x.reshape(-1, d)
    dy = grad_output.reshape(-1, d)

    mean = rows.mean(dim=1, keepdim=True)
    var = ((rows - mean) ** 2).mean(dim=1, keepdim=True)
    rstd = 1.0 / torch.sqrt(var + eps)

    g = dy * weight
    sum_g = g.sum(dim=1, keepdim=True)
    sum_gx = (g * rows).sum(dim=1, keepdim=True)
    # d x_hat: rstd * g - rstd/D * sum_g - x_hat * rstd/D * sum(g * x_hat), with x_hat = (x - mean) * rstd
    b = (sum_g * mean - sum_gx) * rstd**3 / d
    c = -b * mean - sum_g * rstd / d
    grad_rows = rstd * g + b * rows + c

    x_hat = (rows - mean) * rstd
    return grad_rows.reshape(x.shape), (dy * x_hat).sum(dim=0), dy.sum(dim=0)
