"""Layer norm backward by hand: an independent oracle.

Written another way than reference.py: in NumPy extended precision (np.longdouble, 64-bit mantissa
on x86), with the Jacobian of the forward pass built explicitly, one D x D matrix per row, by the
chain rule through each intermediate value, without the closed form the reference uses (and
without its simplification sum(x - mean) = 0). `verify` compares the reference against it.

    c     = x - mean(x)                 dc/dx     = P = I - 1/D
    var   = mean(c ** 2)                dvar/dx_j = (2/D) sum_i c_i P_ij
    sigma = sqrt(var + eps)             dsigma/dx = dvar/dx / (2 sigma)
    x_hat = c / sigma                   J_ij      = P_ij / sigma - c_i dsigma/dx_j / sigma ** 2
    y     = x_hat * weight + bias       grad_x_j  = sum_i grad_output_i weight_i J_ij
"""

import numpy as np
import torch
from torch import Tensor


def oracle(x: Tensor, weight: Tensor, bias: Tensor, grad_output: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    wide = np.longdouble
    d = x.shape[-1]
    rows = x.detach().cpu().numpy().reshape(-1, d).astype(wide)  # (R, D)
    upstream = grad_output.detach().cpu().numpy().reshape(-1, d).astype(wide)
    w = weight.detach().cpu().numpy().astype(wide)
    n = rows.shape[0]

    c = rows - rows.sum(axis=1, keepdims=True) / wide(d)
    p = np.eye(d, dtype=wide) - wide(1) / wide(d)  # dc/dx, the same for every row
    var = (c * c).sum(axis=1, keepdims=True) / wide(d)
    sigma = np.sqrt(var + wide(eps))  # (R, 1)
    dvar = (wide(2) / wide(d)) * (c @ p)  # (R, D): dvar/dx_j = (2/D) sum_i c_i P_ij
    dsigma = dvar / (wide(2) * sigma)
    jacobian = p[None, :, :] / sigma[:, :, None] - c[:, :, None] * dsigma[:, None, :] / (sigma * sigma)[:, :, None]  # (R, D, D)

    dy_dxhat = upstream * w  # dLoss/dx_hat
    grad_x = np.einsum("ri,rij->rj", dy_dxhat, jacobian) if n else np.zeros((0, d), wide)
    x_hat = c / sigma
    grad_weight = (upstream * x_hat).sum(axis=0) if n else np.zeros(d, wide)
    grad_bias = upstream.sum(axis=0) if n else np.zeros(d, wide)

    def back(array: np.ndarray, shape: tuple[int, ...]) -> Tensor:
        return torch.from_numpy(array.astype(np.float64).reshape(shape)).to(x.dtype)

    return back(grad_x, tuple(x.shape)), back(grad_weight, (d,)), back(grad_bias, (d,))
