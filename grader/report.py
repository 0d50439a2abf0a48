"""Hints: what a failure pattern usually means. The report's formats are in grader/formats/."""

from grader.results import WRONG_NUMBERS, Check, Report, Verdict
from grader.spec import PROBE_FAMILY, Spec

# A family's hint is about its numbers: it is shown only when its cases fail these checks. A wrong
# selection rule changes M in a soft-mask case, so that hint needs a wrong shape (a gather in the
# wrong order or an in-place change of the mask also fails only there, and is not about the rule).
FAMILY_HINT_CHECKS = {"soft_mask": {Check.SHAPE}}  # any other family's: WRONG_NUMBERS


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
    some cases pass) every failing case shares a family or a dtype. The probe cases are no trait
    of their own (the diagnosis reads them), so they do not count as a family."""
    failed = [c for c in report.cases if c.status == Verdict.WRONG_ANSWER]
    if not failed or report.verdict != Verdict.WRONG_ANSWER:  # a crash or a refusal decides: a pattern of wrong numbers says nothing of it
        return []

    found = []
    checks = {c.check for c in failed}
    if len(failed) < len(report.cases):
        families = {c.family for c in failed if c.family != PROBE_FAMILY}
        family = next(iter(families)) if len(families) == 1 else None
        if family and spec.families[family].hint and checks <= FAMILY_HINT_CHECKS.get(family, WRONG_NUMBERS):
            found.append(spec.families[family].hint)
        float64 = spec.families.get("float64")
        if float64 and float64.hint and families and families != {"float64"} and all(c.dtype == "float64" for c in failed) and checks <= WRONG_NUMBERS:
            found.append(float64.hint)
    if checks == {Check.GRADIENT} and not _diagnosis_placed_gradient(report, spec):
        found.append(spec.hints.get("gradient", DEFAULT_HINTS["gradient"]))
    if checks == {Check.INPUTS}:
        found.append(spec.hints.get("inputs", DEFAULT_HINTS["inputs"]))
    return found


def _diagnosis_placed_gradient(report: Report, spec: Spec) -> bool:
    """The diagnosis, where the probes ran, already says where the gradient is cut: a hint naming a
    place of its own could contradict it."""
    if not spec.diagnosis:
        return False
    from grader.diagnosis import CONCLUSIONS  # here: it imports torch, which a batch imports only once its children start

    return any(s in report.diagnosis for s in (CONCLUSIONS["gradient_outside"], CONCLUSIONS["gradient_blocks"]))
