"""PrairieLearn's external-grader results.json: gradable, a score in [0, 1], a message and one test per case.

A submission that cannot be graded at all (unreadable, or no usable entry point) is `gradable: false`
by default: PrairieLearn then awards nothing, takes nothing and counts no attempt. A fault of the
grader is never counted against the student either.

Points: `score` is the submission's fraction of `--points`. Under per-case scoring each test carries
`points` and `max_points`, the maxima adding up to exactly `--points`; under all-or-nothing scoring a
test earns nothing on its own, so it carries no points, only its `message` ("passed" or what failed):
a passed case shown as "0 / 0.22" would tell the student something false. The top-level `message` and
`output` never name a hidden case: when one decided the verdict they give the counts, and its test
gives what the grader decided about it.
"""

import json
from typing import Any

from grader.formats.points import (
    DEFAULT_POINTS,
    GRADER_FAULT,
    TITLES,
    case_output,
    first_line,
    marks,
    rejected_as_a_whole,
    submission_message,
    summary,
)
from grader.formats.safe import printable_data
from grader.results import Report, Verdict
from grader.spec import Scoring

UNGRADABLE = (Verdict.COMPILE_ERROR, Verdict.INVALID_SUBMISSION)


def _status(report: Report, index: int) -> str:
    case = report.cases[index]
    if case.passed:
        return "passed"
    return TITLES.get(case.status, case.status.replace("_", " ")) + (f" ({case.check})" if case.check else "")


def to_prairielearn(report: Report, scoring: Scoring, points: float = DEFAULT_POINTS, gradable_compile_errors: bool = False) -> dict[str, Any]:
    """The results.json object. gradable_compile_errors=True counts compile_error and
    invalid_submission as graded attempts (score 0) instead of `gradable: false`."""
    result = marks(report, scoring, points)
    gradable = report.verdict != Verdict.GRADER_ERROR and (gradable_compile_errors or report.verdict not in UNGRADABLE)
    line = summary(report, scoring, result)
    message = GRADER_FAULT if report.verdict == Verdict.GRADER_ERROR else submission_message(report, "its test below says what went wrong")
    if rejected_as_a_whole(report):
        tests = [
            {
                "name": TITLES[report.verdict],
                "description": "the submission as a whole",
                "points": 0.0,
                "max_points": result.maximum,
                "message": first_line(message),
                "output": message,
            }
        ]
    else:
        tests = [
            {
                "name": c.name,
                "description": f"{'public' if c.public else 'hidden'} case of the {c.family} family: {c.dtype}, {c.shape}",
                **({"points": earned, "max_points": available} if scoring.mode == "per_case" else {}),  # see the module's docstring
                "message": _status(report, index),
                "output": case_output(c),
            }
            for index, (c, earned, available) in enumerate(zip(report.cases, result.earned, result.available, strict=True))
        ]
    results: dict[str, Any] = {
        "gradable": gradable,
        "score": result.total / result.maximum,
        "message": line,
        "output": "\n\n".join(
            [
                message,
                *(f"Note: {note}" for note in report.notes),
                *(f"Diagnosis: {sentence}" for sentence in report.diagnosis),
                *(f"Hint: {hint}" for hint in report.hints),
            ]
        ),
        "tests": tests,
        "verdict": report.verdict.value,
        "seed_id": report.seed_id,
        "warnings": report.warnings,
    }
    if not gradable:
        results["format_errors"] = [first_line(message)]
    return printable_data(results)  # what the submission chose (messages, its file's name) made inert


def render_prairielearn(report: Report, scoring: Scoring, points: float = DEFAULT_POINTS, gradable_compile_errors: bool = False) -> str:
    return json.dumps(to_prairielearn(report, scoring, points, gradable_compile_errors), indent=2, allow_nan=False)
