"""The vector-Jacobian product both sides take: the child of the submission's output, the grader
of the reference's (grader/expected.py) and of the diagnosis's twins, by the same code."""

from typing import Any

import torch


def vector_jacobian(output: Any, wrt: list[Any], grad_output: Any) -> tuple[Any, ...]:
    """autograd.grad(output, wrt, grad_outputs=grad_output, allow_unused=True), bitwise, taken from
    the scalar <output, grad_output> (the product's backward hands grad_output itself, unchanged, to
    the output): passing grad_outputs imports sympy on first use (half a second of every grading)."""
    if tuple(output.shape) != tuple(grad_output.shape):  # a product would broadcast where autograd refuses
        raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {tuple(grad_output.shape)} and output has a shape of {tuple(output.shape)}")
    return torch.autograd.grad((output * grad_output.to(output.dtype)).sum(), wrt, allow_unused=True)
