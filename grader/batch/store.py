"""How results are stored and resumed: the JSON-lines results file (one whole line per graded
submission, appended as soon as it is known, the last line of an id counting), what each line
holds, and whether a line already grades a file with this seed, spec and grader version, so that
a rerun skips it."""

import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from grader import __version__
from grader.batch.discovery import Submission
from grader.batch.exits import UsageError
from grader.formats.json import to_json
from grader.formats.points import first_line
from grader.results import Report, Verdict

KEPT = (
    "id",
    "name",
    "late",
    "sha256",
    "grader_version",
    "spec_sha256",
    "seed_id",
    "problem",
    "verdict",
    "score",
    "seconds",
    "not_graded",
)  # of each line, in memory


def file_sha256(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None  # the grading says why (compile_error); such a line never lets a rerun skip it


class ResultsFile:
    """The JSON-lines file: one line per graded submission, appended whole (one write, then fsync)
    as soon as it is known. For an id with several lines the last one counts. A partial last line,
    left by a crash in the middle of a write, is removed when the file is opened again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise UsageError(f"cannot open --out {path}: {error.strerror}") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            raise UsageError(f"another batch is writing to {path}; give each running batch its own --out") from None
        self.latest: dict[str, dict[str, Any]] = {}
        self.superseded: dict[str, list[dict[str, Any]]] = {}  # per id, the lines a later line of another file replaced
        self.notes: list[str] = []
        self._read()

    def _read(self) -> None:
        unreadable, offset = 0, 0
        with os.fdopen(os.dup(self.fd), "rb") as f:
            for raw in f:
                if not raw.endswith(b"\n"):  # the last line, cut short
                    os.ftruncate(self.fd, offset)
                    self.notes.append(f"removed an unfinished last line from {self.path} (a batch was stopped in the middle of writing it)")
                    break
                offset += len(raw)
                try:
                    self._remember(json.loads(raw))
                except (ValueError, TypeError, KeyError):
                    unreadable += 1
        if unreadable:
            self.notes.append(f"ignored {unreadable} lines of {self.path} that are not results of this grader")

    def _remember(self, line: dict[str, Any]) -> None:
        before = self.latest.get(line["id"])
        if before is not None and before.get("sha256") != line.get("sha256"):
            self.superseded.setdefault(line["id"], []).append(before)
        self.latest[line["id"]] = kept(line)

    def append(self, line: dict[str, Any]) -> None:
        data = (json.dumps(line, allow_nan=False, default=str, separators=(",", ":")) + "\n").encode()
        start = os.lseek(self.fd, 0, os.SEEK_END)
        try:
            written = os.write(self.fd, data)
            while written < len(data):  # a regular file takes it in one write but for a full disk
                written += os.write(self.fd, data[written:])
            os.fsync(self.fd)
        except OSError:
            os.ftruncate(self.fd, start)  # never leave half a line behind
            raise
        self._remember(line)

    def close(self) -> None:
        os.close(self.fd)


def message_line(message: str) -> str:
    """A message in one line, for the gradebook: its first line; when that only introduces what
    follows, the exception a traceback ends with (`raised during the call: IndexError: ...`), else the
    next line (`1 use of forbidden APIs (...): line 3:5: ...`)."""
    lines = message.strip().splitlines()
    if len(lines) < 2 or not lines[0].endswith(":"):
        return first_line(message)
    if lines[1].startswith("  File "):  # a traceback (runner.py): its frames are indented, the exception is not
        exception = [line for line in lines[1:] if line.strip() and not line.startswith(" ")]
        if exception:
            return f"{lines[0]} {exception[0].strip()}"
    return first_line(message)


def kept(line: dict[str, Any]) -> dict[str, Any]:
    """Only what resuming, the summary and the gradebook need: memory stays small for a large class.
    Of the message its first line; of each case what its points depend on. Idempotent."""
    small = {key: line.get(key) for key in KEPT}
    small["message"] = message_line(str(line.get("message") or ""))
    cases = line.get("cases") or []
    small["cases"] = [
        case if isinstance(case, list) else [str(case.get("family")), str(case.get("status")), case.get("seconds") is None]
        for case in cases
        if isinstance(case, dict | list)
    ]
    return small


def result_line(submission: Submission, sha256: str | None, spec_sha256: str, report: Report) -> dict[str, Any]:
    """The --json --staff object of the report (a results file is for staff: `staff_only` holds what
    the candidate's report withholds), with what identifies the submission and the grading. An
    entry that is not graded also has `not_graded`: why."""
    key = {"id": submission.id, "name": submission.name, "late": submission.late, "sha256": sha256, "grader_version": __version__}
    key |= {"spec_sha256": spec_sha256, "seed_id": report.seed_id}
    line = key | to_json(report, staff=True)
    if submission.not_graded:
        line["not_graded"] = submission.not_graded
    return line


def not_graded_report(submission: Submission, seed_id: str) -> Report:
    """The report of an entry that holds nothing to grade: invalid_submission, saying why."""
    return Report(Verdict.INVALID_SUBMISSION, submission.not_graded, str(submission.path), seed_id, "none (not graded: no child was started)")


def is_current(line: dict[str, Any] | None, sha256: str | None, seed_id: str, spec_sha256: str, not_graded: str = "") -> bool:
    """Whether a line already grades this very file (or says why this entry is not graded, in the
    same words) with this seed, spec and grader version."""
    if line is None or line.get("verdict") == Verdict.GRADER_ERROR:
        return False  # a grader fault is retried
    if not_graded:
        same_entry = line.get("not_graded") == not_graded
    else:
        same_entry = sha256 is not None and line.get("sha256") == sha256 and not line.get("not_graded")
    return same_entry and (line.get("seed_id"), line.get("grader_version"), line.get("spec_sha256")) == (seed_id, __version__, spec_sha256)


class Resume:
    """The results file as one run sees it: which submissions a line already grades (is_current),
    the line of each new report, and at the end the line that counts for each submission."""

    def __init__(self, results: ResultsFile, submissions: list[Submission], seed_id: str, spec_sha256: str) -> None:
        self.results, self.submissions, self.seed_id, self.spec_sha256 = results, submissions, seed_id, spec_sha256
        self.hashes = {s.id: None if s.not_graded else file_sha256(s.path) for s in submissions}
        # The newest line of each submission that a regrade replaced, read once: such a submission is
        # skipped, so its line never changes during the run.
        self.regrades = {s.id: line for s in submissions if (line := self._regraded(s)) is not None}

    def current(self, submission: Submission) -> bool:
        latest = self.results.latest.get(submission.id)
        return is_current(latest, self.hashes[submission.id], self.seed_id, self.spec_sha256, submission.not_graded) or submission.id in self.regrades

    def _regraded(self, submission: Submission) -> dict[str, Any] | None:
        """The newest line of this id when it grades another file, given after this very file was
        graded (staff regrading one student from a fixed file), with this seed, spec and grader
        version: a rerun of the download keeps it rather than grade the older file again."""
        latest = self.results.latest.get(submission.id)
        if latest is None or submission.not_graded or not is_current(latest, latest.get("sha256"), self.seed_id, self.spec_sha256):
            return None
        earlier = self.results.superseded.get(submission.id, [])
        sha256 = self.hashes[submission.id]
        return latest if any(is_current(line, sha256, self.seed_id, self.spec_sha256) for line in earlier) else None

    def kept_regrades(self) -> list[str]:
        """A line per submission whose newer regrade this run keeps."""
        return [
            f"{s.id}: kept its regrade ({line.get('submission')}), graded after this file; to grade {s.path.name} again, "
            f"remove {s.id}'s newer line from the results file"
            for s in self.submissions
            if (line := self.regrades.get(s.id)) is not None and not is_current(line, self.hashes[s.id], self.seed_id, self.spec_sha256)
        ]

    def todo(self) -> list[Submission]:
        """The submissions that no line grades yet (a grader_error line is retried)."""
        return [s for s in self.submissions if not self.current(s)]

    def append(self, submission: Submission, report: Report) -> dict[str, Any]:
        """The line of a report, appended to the results file now."""
        line = result_line(submission, self.hashes[submission.id], self.spec_sha256, report)
        self.results.append(line)
        return line

    def done(self) -> dict[str, dict[str, Any]]:
        """The line that counts for each submission: the last of its id; a grader_error line counts
        too, until a rerun retries it."""
        latest = self.results.latest
        return {s.id: latest[s.id] for s in self.submissions if s.id in latest and (latest[s.id]["verdict"] == Verdict.GRADER_ERROR or self.current(s))}
