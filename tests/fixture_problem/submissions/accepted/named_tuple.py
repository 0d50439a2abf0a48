from typing import NamedTuple

import torch


class Result(NamedTuple):
    z: torch.Tensor
    count: torch.Tensor


def scale_count(x, y, alpha, keep):
    return Result(alpha * x + y if keep else alpha * x, (x > 0).sum(-1))
