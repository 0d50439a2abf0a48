"""The hidden reference run on a case, in float64: the outputs and gradients to compare against.

float32 cases are judged against float64 results computed from the very same (float32-valued)
inputs, so the only error left is the submission's own rounding.
"""

from dataclasses import dataclass

import torch
from torch import Tensor

from grader.cases import DIFFERENTIABLE_INPUTS, Case
from grader.child.vjp import vector_jacobian  # the child's own: the same values as autograd.grad with grad_outputs, without sympy
from grader.spec import hidden_module


@dataclass(frozen=True)
class Expected:
    output: Tensor  # (M, V) float64
    grads: dict[str, Tensor]  # d(<output, grad_output>)/d(input), float64, keyed by input name


def expected_for(case: Case) -> Expected:
    """The reference's outputs and gradients for one case, in float64, computed on one thread: the
    same bits in every process that computes them (the command line, the API, the kit's case files),
    whatever number of threads torch uses there."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _expected_for(case)
    finally:
        torch.set_num_threads(threads)


def _expected_for(case: Case) -> Expected:
    mlm_forward_tied = hidden_module("reference").mlm_forward_tied  # here only: the candidate's kit holds this module (for Expected), not the reference

    inputs = {name: tensor.to(torch.float64, copy=True) if tensor.is_floating_point() else tensor for name, tensor in case.inputs.items()}
    for name in DIFFERENTIABLE_INPUTS:
        inputs[name].requires_grad_(True)
    output = mlm_forward_tied(**inputs, num_heads=case.num_heads)
    wrt = [inputs[name] for name in DIFFERENTIABLE_INPUTS]
    grads = vector_jacobian(output, wrt, case.grad_output.to(torch.float64))
    return Expected(
        output=output.detach(),
        grads={name: torch.zeros_like(inputs[name]).detach() if grad is None else grad for name, grad in zip(DIFFERENTIABLE_INPUTS, grads, strict=True)},
    )
