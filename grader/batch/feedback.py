"""Feedback files (--feedback DIR): each submission's report, the very file `python -m grader FILE
--format F --output` writes for it, also for the submissions graded by an earlier run."""

import json
from pathlib import Path
from typing import Any

from grader.batch.exits import UsageError
from grader.formats import SUFFIXES, Options, render, write_atomically
from grader.formats.json import from_json
from grader.results import Report
from grader.spec import Spec


class Feedback:
    """DIR/<id>.<ext>: each submission's report, the file `python -m grader FILE --format F --output`
    writes for it (the same render, the same trailing newline, written whole)."""

    def __init__(self, folder: Path, fmt: str, spec: Spec, options: Options) -> None:
        try:
            folder.mkdir(exist_ok=True)
        except OSError as error:
            raise UsageError(f"cannot make the --feedback folder {folder}: {error.strerror or error}") from None
        self.folder, self.fmt, self.spec, self.options = folder, fmt, spec, options
        self.written: set[str] = set()

    def write(self, submission_id: str, report: Report) -> None:
        write_atomically(self.folder / f"{submission_id}{SUFFIXES[self.fmt]}", render(report, self.fmt, self.spec, self.options) + "\n")
        self.written.add(submission_id)

    def complete(self, results: Path, done: dict[str, dict[str, Any]]) -> int:
        """Write the file of every submission of `done` not written by this run, from its line in
        the results file (graded by an earlier run, perhaps without --feedback); how many."""
        wanted = set(done) - self.written
        lines: dict[str, dict[str, Any]] = {}
        if wanted:
            with open(results, encoding="utf-8", errors="surrogateescape") as f:
                for raw in f:
                    try:
                        line = json.loads(raw)
                    except ValueError:
                        continue  # ResultsFile said so when it opened the file
                    if isinstance(line, dict) and line.get("id") in wanted:
                        lines[line["id"]] = line
        for submission_id, line in sorted(lines.items()):
            self.write(submission_id, from_json(line))
        return len(lines)
