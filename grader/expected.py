"""The hidden reference run on a case, in float64: the outputs and gradients to compare against.

float32 cases are judged against float64 results computed from the very same (float32-valued)
inputs, so the only error left is the submission's own rounding. A class's case constructs the
reference class and calls its method step by step; the parameters a problem updates in place by
contract are kept as each call (each step) leaves them.
"""

import importlib.util
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from grader.case import Case, Property
from grader.child.vjp import vector_jacobian  # the child's own: the same values as autograd.grad with grad_outputs, without sympy
from grader.child.wire import after_name, tensor_name
from grader.compare import compare_values
from grader.spec import FLOAT, CaseTemplate, Output, SetupError, Spec, hidden_module, load_spec


@dataclass(frozen=True)
class Expected:
    outputs: tuple[Tensor, ...]  # one per returned output, float64 for float outputs
    grads: dict[str, Tensor]  # d(sum <output_i, upstream_i>)/d(input), float64, keyed by input name
    # The parameters updated in place by contract, as the call (step k) leaves them, by the name the
    # child sends them under: after_<wire name>, after_<wire name>@k for a class's step k.
    updated: dict[str, Tensor] = field(default_factory=dict)

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
    upstream = tuple(u.to(torch.float64) for u in case.upstream)
    return _run_reference(case, spec, float64_args(case.args), upstream, [float64_args(step) for step in case.steps])


def rounding_ratio(case: Case, expected: Expected, spec: Spec) -> float:
    """How far the reference itself lands from `expected` (its float64 results) when it computes in
    the case's own dtype, as a multiple of what the tolerance allows: the worst output, updated
    parameter or gradient (with a property check, the worst property). Near 1, a case rejects
    correct code that merely rounds in another order (attention scores in the tens with two nearly
    equal maxima, a layer norm of two nearly equal features); 0 for float64."""
    if case.dtype == "float64":
        return 0.0
    ran = _run_reference(case, spec, own_copies(case.args), case.upstream, [own_copies(step) for step in case.steps])
    if spec.judge == "properties":
        ratios = [p.ratio for p in check_properties(case, ran.outputs, spec)]
    else:
        ratios = [_ratio(want, got, declared, case, spec) for declared, want, got in zip(spec.returned, expected.outputs, ran.outputs, strict=True)]
    ratios += [_ratio(expected.updated[name], got, updated_output(spec, name), case, spec) for name, got in ran.updated.items()]
    gradient_tolerance = spec.tolerance(case.family, case.dtype, gradient=True)
    ratios += [compare_values(expected.grads[name], grad, gradient_tolerance, False).ratio for name, grad in ran.grads.items()]
    return max(ratios, default=0.0)


def _ratio(want: Tensor, got: Tensor, declared: Output, case: Case, spec: Spec) -> float:
    if not got.is_floating_point():  # an exact output: the judge compares it bit for bit
        return 0.0 if torch.equal(want, got) else math.inf
    return compare_values(want, got, spec.tolerance(case.family, case.dtype, declared), False, declared.scale_floor).ratio


def updated_output(spec: Spec, name: str) -> Output:
    """The declared output that judges the tensor the child sends as `name` (after_<param>[.i][@k])."""
    parameter = name.removeprefix("after_").partition("@")[0].partition(".")[0]
    return spec.updated[parameter]


def reference_function(spec: Spec):  # noqa: ANN201 - the package's own callable
    """The package's reference (hidden: here only; the candidate's kit holds this module for Expected, not the reference)."""
    return getattr(hidden_module(f"{spec.module}.reference"), spec.entry_point)


def float64_args(args: dict[str, Any]) -> dict[str, Any]:
    """Arguments as the reference takes them: float tensors (and lists of them) as float64 copies."""
    return {name: _copy(value, torch.float64) for name, value in args.items()}


def own_copies(args: dict[str, Any]) -> dict[str, Any]:
    """Arguments copied in their own dtypes (the caller's to change)."""
    return {name: _copy(value, None) for name, value in args.items()}


def _copy(value: Any, dtype: torch.dtype | None) -> Any:
    if isinstance(value, list):
        return [_copy(item, dtype) for item in value]
    if isinstance(value, Tensor):
        return value.to(dtype, copy=True) if dtype is not None and value.is_floating_point() else value.detach().clone()
    return value


def as_outputs(result: object, spec: Spec) -> tuple[Tensor, ...]:
    """A callable's result as the tuple of returned outputs (one tensor, a tuple of them, or none)."""
    if spec.returns == "none":
        return ()
    return tuple(result) if spec.returns == "tuple" else (result,)  # type: ignore[arg-type]


def call(fn: Any, args: dict[str, Any], keywords: tuple[str, ...] = ()) -> Any:
    """fn called with args in order, those named in keywords by name."""
    return fn(*(v for k, v in args.items() if k not in keywords), **{k: v for k, v in args.items() if k in keywords})


def run_entry_point(
    entry_point: Any, case: Case, spec: Spec, args: dict[str, Any], steps: list[dict[str, Any]]
) -> tuple[tuple[Tensor, ...], dict[str, Tensor]]:
    """The entry point (the reference, a mutant of it, the package's oracle) run on a case's
    arguments (copies, the caller's to change): its returned outputs and the updated parameters, by
    the names the child sends them under. A class is constructed, then its method called step by step."""
    step_keywords = tuple(p.name for p in spec.step_parameters if p.keyword)
    updated: dict[str, Tensor] = {}

    def keep(step: int | None) -> None:
        for name in spec.updated:
            value = args[name]
            items = [(tensor_name(name), value)] if isinstance(value, Tensor) else [(tensor_name(name, i), t) for i, t in enumerate(value)]
            updated.update({after_name(wire, step): tensor.detach().clone() for wire, tensor in items})

    if spec.kind == "class":
        instance = call(entry_point, args, case.keywords)
        for index, step in enumerate(steps, 1):
            call(getattr(instance, spec.method), step, step_keywords)
            keep(index)
        return (), updated
    outputs = as_outputs(call(entry_point, args, case.keywords), spec)
    keep(None)
    return outputs, updated


def _run_reference(case: Case, spec: Spec, args: dict[str, Any], upstream: tuple[Tensor, ...], steps: list[dict[str, Any]]) -> Expected:
    """The reference on `args` (copies of the case's arguments, the caller's to change) and, where
    the case checks gradients, the vector-Jacobian product with `upstream`; on one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name in case.differentiable:
            args[name].requires_grad_(True)
        outputs, updated = run_entry_point(reference_function(spec), case, spec, args, steps)
        shapes = tuple(tuple(output.shape) for output in outputs)
        if shapes != case.output_shapes:
            raise SetupError(f"the reference of {spec.id} returns shapes {shapes} for case {case.name}, whose generator promised {case.output_shapes}")
        grads: dict[str, Tensor] = {}
        if case.differentiable:
            wrt = [args[name] for name in case.differentiable]
            found = vector_jacobian(outputs, wrt, upstream)
            grads = {name: torch.zeros_like(args[name]).detach() if grad is None else grad for name, grad in zip(case.differentiable, found, strict=True)}
        return Expected(outputs=tuple(o.detach() for o in outputs), grads=grads, updated=updated)
    finally:
        torch.set_num_threads(threads)


# -- a property check ----------------------------------------------------------------------------

PROPERTIES_FILE = "properties.py"  # beside problem.toml: a package whose outputs are judged by properties ([problem] judge = "properties")


def properties_module(spec: Spec) -> Any:
    """The package's properties.py (public: the statement says what it checks, and the kit runs it),
    loaded from the package's folder. The author's code: it runs in the grader's process, as the reference does."""
    path = Path(spec.folder) / PROPERTIES_FILE
    if not path.is_file():
        raise SetupError(f'{spec.id} is judged by properties ([problem] judge = "properties"), but {path} is missing: write check() there')
    loaded = importlib.util.spec_from_file_location(f"_problem_properties_{spec.id.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(loaded)  # type: ignore[arg-type]
    loaded.loader.exec_module(module)  # type: ignore[union-attr]
    return module


_PROPERTIES: dict[Path, Any] = {}


def check_properties(case: Case, outputs: tuple[Tensor, ...], spec: Spec, tolerance: float | None = None) -> list[Property]:
    """What the package's check(args, outputs, tolerance) measures on a result: args are float64
    copies of the case's arguments, outputs float64 copies of what was returned (in its own dtype
    before the copy), tolerance the case's (Spec.tolerance) unless given."""
    path = Path(spec.folder) / PROPERTIES_FILE
    if path not in _PROPERTIES:
        _PROPERTIES[path] = properties_module(spec)
    tolerance = spec.tolerance(case.family, case.dtype) if tolerance is None else tolerance
    with torch.no_grad():
        found = _PROPERTIES[path].check(float64_args(case.args), tuple(o.detach().to(torch.float64) for o in outputs), tolerance)
    if not found or not all(isinstance(p, Property) for p in found):
        raise SetupError(f"{path}: check() must return a non-empty list of grader.case.Property")
    return list(found)


def public_case_file(case: Case, expected: Expected, spec: Spec) -> dict[str, object]:
    """What `--save-public` writes for a public case (and the kit holds in cases/<name>.pt): the
    arguments by name, the upstream gradients (grad_output, or grad_output_<i> for several outputs),
    expected_<output> and expected_grad_<input>, and the sizes a report shows (shape); for a class,
    steps (each step's arguments); where parameters are updated in place, expected_updated (by the
    names the child sends them under: after_<name>[.i][@step])."""
    upstream = {"grad_output": case.upstream[0]} if len(case.upstream) == 1 else {f"grad_output_{i}": u for i, u in enumerate(case.upstream)}
    saved = {
        **case.args,
        **upstream,
        **{f"expected_{declared.name}": output for declared, output in zip(spec.returned, expected.outputs, strict=True)},
        **{f"expected_grad_{name}": grad for name, grad in expected.grads.items()},
        "shape": dict(case.shape),
    }
    if case.steps:
        saved["steps"] = [dict(step) for step in case.steps]
    if expected.updated:
        saved["expected_updated"] = dict(expected.updated)
    return saved


def read_public_case(saved: dict[str, object], template: CaseTemplate, spec: Spec) -> tuple[Case, Expected]:
    """A case and its expected results back from what public_case_file wrote (the kit's check.py)."""
    args = {name: saved[name] for name in spec.parameter_names}
    floats = [args[p.name] for p in spec.parameters if p.tensor and p.dtype == FLOAT]
    first = floats[0][0] if floats and isinstance(floats[0], list) else floats[0] if floats else None
    dtype = str(first.dtype).removeprefix("torch.") if first is not None else str(template.settings["dtype"])  # type: ignore[union-attr]
    count = len(spec.returned)
    upstream = () if not spec.gradient_wrt else (saved["grad_output"],) if count == 1 else tuple(saved[f"grad_output_{i}"] for i in range(count))
    outputs = tuple(saved[f"expected_{declared.name}"] for declared in spec.returned)
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
        steps=tuple(saved.get("steps", ())),  # type: ignore[arg-type]
        method=spec.method,
        keywords=tuple(p.name for p in spec.parameters if p.keyword),
    )
    grads = {name: saved[f"expected_grad_{name}"] for name in spec.gradient_wrt}
    return case, Expected(outputs, grads, dict(saved.get("expected_updated", {})))  # type: ignore[arg-type,misc]
