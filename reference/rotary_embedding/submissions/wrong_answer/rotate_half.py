"""Wrong: the GPT-NeoX convention, pairing feature i with i + d/2 (rotate_half), not the adjacent pairs (2i, 2i + 1)."""

import torch


def apply_rotary(x, positions, base):
    d = x.shape[-1]
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.double()[:, None] * freq
    angle = torch.cat([angle, angle], dim=-1)
    cos, sin = angle.cos().to(x.dtype)[:, None, :], angle.sin().to(x.dtype)[:, None, :]
    half = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], dim=-1)
    return x * cos + half * sin
