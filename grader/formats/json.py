"""The grader's own JSON report: everything in a Report, one object (case entries shaped like Gradescope's tests)."""

import json
import math
from functools import cache
from typing import Any

from grader import __version__
from grader.formats.safe import printable_data
from grader.results import CaseResult, Check, Report, Verdict


def _json_number(x: float | None) -> float | str | None:
    """JSON has no inf or NaN: those become strings."""
    return x if x is None or math.isfinite(x) else str(x)


@cache
def torch_version() -> str:
    """The installed torch's version, read from its metadata: this module must not import torch
    (the command line imports it before it starts the child). importlib.metadata is imported
    here: it takes longer to import than this whole module, and a text report never needs it."""
    from importlib.metadata import version

    return version("torch")


STAFF_NOTE = "withheld from the candidate: the whole message of each hidden case that holds what the submission chose, and all it printed"


def to_json(report: Report, staff: bool = False) -> dict[str, Any]:
    """The --json object: what the candidate may read. staff=True adds `staff_only`, what is withheld
    from the candidate (without it, the object is exactly the candidate's)."""
    fields: dict[str, Any] = {
        "verdict": report.verdict.value,
        "public_only": report.public_only,  # true: only the public cases ran, so "accepted" is not the final verdict
        "score": report.score,
        "max_score": 1.0,
        "message": report.message,
        "diagnosis": report.diagnosis,
        "hints": report.hints,
        "notes": report.notes,
        "warnings": report.warnings,
        "submission": report.submission,
        "seed_id": report.seed_id,
        "problem": report.problem,
        "problem_digest": report.problem_digest,
        "isolation": report.isolation,
        "seconds": round(report.seconds, 3),
        "versions": {"grader": __version__, "torch": torch_version()},
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
                "seconds": None if c.shown_seconds(staff) is None else round(c.seconds, 4),
            }
            for c in report.cases
        ],
    }
    if staff:
        fields["staff_only"] = {
            "note": STAFF_NOTE,
            "cases": {c.name: c.staff_message for c in report.cases if c.staff_message},
            "stdout": report.staff_stdout if report.staff_stdout is not None else report.stdout,
            "stderr": report.staff_stderr if report.staff_stderr is not None else report.stderr,
        }
    return printable_data(fields)  # what the submission chose (messages, output, its file's name) made inert


def render_json(report: Report, staff: bool = False) -> str:
    return json.dumps(to_json(report, staff), indent=2, allow_nan=False, default=str)


def _number(x: float | str | None) -> float | None:
    return None if x is None else float(x)  # "inf" and "nan" back to floats


def from_json(data: dict[str, Any]) -> Report:
    """The Report that to_json(report, staff=True) was made from, for rendering it again (a batch's
    feedback from its results file). Every field a format reads comes back; what to_json rounded
    (timings) comes back rounded."""
    staff = data.get("staff_only") or {}
    withheld = staff.get("cases") or {}
    cases = [
        CaseResult(
            c["name"],
            c["family"],
            c["dtype"],
            c["visibility"] == "visible",
            c["shape"],
            status=c["status"],
            check=Check(c["check"]) if c["check"] else "",
            message=c["output"],
            staff_message=withheld.get(c["name"], ""),
            max_abs=_number(c["max_abs_error"]),
            max_rel=_number(c["max_rel_error"]),
            seconds=c["seconds"],
        )
        for c in data["cases"]
    ]
    report = Report(
        Verdict(data["verdict"]),
        data["message"],
        data["submission"],
        data["seed_id"],
        data["isolation"],
        cases=cases,
        hints=list(data["hints"]),
        diagnosis=list(data["diagnosis"]),
        notes=list(data.get("notes") or []),
        stdout=data["stdout"],
        stderr=data["stderr"],
        seconds=data["seconds"],
        warnings=list(data["warnings"]),
        public_only=data["public_only"],
        problem=data.get("problem", ""),
        problem_digest=data.get("problem_digest", ""),
    )
    if staff:
        # to_json wrote the whole output for staff either way; only a different one was withheld
        report.staff_stdout = staff["stdout"] if staff["stdout"] != report.stdout else None
        report.staff_stderr = staff["stderr"] if staff["stderr"] != report.stderr else None
    return report
