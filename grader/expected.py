"""The hidden reference run on a case, in float64: the outputs and gradients to compare against.

float32 cases are judged against float64 results computed from the very same (float32-valued)
inputs, so the only error left is the submission's own rounding.
"""

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from grader.case import Case
from grader.child.vjp import vector_jacobian  # the child's own: the same values as autograd.grad with grad_outputs, without sympy
from grader.compare import compare_values
from grader.spec import FLOAT, CaseTemplate, SetupError, Spec, hidden_module, load_spec


@dataclass(frozen=True)
class Expected:
    outputs: tuple[Tensor, ...]  # one per declared output, float64 for float outputs
    grads: dict[str, Tensor]  # d(sum <output_i, upstream_i>)/d(input), float64, keyed by input name

    @property
    def output(self) -> Tensor:
        """The output of a one-output problem."""
        return self.outputs[0]


def expected_for(case: Case, spec: Spec | None = None) -> Expected:
    """The reference's outputs and gradients for one case, in float64, computed on one thread: the
    same bits in every process that computes them (the command line, the API, the kit's case files),
    whatever number of threads torch uses there."""
    spec = spec or load_spec()
    if case.checked is not None and case.checked[0] is spec and case.checked[1] is case.args:
        return case.checked[2]
    return _run_reference(case, spec, float64_args(case), tuple(u.to(torch.float64) for u in case.upstream))


def rounding_ratio(case: Case, expected: Expected, spec: Spec) -> float:
    """How far the reference itself lands from `expected` (its float64 results) when it computes in
    the case's own dtype, as a multiple of what the tolerance allows: the worst output or gradient.
    Near 1, a case rejects correct code that merely rounds in another order (attention scores in the
    tens with two nearly equal maxima, a layer norm of two nearly equal features); 0 for float64."""
    if case.dtype == "float64":
        return 0.0
    own = {name: value.detach().clone() if isinstance(value, Tensor) else value for name, value in case.args.items()}
    ran = _run_reference(case, spec, own, case.upstream)
    ratios = [
        compare_values(want, got, spec.output_tolerance(declared, case.family, case.dtype), False, declared.scale_floor).ratio
        if got.is_floating_point()
        else 0.0 if torch.equal(want, got) else math.inf  # an exact output: the judge compares it bit for bit
        for declared, want, got in zip(spec.outputs, expected.outputs, ran.outputs, strict=True)
    ]
    _, gradient_tolerance = spec.tolerances(case.family, case.dtype)
    ratios += [compare_values(expected.grads[name], grad, gradient_tolerance, False).ratio for name, grad in ran.grads.items()]
    return max(ratios, default=0.0)


def reference_function(spec: Spec):  # noqa: ANN201 - the package's own callable
    """The package's reference (hidden: here only; the candidate's kit holds this module for Expected, not the reference)."""
    return getattr(hidden_module(f"{spec.module}.reference"), spec.entry_point)


def float64_args(case: Case) -> dict[str, object]:
    """The case's arguments as the reference takes them: float tensors as float64 copies."""
    return {name: value.to(torch.float64, copy=True) if isinstance(value, Tensor) and value.is_floating_point() else value for name, value in case.args.items()}


def as_outputs(result: object, spec: Spec) -> tuple[Tensor, ...]:
    """A callable's result as the tuple of declared outputs (one tensor, or a tuple of them)."""
    return tuple(result) if spec.returns == "tuple" else (result,)  # type: ignore[arg-type]


def _run_reference(case: Case, spec: Spec, args: dict[str, object], upstream: tuple[Tensor, ...]) -> Expected:
    """The reference on `args` (copies of the case's arguments, the caller's to change) and, where
    the case checks gradients, the vector-Jacobian product with `upstream`; on one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name in case.differentiable:
            args[name].requires_grad_(True)  # type: ignore[union-attr]
        outputs = as_outputs(reference_function(spec)(*args.values()), spec)
        shapes = tuple(tuple(output.shape) for output in outputs)
        if shapes != case.output_shapes:
            raise SetupError(f"the reference of {spec.id} returns shapes {shapes} for case {case.name}, whose generator promised {case.output_shapes}")
        grads: dict[str, Tensor] = {}
        if case.differentiable:
            wrt = [args[name] for name in case.differentiable]
            found = vector_jacobian(outputs, wrt, upstream)
            grads = {name: torch.zeros_like(args[name]).detach() if grad is None else grad for name, grad in zip(case.differentiable, found, strict=True)}  # type: ignore[arg-type]
        return Expected(outputs=tuple(o.detach() for o in outputs), grads=grads)
    finally:
        torch.set_num_threads(threads)


def public_case_file(case: Case, expected: Expected, spec: Spec) -> dict[str, object]:
    """What `--save-public` writes for a public case (and the kit holds in cases/<name>.pt): the
    arguments by name, the upstream gradients (grad_output, or grad_output_<i> for several outputs),
    expected_<output> and expected_grad_<input>, and the sizes a report shows (shape)."""
    upstream = {"grad_output": case.upstream[0]} if len(case.upstream) == 1 else {f"grad_output_{i}": u for i, u in enumerate(case.upstream)}
    return {
        **case.args,
        **upstream,
        **{f"expected_{declared.name}": output for declared, output in zip(spec.outputs, expected.outputs, strict=True)},
        **{f"expected_grad_{name}": grad for name, grad in expected.grads.items()},
        "shape": dict(case.shape),
    }


def read_public_case(saved: dict[str, object], template: CaseTemplate, spec: Spec) -> tuple[Case, Expected]:
    """A case and its expected results back from what public_case_file wrote (the kit's check.py)."""
    args = {name: saved[name] for name in spec.parameter_names}
    floats = [args[p.name] for p in spec.parameters if p.type == "tensor" and p.dtype == FLOAT]
    dtype = str(floats[0].dtype).removeprefix("torch.") if floats else str(template.settings["dtype"])  # type: ignore[union-attr]
    count = len(spec.outputs)
    upstream = () if not spec.gradient_wrt else (saved["grad_output"],) if count == 1 else tuple(saved[f"grad_output_{i}"] for i in range(count))
    outputs = tuple(saved[f"expected_{declared.name}"] for declared in spec.outputs)
    case = Case(
        name=template.name,
        family=template.family,
        public=True,
        dtype=dtype,
        args=args,
        upstream=upstream,  # type: ignore[arg-type]
        shape=dict(saved["shape"]),  # type: ignore[call-overload]
        differentiable=spec.gradient_wrt,
        output_shapes=tuple(tuple(o.shape) for o in outputs),  # type: ignore[attr-defined]
        returns=spec.returns,
    )
    return case, Expected(outputs, {name: saved[f"expected_grad_{name}"] for name in spec.gradient_wrt})  # type: ignore[arg-type,misc]
