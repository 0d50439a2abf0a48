"""The vector-Jacobian product both sides take: the child of the submission's outputs, the grader
of the reference's (grader/expected.py) and of the diagnosis's twins, by the same code."""

from typing import Any

import torch


def vector_jacobian(outputs: Any, wrt: list[Any], upstream: Any) -> tuple[Any, ...]:
    """autograd.grad(outputs, wrt, grad_outputs=upstream, allow_unused=True), bitwise, taken from the
    scalar sum of <output_i, upstream_i> (the product's backward hands upstream_i itself, unchanged,
    to output_i): passing grad_outputs imports sympy on first use (half a second of every grading).
    outputs and upstream: a tensor each, or tuples of them."""
    if isinstance(outputs, torch.Tensor):
        outputs, upstream = (outputs,), (upstream,)
    total = None
    for output, grad_output in zip(outputs, upstream, strict=True):
        if tuple(output.shape) != tuple(grad_output.shape):  # a product would broadcast where autograd refuses
            raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {tuple(grad_output.shape)} and output has a shape of {tuple(output.shape)}")
        term = (output * grad_output.to(output.dtype)).sum()
        total = term if total is None else total + term
    return torch.autograd.grad(total, wrt, allow_unused=True)
