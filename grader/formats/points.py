"""What the platform formats share: points per case, and how a run that judged no case is told.

A submission is either judged case by case, or rejected as a whole before any case could be judged
(unreadable, forbidden functionality, no usable entry point, a failed start, a fault of the
grader). The second kind scores 0 in every mode and is shown as one explanatory entry, because a
list of cases that never ran says nothing.
"""

import argparse
import math
from dataclasses import dataclass

from grader.results import NOT_RUN, CaseResult, Report, Verdict, deciding_case
from grader.spec import Scoring

DEFAULT_POINTS = 100.0

TITLES = {
    Verdict.ACCEPTED: "Accepted",
    Verdict.WRONG_ANSWER: "Wrong answer",
    Verdict.FORBIDDEN_API: "Forbidden API",
    Verdict.COMPILE_ERROR: "Compile error",
    Verdict.INVALID_SUBMISSION: "Invalid submission",
    Verdict.RUNTIME_ERROR: "Runtime error",
    Verdict.TIME_LIMIT_EXCEEDED: "Time limit exceeded",
    Verdict.MEMORY_LIMIT_EXCEEDED: "Memory limit exceeded",
    Verdict.GRADER_ERROR: "Grader error",
}

GRADER_FAULT = (
    "The autograder failed while grading this submission; this is not the submission's fault and it scores nothing for now. "
    "Course staff can see the details; submit again later or ask them."
)


def rejected_as_a_whole(report: Report) -> bool:
    """True when no case was judged on its own: the whole run has one verdict and one message."""
    if report.verdict in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER):
        return False
    if report.verdict in (Verdict.FORBIDDEN_API, Verdict.COMPILE_ERROR, Verdict.INVALID_SUBMISSION, Verdict.GRADER_ERROR):
        return True
    # A failed start gives every case the run's verdict without running any of them.
    return not report.cases or all(c.status == report.verdict and c.seconds is None for c in report.cases)


def case_output(case: CaseResult) -> str:
    """What a case entry says: its failure message, or what it was when it passed or never ran."""
    if case.passed:
        return f"passed ({case.dtype}, {case.shape})"
    if case.status == NOT_RUN:
        return "not run: an earlier case ended the run"
    return case.message


def first_line(text: str) -> str:
    """A message in one line: its first, with the next when the first only introduces a list
    ("1 use of forbidden APIs (...):" says nothing without the use it lists)."""
    lines = text.strip().splitlines()
    if not lines:
        return ""
    return f"{lines[0]} {lines[1].strip()}" if len(lines) > 1 and lines[0].endswith(":") else lines[0]


@dataclass(frozen=True)
class Marks:
    """Points per case (both lists follow report.cases; empty when rejected as a whole) and in total.

    `available` adds up, as floats in the cases' order (as a platform adds its tests' maxima), to
    exactly `maximum`: each case's share is whole hundredths of a point, but for the last one, which
    also takes the rounding of the sum (a few units in the last place). `total` is whole hundredths."""

    earned: list[float]
    available: list[float]
    total: float
    maximum: float


def _shares(points: float, weights: list[float]) -> list[int]:
    """points split in proportion to weights, in hundredths of a point that add up exactly
    (largest remainders get the leftover hundredths, earlier cases first on ties)."""
    units = round(points * 100)
    exact = [units * w / sum(weights) for w in weights]
    shares = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in order[: units - sum(shares)]:
        shares[i] += 1
    return shares


def added_in_order(values: list[float]) -> float:
    """values added one after the other as floats, the way a platform or a spreadsheet adds them
    (not math.fsum, and not Python's sum, which compensates from 3.12 on)."""
    total = 0.0
    for value in values:
        total += value
    return total


def ending_exactly(values: list[float], total: float) -> list[float]:
    """values with the last one changed by the least amount that makes added_in_order give exactly total."""
    if not values:
        return values
    head = added_in_order(values[:-1])
    last = total - head
    # Exact at once when head is at least half of total (Sterbenz); else last is at least half of total,
    # so a step of one unit in its last place moves the sum by a unit of total's at most: a step or two.
    while head + last != total:
        last = math.nextafter(last, math.inf if head + last < total else -math.inf)
    return [*values[:-1], last]


def marks(report: Report, scoring: Scoring, points: float = DEFAULT_POINTS) -> Marks:
    """The points each case earns out of `points` for the whole submission, under the spec's scoring."""
    if round(points * 100) < 1:
        raise ValueError(f"points must be at least 0.01, not {points}")
    maximum = round(points * 100) / 100
    if rejected_as_a_whole(report) or not report.cases:
        return Marks([], [], 0.0, maximum)
    shares = _shares(points, [scoring.weight(c.family) for c in report.cases])
    available = ending_exactly([s / 100 for s in shares], maximum)
    if scoring.mode == "per_case":
        earning = [c.passed for c in report.cases]
    else:  # all_or_nothing: every case must pass
        earning = [report.verdict == Verdict.ACCEPTED] * len(shares)
    earned = [a if earns else 0.0 for a, earns in zip(available, earning, strict=True)]
    total = sum(s for s, earns in zip(shares, earning, strict=True) if earns) / 100
    return Marks(earned, available, total, maximum)


def shown_points(value: float) -> str:
    """Points as a gradebook shows them: hundredths, without trailing zeros (100, 12.5, 0.33)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def points_line(report: Report, scoring: Scoring, points: float) -> str:
    """The points a report earns, out of the maximum, with the rule that gave them: what a student
    reads first (`0 / 10 (all or nothing: every case must pass; 13 of 52 cases passed)`), counted by
    marks() as every platform format and the batch's gradebook count them."""
    result = marks(report, scoring, points)
    line = f"{shown_points(result.total)} / {shown_points(result.maximum)}"
    passed = sum(c.passed for c in report.cases)
    if not result.available:
        return line + " (no case was judged: the submission was rejected as a whole)"
    if report.verdict == Verdict.ACCEPTED:
        return line + f" (all {len(report.cases)} cases passed)"
    if scoring.mode == "all_or_nothing":
        return line + f" (all or nothing: every case must pass; {passed} of {len(report.cases)} cases passed)"
    return line + f" (per case: {passed} of {len(report.cases)} cases passed)"


def summary(report: Report, scoring: Scoring, result: Marks) -> str:
    """One line: the verdict, the cases passed and the points, with the rule that gave them."""
    line = f"{TITLES[report.verdict]}"
    if result.available:
        line += f": {sum(c.passed for c in report.cases)} of {len(report.cases)} cases passed"
    line += f"; {result.total:g} of {result.maximum:g} points"
    if result.available and scoring.mode == "all_or_nothing" and report.verdict != Verdict.ACCEPTED:
        line += " (all or nothing: every case must pass)"
    return line + "."


def submission_message(report: Report, where_told: str) -> str:
    """The submission-wide message for output a student sees at once. When the case that decided the
    verdict is hidden, only the counts: its name and message stay in its own test, and `where_told`
    says when or where the student reads that (e.g. "its test says what went wrong once the grades
    are published")."""
    first = deciding_case(report.cases) if not rejected_as_a_whole(report) else None
    if first is None or first.public:
        return report.message
    passed = sum(c.passed for c in report.cases)
    return f"{passed} of {len(report.cases)} cases passed; the first failing case is hidden: {where_told}."


def points_value(text: str) -> float:
    """--points: a finite number of at least 0.01 (points are shared in hundredths)."""
    try:
        points = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(points) or points < 0.01:
        raise argparse.ArgumentTypeError(f"must be a number of at least 0.01, not {text!r}")
    return points
