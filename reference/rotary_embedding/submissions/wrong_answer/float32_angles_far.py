"""Wrong: the angles computed in float32 whatever the dtype of x: far positions in float64 cases come out wrong."""

import torch


def apply_rotary(x, positions, base):
    d = x.shape[-1]
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angle = positions.float()[:, None] * freq
    cos, sin = angle.cos().to(x.dtype)[:, None, :], angle.sin().to(x.dtype)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(x.shape)
