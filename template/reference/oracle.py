"""template-id: an independent oracle, written another way than reference.py (here: NumPy, one row
at a time). `python -m grader verify` checks that the two agree in float64 on every case."""

import numpy as np
import torch
from torch import Tensor


def oracle(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    rows = x.detach().numpy().astype(np.float64).reshape(-1, x.shape[-1])
    w = weight.detach().numpy().astype(np.float64)
    out = np.stack([row / np.sqrt(np.sum(row * row) / len(row) + eps) * w for row in rows]) if len(rows) else rows
    return torch.from_numpy(out.reshape(tuple(x.shape)))
