"""Gradescope's results.json (their autograder specification): points, one test per case, visibility.

Only the specification's fields are used; what Gradescope has no field for (the verdict, the maximum,
the seed's public id, warnings) goes in `extra_data`, which Gradescope stores without showing it.

Points: the top-level `score` is always the submission's points (the specification lets it stand for
the tests' scores). Under per-case scoring each test carries `score` and `max_score`, the maxima adding
up to exactly `--points`. Under all-or-nothing scoring a test earns nothing on its own, so it carries
no points at all, only its `status` (both fields are optional in the specification): a passed case
shown as "0.0 / 0.22" would tell the student something false.
"""

import json
import re
from typing import Any

from grader.formats.points import DEFAULT_POINTS, GRADER_FAULT, TITLES, case_output, marks, rejected_as_a_whole, submission_message, summary
from grader.formats.safe import printable_data
from grader.results import Report, Verdict
from grader.spec import Scoring

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
DEFAULT_HIDDEN_VISIBILITY = "after_published"
# Said in the always-visible output when a hidden case decided the verdict (not for "visible").
HIDDEN_TEST_SHOWN = {
    "hidden": "its test is shown to course staff only",
    "after_due_date": "its test says what went wrong after the due date",
    "after_published": "its test says what went wrong once the grades are published",
}


def _fenced(text: str) -> str:
    """text as a Markdown code block whose fence no backtick run inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def _output(report: Report, line: str, hidden_visibility: str) -> str:
    """The submission-wide output in Markdown, which the student sees at once: the summary, the verdict's
    message (only the counts when a hidden case decided it, until that case's test is visible), the
    diagnosis and the hints."""
    parts = [f"**{line}**"]
    if report.verdict == Verdict.GRADER_ERROR:
        parts.append(GRADER_FAULT)
    else:
        message = report.message if hidden_visibility == "visible" else submission_message(report, HIDDEN_TEST_SHOWN[hidden_visibility])
        parts.append(_fenced(message))
        parts += [f"**Note:** {note}" for note in report.notes]
        parts += [f"**Diagnosis:** {sentence}" for sentence in report.diagnosis]
        parts += [f"**Hint:** {hint}" for hint in report.hints]
    return "\n\n".join(parts)


def to_gradescope(report: Report, scoring: Scoring, points: float = DEFAULT_POINTS, hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY) -> dict[str, Any]:
    """The results.json object. Public cases are visible at once, hidden ones at `hidden_visibility`."""
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"hidden_visibility must be one of {', '.join(VISIBILITIES)}, not {hidden_visibility!r}")
    result = marks(report, scoring, points)
    if rejected_as_a_whole(report):
        # A fault of the grader is for staff only (visibility hidden); anything else is the candidate's to read.
        tests = [
            {
                "name": TITLES[report.verdict],
                "number": "1",
                "score": 0.0,
                "max_score": result.maximum,
                "status": "failed",
                "output": report.message,
                "tags": [report.verdict.value],
                "visibility": "hidden" if report.verdict == Verdict.GRADER_ERROR else "visible",
            }
        ]
    else:
        per_case = scoring.mode == "per_case"
        tests = [
            {
                "name": c.name,
                "number": str(index),
                **({"score": earned, "max_score": available} if per_case else {}),  # see the module's docstring
                "status": "passed" if c.passed else "failed",
                "output": case_output(c),
                "tags": list(dict.fromkeys([c.family, c.dtype])),  # unique: a family may be named after its dtype (float64)
                "visibility": "visible" if c.public else hidden_visibility,
            }
            for index, (c, earned, available) in enumerate(zip(report.cases, result.earned, result.available, strict=True), start=1)
        ]
    results = {
        "score": result.total,
        "execution_time": round(report.seconds),
        "output": _output(report, summary(report, scoring, result), hidden_visibility),
        "output_format": "md",
        "test_output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",  # the autograder's log holds the submission's own prints: for staff
        "tests": tests,
        "extra_data": {
            "verdict": report.verdict.value,
            "max_score": result.maximum,
            "scoring": scoring.mode,
            "seed_id": report.seed_id,
            "isolation": report.isolation,
            "warnings": report.warnings,
        },
    }
    return printable_data(results)  # what the submission chose (messages, its file's name) made inert


def render_gradescope(report: Report, scoring: Scoring, points: float = DEFAULT_POINTS, hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY) -> str:
    return json.dumps(to_gradescope(report, scoring, points, hidden_visibility), indent=2, allow_nan=False)
