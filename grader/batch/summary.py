"""The end of a batch (and of a merge): the summary (verdicts, the entries not graded, points,
the slowest submissions), the gradebook and the exit status."""

import statistics
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from grader.batch.exits import EXIT_DONE, EXIT_USAGE
from grader.batch.gradebook import CSV_COLUMNS, Counting, shown_points, write_csv
from grader.formats.safe import printable
from grader.results import Verdict

SLOWEST_SHOWN = 5


def summary(lines: dict[str, dict[str, Any]], counting: Counting) -> str:
    """Count per verdict, the entries not graded and why, points and their distribution, the slowest submissions."""
    if not lines:
        return "no submission graded"
    verdicts = Counter(line["verdict"] for line in lines.values())
    parts = [f"{len(lines)} submissions: " + ", ".join(f"{v} {n}" for v, n in verdicts.most_common())]
    not_graded = {i: line["not_graded"] for i, line in lines.items() if line.get("not_graded")}
    if not_graded:
        parts.append(f"not graded: {len(not_graded)} (each has a line in the results, a row in the gradebook: 0 points)")
        parts += [f"  {printable(i)}: {printable(why)}" for i, why in not_graded.items()]
    points = [result.total for result in map(counting.marks, lines.values()) if result is not None]
    if points:
        top = counting.maximum
        quarters = [f"[{shown_points(top * q / 4)}, {shown_points(top * (q + 1) / 4)})" for q in range(4)]
        buckets = Counter("0" if p == 0 else shown_points(top) if p >= top else quarters[min(3, int(p / top * 4))] for p in points)
        order = ["0", *quarters, shown_points(top)]
        parts.append(
            f"points (of {shown_points(top)}, scoring {counting.scoring.mode}): mean {shown_points(statistics.fmean(points))}, "
            f"median {shown_points(statistics.median(points))}; " + ", ".join(f"{b}: {buckets[b]}" for b in order if buckets[b])
        )
    graded = [line for line in lines.values() if not line.get("not_graded")]
    slowest = sorted(graded, key=lambda line: -float(line.get("seconds") or 0))[:SLOWEST_SHOWN]
    if slowest:
        parts.append("slowest: " + ", ".join(f"{printable(line['id'])} {float(line.get('seconds') or 0):.1f}s ({line['verdict']})" for line in slowest))
    return "\n".join(parts)


@dataclass(frozen=True)
class Gradebook:
    """--csv FILE in the format --gradebook names (grader/batch/gradebook.py), its assignment's
    column for Canvas."""

    path: Path
    kind: str = "grader"
    assignment: str = ""

    def write(self, lines: dict[str, dict[str, Any]], counting: Counting, out: TextIO) -> None:
        """The gradebook of `lines` (every submission of the results file), and a line saying so."""
        when = datetime.now().strftime("%Y-%m-%d %H:%M:%S")  # Moodle keeps a grade changed in Moodle after this time
        left_out = write_csv(self.path, lines, counting, self.kind, self.assignment, when)
        rows = len(lines) - len(left_out)
        what = {"grader": ", ".join(CSV_COLUMNS), "canvas": "Canvas's gradebook import", "moodle": "Moodle's offline grading worksheet"}[self.kind]
        print(f"gradebook: {self.path} ({what}): {rows} rows, every submission of the results file", file=out)
        if left_out:
            print(f"  not in it (no {self.kind.title()} student id): {printable(', '.join(left_out))}", file=out)


def conclude(
    done: dict[str, dict[str, Any]],
    where: str,
    gradebook: Gradebook | None,
    out: TextIO,
    counting: Counting,
    retry: str = "rerun to retry them",
    everyone: dict[str, dict[str, Any]] | None = None,
) -> int:
    """The end of a batch (and of a merge): the summary of `done`, `where` (what was done, where the
    results are), the gradebook of `everyone` (the latest line of every id of the results file;
    `done` when None), and the exit status: EXIT_USAGE when a submission ended in grader_error."""
    print(f"\n{summary(done, counting)}", file=out)
    print(where, file=out)
    if gradebook:
        gradebook.write(dict(sorted((everyone if everyone is not None else done).items())), counting, out)
    errors = [i for i, line in done.items() if line["verdict"] == Verdict.GRADER_ERROR]
    if errors:
        print(f"grader_error for {len(errors)} submissions ({printable(', '.join(errors))}): a fault of the grader; {retry}", file=out)
        return EXIT_USAGE
    return EXIT_DONE
