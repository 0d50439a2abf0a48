"""Many submissions: `python -m grader batch PATH... --out results.jsonl`.

Finds the submissions (a file, or a folder of *.py or of */solution.py), keeps a deterministic
shard of them, skips those already graded in the results file, grades the rest `--jobs` at a time
(each in its own sandboxed child, exactly as `python -m grader FILE` would) and appends one JSON
line per submission as soon as it is known. Ctrl-C or SIGTERM stops cleanly: running children
are killed, their gradings dropped (a rerun grades them), every finished line stays.

Every submission is graded by Pool.grade_file, the one place that knows how; the batch command
and the Python API (grader/api.py) both grade through Pool.map.
"""

import argparse
import csv
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
from grader.formats.json import to_json
from grader.formats.safe import csv_cell, printable
from grader.isolation import ISOLATION_LEVELS, choose_backend
from grader.pool import PoolError, ServerLost, WarmPool, pool_problem
from grader.report import hints
from grader.results import Report, Verdict
from grader.sandbox import Child
from grader.seeding import SeedRefused, take_seed
from grader.spec import SPEC_PATH, Spec, load_spec, seed_public_id

EXIT_DONE, EXIT_USAGE = 0, 2
POLL_SECONDS = 0.2  # how often a waiting batch looks for a stop request
SOLUTION = "solution.py"
SLOWEST_SHOWN = 5
KEPT = ("id", "sha256", "grader_version", "spec_sha256", "seed_id", "verdict", "score", "seconds")  # of each line, in memory
K = TypeVar("K")


class UsageError(Exception):
    """The command cannot run as asked; the message says why and what to do."""


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)))


# --- the pool: one submission -> one report, `jobs` at a time -------------------------------------


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


class Pool:
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


@dataclass(frozen=True)
class Submission:
    id: str
    path: Path


def _folder_submissions(folder: Path) -> tuple[list[Submission], str]:
    files = sorted(p for p in folder.glob("*.py") if not p.name.startswith(".") and not p.is_dir())
    folders = sorted(p.parent for p in folder.glob(f"*/{SOLUTION}") if not p.parent.name.startswith("."))
    if files and folders:
        raise UsageError(
            f"{folder} mixes two layouts: {len(files)} *.py files (e.g. {files[0].name}) and {len(folders)} folders with a "
            f"{SOLUTION} (e.g. {folders[0].name}/{SOLUTION}); keep one layout per folder, or pass the files themselves"
        )
    if folders:
        return [Submission(d.name, d / SOLUTION) for d in folders], f"one folder per submission (*/{SOLUTION}; id = folder name)"
    if files:
        return [Submission(p.stem, p) for p in files], "one file per submission (*.py; id = file name without .py)"
    raise UsageError(f"{folder} holds no submission: neither *.py files nor folders with a {SOLUTION}")


def discover(paths: list[Path]) -> tuple[list[Submission], list[str]]:
    """Every submission named by `paths`, sorted by id, and a note per folder saying its layout.
    A file's id is its name without .py, or its folder's name for a solution.py."""
    found: list[Submission] = []
    notes = []
    for path in paths:
        if path.is_dir():
            submissions, layout = _folder_submissions(path)
            notes.append(f"{path}: {len(submissions)} submissions, {layout}")
            found += submissions
        elif path.exists():
            found.append(Submission(path.resolve().parent.name if path.name == SOLUTION else path.stem, path))
        else:
            raise UsageError(f"no such file or folder: {path}")
    by_id: dict[str, Path] = {}
    for submission in found:
        if submission.id in by_id and by_id[submission.id] != submission.path:
            raise UsageError(f"two submissions have the id {submission.id!r}: {by_id[submission.id]} and {submission.path}; ids must be unique")
        by_id[submission.id] = submission.path
    return [Submission(i, by_id[i]) for i in sorted(by_id)], notes


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
        """Only what resuming and the summary need: memory stays small for a large class."""
        self.latest[line["id"]] = {key: line.get(key) for key in KEPT}

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


def result_line(submission: Submission, sha256: str | None, spec_sha256: str, report: Report) -> dict[str, Any]:
    """The --json --staff object of the report (a results file is for staff: `staff_only` holds what
    the candidate's report withholds), with what identifies the submission and the grading."""
    key = {"id": submission.id, "sha256": sha256, "grader_version": __version__, "spec_sha256": spec_sha256, "seed_id": report.seed_id}
    return key | to_json(report, staff=True)


def is_current(line: dict[str, Any] | None, sha256: str | None, seed_id: str, spec_sha256: str) -> bool:
    """Whether a line already grades this very file with this seed, spec and grader version."""
    if line is None or sha256 is None or line.get("verdict") == Verdict.GRADER_ERROR:
        return False  # a grader fault is retried
    return (line.get("sha256"), line.get("seed_id"), line.get("grader_version"), line.get("spec_sha256")) == (
        sha256,
        seed_id,
        __version__,
        spec_sha256,
    )


def write_csv(path: Path, rows: list[tuple[str, str, float]]) -> None:
    """id,verdict,score for a gradebook, replaced whole (never half written). An id is a file's name,
    which a student may choose: no cell is a formula to a spreadsheet or holds a control character
    (grader/formats/safe.py)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "verdict", "score"])
    writer.writerows((csv_cell(submission_id), csv_cell(verdict), score) for submission_id, verdict, score in rows)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(buffer.getvalue(), encoding="utf-8")
    partial.replace(path)


# --- progress and summary ---------------------------------------------------------------------------


class Progress:
    """A bar on a terminal (tqdm: elapsed, rate, ETA, verdicts so far); elsewhere one line per submission."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.out, self.done = total, out, 0
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
            print(f"[{self.done}/{self.total}] {shown}: {line['verdict']}, score {line['score']:.2f}, {line['seconds']:.1f}s", file=self.out, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def summary(lines: list[dict[str, Any]]) -> str:
    """Count per verdict, score distribution, the slowest submissions."""
    if not lines:
        return "no submission graded"
    verdicts = Counter(line["verdict"] for line in lines)
    scores = [float(line["score"]) for line in lines]
    buckets = Counter("0" if s == 0 else "1" if s == 1 else f"[{int(s * 4) / 4:.2f}, {int(s * 4) / 4 + 0.25:.2f})" for s in scores)
    order = ["0", "[0.00, 0.25)", "[0.25, 0.50)", "[0.50, 0.75)", "[0.75, 1.00)", "1"]
    slowest = sorted(lines, key=lambda line: -float(line.get("seconds") or 0))[:SLOWEST_SHOWN]
    return "\n".join(
        [
            f"{len(lines)} submissions: " + ", ".join(f"{v} {n}" for v, n in verdicts.most_common()),
            f"scores: mean {statistics.fmean(scores):.2f}, median {statistics.median(scores):.2f}; "
            + ", ".join(f"{b}: {buckets[b]}" for b in order if buckets[b]),
            "slowest: " + ", ".join(f"{printable(line['id'])} {float(line.get('seconds') or 0):.1f}s ({line['verdict']})" for line in slowest),
        ]
    )


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
        help="a submission file, or a folder holding either *.py files (id = file name) or */solution.py (id = folder name)",
    )
    parser.add_argument("--out", type=Path, required=True, help="the JSON-lines results file; a rerun with the same file skips what it already holds")
    parser.add_argument("--csv", type=Path, metavar="FILE", help="also write id,verdict,score of every submission of the batch to FILE")
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


def run(args: argparse.Namespace, stop: _Stop, out: TextIO) -> int:
    try:
        spec_bytes = args.spec.read_bytes()
        spec = load_spec(args.spec.resolve())
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UsageError(f"cannot use the spec file {args.spec}: {error}") from None
    shard = parse_shard(args.shard) if args.shard else None
    if args.csv and not args.csv.resolve().parent.is_dir():
        raise UsageError(f"--csv {args.csv}: no such folder {args.csv.parent}")
    submissions, notes = discover(args.paths)
    if shard:
        kept = [s for s in submissions if in_shard(s.id, *shard)]
        notes.append(f"shard {shard[0]}/{shard[1]}: {len(kept)} of {len(submissions)} submissions")
        submissions = kept
    refuse_default = None if args.allow_default_seed else "a batch grades for real"
    try:
        seeding = take_seed(spec, args.seed, args.isolation, program="grader batch", refuse_default=refuse_default)
    except SeedRefused as error:
        raise UsageError(str(error)) from None
    backend, seed = seeding.backend, seeding.seed
    seed_id, spec_sha256 = seed_public_id(seed), hashlib.sha256(spec_bytes).hexdigest()
    results = ResultsFile(args.out)
    try:
        for note in notes + results.notes:
            print(note, file=out)
        hashes = {s.id: file_sha256(s.path) for s in submissions}
        todo = [s for s in submissions if not is_current(results.latest.get(s.id), hashes[s.id], seed_id, spec_sha256)]
        if len(todo) < len(submissions):
            print(f"skipped {len(submissions) - len(todo)} submissions already graded in {args.out} (same file, seed, spec and grader version)", file=out)
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
                pool = Pool(spec, seed, jobs=jobs, backend=backend)
                progress = Progress(len(todo), out)
                with closing(pool.map(((s, s.path) for s in todo), stop.event, warm=warm)) as reports:
                    for submission, report in reports:
                        line = result_line(submission, hashes[submission.id], spec_sha256, report)
                        results.append(line)
                        progress.update(submission.id, line)
            finally:
                if progress:
                    progress.close()
                if warm:
                    warm.close()
            if pool.warm_note:
                print(f"each submission was graded in a sandboxed child of its own: {pool.warm_note}", file=out)
    finally:
        results.close()

    # The last line of each id counts; a grader_error line counts too, until a rerun retries it.
    final = {s.id: results.latest[s.id] for s in submissions if s.id in results.latest}
    done = {i: line for i, line in final.items() if line["verdict"] == Verdict.GRADER_ERROR or is_current(line, hashes[i], seed_id, spec_sha256)}
    if stop.signum is not None and len(done) < len(submissions):
        print(
            f"stopped by {signal.Signals(stop.signum).name}: {len(done)} of {len(submissions)} submissions are graded in {args.out}; "
            f"run the same command again to grade the other {len(submissions) - len(done)}",
            file=out,
        )
        return 128 + stop.signum
    where = f"{len(todo)} graded in {time.monotonic() - started:.1f}s ({jobs} at a time); results: {args.out}"
    return conclude(done, where, args.csv, out)


def conclude(done: dict[str, dict[str, Any]], where: str, csv_path: Path | None, out: TextIO, retry: str = "rerun to retry them") -> int:
    """The end of a batch (and of a merge): the summary, `where` (what was done, where the results
    are), the gradebook, and the exit status: EXIT_USAGE when a submission ended in grader_error."""
    print(f"\n{summary(list(done.values()))}", file=out)
    print(where, file=out)
    if csv_path:
        write_csv(csv_path, [(i, line["verdict"], line["score"]) for i, line in done.items()])
        print(f"gradebook: {csv_path}", file=out)
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
