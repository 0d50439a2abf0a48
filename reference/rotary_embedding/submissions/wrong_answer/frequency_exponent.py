"""Wrong: the frequencies as base ** (-i / d), not base ** (-2i / d)."""

import torch


def apply_rotary(x, positions, base):
    d = x.shape[-1]
    freq = base ** (-torch.arange(d // 2, dtype=torch.float64) / d)
    angle = positions.double()[:, None] * freq
    cos, sin = angle.cos().to(x.dtype)[:, None, :], angle.sin().to(x.dtype)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(x.shape)
