"""The report's formats, one module each; every one is a function of a Report and explicit options.

text          the human table (grader/formats/text.py)
json          the grader's own JSON object (json.py)
gradescope    Gradescope's results.json (gradescope.py)
prairielearn  PrairieLearn's external-grader results.json (prairielearn.py)
junit         JUnit XML for CI systems (junit.py)
"""

import os
from dataclasses import dataclass
from pathlib import Path

from grader.formats.gradescope import DEFAULT_HIDDEN_VISIBILITY, VISIBILITIES, render_gradescope
from grader.formats.json import render_json
from grader.formats.junit import render_junit
from grader.formats.points import DEFAULT_POINTS
from grader.formats.prairielearn import render_prairielearn
from grader.formats.text import render_text
from grader.results import Report, Verdict
from grader.spec import Scoring, Spec

FORMATS = ("text", "json", "gradescope", "prairielearn", "junit")
PLATFORM_FORMATS = ("gradescope", "prairielearn")  # they grade for a course: a secret seed is required
SUFFIXES = {"text": ".txt", "json": ".json", "gradescope": ".json", "prairielearn": ".json", "junit": ".xml"}

__all__ = ["FORMATS", "PLATFORM_FORMATS", "SUFFIXES", "VISIBILITIES", "Options", "render"]


@dataclass(frozen=True)
class Options:
    """What the formats may be told besides the report (each format reads only its own)."""

    points: float = DEFAULT_POINTS  # gradescope, prairielearn: the submission's points
    hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY  # gradescope: when hidden cases are shown
    gradable_compile_errors: bool = False  # prairielearn: count compile_error and invalid_submission as attempts
    verbose: bool = False  # text: every failing case's message
    # text, json, junit: also what is withheld from the candidate (hidden cases' messages, output printed
    # once the hidden cases began). Never in gradescope's or prairielearn's results.json, which students read.
    staff: bool = False


def render(report: Report, fmt: str, spec: Spec | None, options: Options) -> str:
    """The report in format `fmt` (one of FORMATS), as text ready to print or write to a file; the
    platform formats share points by the spec's [scoring]. What the candidate may not read (see
    CaseResult.withhold) is shown only with options.staff, and never in a platform's results.json.
    spec None (it could not be read): only a grader_error report renders (it earns no points, so the
    default scoring shares nothing)."""
    if spec is None and report.verdict != Verdict.GRADER_ERROR:
        raise ValueError("without a spec only a grader_error report can be rendered")
    scoring = spec.scoring if spec is not None else Scoring()
    if fmt == "text":
        return render_text(report, spec, verbose=options.verbose, staff=options.staff, points=options.points)
    if fmt == "json":
        return render_json(report, staff=options.staff)
    if fmt == "gradescope":
        return render_gradescope(report, scoring, options.points, options.hidden_visibility)
    if fmt == "prairielearn":
        return render_prairielearn(report, scoring, options.points, options.gradable_compile_errors)
    if fmt == "junit":
        return render_junit(report, staff=options.staff)
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")


def write_atomically(path: Path, text: str) -> None:
    """Write text to path so that a reader never sees half a report (a temporary file, then a rename)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
