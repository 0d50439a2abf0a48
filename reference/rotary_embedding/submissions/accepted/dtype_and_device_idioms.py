"""Reads dtype.is_floating_point, device.type and the like, as ordinary code does."""

import functools
import math
from typing import NamedTuple

import torch


class Angles(NamedTuple):
    cos: torch.Tensor
    sin: torch.Tensor


@functools.lru_cache(maxsize=None)
def inv_freq_list(d: int, base: float) -> tuple:
    return tuple(base ** (-2 * i / d) for i in range(d // 2))


def apply_rotary(x, positions, base):
    t, h, d = x.shape
    assert d % 2 == 0, f"odd width {d}"
    is_float = x.dtype.is_floating_point
    width = x.size(-1)
    count = math.prod(x.shape)
    _ = functools.reduce(lambda a, b: a * b, x.shape, 1) == count
    _ = sorted(range(3), key=lambda i: -i)
    inv = torch.tensor(inv_freq_list(width, float(base)), dtype=torch.float64)
    angle = positions.to(dtype=torch.float64)[:, None] * inv[None, :]
    ang = Angles(angle.cos().to(x.dtype), angle.sin().to(x.dtype))
    x1, x2 = x[..., 0::2], x[..., 1::2]
    c, s = ang.cos[:, None, :], ang.sin[:, None, :]
    y = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)
    return y.flatten(-2) if is_float else y
