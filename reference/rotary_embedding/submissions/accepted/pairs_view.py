"""Correct: the pairs as a trailing axis of 2, the frequencies computed in float64, cos and sin in the dtype of x."""

import torch


def apply_rotary(x, positions, base):
    t, h, d = x.shape
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.double()[:, None] * freq
    cos = angle.cos().to(x.dtype).view(t, 1, d // 2)
    sin = angle.sin().to(x.dtype).view(t, 1, d // 2)
    pairs = x.view(t, h, d // 2, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).view(t, h, d)
