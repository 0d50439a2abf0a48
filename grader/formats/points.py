"""What the platform formats share: points per case, and how a run that judged no case is told.

A submission is either judged case by case, or rejected as a whole before any case could be judged
(unreadable, forbidden functionality, no usable entry point, a failed start, a fault of the
grader). The second kind scores 0 in every mode and is shown as one explanatory entry, because a
list of cases that never ran says nothing.
"""

from dataclasses import dataclass

from grader.results import NOT_RUN, CaseResult, Report, Verdict
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
    return text.strip().splitlines()[0] if text.strip() else ""


@dataclass(frozen=True)
class Marks:
    """Points per case (both lists follow report.cases; empty when rejected as a whole) and in total."""

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


def marks(report: Report, scoring: Scoring, points: float = DEFAULT_POINTS) -> Marks:
    """The points each case earns out of `points` for the whole submission, under the spec's scoring."""
    if round(points * 100) < 1:
        raise ValueError(f"points must be at least 0.01, not {points}")
    maximum = round(points * 100) / 100
    if rejected_as_a_whole(report) or not report.cases:
        return Marks([], [], 0.0, maximum)
    shares = _shares(points, [scoring.weight(c.family) for c in report.cases])
    if scoring.mode == "per_case":
        earned = [share if c.passed else 0 for c, share in zip(report.cases, shares, strict=True)]
    else:  # all_or_nothing: every case must pass
        earned = shares if report.verdict == Verdict.ACCEPTED else [0] * len(shares)
    return Marks([e / 100 for e in earned], [s / 100 for s in shares], sum(earned) / 100, maximum)


def summary(report: Report, scoring: Scoring, result: Marks) -> str:
    """One line: the verdict, the cases passed and the points, with the rule that gave them."""
    line = f"{TITLES[report.verdict]}"
    if result.available:
        line += f": {sum(c.passed for c in report.cases)} of {len(report.cases)} cases passed"
    line += f"; {result.total:g} of {result.maximum:g} points"
    if result.available and scoring.mode == "all_or_nothing" and report.verdict != Verdict.ACCEPTED:
        line += " (all or nothing: every case must pass)"
    return line + "."
