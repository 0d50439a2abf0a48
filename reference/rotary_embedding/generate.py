"""Rotary position embedding: one case's arguments from its settings.

Settings:
  T, H        tokens and heads: x is (T, H, d)
  half        d = 2 * half (the number of rotated pairs)
  start       positions = start + sorted distinct draws below start + span
  span        see start
  base        the base of the frequencies
x and the upstream gradient are N(0, 1).
"""

import numpy as np
import torch

from grader.case import Drawn


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    t, h, d = int(settings["T"]), int(settings["H"]), 2 * int(settings["half"])
    dtype = np.dtype(settings["dtype"])
    start, span = int(settings["start"]), int(settings["span"])
    positions = start + np.sort(rng.choice(span, size=t, replace=span < t))
    x = rng.standard_normal((t, h, d)).astype(dtype)
    upstream = rng.standard_normal((t, h, d)).astype(dtype)
    return Drawn(
        args={"x": torch.from_numpy(x), "positions": torch.from_numpy(positions.astype(np.int64)), "base": float(settings["base"])},
        shape={"T": t, "H": h, "d": d, "last": int(positions[-1])},
        upstream=(torch.from_numpy(upstream),),
    )
