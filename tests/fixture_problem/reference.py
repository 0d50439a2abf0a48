"""The fixture's reference: z = alpha * x + y (y only when keep), and how many entries of each row
of x are positive."""

from torch import Tensor


def scale_count(x: Tensor, y: Tensor, alpha: float, keep: bool) -> tuple[Tensor, Tensor]:
    z = alpha * x + y if keep else alpha * x
    return z, (x > 0).sum(dim=-1)
