"""Right: the trigonometric functions kept as functools.partial objects in a table named by each
partial's func.__name__."""

import math
import functools
import itertools
import operator
import enum
import dataclasses
import typing
from typing import Callable, NamedTuple
import collections
import torch


PARTS = [functools.partial(torch.cos), functools.partial(torch.sin)]
BY_NAME = {p.func.__name__: p for p in PARTS}

def trig(a):
    return BY_NAME["cos"](a), BY_NAME["sin"](a)


def apply_rotary(x, positions, base):
    t, h, d = x.shape
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.double()[:, None] * freq
    c, s = trig(angle)
    c = c.to(x.dtype)[:, None, :]
    s = s.to(x.dtype)[:, None, :]
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
