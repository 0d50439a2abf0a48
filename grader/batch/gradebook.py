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

CSV_COLUMNS = ("id", "verdict", "points", "max_points", "cases_passed", "cases", "message")


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
        csv_cell(line["verdict"]),
        points,
        shown_points(counting.maximum),
        str(passed),
        str(len(cases)),
        csv_cell(kept(line)["message"]),
    ]


def write_csv(path: Path, done: dict[str, dict[str, Any]], counting: Counting) -> None:
    """The gradebook (CSV_COLUMNS), replaced whole (never half written). An id is a file's name,
    and a message may quote the submission: no cell is a formula to a spreadsheet or holds a
    control character (grader/formats/safe.py)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(csv_row(submission_id, line, counting) for submission_id, line in done.items())
    partial = path.with_name(path.name + ".partial")
    partial.write_text(buffer.getvalue(), encoding="utf-8")
    partial.replace(path)
