"""Correct: everything in the dtype of x (float32 cases keep positions below 128, where that is accurate enough)."""

import torch


def apply_rotary(x, positions, base):
    d = x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=x.dtype) / d))
    ang = positions.to(x.dtype)[:, None] * inv
    c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    out = torch.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out
