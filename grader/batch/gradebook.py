"""The gradebook (--csv): how the course counts points (Counting, through the formats' own
function) and one CSV row per submission, no cell of which a spreadsheet reads as a formula."""

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.batch.store import kept
from grader.formats.points import DEFAULT_POINTS, Marks, marks, shown_points
from grader.formats.safe import csv_cell
from grader.results import PASSED, CaseResult, Report, Verdict
from grader.spec import Scoring

CSV_COLUMNS = ("id", "name", "verdict", "points", "max_points", "cases_passed", "cases", "late", "message")


@dataclass(frozen=True)
class Counting:
    """How the course counts: the spec's [scoring] and --points, through the very function the
    gradescope and prairielearn formats use (grader/formats/points.py: marks)."""

    scoring: Scoring
    points: float = DEFAULT_POINTS

    def marks(self, line: dict[str, Any]) -> Marks | None:
        """The points of a kept line (see kept()); None for a grader_error, whose points are not known."""
        if line["verdict"] == Verdict.GRADER_ERROR:
            return None
        cases = [CaseResult("", family, "", False, "", status=status, seconds=None if unrun else 0.0) for family, status, unrun in kept(line)["cases"]]
        return marks(Report(Verdict(line["verdict"]), "", "", "", "", cases=cases), self.scoring, self.points)

    @property
    def maximum(self) -> float:
        return round(self.points * 100) / 100


def csv_row(submission_id: str, line: dict[str, Any], counting: Counting) -> list[str]:
    result = counting.marks(line)
    cases = kept(line)["cases"]
    points = "" if result is None else shown_points(result.total)  # a grader fault has no points yet: rerun
    passed = sum(status == PASSED for _, status, _ in cases)
    return [
        csv_cell(submission_id),
        csv_cell(str(line.get("name") or "")),
        csv_cell(line["verdict"]),
        points,
        shown_points(counting.maximum),
        str(passed),
        str(len(cases)),
        "yes" if line.get("late") else "",
        csv_cell(kept(line)["message"]),
    ]


# --- the LMSs' own import formats (docs/lms.md cites each LMS's importer) ----------------------------

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")  # then the assignment's column
MOODLE_COLUMNS = ("Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)", "Feedback comments")
GRADEBOOKS = ("grader", "canvas", "moodle")


def _canvas_rows(done: dict[str, dict[str, Any]], counting: Counting, assignment: str) -> tuple[list[list[str]], list[str]]:
    """Canvas's gradebook import: Student, ID (Canvas's user id, by which Canvas matches the row),
    SIS User ID, SIS Login ID, Section, then the assignment's column, headed as Canvas's own export
    heads it ("Title (assignment id)"). Rows without a Canvas user id cannot be imported."""
    rows = [[*CANVAS_COLUMNS, csv_cell(assignment)]]
    left_out = []
    for submission_id, line in done.items():
        if not submission_id.isdigit():
            left_out.append(submission_id)
            continue
        result = counting.marks(line)
        rows.append([csv_cell(str(line.get("name") or "")), submission_id, "", "", "", "" if result is None else shown_points(result.total)])
    return rows, left_out


def _moodle_rows(done: dict[str, dict[str, Any]], counting: Counting, when: str) -> tuple[list[list[str]], list[str]]:
    """Moodle's offline grading worksheet (assignfeedback_offline): Identifier ("Participant N", by
    which Moodle matches the row), Full name, Grade, Maximum Grade, Last modified (grade) (Moodle
    keeps a grade changed in Moodle after that time) and Feedback comments (the students read them
    where the feedback comments plugin is on). Rows without a participant number cannot be imported."""
    rows = [list(MOODLE_COLUMNS)]
    left_out = []
    for submission_id, line in done.items():
        if not submission_id.isdigit():
            left_out.append(submission_id)
            continue
        result = counting.marks(line)
        points = "" if result is None else shown_points(result.total)
        comment = f"{points} / {shown_points(counting.maximum)} points: {kept(line)['message']}" if points else ""
        rows.append([f"Participant {submission_id}", csv_cell(str(line.get("name") or "")), points, shown_points(counting.maximum), when, csv_cell(comment)])
    return rows, left_out


def write_csv(path: Path, done: dict[str, dict[str, Any]], counting: Counting, gradebook: str = "grader", assignment: str = "", when: str = "") -> list[str]:
    """The gradebook, replaced whole (never half written): CSV_COLUMNS, or an LMS's import format
    (gradebook canvas or moodle); the ids of the rows an LMS could not import, left out. An id is a
    file's name, and a message may quote the submission: no cell is a formula to a spreadsheet or
    holds a control character (grader/formats/safe.py)."""
    left_out: list[str] = []
    if gradebook == "canvas":
        rows, left_out = _canvas_rows(done, counting, assignment)
    elif gradebook == "moodle":
        rows, left_out = _moodle_rows(done, counting, when)
    else:
        rows = [list(CSV_COLUMNS), *(csv_row(submission_id, line, counting) for submission_id, line in done.items())]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(buffer.getvalue(), encoding="utf-8")
    partial.replace(path)
    return left_out
