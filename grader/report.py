"""Hints: what a failure pattern usually means. The report's formats are in grader/formats/."""

from grader.results import WRONG_NUMBERS, Check, Report, Verdict
from grader.spec import Spec

# What a failure pattern usually means whatever the problem; a package's [hints] may say it in its own terms.
DEFAULT_HINTS = {
    "gradient": (
        "Only the gradient check fails: the values are right but the gradients are not, so a step is cut off from autograd. "
        "Every step must stay on the autograd graph (no torch.no_grad(), .detach(), .numpy() or .item())."
    ),
    "inputs": "Only the inputs check fails: an in-place operation (x += ..., .add_(), item assignment) changed an argument; work on new tensors instead.",
}


def hints(report: Report, spec: Spec) -> list[str]:
    """What a failure pattern usually means: every failing case fails one kind of check, or (when
    some cases pass) every failing case shares a family (its hint, where its cases fail the checks
    the family's hint_checks name, by default those about the numbers) or is float64 ([hints]
    float64). The probe cases are no trait of their own (the diagnosis reads them), so their family
    does not count."""
    failed = [c for c in report.cases if c.status == Verdict.WRONG_ANSWER]
    if not failed or report.verdict != Verdict.WRONG_ANSWER:  # a crash or a refusal decides: a pattern of wrong numbers says nothing of it
        return []

    found = []
    checks = {c.check for c in failed}
    probes = spec.diagnosis.probes if spec.diagnosis is not None else {}
    if len(failed) < len(report.cases):
        families = {c.family for c in failed if c.name not in probes}
        family = next(iter(families)) if len(families) == 1 else None
        if family and spec.families[family].hint and checks <= (spec.families[family].hint_checks or WRONG_NUMBERS):
            found.append(spec.families[family].hint)
        float64 = spec.hints.get("float64")
        if float64 and families and all(c.dtype == "float64" for c in failed) and checks <= WRONG_NUMBERS and float64 not in found:
            found.append(float64)
    if checks == {Check.GRADIENT} and not _diagnosis_placed_gradient(report, spec):
        found.append(spec.hints.get("gradient", DEFAULT_HINTS["gradient"]))
    if checks == {Check.INPUTS}:
        found.append(spec.hints.get("inputs", DEFAULT_HINTS["inputs"]))
    return found


def _diagnosis_placed_gradient(report: Report, spec: Spec) -> bool:
    """The diagnosis, where the probes ran, already says where the gradient is cut: a hint naming a
    place of its own could contradict it."""
    return spec.diagnosis is not None and bool(spec.diagnosis.gradient_parts & set(report.diagnosis_keys))
