"""The command `python -m grader batch PATH... --out results.jsonl`: its arguments, and the batch
from the submissions found to the summary. Exit status: grader/batch/exits.py."""

import argparse
import io
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TextIO

from grader.batch.archive import Workspace
from grader.batch.class_report import write_class_report
from grader.batch.discovery import Submission, discover
from grader.batch.exits import EXIT_USAGE, UsageError
from grader.batch.feedback import Feedback
from grader.batch.gradebook import CSV_COLUMNS, GRADEBOOKS, Counting
from grader.batch.progress import Progress
from grader.batch.schedule import Workers, default_jobs, start_warm_pool
from grader.batch.shards import keep_shard, parse_shard
from grader.batch.stop import Stop
from grader.batch.store import ResultsFile, Resume, not_graded_report
from grader.batch.summary import Gradebook, conclude
from grader.faults import internal_error
from grader.formats import FORMATS, Options
from grader.formats.gradescope import DEFAULT_HIDDEN_VISIBILITY, VISIBILITIES
from grader.formats.points import DEFAULT_POINTS, points_value
from grader.results import Report
from grader.sandbox import IsolationUnavailable
from grader.sandbox.backends import ISOLATION_LEVELS, backend_named, chooser
from grader.seeding import SeedRefused, take_seed
from grader.spec import DEFAULT_PROBLEM, Spec, UnknownProblem, add_problem_arguments, seed_public_id, setup_fault, spec_of_arguments


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
        help="a submission file (.py, or a Jupyter notebook .ipynb), a class folder, or an LMS's download, as its .zip or the folder "
        "it unzips to: every entry is a submission, graded or reported as not graded. A Canvas or Moodle download gives one "
        "entry per student, id = the LMS's student id (docs/lms.md); else ID.py or ID.ipynb files (id = file name), or folders "
        "(id = folder name) graded through their solution.py, else their only .py or .ipynb file",
    )
    parser.add_argument("--out", type=Path, required=True, help="the JSON-lines results file; a rerun with the same file skips what it already holds")
    parser.add_argument(
        "--csv",
        type=Path,
        metavar="FILE",
        help=f"also write the gradebook to FILE, rebuilt from the whole --out file (every submission ever graded into it, so "
        f"regrading one student keeps every row): {', '.join(CSV_COLUMNS)} (points as --format gradescope counts them)",
    )
    parser.add_argument(
        "--gradebook",
        choices=GRADEBOOKS,
        default="grader",
        help="the format of --csv: grader (the columns above, default), canvas (Canvas's gradebook import: Student, ID, SIS User ID, "
        "SIS Login ID, Section and the assignment's column; needs --assignment), moodle (Moodle's offline grading worksheet: "
        "Identifier, Full name, Grade, Maximum Grade, Last modified (grade), Feedback comments)",
    )
    parser.add_argument(
        "--assignment",
        metavar="TITLE",
        help="--gradebook canvas: the assignment's column, headed as Canvas's own gradebook export heads it, \"Title (assignment id)\"",
    )
    parser.add_argument(
        "--class-report",
        type=Path,
        metavar="FILE.html",
        help="also write the class at a glance to FILE.html, one self-contained page (no network): the scores, the verdicts, the "
        "checks and case families the class fails most, the commonest diagnoses, and pairs of submissions whose code is unusually "
        "similar, side by side",
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
    add_problem_arguments(parser)
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.feedback is None and (args.format != "text" or args.verbose or args.gradable_compile_errors or args.hidden_visibility != DEFAULT_HIDDEN_VISIBILITY):
        parser.error("--format, --hidden-visibility, --gradable-compile-errors and --verbose are for the --feedback files: give --feedback DIR too")
    if args.csv is None and (args.gradebook != "grader" or args.assignment):
        parser.error("--gradebook and --assignment are for the --csv file: give --csv FILE too")
    if args.gradebook == "canvas" and not args.assignment:
        parser.error(
            "--gradebook canvas needs --assignment 'TITLE (ID)', the assignment's column as Canvas's gradebook export heads it "
            "(Canvas would make a new assignment of any other name)"
        )
    return args


def run(args: argparse.Namespace, stop: Stop, out: TextIO) -> int:
    """A batch, step by step. Every usage error comes before a line is written; a stop keeps every
    finished line, and a rerun resumes from them."""
    try:
        spec = spec_of_arguments(args)  # SetupError: the grader's set-up, reported by main()
    except UnknownProblem as error:
        raise UsageError(str(error)) from None
    counting = Counting(spec.scoring, args.points)
    shard = parse_shard(args.shard) if args.shard else None
    outputs = own_outputs(args)
    with Workspace() as workspace:  # a zip's members, opened in a private folder removed at the end
        return _run(args, stop, out, spec, counting, outputs, shard, workspace)


def _run(
    args: argparse.Namespace, stop: Stop, out: TextIO, spec: Spec, counting: Counting, outputs: list[Path], shard: tuple[int, int] | None, workspace: Workspace
) -> int:
    spec_sha256 = spec.digest
    submissions, notes = find_submissions(args.paths, outputs, shard, workspace)
    try:
        seeding = take_seed(
            spec,
            args.seed,
            chooser(args.isolation),
            program="grader batch",
            refuse_default=None if args.allow_default_seed else "a batch grades for real",
        )
    except (SeedRefused, IsolationUnavailable) as error:
        raise UsageError(str(error)) from None
    feedback = open_feedback(args, spec)
    results = ResultsFile(args.out)
    try:
        say(notes + results.notes, out)
        refuse_other_problems(results, spec, args.out)
        resume = Resume(results, submissions, seed_public_id(seeding.seed), spec_sha256)
        todo = still_to_grade(resume, args.out, out)
        record = Record(resume, feedback, out, counting)
        record_not_graded([s for s in todo if s.not_graded], seeding.warnings, record, spec)
        todo = [s for s in todo if not s.not_graded]
        jobs = jobs_for(args.jobs, seeding.backend, len(todo), out)
        started = time.monotonic()
        if todo and not stop.event.is_set():
            say(grade(todo, spec, seeding.seed, seeding.backend, jobs, stop.event, record), out)
    finally:
        results.close()
    done = resume.done()
    if stop.signum is not None and len(done) < len(submissions):
        return stopped(stop.signum, len(done), len(submissions), args.out, out)
    if feedback:
        complete_feedback(feedback, done, args, out)
    where = f"{len(todo)} graded in {time.monotonic() - started:.1f}s ({jobs} at a time); results: {args.out}"
    gradebook = Gradebook(args.csv, args.gradebook, args.assignment or "") if args.csv else None
    status = conclude(done, where, gradebook, out, counting, everyone=results.latest)
    if args.class_report:
        sources = {s.id: s.path for s in submissions if not s.not_graded}
        print(write_class_report(args.class_report, args.out, spec, counting, sources), file=out)
    return status


# --- the steps of run(), in its order --------------------------------------------------------------


def refuse_other_problems(results: ResultsFile, spec: Spec, path: Path) -> None:
    """A results file holds one challenge's results: a batch of another never appends to it."""
    others = sorted({line.get("problem") or DEFAULT_PROBLEM for line in results.latest.values()} - {spec.id})
    if others:
        raise UsageError(f"{path} holds results of the problem {others[0]}, not {spec.id}: give this batch another --out file (one results file per problem)")


def own_outputs(args: argparse.Namespace) -> list[Path]:
    """The batch's own files (--out, --csv, --feedback), never submissions; the folders of --csv
    and --feedback must exist."""
    for target, option in ((args.csv, "--csv"), (args.feedback, "--feedback"), (args.class_report, "--class-report")):
        if target is not None and not target.resolve().parent.is_dir():
            raise UsageError(f"{option} {target}: no such folder {target.parent}")
    return [path for path in (args.out, args.csv, args.feedback, args.class_report) if path is not None]


def find_submissions(paths: list[Path], outputs: list[Path], shard: tuple[int, int] | None, workspace: Workspace) -> tuple[list[Submission], list[str]]:
    """The submissions of this run (those of its shard), and the notes to print about them."""
    submissions, notes = discover(paths, outputs, workspace)
    if shard:
        submissions, note = keep_shard(submissions, *shard)
        notes.append(note)
    return submissions, notes


def open_feedback(args: argparse.Namespace, spec: Spec) -> Feedback | None:
    """The --feedback folder, made now (before anything is graded); None without --feedback."""
    if args.feedback is None:
        return None
    options = Options(points=args.points, hidden_visibility=args.hidden_visibility, gradable_compile_errors=args.gradable_compile_errors, verbose=args.verbose)
    return Feedback(args.feedback, args.format, spec, options)


def say(notes: list[str], out: TextIO) -> None:
    for note in notes:
        print(note, file=out)


def still_to_grade(resume: Resume, results_path: Path, out: TextIO) -> list[Submission]:
    """The submissions no line of the results file grades yet; how many were skipped."""
    todo = resume.todo()
    for note in resume.kept_regrades():
        print(note, file=out)
    if len(todo) < len(resume.submissions):
        skipped = len(resume.submissions) - len(todo)
        print(f"skipped {skipped} submissions already graded in {results_path} (same file, seed, spec and grader version)", file=out)
    return todo


class Record:
    """Where each report goes as soon as it is known: its line in the results file, its --feedback
    file, and the progress shown while submissions are graded."""

    def __init__(self, resume: Resume, feedback: Feedback | None, out: TextIO, counting: Counting) -> None:
        self.resume, self.feedback, self.out, self.counting = resume, feedback, out, counting
        self.progress: Progress | None = None

    def __call__(self, submission: Submission, report: Report) -> None:
        # Where the file was found (a zip's member, the LMS's name for it) and why it was the one graded.
        report.submission = submission.shown or report.submission
        report.notes = [*submission.notes, *report.notes]
        line = self.resume.append(submission, report)
        if self.feedback:
            self.feedback.write(submission.id, report)
        if self.progress:
            self.progress.update(submission.id, line)

    @contextmanager
    def showing_progress(self, total: int) -> Iterator[None]:
        self.progress = Progress(total, self.out, self.counting)
        try:
            yield
        finally:
            self.progress.close()
            self.progress = None


def record_not_graded(submissions: list[Submission], warnings: list[str], record: Record, spec: Spec) -> None:
    """An entry with nothing to grade gets its line at once: no child, nothing to wait for."""
    for submission in submissions:
        report = not_graded_report(submission, record.resume.seed_id)
        report.warnings = list(warnings)
        report.problem, report.problem_digest = spec.id, spec.digest  # as every line of the batch: merge requires it
        record(submission, report)


def jobs_for(requested: int, backend: str, count: int, out: TextIO) -> int:
    """Gradings at once: --jobs, no more than the submissions to grade, nor than the backend allows
    (one under uid isolation)."""
    most = backend_named(backend).max_jobs or requested
    if requested > most:  # the uid backend's: its runner user is held by one grading at a time
        print("uid isolation: grading one submission at a time (the runner user's processes are ended after each)", file=out)
    return min(requested, max(1, count), most)


def grade(todo: list[Submission], spec: Spec, seed: str, backend: str, jobs: int, stop: threading.Event, record: Record) -> list[str]:
    """Grade `todo` `jobs` at a time (schedule.py), recording each report as it is known, until done
    or stopped; a note when the submissions could not be graded through the warm pool."""
    # The warm pool's server imports torch while the grader does and prepares the cases.
    warm, _ = start_warm_pool(spec, backend)  # without one, map() tries once more and says why
    import torch

    torch.set_num_threads(1)  # tiny tensors: threads only spin against the other jobs
    try:
        workers = Workers(spec, seed, jobs=jobs, backend=backend)
        with record.showing_progress(len(todo)), closing(workers.map(((s, s.path) for s in todo), stop, warm=warm)) as reports:
            for submission, report in reports:
                record(submission, report)
    finally:
        if warm:
            warm.close()
    return [f"each submission was graded in a sandboxed child of its own: {workers.warm_note}"] if workers.warm_note else []


def stopped(signum: int, graded: int, total: int, results_path: Path, out: TextIO) -> int:
    """A batch stopped by a signal before its end: what is graded, how to resume; 128 + the signal."""
    print(
        f"stopped by {signal.Signals(signum).name}: {graded} of {total} submissions are graded in {results_path}; "
        f"run the same command again to grade the other {total - graded}",
        file=out,
    )
    return 128 + signum


def complete_feedback(feedback: Feedback, done: dict[str, dict[str, Any]], args: argparse.Namespace, out: TextIO) -> None:
    """The feedback file of every submission, those graded by earlier runs too."""
    earlier = feedback.complete(args.out, done)
    print(f"feedback: {len(done)} files in {args.feedback} ({args.format}; {earlier} of them from earlier runs' results)", file=out)


class Output(io.TextIOBase):
    """The batch's standard output, which may be a pipe whose reader has gone (`batch ... | head`):
    then nothing more is written to it, and the batch stops as for a signal (SIGPIPE), keeping every
    finished line."""

    def __init__(self, stream: TextIO, stop: Stop) -> None:
        self.stream, self.stop, self.broken = stream, stop, False

    def _closed(self) -> None:
        self.broken = True
        self.stop.signum = self.stop.signum or signal.SIGPIPE
        self.stop.event.set()

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._closed()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._closed()

    def isatty(self) -> bool:
        return self.stream.isatty()


def _closed_stdout(args: argparse.Namespace) -> int:
    """The reader of standard output went away: say so on stderr, once, and exit as for SIGPIPE."""
    try:  # what Python still holds for stdout goes nowhere, quietly (its flush at exit would fail)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    print(
        f"grader batch: standard output was closed before the batch ended (its reader, such as `head`, exited), so the batch "
        f"stopped; every submission graded so far is kept in {args.out}: run the same command again, its output to a file or "
        "a pager, to grade the rest",
        file=sys.stderr,
    )
    return 128 + signal.SIGPIPE


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    with Stop() as stop:
        out = Output(sys.stdout, stop)
        try:
            status = run(args, stop, out)
            return _closed_stdout(args) if out.broken else status
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
