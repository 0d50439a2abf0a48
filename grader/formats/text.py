"""The human report: a compact table of the cases, the verdict's message, hints and the submission's output."""

import textwrap

from grader.results import CaseResult, Report, Verdict
from grader.spec import Spec

OUTPUT_SHOWN = 2000  # characters of the submission's stdout/stderr shown in the human report
DIAGNOSIS_WIDTH = 110  # characters per line of the diagnosis in the human report


def _number(x: float | None) -> str:
    return "-" if x is None else f"{x:.1e}"


def _seconds(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.0f}ms"


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
