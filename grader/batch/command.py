"""The command `python -m grader batch PATH... --out results.jsonl`: its arguments, and the batch
from the submissions found to the summary. Exit status: grader/batch/exits.py."""

import argparse
import hashlib
import os
import signal
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import TextIO

from grader.batch.discovery import Submission, discover
from grader.batch.exits import EXIT_USAGE, UsageError
from grader.batch.feedback import Feedback
from grader.batch.gradebook import CSV_COLUMNS, Counting
from grader.batch.progress import Progress
from grader.batch.schedule import Workers, default_jobs, start_warm_pool
from grader.batch.shards import in_shard, parse_shard
from grader.batch.stop import Stop
from grader.batch.store import ResultsFile, file_sha256, is_current, not_graded_report, result_line
from grader.batch.summary import conclude
from grader.cli import internal_error, points_value
from grader.formats import FORMATS, Options
from grader.formats.gradescope import DEFAULT_HIDDEN_VISIBILITY, VISIBILITIES
from grader.formats.points import DEFAULT_POINTS
from grader.isolation import ISOLATION_LEVELS
from grader.results import Verdict
from grader.seeding import SeedRefused, take_seed
from grader.spec import SPEC_PATH, SetupError, load_spec, seed_public_id, setup_fault


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


def run(args: argparse.Namespace, stop: Stop, out: TextIO) -> int:
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


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    with Stop() as stop:
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
