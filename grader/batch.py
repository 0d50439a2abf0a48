"""Many submissions: `python -m grader batch PATH... --out results.jsonl`.

Finds the submissions (a file, or every entry of a class folder: grader/layout.py; an entry with
nothing to grade gets a line saying why), keeps a deterministic shard of them, skips those already
graded in the results file, grades the rest `--jobs` at a time (each in its own sandboxed child,
exactly as `python -m grader FILE` would) and appends one JSON line per submission as soon as it
is known; at the end, the gradebook (--csv) and each student's report (--feedback). Ctrl-C or SIGTERM stops cleanly: running children
are killed, their gradings dropped (a rerun grades them), every finished line stays.

Every submission is graded by Workers.grade_file, the one place that knows how; the batch command
and the Python API (grader/api.py) both grade through Workers.map.
"""

import argparse
import csv
import dataclasses
import fcntl
import functools
import hashlib
import io
import json
import os
import re
import signal
import statistics
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from grader import __version__, judge
from grader.cli import internal_error, points_value, write_atomically
from grader.formats import FORMATS, SUFFIXES, Options, render
from grader.formats.gradescope import DEFAULT_HIDDEN_VISIBILITY, VISIBILITIES
from grader.formats.json import from_json, to_json
from grader.formats.points import DEFAULT_POINTS, Marks, first_line, marks
from grader.formats.safe import csv_cell, printable
from grader.isolation import ISOLATION_LEVELS, choose_backend
from grader.layout import SOLUTION, Entry, read_class_folder
from grader.pool import PoolError, ServerLost, WarmPool, pool_problem
from grader.report import hints
from grader.results import PASSED, CaseResult, Report, Verdict
from grader.sandbox import Child
from grader.seeding import SeedRefused, take_seed
from grader.spec import SPEC_PATH, Scoring, SetupError, Spec, load_spec, seed_public_id, setup_fault

EXIT_DONE, EXIT_USAGE = 0, 2
POLL_SECONDS = 0.2  # how often a waiting batch looks for a stop request
SLOWEST_SHOWN = 5
KEPT = ("id", "sha256", "grader_version", "spec_sha256", "seed_id", "verdict", "score", "seconds", "not_graded")  # of each line, in memory
CSV_COLUMNS = ("id", "verdict", "points", "max_points", "cases_passed", "cases", "message")
K = TypeVar("K")


class UsageError(Exception):
    """The command cannot run as asked; the message says why and what to do."""


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)))


# --- the workers: one submission -> one report, `jobs` at a time ----------------------------------


class _Cancelled(Exception):
    """The grading was stopped from outside; its report must not be used."""


class _Cancel:
    """The children of running gradings, so that a stop can kill them all at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: set[Child] = set()
        self.cancelled = False

    @contextmanager
    def watch(self, child: Child) -> Iterator[None]:
        with self._lock:
            self._children.add(child)
            if self.cancelled:  # stopped while this child was starting
                child.kill()
        try:
            yield
        finally:
            # Under the lock: cancel() never kills a child that its grading has already closed.
            with self._lock:
                self._children.discard(child)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            for child in self._children:
                child.kill()


def grader_error(path: Path, seed_id: str, backend: str, error: Exception) -> Report:
    if setup_fault(error):
        return Report(Verdict.GRADER_ERROR, internal_error(error), str(path), seed_id, backend)
    where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" (at {Path(where.filename).name}:{where.lineno})" if where else ""
    message = (
        f"internal error of the grader (not the submission's fault): {type(error).__name__}: {error}{at}. "
        f"Grade this file alone with `python -m grader {path}` for the details, and report it."
    )
    return Report(Verdict.GRADER_ERROR, message, str(path), seed_id, backend)


def start_warm_pool(spec: Spec, backend: str) -> tuple[WarmPool | None, str]:
    """A warm pool, started now, or None and why each submission gets a child of its own."""
    problem = pool_problem(backend)
    if problem:
        return None, problem
    try:
        return WarmPool(spec), ""
    except (OSError, PoolError) as error:
        return None, f"the warm pool could not start ({error})"


class Workers:
    """Grades submission files `jobs` at a time, each in its own sandboxed child (judge.grade),
    with the cases and expected outputs computed once. grade_file is the only place that starts a
    grading: a pool of pre-started children can replace it without changing its callers."""

    def __init__(
        self,
        spec: Spec,
        seed: str,
        *,
        jobs: int = 1,
        backend: str | None = None,
        public_only: bool = False,
        prepared: judge.Prepared | None = None,
        static_check: bool = True,
        restricted: bool = True,
    ) -> None:
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.spec, self.seed, self.public_only = spec, seed, public_only
        self.static_check, self.restricted = static_check and restricted, restricted
        self.warnings = spec.seed_warnings(seed, public_only)
        self.backend = backend or choose_backend("auto", secret_seed=seed != spec.default_hidden_seed)
        # The uid backend kills every process of the runner user after each grading.
        self.jobs = 1 if self.backend == "uid" else jobs
        self.prepared = prepared or judge.prepare(spec, seed, public_only)
        self.warm_note = ""  # after map(): why its submissions were not graded through a warm pool, if they were not

    def grade_file(self, path: Path, cancel: _Cancel | None = None, warm: WarmPool | None = None) -> Report:
        """The report of one file; a fault of the grader becomes a grader_error report. With a warm
        pool, the child is one of its children; if the pool cannot give one, or its server dies
        during the grading, the file is graded (again) with a child of its own."""
        try:
            grade = functools.partial(
                judge.grade,
                path,
                self.spec,
                self.seed,
                public_only=self.public_only,
                backend=self.backend,
                prepared=self.prepared,
                static_check=self.static_check,
                restricted=self.restricted,
                watch=cancel.watch if cancel else None,
            )
            try:
                report = grade(start=warm.start_child) if warm else grade()
            except (PoolError, ServerLost):
                if cancel and cancel.cancelled:
                    raise _Cancelled() from None
                report = grade()
            report.hints = hints(report, self.spec)
        except Exception as error:  # noqa: BLE001 - one submission's grader fault must not end the batch
            report = grader_error(path, self.prepared.seed_id, self.backend, error)
        report.warnings = list(self.warnings)
        if cancel and cancel.cancelled:
            raise _Cancelled()
        return report

    def map(self, items: Iterable[tuple[K, Path]], stop: threading.Event | None = None, warm: WarmPool | None = None) -> Iterator[tuple[K, Report]]:
        """(key, report) for each (key, path), in the order they finish. Items are taken from
        `items` only as a job frees up. When `stop` is set, or the caller stops iterating (an
        exception, a closed generator), running children are killed and their gradings dropped;
        nothing of them is left when this returns. The children come from a warm pool (grader/pool.py)
        where it keeps every wall: `warm`, which the caller closes, else one of map's own."""
        cancel = _Cancel()
        items = iter(items)
        running: dict[Future, K] = {}
        own, self.warm_note = (None, "") if warm else start_warm_pool(self.spec, self.backend)  # it starts while the first items are read
        warm = warm or own
        executor = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="mlm-grader-job")
        try:
            exhausted = False
            while not (stop and stop.is_set()):
                while not exhausted and len(running) < self.jobs:
                    try:
                        key, path = next(items)
                    except StopIteration:
                        exhausted = True
                        break
                    running[executor.submit(self.grade_file, path, cancel, warm)] = key
                if not running:
                    return
                done, _ = wait(running, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                for future in done:
                    yield running.pop(future), future.result()
        finally:
            cancel.cancel()
            executor.shutdown(wait=True, cancel_futures=True)
            if warm:
                self.warm_note = warm.broken
            if own:
                own.close()


# --- which submissions ------------------------------------------------------------------------------


Submission = Entry  # an entry of a class folder, graded or not (grader/layout.py)


def _folder_submissions(folder: Path, outputs: set[Path]) -> tuple[list[Submission], str]:
    try:
        entries, skipped = read_class_folder(folder)
    except OSError as error:
        raise UsageError(f"cannot read the folder {folder}: {error.strerror or error}") from None
    outputs_here = [e for e in entries if (folder / e.path.relative_to(folder).parts[0]).resolve() in outputs]
    entries = [e for e in entries if e not in outputs_here]  # the batch's own results file, gradebook, feedback folder
    files = [e for e in entries if not e.not_graded and e.path.parent == folder]
    folders = [e for e in entries if not e.not_graded and e.path.parent != folder]
    if files and folders:
        raise UsageError(
            f"{folder} mixes two layouts: {len(files)} *.py files (e.g. {files[0].path.name}) and {len(folders)} folders with a "
            f"Python file (e.g. {folders[0].path.relative_to(folder)}); keep one layout per folder, or pass the files themselves"
        )
    if not entries:
        raise UsageError(f"{folder} holds no submission: neither *.py files nor folders with a {SOLUTION}")
    layout = (
        f"one folder per submission (*/{SOLUTION} or the folder's only .py file; id = folder name)"
        if folders
        else ("one file per submission (*.py; id = file name without .py)")
    )
    not_graded = sum(bool(e.not_graded) for e in entries)
    if not_graded:
        layout += f"; {not_graded} not graded (each gets a line saying why)"
    ignored = [*skipped, *(e.path.name for e in outputs_here)]
    if ignored:
        layout += f"; ignored: {printable(', '.join(ignored))}"
    return entries, layout


def discover(paths: list[Path], outputs: Iterable[Path] = ()) -> tuple[list[Submission], list[str]]:
    """Every submission named by `paths`, sorted by id, and a note per folder saying its layout.
    A file's id is its name without .py, or its folder's name for a solution.py. Every entry of a
    folder is a submission, graded or not (grader/layout.py); `outputs` (the batch's own files) are
    not."""
    outputs = {path.resolve() for path in outputs}
    found: list[Submission] = []
    notes = []
    for path in paths:
        if path.is_dir():
            submissions, layout = _folder_submissions(path, outputs)
            notes.append(f"{path}: {len(submissions)} submissions, {layout}")
            found += submissions
        elif path.exists():
            found.append(Submission(path.resolve().parent.name if path.name == SOLUTION else path.stem, path))
        else:
            raise UsageError(f"no such file or folder: {path}")
    # An id is a file's name, which may hold terminal control sequences or bytes that are not UTF-8
    # (a lone surrogate once decoded): every place it goes (the results file, the gradebook, the
    # feedback files' names, the summary) gets it made inert, once, here.
    found = [dataclasses.replace(s, id=printable(s.id)) for s in found]
    by_id: dict[str, Submission] = {}
    for submission in found:
        if submission.id in by_id and by_id[submission.id].path != submission.path:
            raise UsageError(f"two submissions have the id {submission.id!r}: {by_id[submission.id].path} and {submission.path}; ids must be unique")
        by_id[submission.id] = submission
    return [by_id[i] for i in sorted(by_id)], notes


def parse_shard(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or int(match[2]) < 1 or int(match[1]) >= int(match[2]):
        raise UsageError(f"--shard {text}: expected INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4")
    return int(match[1]), int(match[2])


def in_shard(submission_id: str, index: int, count: int) -> bool:
    """A submission belongs to shard sha256(id) mod COUNT: each to exactly one shard, and it stays
    there when other submissions are added or removed."""
    return int.from_bytes(hashlib.sha256(submission_id.encode()).digest()[:8], "big") % count == index


def file_sha256(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None  # the grading says why (compile_error); such a line never lets a rerun skip it


# --- the results file -------------------------------------------------------------------------------


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


def kept(line: dict[str, Any]) -> dict[str, Any]:
    """Only what resuming, the summary and the gradebook need: memory stays small for a large class.
    Of the message its first line; of each case what its points depend on. Idempotent."""
    small = {key: line.get(key) for key in KEPT}
    small["message"] = first_line(str(line.get("message") or ""))
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
    key = {"id": submission.id, "sha256": sha256, "grader_version": __version__, "spec_sha256": spec_sha256, "seed_id": report.seed_id}
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


def shown_points(value: float) -> str:
    """Points as a gradebook shows them: hundredths, without trailing zeros (100, 12.5, 0.33)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


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


# --- progress and summary ---------------------------------------------------------------------------


class Progress:
    """A bar on a terminal (tqdm: elapsed, rate, ETA, verdicts so far); elsewhere one line per submission."""

    def __init__(self, total: int, out: TextIO, counting: Counting) -> None:
        self.total, self.out, self.done, self.counting = total, out, 0, counting
        self.verdicts: Counter[str] = Counter()
        self.bar = None
        if total and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="sub", dynamic_ncols=True, file=sys.stderr)

    def update(self, submission_id: str, line: dict[str, Any]) -> None:
        self.done += 1
        self.verdicts[line["verdict"]] += 1
        if self.bar is not None:
            self.bar.set_postfix_str(" ".join(f"{v}={n}" for v, n in sorted(self.verdicts.items())), refresh=False)
            self.bar.update()
        else:
            shown = printable(submission_id)  # a file's name: no terminal control sequence, no lone surrogate
            result = self.counting.marks(line)
            points = "points not known" if result is None else f"{shown_points(result.total)} of {shown_points(result.maximum)} points"
            print(f"[{self.done}/{self.total}] {shown}: {line['verdict']}, {points}, {line['seconds']:.1f}s", file=self.out, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


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


# --- the command ------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader batch",
        description="Grade many submissions, each in its own sandbox exactly as `python -m grader FILE` would, and write "
        "one JSON line per submission. Exit status: 0 when every submission was graded (whatever the verdicts), 2 on a "
        "usage error or when a submission ended in grader_error, 128+N when stopped by signal N (rerun to resume).",
    )
    parser.add_argument(
        "paths",
        type=Path,
        nargs="+",
        metavar="PATH",
        help="a submission file, or a class folder: every entry of it is a submission, graded or reported as not graded: "
        "ID.py files (id = file name), or folders (id = folder name) graded through their solution.py, else their only .py file",
    )
    parser.add_argument("--out", type=Path, required=True, help="the JSON-lines results file; a rerun with the same file skips what it already holds")
    parser.add_argument(
        "--csv",
        type=Path,
        metavar="FILE",
        help=f"also write the gradebook to FILE: {', '.join(CSV_COLUMNS)} of every submission of the batch (points as --format gradescope counts them)",
    )
    parser.add_argument(
        "--points",
        type=points_value,
        default=DEFAULT_POINTS,
        metavar="P",
        help=f"the points of a submission, shared among the cases by the spec's [scoring] table, for the gradebook, the summary and "
        f"the feedback (default {DEFAULT_POINTS:g})",
    )
    parser.add_argument(
        "--feedback",
        type=Path,
        metavar="DIR",
        help="also write each submission's report to DIR/<id>.<ext>, the very file `python -m grader FILE --format F --output` "
        "writes for it (the candidate's view; a rerun writes only those missing or graded again)",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="the format of the --feedback files (default text)")
    parser.add_argument(
        "--hidden-visibility", choices=VISIBILITIES, default=DEFAULT_HIDDEN_VISIBILITY, help="--feedback, gradescope: as for `python -m grader`"
    )
    parser.add_argument("--gradable-compile-errors", action="store_true", help="--feedback, prairielearn: as for `python -m grader`")
    parser.add_argument("--verbose", action="store_true", help="--feedback, text: show the message of every failing case")
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="submissions graded at the same time (default: the number of CPU cores)")
    parser.add_argument(
        "--shard",
        metavar="INDEX/COUNT",
        help="grade only shard INDEX (0-based) of COUNT: the submissions whose sha256(id) mod COUNT is INDEX, so COUNT "
        "machines (e.g. a Kubernetes Indexed Job with --shard $JOB_COMPLETION_INDEX/COUNT) grade each submission once",
    )
    parser.add_argument("--seed", help="secret seed for the hidden cases (prefer MLM_GRADER_SEED, which does not show in the process list)")
    parser.add_argument(
        "--allow-default-seed",
        action="store_true",
        help="grade with the fixed local seed when no secret seed is set (anyone can reproduce its hidden cases; for trying the batch out)",
    )
    parser.add_argument(
        "--isolation",
        choices=ISOLATION_LEVELS,
        default=os.environ.get("MLM_GRADER_ISOLATION", "auto"),
        help="how each submission is walled in, as for `python -m grader` (uid grades one submission at a time; "
        "the default comes from MLM_GRADER_ISOLATION when it is set)",
    )
    parser.add_argument("--spec", type=Path, default=SPEC_PATH, help="the problem's spec file (default: problem/spec.toml)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.feedback is None and (args.format != "text" or args.verbose or args.gradable_compile_errors or args.hidden_visibility != DEFAULT_HIDDEN_VISIBILITY):
        parser.error("--format, --hidden-visibility, --gradable-compile-errors and --verbose are for the --feedback files: give --feedback DIR too")
    return args


class _Stop:
    """SIGINT, SIGTERM and SIGHUP only ask the batch to stop; it then stops cleanly."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None

    def __enter__(self) -> "_Stop":
        self.previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def _handle(self, signum: int, frame: object) -> None:
        self.signum = self.signum or signum
        self.event.set()

    def __exit__(self, *exc: object) -> None:
        for s, handler in self.previous.items():
            signal.signal(s, handler)


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


def run(args: argparse.Namespace, stop: _Stop, out: TextIO) -> int:
    try:
        spec_bytes = args.spec.read_bytes()
    except OSError as error:
        raise SetupError(f"the spec file {args.spec} cannot be read ({error.strerror or error})") from None
    spec = load_spec(args.spec.resolve())  # SetupError: the grader's set-up, reported by main()
    counting = Counting(spec.scoring, args.points)
    shard = parse_shard(args.shard) if args.shard else None
    for target, option in ((args.csv, "--csv"), (args.feedback, "--feedback")):
        if target is not None and not target.resolve().parent.is_dir():
            raise UsageError(f"{option} {target}: no such folder {target.parent}")
    outputs = [path for path in (args.out, args.csv, args.feedback) if path is not None]
    submissions, notes = discover(args.paths, outputs)
    if shard:
        kept_ = [s for s in submissions if in_shard(s.id, *shard)]
        notes.append(f"shard {shard[0]}/{shard[1]}: {len(kept_)} of {len(submissions)} submissions")
        submissions = kept_
    refuse_default = None if args.allow_default_seed else "a batch grades for real"
    try:
        seeding = take_seed(spec, args.seed, args.isolation, program="grader batch", refuse_default=refuse_default)
    except SeedRefused as error:
        raise UsageError(str(error)) from None
    backend, seed = seeding.backend, seeding.seed
    seed_id, spec_sha256 = seed_public_id(seed), hashlib.sha256(spec_bytes).hexdigest()
    options = Options(points=args.points, hidden_visibility=args.hidden_visibility, gradable_compile_errors=args.gradable_compile_errors, verbose=args.verbose)
    feedback = Feedback(args.feedback, args.format, spec, options) if args.feedback else None
    results = ResultsFile(args.out)
    try:
        for note in notes + results.notes:
            print(note, file=out)
        hashes = {s.id: None if s.not_graded else file_sha256(s.path) for s in submissions}

        def current(s: Submission) -> bool:
            return is_current(results.latest.get(s.id), hashes[s.id], seed_id, spec_sha256, s.not_graded)

        todo = [s for s in submissions if not current(s)]
        if len(todo) < len(submissions):
            print(f"skipped {len(submissions) - len(todo)} submissions already graded in {args.out} (same file, seed, spec and grader version)", file=out)
        # An entry with nothing to grade gets its line at once: no child, nothing to wait for.
        for submission in [s for s in todo if s.not_graded]:
            report = not_graded_report(submission, seed_id)
            report.warnings = list(seeding.warnings)
            results.append(result_line(submission, None, spec_sha256, report))
            if feedback:
                feedback.write(submission.id, report)
        todo = [s for s in todo if not s.not_graded]
        jobs = 1 if backend == "uid" else min(args.jobs, max(1, len(todo)))
        if backend == "uid" and args.jobs > 1:
            print("uid isolation: grading one submission at a time (the runner user's processes are ended after each)", file=out)
        started = time.monotonic()
        if todo and not stop.event.is_set():
            # The warm pool's server imports torch while the grader does and prepares the cases.
            warm, _ = start_warm_pool(spec, backend)  # without one, map() tries once more and says why
            import torch

            torch.set_num_threads(1)  # tiny tensors: threads only spin against the other jobs
            progress = None
            try:
                workers = Workers(spec, seed, jobs=jobs, backend=backend)
                progress = Progress(len(todo), out, counting)
                with closing(workers.map(((s, s.path) for s in todo), stop.event, warm=warm)) as reports:
                    for submission, report in reports:
                        line = result_line(submission, hashes[submission.id], spec_sha256, report)
                        results.append(line)
                        if feedback:
                            feedback.write(submission.id, report)
                        progress.update(submission.id, line)
            finally:
                if progress:
                    progress.close()
                if warm:
                    warm.close()
            if workers.warm_note:
                print(f"each submission was graded in a sandboxed child of its own: {workers.warm_note}", file=out)
    finally:
        results.close()

    # The last line of each id counts; a grader_error line counts too, until a rerun retries it.
    done = {
        s.id: results.latest[s.id] for s in submissions if s.id in results.latest and (results.latest[s.id]["verdict"] == Verdict.GRADER_ERROR or current(s))
    }
    if stop.signum is not None and len(done) < len(submissions):
        print(
            f"stopped by {signal.Signals(stop.signum).name}: {len(done)} of {len(submissions)} submissions are graded in {args.out}; "
            f"run the same command again to grade the other {len(submissions) - len(done)}",
            file=out,
        )
        return 128 + stop.signum
    if feedback:
        earlier = feedback.complete(args.out, done)
        print(f"feedback: {len(done)} files in {args.feedback} ({args.format}; {earlier} of them from earlier runs' results)", file=out)
    where = f"{len(todo)} graded in {time.monotonic() - started:.1f}s ({jobs} at a time); results: {args.out}"
    return conclude(done, where, args.csv, out, counting)


def conclude(done: dict[str, dict[str, Any]], where: str, csv_path: Path | None, out: TextIO, counting: Counting, retry: str = "rerun to retry them") -> int:
    """The end of a batch (and of a merge): the summary, `where` (what was done, where the results
    are), the gradebook, and the exit status: EXIT_USAGE when a submission ended in grader_error."""
    print(f"\n{summary(done, counting)}", file=out)
    print(where, file=out)
    if csv_path:
        write_csv(csv_path, done, counting)
        print(f"gradebook: {csv_path} ({', '.join(CSV_COLUMNS)})", file=out)
    errors = [i for i, line in done.items() if line["verdict"] == Verdict.GRADER_ERROR]
    if errors:
        print(f"grader_error for {len(errors)} submissions ({printable(', '.join(errors))}): a fault of the grader; {retry}", file=out)
        return EXIT_USAGE
    return EXIT_DONE


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    with _Stop() as stop:
        try:
            return run(args, stop, sys.stdout)
        except UsageError as error:
            print(f"grader batch: {error}", file=sys.stderr)
            return EXIT_USAGE
        except OSError as error:  # e.g. a full disk: the lines written so far are whole and kept
            print(
                f"grader batch: cannot write {error.filename or args.out}: {error.strerror}; fix that and run the same command again to resume", file=sys.stderr
            )
            return EXIT_USAGE
        except Exception as error:  # noqa: BLE001 - e.g. the reference does not import: the grader's fault, never a traceback
            # The whole batch stops at once: every submission would get the same grader_error, and no line of it is
            # written, so that the gradebook never holds a row the grader did not decide and a rerun grades them all.
            what = "the grader's set-up is broken" if setup_fault(error) else "the grader failed"
            print(
                f"grader batch: grader_error: {what}, so no submission was graded and none is blamed: {internal_error(error).rstrip('.')}. "
                "The lines written so far are kept; run the same command again to resume",
                file=sys.stderr,
            )
            return EXIT_USAGE
