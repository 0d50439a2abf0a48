"""Layer norm backward by hand: the reference.

The forward pass this is the backward of, over the last dimension of x (D features):

    mean  = x.mean(-1)                       per row
    var   = ((x - mean) ** 2).mean(-1)        population variance (divide by D)
    sigma = sqrt(var + eps)                   eps inside the root
    x_hat = (x - mean) / sigma
    y     = x_hat * weight + bias

Given g_y = grad_output (dLoss/dy, shape of x), the gradients are

    grad_bias   = sum of g_y over every leading dimension                     (D,)
    grad_weight = sum of g_y * x_hat over every leading dimension             (D,)
    g           = g_y * weight                                                (dLoss/dx_hat)
    grad_x      = (g - mean(g) - x_hat * mean(g * x_hat)) / sigma             per row

The last line is the chain rule through x_hat: d x_hat_i / d x_j = (delta_ij - 1/D - x_hat_i x_hat_j / D)
/ sigma, a symmetric matrix, applied to g. Written from elementary tensor operations, in the dtype of
its inputs (the grader calls it with float64 copies). Any number of leading dimensions, none
included ((D,) in, (D,) out), and zero rows (empty grad_x, zero grad_weight and grad_bias).
"""

from torch import Tensor


def layer_norm_backward(x: Tensor, weight: Tensor, bias: Tensor, grad_output: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    d = x.shape[-1]
    rows = x.reshape(-1, d)  # (R, D): every leading dimension flattened; R = 0 and R = 1 included
    g_y = grad_output.reshape(-1, d)

    # Centre twice: x - mean is exact where x and its mean are close, but the mean itself is rounded;
    # the mean of the remainder is that rounding error, computed to full relative precision. This
    # keeps the reference exact to float64 rounding when the means are large and the spread small.
    centred = rows - rows.mean(dim=-1, keepdim=True)
    centred = centred - centred.mean(dim=-1, keepdim=True)
    var = (centred * centred).mean(dim=-1, keepdim=True)  # population variance
    sigma = (var + eps).sqrt()
    x_hat = centred / sigma

    grad_bias = g_y.sum(dim=0)  # (D,); zeros when R = 0
    grad_weight = (g_y * x_hat).sum(dim=0)

    g = g_y * weight  # dLoss/dx_hat
    mean_g = g.mean(dim=-1, keepdim=True)
    mean_g_x_hat = (g * x_hat).mean(dim=-1, keepdim=True)
    grad_x = (g - mean_g - x_hat * mean_g_x_hat) / sigma

    return grad_x.reshape(x.shape), grad_weight, grad_bias
