"""Wrong: token t rotated by its index t, not by positions[t]."""

import torch


def apply_rotary(x, positions, base):
    t, h, d = x.shape
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * freq
    cos, sin = angle.cos().to(x.dtype)[:, None, :], angle.sin().to(x.dtype)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(x.shape)
