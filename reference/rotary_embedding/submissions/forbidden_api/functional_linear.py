"""Forbidden: the right numbers, the rotation applied with torch.nn.functional.linear (torch.nn is off-limits)."""

import math

import torch
import torch.nn.functional as F


def apply_rotary(x, positions, base):
    t, h, d = x.shape
    outs = []
    for k, p in enumerate(positions.tolist()):
        m = torch.zeros(d, d, dtype=x.dtype)
        for i in range(d // 2):
            c, s = math.cos(p * base ** (-2 * i / d)), math.sin(p * base ** (-2 * i / d))
            m[2 * i, 2 * i], m[2 * i, 2 * i + 1], m[2 * i + 1, 2 * i], m[2 * i + 1, 2 * i + 1] = c, -s, s, c
        outs.append(F.linear(x[k], m))
    return torch.stack(outs)
