"""The fixture's cases: x and y of shape (rows, D), alpha drawn, keep from the settings."""

import numpy as np
import torch

from grader.cases import Drawn


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    dtype = np.dtype(settings["dtype"])
    rows, d = int(settings["rows"]), int(settings["D"])
    x, y = (torch.from_numpy(rng.standard_normal((rows, d)).astype(dtype)) for _ in range(2))
    upstream = (torch.from_numpy(rng.standard_normal((rows, d)).astype(dtype)), torch.from_numpy(rng.standard_normal(rows).astype(dtype)))
    return Drawn(args={"x": x, "y": y, "alpha": float(settings["alpha"]), "keep": bool(settings["keep"])}, shape={"rows": rows, "D": d}, upstream=upstream)
