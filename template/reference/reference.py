"""template-id: the reference, exact in float64 (the grader calls it with float64 copies of each
case's arguments) and differentiable (the grader takes its gradients for the gradient check).

The worked example computes an RMS normalisation over the last dimension of x:

    y = x / sqrt(mean(x**2, last dimension) + eps) * weight

Replace it with your challenge's computation: a function named like the entry point, taking the
parameters problem.toml declares, in that order.
"""

from torch import Tensor


def template_entry_point(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    mean_square = (x * x).mean(dim=-1, keepdim=True)
    return x / (mean_square + eps).sqrt() * weight
