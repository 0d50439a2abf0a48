"""Rotary position embedding: the reference, in the dtype of its inputs (the grader calls it with
float64 copies), differentiable with respect to x.

Each pair of features (2i, 2i + 1) of the token at position p is rotated by the angle
p * base ** (-2i / d): y_2i = x_2i cos - x_2i+1 sin, y_2i+1 = x_2i sin + x_2i+1 cos.
"""

import torch
from torch import Tensor


def apply_rotary(x: Tensor, positions: Tensor, base: float) -> Tensor:
    d = x.shape[-1]
    pair = torch.arange(0, d, 2, dtype=torch.float64) / d  # 2i / d
    angles = positions.to(torch.float64)[:, None] * base ** -pair  # (T, d / 2)
    cos, sin = angles.cos().to(x.dtype)[:, None, :], angles.sin().to(x.dtype)[:, None, :]  # (T, 1, d / 2)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(x.shape)
