"""The fixture's cases: x and y of shape (rows, D), alpha drawn, keep from the settings."""

import numpy as np
import torch

from grader.case import Drawn


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    dtype = np.dtype(settings["dtype"])
    rows, d = int(settings["rows"]), int(settings["D"])
    x, y = (rng.standard_normal((rows, d)).astype(dtype) for _ in range(2))
    if settings.get("zeros"):  # exact zeros in x, where "positive" and "not negative" part
        x[rng.random((rows, d)) < 0.5] = 0
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    upstream = (torch.from_numpy(rng.standard_normal((rows, d)).astype(dtype)), torch.from_numpy(rng.standard_normal(rows).astype(dtype)))
    return Drawn(args={"x": x, "y": y, "alpha": float(settings["alpha"]), "keep": bool(settings["keep"])}, shape={"rows": rows, "D": d}, upstream=upstream)
