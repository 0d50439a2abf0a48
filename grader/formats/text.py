"""The human report: a compact table of the cases, the verdict's message, hints and the submission's output."""

import textwrap
from collections.abc import Callable

from grader.formats.points import points_line, rejected_as_a_whole
from grader.formats.safe import printable
from grader.results import CaseResult, Check, Report, Verdict, deciding_case
from grader.spec import Spec

OUTPUT_SHOWN = 2000  # characters of the submission's stdout/stderr shown in the human report
ERROR_COLUMN = "error / max|expected|"  # CaseResult.max_rel: the quantity the tolerance bounds
DIAGNOSIS_WIDTH = 110  # characters per line of the diagnosis in the human report


def _number(x: float | None) -> str:
    return "-" if x is None else f"{x:.1e}"


def _seconds(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.0f}ms"


def _grouped(cases: list[CaseResult], message: Callable[[CaseResult], str]) -> list[tuple[str, list[CaseResult]]]:
    """The cases by their message, each distinct message once with the cases it applies to, in the
    order of each message's first case."""
    groups: dict[str, list[CaseResult]] = {}
    for case in cases:
        groups.setdefault(message(case), []).append(case)
    return list(groups.items())


def _names(cases: list[CaseResult]) -> str:
    return ", ".join(c.name for c in cases)


def _wrapped(text: str) -> list[str]:
    """A line of case names, wrapped as the diagnosis is."""
    return textwrap.wrap(text, DIAGNOSIS_WIDTH, break_on_hyphens=False, break_long_words=False)


def _headed(cases: list[CaseResult], note: str, message: str) -> list[str]:
    """`case a: message`, or `cases a, b, ...: message` with a long list of names wrapped."""
    *names, last = _wrapped(f"case{'s' if len(cases) > 1 else ''} {_names(cases)}{note}:")
    return [*names, f"{last} {message}"]


def _messages(report: Report, failed: list[CaseResult], verbose: bool) -> list[str]:
    """The failing cases' messages after the verdict's own (report.message, which holds the first
    failing case's): each distinct message once, naming the cases it applies to; without verbose,
    the first three other messages."""
    first = deciding_case(failed)  # as judge.overall() chooses
    groups = _grouped(failed, lambda c: c.message)
    lines = []
    same = [c for c in failed if c.message == first.message and c is not first]
    if same:
        lines += ["", *_wrapped(f"(the same message for {len(same)} more case{'s' if len(same) > 1 else ''}: {_names(same)})")]
    others = [(message, cases) for message, cases in groups if message != first.message]
    shown = others if verbose else others[:3]
    for message, cases in shown:
        lines += ["", *_headed(cases, "", message)]
    left = sum(len(cases) for _, cases in others[len(shown) :])
    if left:
        lines.append(f"\n({left} more failing case{'s' if left > 1 else ''} with {len(others) - len(shown)} other messages; --verbose shows each)")
    return lines


def _tolerance(case: CaseResult, spec: Spec | None) -> float | None:
    """The tolerance the row's error is held to: the one the judge compared it with, else (a row
    without an error) the first output's, or the gradient's when the gradient check failed."""
    if case.tolerance is not None:
        return case.tolerance
    if spec is None or case.family not in spec.families or case.dtype not in spec.tolerances:
        return None
    return spec.tolerance(case.family, case.dtype, gradient=case.check == Check.GRADIENT)


def _printed(name: str, text: str, kept_bytes: int | None) -> list[str]:
    """What the submission printed on `name`, under a heading; beginning and end when it is long."""
    lines = ["", f"--- what your submission printed on {name} ---"]
    if len(text) <= OUTPUT_SHOWN:
        return lines + [text.rstrip()]
    half = OUTPUT_SHOWN // 2
    kept = f"the first {kept_bytes // 1024} KiB" if kept_bytes is not None else "more"
    note = f"[... {len(text) - 2 * half} characters not shown here; the JSON report (--json) keeps {kept} ...]"
    return lines + [text[:half].rstrip(), note, text[-half:].rstrip()]


def _verdict_line(report: Report) -> str:
    if report.public_only and report.verdict == Verdict.ACCEPTED:
        return "Verdict:    none: the public cases passed, the hidden cases were not run"
    return f"Verdict:    {report.verdict.value.upper()}" + (" (public cases only)" if report.public_only else "")


def _withheld(report: Report) -> list[str]:
    """For staff: what the candidate's report leaves out, each hidden case's whole message."""
    lines = []
    for message, cases in _grouped([c for c in report.cases if c.staff_message], lambda c: c.staff_message):
        lines += ["", *_headed(cases, " (hidden)", message)]
    if lines or report.staff_stdout is not None or report.staff_stderr is not None:
        lines = ["", "--- withheld from the candidate (staff view): the whole messages, and all the submission printed ---", *lines]
    return lines


def _headed_lines(label: str, sentences: list[str]) -> list[str]:
    """`Label:     sentence`, each sentence wrapped, its later lines indented under the first."""
    lines = []
    for i, sentence in enumerate(sentences):
        wrapped = textwrap.wrap(sentence, DIAGNOSIS_WIDTH, break_on_hyphens=False) or [""]
        lines += [(f"{label + ':':12}" if i == 0 else " " * 12) + wrapped[0], *(" " * 12 + line for line in wrapped[1:])]
    return lines


def _what_failed(report: Report, whole: bool, ran: bool, verbose: bool) -> list[str]:
    """The verdict's message, the other failing cases' messages and the hints."""
    public_passed = report.public_only and report.verdict == Verdict.ACCEPTED
    if report.verdict == Verdict.ACCEPTED:
        return [] if public_passed else [report.message]
    lines = [report.message]
    failed = [c for c in report.cases if not c.passed and c.status != "not_run"]
    if failed and (ran or not whole):  # a start-up failure's message is the verdict's alone
        lines += _messages(report, failed, verbose)
    for hint in report.hints:
        lines += ["", "Hint: " + hint]
    return lines


def render_text(report: Report, spec: Spec | None, verbose: bool = False, staff: bool = False, points: float | None = None, isolation: bool = False) -> str:
    """The human report, what a student reads first at the top: the verdict, the points out of
    `points` (counted as every platform format counts them; none for a public run or a grader
    fault), how the submission was read, the diagnosis, then what failed, then the table of cases.
    staff=True adds what the candidate's report withholds (CaseResult.withhold) and how the
    submission was walled in (isolation=True: that alone, for the candidate's own kit, whose run is
    theirs). spec None: the spec could not be read (a grader_error): no tolerances are shown."""
    lines = [f"Submission: {report.submission}", _verdict_line(report)]
    whole = rejected_as_a_whole(report)
    ran = any(c.seconds is not None or c.check for c in report.cases)
    if points is not None and spec is not None and not report.public_only and report.verdict != Verdict.GRADER_ERROR:
        lines.append(f"Points:     {points_line(report, spec.scoring, points)}")
    elif report.cases and not whole:
        lines.append(f"Score:      {sum(c.passed for c in report.cases)}/{len(report.cases)} cases")
    if report.cases and whole and ran:  # a forbidden use during a case
        lines.append(f"Cases:      not listed ({len(report.cases)} cases): a forbidden use decides the whole run")
    elif report.cases and whole:  # a start-up failure: no row would say more than "not run"
        lines.append(f"Cases:      none run ({len(report.cases)} cases): the submission failed before the first case")
    lines += _headed_lines("Note", report.notes)
    lines += _headed_lines("Diagnosis", report.diagnosis)
    said = _what_failed(report, whole, ran, verbose)
    if said:
        lines += ["", *said]
    lines.append("")
    if report.cases and not whole:
        header = f"{'case':34} {'family':16} {'dtype':7} {'shape':32} {'result':23} {ERROR_COLUMN:>21} {'tolerance':>9} {'time':>6}"
        lines += [header, "-" * len(header)]
        for c in report.cases:
            result = "ok" if c.passed else c.status.replace("_", " ") + (f" ({c.check})" if c.check else "")
            error, tolerance = _number(c.max_rel), _number(_tolerance(c, spec))
            lines.append(f"{c.name:34} {c.family:16} {c.dtype:7} {c.shape:32} {result:23} {error:>21} {tolerance:>9} {_seconds(c.shown_seconds(staff)):>6}")
        lines.append("")
    if staff:
        lines += _withheld(report)
    for name, text, whole_text in (("stdout", report.stdout, report.staff_stdout), ("stderr", report.stderr, report.staff_stderr)):
        text = whole_text if staff and whole_text is not None else text
        if text.strip():
            lines += _printed(name, text, spec.limits.output_bytes if spec else None)
    # How the child was walled in is for staff: a student reads the seed's public id and the time.
    walls = f", isolation: {report.isolation}" if staff or isolation else ""
    lines += ["", f"seed {report.seed_id}{walls}, {report.seconds:.1f}s"]
    if report.public_only and report.verdict == Verdict.ACCEPTED:  # the last word: a pass of the public cases is not a verdict
        lines += ["", report.message]
    elif report.public_only:
        lines += ["", "public cases only; hidden cases not run"]
    return printable("\n".join(lines))  # what the submission chose (messages, output, its file's name) made inert
