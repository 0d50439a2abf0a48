"""The fixture's oracle: the same, another way."""

import torch
from torch import Tensor


def oracle(x: Tensor, y: Tensor, alpha: float, keep: bool) -> tuple[Tensor, Tensor]:
    z = torch.mul(x, alpha)
    if keep:
        z = z + y
    return z, torch.count_nonzero(x > 0, dim=-1)
