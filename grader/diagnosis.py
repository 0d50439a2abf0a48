"""What a wrong answer gets wrong, in a sentence or two, most likely first (deciding only: no I/O).

Everything here runs in the grader, on what the child returned for its failing cases (the checked
reply and the tensors the grader kept: an output of the wrong shape or dtype is described, not kept),
and knows no problem: what a package's probe cases prove is the package's data ([diagnosis] in its
problem.toml, grader/spec.py Diagnosis), its known mistakes its own code (reference/<module>/mistakes.py).
- checks that are not about numbers (type, dtype, device, inputs changed in place) say so;
- float64 results that are all float32 numbers mean the computation ran in float32;
- known mistakes: when a failing case's output matches, within the case's tolerance, a known wrong
  twin of the reference (the package's mistakes.MISTAKES), and that twin explains every failing
  case, it is named. `[diagnosis] known_mistakes = false` turns this off (exams), and so does the
  absence of reference/ (a candidate's kit);
- probe cases switch parts of the computation off or make them trivial; which give right values and
  which wrong ones locates the fault (`localise`): a probe with right values proves right every part
  it depends on, and the smallest set of parts that explains every failing probe, when it is the only
  one, is named. The evidence is told from the outcomes themselves, as the table shows them, so the
  diagnosis never says of a probe what the table contradicts.
"""

import itertools
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from grader.case import Case
from grader.child.vjp import vector_jacobian
from grader.compare import bitwise_equal, compare_values
from grader.results import NOT_NUMBERS, NOT_RUN, WRONG_LOGITS, WRONG_NUMBERS, CaseResult, Check, Verdict
from grader.spec import Diagnosis, Spec, hidden_module

Received = dict[str, tuple[dict[str, Any], dict[str, Tensor]]]  # case name -> (reply, tensors), failing cases only

LARGEST_EXPLANATION = 3  # more faults at once than this: the probes cannot tell them apart
SEVERAL = (
    "The probe cases show faults in {count} parts at once (each failing probe is explained by one of them, "
    "and no one part explains them all); fix them one at a time: "
)

# A twin's values are compared on every failing case, its gradients (a backward pass each) on the
# first few only: a step cut off from autograd shows on any case.
GRADIENT_CASES = 3

PRECISION = (
    "Your float64 {noun} are all float32 numbers: the computation runs in float32 somewhere. Compute in the dtype of the inputs "
    "(no .float(), no float32 tensors of constants)."
)
RIGHT = ("ok", "gradient")  # the outcomes of a probe whose values are right


def noun(spec: Spec) -> str:
    """How a sentence names what the call returns: the one output's `what` ("the logits" -> "logits"), else "results"."""
    returned = spec.returned
    return returned[0].what.removeprefix("the ") if len(returned) == 1 else "results"


@dataclass(frozen=True)
class Failure:
    case: Case
    result: CaseResult
    reply: dict[str, Any]  # the child's checked reply: "output" describes the result (type, shape, dtype, device)
    tensors: dict[str, Tensor]  # the tensors kept: output, grad_<input>, after_<input>

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The shape of the returned tensor, from its description (the tensor itself is not kept
        when the shape is wrong)."""
        shape = self.reply.get("output", {}).get("shape")
        return tuple(shape) if isinstance(shape, list) else None


@dataclass(frozen=True)
class Finding:
    sentences: list[str]
    checks: tuple[Check, ...] = ()  # the checks not about numbers (NOT_NUMBERS) that got a sentence
    precision: bool = False  # the float64 results are float32 numbers
    mistake: str | None = None  # the name of the twin in the package's mistakes.py
    parts: tuple[str, ...] = ()  # the parts ([diagnosis.parts]) the probes show wrong

    @property
    def part(self) -> str | None:
        """The part, when the probes show exactly one wrong."""
        return self.parts[0] if len(self.parts) == 1 else None

    def keys(self) -> set[str]:
        """What was found, by name: the checks, "precision", the mistake's and the parts' names."""
        return {*self.checks, *(["precision"] if self.precision else []), *filter(None, (self.mistake,)), *self.parts}


def diagnose(cases: list[Case], results: list[CaseResult], received: Received, spec: Spec) -> list[str]:
    """The diagnosis of a wrong answer: one or two short sentences, most likely first. `received`
    maps the name of each failing case to the child's reply and the tensors kept from it."""
    return analyse(cases, results, received, spec).sentences


def analyse(cases: list[Case], results: list[CaseResult], received: Received, spec: Spec) -> Finding:
    by_name = {case.name: case for case in cases}
    failures = [Failure(by_name[r.name], r, *received.get(r.name, ({}, {}))) for r in results if r.status == Verdict.WRONG_ANSWER and r.name in by_name]
    if not failures:
        return Finding([])
    checks = {check: sentence for check in NOT_NUMBERS if (sentence := _check_sentence(check, failures, spec))}
    sentences = [checks[check] for check in checks if check != Check.INPUTS]
    numeric = [f for f in failures if f.result.check in WRONG_NUMBERS and (_is_float(f.tensors.get("output")) or f.shape is not None)]

    precision = _float32_precision(numeric)
    if precision:
        sentences.append(PRECISION.format(noun=noun(spec)))
        numeric = [f for f in numeric if f.case.dtype != "float64"]  # the float64 cases fail by rounding alone

    mistake = None
    if spec.known_mistakes and numeric:
        named = _name_mistake(numeric, spec)
        if named:
            mistake, sentence = named
            sentences.append(sentence)

    parts: tuple[str, ...] = ()
    if spec.diagnosis is not None and not precision:
        model = spec.diagnosis
        shape_part = _shape_part(failures, model, spec)
        outcomes = probe_outcomes(results, model, received)
        parts = (shape_part,) if shape_part else localise(outcomes, model)
        sentences += conclusions(parts, outcomes, model, noun(spec), evidence=not shape_part)
    if Check.INPUTS in checks:  # the least likely to be the first thing to fix: the numbers are right
        sentences.append(checks[Check.INPUTS])
    return Finding(sentences, tuple(checks), precision, mistake, parts)


def conclusions(parts: tuple[str, ...], outcomes: dict[str, str], model: Diagnosis, noun: str = "values", evidence: bool = True) -> list[str]:
    """One part: its conclusion, after its premise where the package gives one (which says what the
    probes prove right only when they did). Several: each part's fix. Then the evidence: the probes
    whose values are wrong, and those whose values are right but whose gradient is not."""
    if not parts:
        return []
    if len(parts) == 1:
        part = model.parts[parts[0]]
        premise = model.premises.get(part.premise)
        if premise is None:
            text = part.conclusion
        else:
            text = (premise.holds if all(outcomes.get(p) in RIGHT for p in premise.probes) else premise.otherwise) + part.conclusion
    else:
        fixes = (f"({i}) in {model.parts[part].fix or model.parts[part].conclusion}" for i, part in enumerate(parts, 1))
        text = SEVERAL.format(count=len(parts)) + "; ".join(fixes) + "."
    return [text + (_evidence(outcomes, noun) if evidence else "")]


def _evidence(outcomes: dict[str, str], noun: str) -> str:
    """The probes' outcomes as the table shows them: never a claim the table contradicts."""
    wrong = [name for name, outcome in outcomes.items() if outcome in ("values", "nonfinite")]
    cut = [name for name, outcome in outcomes.items() if outcome == "gradient"]
    said = []
    if wrong:
        said.append(f"wrong {noun}: {', '.join(wrong)}")
    if cut:
        said.append(f"right {noun} but a wrong gradient: {', '.join(cut)}")
    return f" (Probe cases with {'; with '.join(said)}.)" if said else ""


# -- probes ---------------------------------------------------------------------------------------
def probe_outcomes(results: list[CaseResult], model: Diagnosis, received: Received | None = None) -> dict[str, str]:
    """For each probe case that ran: "ok", "values" (wrong values), "nonfinite" (wrong values with
    NaN or inf: a zeroed matrix no longer switches a path off, NaN * 0 is NaN), "gradient" (right
    values, wrong gradient) or "unknown" (it raised, or failed a check that says nothing about the numbers)."""
    outcomes = {}
    for r in results:
        if r.name not in model.probes or r.status == NOT_RUN:
            continue
        if r.passed or (r.status == Verdict.WRONG_ANSWER and r.check == Check.INPUTS):  # values were checked before inputs
            outcomes[r.name] = "ok"
        elif r.status == Verdict.WRONG_ANSWER and r.check in WRONG_LOGITS:
            output = (received or {}).get(r.name, ({}, {}))[1].get("output")
            outcomes[r.name] = "nonfinite" if _is_float(output) and not bool(torch.isfinite(output).all()) else "values"
        elif r.status == Verdict.WRONG_ANSWER and r.check == Check.GRADIENT:
            outcomes[r.name] = "gradient"
        else:
            outcomes[r.name] = "unknown"
    return outcomes


def localise(outcomes: dict[str, str], model: Diagnosis) -> tuple[str, ...]:
    """The parts the probe outcomes show wrong, or () when they prove nothing.

    Only the probes that ran count. A probe with right values proves right every part it depends on;
    each probe with wrong values has a fault in one of its parts not proven right. The answer is the
    smallest set of parts that explains every failing probe, when there is exactly one such set: a
    part is never named where another, as small, explanation exists. With every probe's values right
    and some gradients wrong, the gradient part of those probes that comes first in [diagnosis.parts]."""
    order = list(model.parts)
    wrong = {name for name, outcome in outcomes.items() if outcome in ("values", "nonfinite")}
    if not wrong:
        cut = {model.probes[name].gradient for name, outcome in outcomes.items() if outcome == "gradient"} - {""}
        return (min(cut, key=order.index),) if cut else ()
    right = frozenset().union(*(model.probes[name].parts for name, outcome in outcomes.items() if outcome in RIGHT))
    suspects = []
    for name in wrong:
        # NaN or inf pass through a zeroed matrix: such a probe then depends on every part NaN can come from.
        extra = model.nonfinite_parts if outcomes[name] == "nonfinite" and name in model.nonfinite_probes else frozenset()
        suspects.append((model.probes[name].parts | extra) - right)
    # NaN or inf that no part explains, with the parts before them proven right, is a finding of its own.
    nonfinite = any(outcomes[name] == "nonfinite" and name in model.nonfinite_probes for name in wrong)
    fallback = (model.nonfinite_fallback,) if model.nonfinite_fallback and nonfinite and model.nonfinite_proven <= right else ()
    if not all(suspects):  # a failing probe whose parts are all proven right: the model of the probes does not fit
        return fallback
    candidates = sorted(frozenset().union(*suspects))
    for size in range(1, LARGEST_EXPLANATION + 1):
        explanations = [chosen for chosen in itertools.combinations(candidates, size) if all(set(chosen) & parts for parts in suspects)]
        if len(explanations) == 1:
            named = {model.parts[part].told_as or part for part in explanations[0]}
            return tuple(sorted(named, key=order.index))
        if explanations:  # as small and as good as another: the probes cannot tell which
            return fallback
    return fallback


def _shape_part(failures: list[Failure], model: Diagnosis, spec: Spec) -> str | None:
    """A result of the wrong shape may say by itself which part is wrong ([[diagnosis.shapes]]: a
    wrong size on one axis of an output points at a part), checked in the order the package gives."""
    names = [o.name for o in spec.returned]
    for output, axis, part in model.shapes:
        index = names.index(output)
        for f in failures:
            got = f.shape if spec.returns == "tensor" else _part_shape(f, index)
            want = f.case.output_shapes[index]
            if f.result.check == Check.SHAPE and got is not None and len(got) == len(want) and got[axis] != want[axis]:
                return part
    return None


def _part_shape(f: Failure, index: int) -> tuple[int, ...] | None:
    parts = f.reply.get("parts", [])
    shape = parts[index].get("shape") if index < len(parts) else None
    return tuple(shape) if isinstance(shape, list) else None


# -- checks that are not about numbers -------------------------------------------------------------
def _check_sentence(check: Check, failures: list[Failure], spec: Spec) -> str | None:
    failed = [f for f in failures if f.result.check == check]
    if not failed:
        return None
    what = " and ".join(o.what for o in spec.returned) or "the result"
    if check == Check.TYPE:
        return f"The result is not a plain torch.Tensor: return {what} itself (not a NumPy array, a list, a subclass of torch.Tensor or a sparse tensor)."
    if check == Check.DTYPE:
        f = failed[0]
        dtype = f.reply.get("output", {}).get("dtype")
        got = f" ({dtype} for {f.case.dtype} inputs)" if isinstance(dtype, str) else ""
        return (
            f"The result's dtype is not the inputs' dtype{got}: return {what} in the dtype of the float inputs (no .double(), .float() or .to() on the result)."
        )
    if check == Check.DEVICE:
        return "The result is not on the inputs' device: return it where the inputs are (no .to() or .cuda())."
    changed = sorted({name for f in failed for name in f.case.inputs if _changed(f, name)})
    names = ", ".join(changed) if changed else "an argument"
    return (
        f"Your call changes {names} in place ({what} are right): work on new tensors, with no in-place operation "
        "(x += ..., .add_(), .gt_(), item assignment) on an argument."
    )


def _changed(f: Failure, name: str) -> bool:
    after = f.tensors.get(f"after_{name}")
    return after is not None and not bitwise_equal(f.case.inputs[name], after)


def _is_float(t: Any) -> bool:
    return isinstance(t, Tensor) and t.dtype in (torch.float32, torch.float64)


def _float32_precision(numeric: list[Failure]) -> bool:
    """True when every failing float64 case returned logits that are all float32 numbers (and
    some are not zero): no float64 computation gives that."""
    wide = [f.tensors["output"] for f in numeric if f.case.dtype == "float64" and f.result.check == Check.VALUES and _is_float(f.tensors.get("output"))]
    if not wide:
        return False
    for out in wide:
        finite = out[torch.isfinite(out)].to(torch.float64)
        if not finite.count_nonzero() or not torch.equal(finite, finite.to(torch.float32).to(torch.float64)):
            return False
    return True


# -- known mistakes ---------------------------------------------------------------------------------
def _name_mistake(numeric: list[Failure], spec: Spec) -> tuple[str, str] | None:
    """The first twin (in the package's mistakes.MISTAKES order) that explains every failing case, as
    (name, sentence). A twin whose logits match but whose gradients do not is named only if no
    twin matches both, and the sentence says so."""
    try:
        MISTAKES = hidden_module(f"{spec.module}.mistakes").MISTAKES  # noqa: N806 - absent where the reference is (a candidate's kit)
    except ImportError:
        return None
    values_fail = any(f.result.check in WRONG_LOGITS for f in numeric)
    fallback = None
    for twin in MISTAKES:
        if twin.gradient_only == values_fail:  # right logits cannot explain wrong ones, and the reverse
            continue
        matches, gradients_left = set(), GRADIENT_CASES
        for f in numeric:  # stops at the first case the twin does not explain
            compare = gradients_left > 0 and all(_is_float(f.tensors.get(f"grad_{name}")) for name in f.case.differentiable)
            match = _explains(twin, f, spec, compare)
            if match is None:
                break
            gradients_left -= compare
            matches.add(match)
        else:
            if LOGITS_ONLY not in matches:
                return twin.name, _mistake_sentence(twin, matches, values_fail, noun(spec))
            fallback = fallback or (twin, matches)
    if fallback:
        return fallback[0].name, _mistake_sentence(*fallback, values_fail, noun(spec))
    return None


# How far a twin explains one failing case.
EXPLAINED = "explained"  # the logits (and the gradients, where compared) match
SHAPE_ONLY = "shape"  # a result of the wrong shape, not kept: the twin's result has that shape
LOGITS_ONLY = "logits"  # the logits match, the gradients do not


def _mistake_sentence(twin: Any, matches: set[str], values_fail: bool, noun: str) -> str:
    if not values_fail:
        return f"Your {noun} are right and your gradients match the reference {twin.what}: {twin.fix}."
    if LOGITS_ONLY in matches:
        return (
            f"Your {noun} match the reference {twin.what} ({twin.fix}), but your gradients differ from that variant's: "
            "something else is wrong too, perhaps a step cut off from autograd."
        )
    if matches == {SHAPE_ONLY}:
        return f"Your results have the shape of the reference {twin.what}: {twin.fix}."
    return f"Your {noun} match the reference {twin.what}: {twin.fix}."


def _explains(twin: Any, f: Failure, spec: Spec, compare_gradients: bool) -> str | None:
    """How far the twin explains this failing case (EXPLAINED, SHAPE_ONLY, LOGITS_ONLY), or None."""
    tolerance, gradient_tolerance = spec.tolerance(f.case.family, f.case.dtype), spec.tolerance(f.case.family, f.case.dtype, gradient=True)
    if f.result.check in WRONG_LOGITS:
        with torch.no_grad():
            output = twin(**_arguments(twin, f.case))
        if not _is_float(f.tensors.get("output")):  # not kept: only its description is left
            return SHAPE_ONLY if tuple(output.shape) == f.shape else None
        if not _close(output, f.tensors["output"], tolerance):
            return None
    if not compare_gradients:
        return EXPLAINED
    gradients_match = all(_close(want, f.tensors[f"grad_{name}"], gradient_tolerance) for name, want in _twin_grads(twin, f.case).items())
    if f.result.check == Check.GRADIENT:  # the logits are right: the gradients are all the twin can explain
        return EXPLAINED if gradients_match else None
    return EXPLAINED if gradients_match else LOGITS_ONLY


def _arguments(twin: Any, case: Case) -> dict[str, Any]:
    """The case's arguments by name, as a twin takes them: float tensors in float64 (in the case's
    dtype for a twin that computes in it)."""
    dtype = getattr(torch, case.dtype) if twin.in_case_dtype else torch.float64
    return {name: v.to(dtype) if isinstance(v, Tensor) and v.is_floating_point() else v for name, v in case.args.items()}


def _twin_grads(twin: Any, case: Case) -> dict[str, Tensor]:
    arguments = _arguments(twin, case)
    wrt = case.differentiable
    leaves = [arguments[name].clone().requires_grad_(True) for name in wrt]
    arguments |= dict(zip(wrt, leaves, strict=True))
    output = twin(**arguments)
    if not output.requires_grad or output.shape != case.grad_output.shape:
        return {name: torch.zeros_like(leaf) for name, leaf in zip(wrt, leaves, strict=True)}
    grads = vector_jacobian(output, leaves, case.grad_output.to(output.dtype))
    return {name: torch.zeros_like(leaf) if g is None else g for name, leaf, g in zip(wrt, leaves, grads, strict=True)}


def _close(want: Tensor, got: Tensor | None, tolerance: float) -> bool:
    """got is within tolerance of want, as the grader judges closeness; where want is not finite
    (a twin that overflows in float32), got must be non-finite at the same places."""
    if not _is_float(got) or tuple(got.shape) != tuple(want.shape):
        return False
    finite = torch.isfinite(want)
    if not torch.equal(finite, torch.isfinite(got)):
        return False
    return compare_values(want.detach()[finite], got[finite], tolerance, show_values=False).passed
