"""Renders a Report: a compact human table, or one JSON object (Gradescope-like case entries)."""

import json
import math
import textwrap
from typing import Any

import torch

from grader import __version__
from grader.diagnosis import PROBE_FAMILY
from grader.results import CaseResult, Report, Verdict
from grader.spec import Spec

OUTPUT_SHOWN = 2000  # characters of the submission's stdout/stderr shown in the human report
DIAGNOSIS_WIDTH = 110  # characters per line of the diagnosis in the human report


def _number(x: float | None) -> str:
    return "-" if x is None else f"{x:.1e}"


def _seconds(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.0f}ms"


# A family's hint is about its numbers: it is shown only when its cases fail these checks. A wrong
# selection rule changes M in a soft-mask case, so that hint needs a wrong shape (a gather in the
# wrong order or an in-place change of the mask also fails only there, and is not about the rule).
FAMILY_HINT_CHECKS = {"soft_mask": {"shape"}}
VALUE_CHECKS = {"values", "shape", "gradient"}


def hints(report: Report, spec: Spec) -> list[str]:
    """What a failure pattern usually means: every failing case fails one kind of check, or (when
    some cases pass) every failing case shares a family or a dtype. The probe cases are no trait
    of their own (the diagnosis reads them), so they do not count as a family."""
    failed = [c for c in report.cases if c.status == Verdict.WRONG_ANSWER]
    if not failed:
        return []
    found = []
    checks = {c.check for c in failed}
    if len(failed) < len(report.cases):
        families = {c.family for c in failed if c.family != PROBE_FAMILY}
        family = next(iter(families)) if len(families) == 1 else None
        if family and spec.families[family].hint and checks <= FAMILY_HINT_CHECKS.get(family, VALUE_CHECKS):
            found.append(spec.families[family].hint)
        if families and families != {"float64"} and all(c.dtype == "float64" for c in failed) and checks <= VALUE_CHECKS:
            found.append(spec.families["float64"].hint)
    if checks == {"gradient"}:
        found.append(
            "Only the gradient check fails: the values are right but the gradients are not. "
            "The head must use w_emb itself (x @ w_emb.T), not a detached or copied matrix, and the result "
            "must stay on the autograd graph (no torch.no_grad(), .detach(), .numpy() or .item())."
        )
    if checks == {"inputs"}:
        found.append(
            "Only the inputs check fails: an in-place operation (x += ..., .add_(), item assignment) changed an argument; work on new tensors instead."
        )
    return found


def _distinct(cases: list[CaseResult]) -> list[CaseResult]:
    """One case per distinct failure message, in order."""
    seen, kept = set(), []
    for case in cases:
        if case.message not in seen:
            seen.add(case.message)
            kept.append(case)
    return kept


def render_text(report: Report, spec: Spec, verbose: bool = False) -> str:
    lines = [f"Submission: {report.submission}", f"Verdict:    {report.verdict.value.upper()}"]
    if report.cases:
        lines.append(f"Score:      {sum(c.passed for c in report.cases)}/{len(report.cases)} cases")
    for i, sentence in enumerate(report.diagnosis):
        wrapped = textwrap.wrap(sentence, DIAGNOSIS_WIDTH, break_on_hyphens=False) or [""]
        lines += [("Diagnosis:  " if i == 0 else "            ") + wrapped[0], *("            " + line for line in wrapped[1:])]
    lines.append("")
    if report.cases:
        header = f"{'case':34} {'family':16} {'dtype':7} {'shape':32} {'result':22} {'max abs':>8} {'max rel':>8} {'time':>6}"
        lines += [header, "-" * len(header)]
        for c in report.cases:
            result = "ok" if c.passed else c.status.replace("_", " ") + (f" ({c.check})" if c.check else "")
            lines.append(
                f"{c.name:34} {c.family:16} {c.dtype:7} {c.shape:32} {result:22} {_number(c.max_abs):>8} {_number(c.max_rel):>8} {_seconds(c.seconds):>6}"
            )
        lines.append("")
    if report.verdict != Verdict.ACCEPTED:
        lines.append(report.message)
        failed = [c for c in report.cases if not c.passed and c.status != "not_run"]
        shown = failed[1:] if verbose else _distinct(failed)[1:4]
        for c in shown:
            lines += ["", f"case {c.name}: {c.message}"]
        if len(failed) > len(shown) + 1:
            lines.append(f"\n({len(failed) - len(shown) - 1} more failing cases; --verbose shows each)")
        for hint in report.hints:
            lines += ["", "Hint: " + hint]
    else:
        lines.append(report.message)
    for name, text in (("stdout", report.stdout), ("stderr", report.stderr)):
        if text.strip():
            shown = text if len(text) <= OUTPUT_SHOWN else "...\n" + text[-OUTPUT_SHOWN:]
            lines += ["", f"--- submission {name} ---", shown.rstrip()]
    lines += ["", f"seed {report.seed_id}, isolation: {report.isolation}, {report.seconds:.1f}s"]
    return "\n".join(lines)


def _json_number(x: float | None) -> float | str | None:
    """JSON has no inf or NaN: those become strings."""
    return x if x is None or math.isfinite(x) else str(x)


def to_json(report: Report) -> dict[str, Any]:
    return {
        "verdict": report.verdict.value,
        "score": report.score,
        "max_score": 1.0,
        "message": report.message,
        "diagnosis": report.diagnosis,
        "hints": report.hints,
        "submission": report.submission,
        "seed_id": report.seed_id,
        "isolation": report.isolation,
        "seconds": round(report.seconds, 3),
        "versions": {"grader": __version__, "torch": torch.__version__},
        "stdout": report.stdout,
        "stderr": report.stderr,
        "cases": [
            {
                "name": c.name,
                "family": c.family,
                "dtype": c.dtype,
                "shape": c.shape,
                "visibility": "visible" if c.public else "hidden",
                "status": c.status,
                "check": c.check,
                "score": 1.0 if c.passed else 0.0,
                "max_score": 1.0,
                "output": c.message,
                "max_abs_error": _json_number(c.max_abs),
                "max_rel_error": _json_number(c.max_rel),
                "seconds": None if c.seconds is None else round(c.seconds, 4),
            }
            for c in report.cases
        ],
    }


def render_json(report: Report) -> str:
    return json.dumps(to_json(report), indent=2, allow_nan=False, default=str)
