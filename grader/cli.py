"""Command line: python -m grader SUBMISSION [--problem ID] [--public] [--format F] [--output FILE] [--seed S];
python -m grader batch PATH... for many submissions (grader/batch/); python -m grader merge SHARD.jsonl...
to join a batch's shards (grader/merge.py); python -m grader problems to list the challenges;
python -m grader verify ID to check a challenge's package (grader/verify.py); python -m grader new ID
to write a new one (grader/new.py); python -m grader serve to grade over HTTP (grader/service/); python -m
grader rules to print what a submission may use (grader/allowlist.py)."""

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

from grader import __version__
from grader.faults import internal_error
from grader.formats import FORMATS, PLATFORM_FORMATS, VISIBILITIES, Options, render, write_atomically
from grader.formats.points import DEFAULT_POINTS, points_value
from grader.formats.safe import printable
from grader.judge import grade
from grader.results import Report, Verdict
from grader.sandbox import IsolationUnavailable
from grader.sandbox.backends import ISOLATION_LEVELS, backend_named, chooser
from grader.seeding import SeedRefused, take_seed
from grader.spec import Spec, UnknownProblem, add_problem_arguments, spec_of_arguments

EXIT_ACCEPTED, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader",
        description="Grade a solution of one challenge (the default one, problem/DEFAULT's, unless --problem says another). "
        "Exit status: 0 accepted, 1 any other verdict, 2 usage or grader error. "
        "To grade many submissions: python -m grader batch --help; over HTTP: python -m grader serve --help; "
        "the challenges: python -m grader problems; to write one: python -m grader new --help; "
        "to check one: python -m grader verify --help.",
    )
    parser.add_argument("submission", type=Path, nargs="?", help="the candidate's solution.py")
    parser.add_argument(
        "--save-public",
        type=Path,
        metavar="DIR",
        help="write each public case (inputs, expected logits and gradients) to DIR/<case>.pt and exit; load one with torch.load(path, weights_only=True)",
    )
    parser.add_argument("--public", action="store_true", help="run only the public cases, with full diagnostics")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        help="the report's format: text (the table, default), json (the grader's own object), gradescope or prairielearn "
        "(the platform's results.json), junit (XML for CI)",
    )
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    parser.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the report to FILE (replaced if it exists) instead of stdout; stdout then gets the text report, as a log",
    )
    parser.add_argument(
        "--points",
        type=points_value,
        default=DEFAULT_POINTS,
        metavar="P",
        help=f"gradescope, prairielearn: the submission's points, shared among the cases by the spec's [scoring] table (default {DEFAULT_POINTS:g})",
    )
    parser.add_argument(
        "--hidden-visibility",
        choices=VISIBILITIES,
        default="after_published",
        help="gradescope: when students see the hidden cases' results (default after_published; public cases are always visible)",
    )
    parser.add_argument(
        "--gradable-compile-errors",
        action="store_true",
        help="prairielearn: count compile_error and invalid_submission as graded attempts scoring 0 (default: gradable false, no attempt used)",
    )
    parser.add_argument(
        "--allow-default-seed",
        action="store_true",
        help="let gradescope and prairielearn reports use the fixed local seed, which anyone can reproduce (they refuse without a secret seed)",
    )
    parser.add_argument(
        "--seed",
        help="secret seed for the hidden cases (prefer the environment variable named in the spec, "
        "MLM_GRADER_SEED, which does not show in the process list); default: a fixed local seed",
    )
    parser.add_argument(
        "--isolation",
        choices=ISOLATION_LEVELS,
        default=os.environ.get("MLM_GRADER_ISOLATION", "auto"),
        help="how the submission is walled in: auto (the strongest that works here), strict (bubblewrap or uid "
        "separation, else refuse), docker (each child in a container from the runner image, through the Docker Engine "
        "API at DOCKER_HOST), or one backend by name; every report names the level used; the default comes from "
        "MLM_GRADER_ISOLATION when it is set (the image sets strict)",
    )
    parser.add_argument(
        "--no-static-check",
        action="store_true",
        help="for testing the grader: skip the static policy check so the runtime guard and the sandbox face the "
        "submission alone; refused unless the isolation is bubblewrap, uid or docker",
    )
    parser.add_argument(
        "--unrestricted",
        action="store_true",
        help="for testing the grader: run the submission as plain Python, without the static check and without the "
        "capability layer (grader/child/capabilities/), so the runtime guard's operator checks, the protocol and the "
        "sandbox face it alone; refused unless the isolation is bubblewrap, uid or docker",
    )
    parser.add_argument("--verbose", action="store_true", help="show the message of every failing case")
    parser.add_argument(
        "--staff",
        action="store_true",
        help="for staff: also show what the candidate's report withholds (the whole message of each hidden case, all the "
        "submission printed once the hidden cases began) in text, json and junit reports and in the log printed with "
        "--output; a gradescope or prairielearn results.json, which students read, never holds it",
    )
    add_problem_arguments(parser)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser.parse_args(argv)


def save_public_cases(spec: Spec, folder: Path) -> int:
    """Everything about the public cases, for a candidate to debug with. Hidden cases never."""
    import torch

    from grader.cases import make_cases
    from grader.expected import expected_for, public_case_file

    folder.mkdir(parents=True, exist_ok=True)
    for case in make_cases(spec, spec.default_hidden_seed, public_only=True):
        expected = expected_for(case, spec)
        torch.save(public_case_file(case, expected, spec), folder / f"{case.name}.pt")
        print(f"{folder / case.name}.pt  ({case.shape_text()}, {case.dtype})")
    return EXIT_ACCEPTED


def main(argv: list[str] | None = None) -> int:
    """Never a traceback: usage errors are one line on stderr (exit status 2); a fault of the grader
    is a grader_error report in the requested format (exit status 2). No warning of the grader's own
    process (torch's, nbformat's) reaches the output: what a submission warns is its child's stderr,
    captured apart and shown in its report."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _command(sys.argv[1:] if argv is None else argv)


def _command(argv: list[str]) -> int:
    if argv[:1] == ["batch"]:
        from grader.batch import command

        return command.main(argv[1:])
    if argv[:1] == ["merge"]:
        from grader import merge

        return merge.main(argv[1:])
    if argv[:1] == ["problems"]:
        from grader import catalog

        return catalog.main(argv[1:])
    if argv[:1] == ["rules"]:
        from grader import allowlist

        return allowlist.main(argv[1:])
    if argv[:1] == ["new"]:
        from grader import new

        return new.main(argv[1:])
    if argv[:1] == ["verify"]:
        from grader import verify

        return verify.main(argv[1:])
    if argv[:1] == ["serve"]:
        from grader.service import command as service_command

        return service_command.main(argv[1:])
    args = parse_args(argv)  # argparse exits with status 2 and a usage line on bad arguments
    if args.json and args.format not in (None, "json"):
        print(f"grader: --json means --format json; give one of --json and --format {args.format}", file=sys.stderr)
        return EXIT_USAGE
    fmt = "json" if args.json else args.format or "text"
    try:
        return _main(args, fmt)
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - a fault of the grader must never be blamed on the candidate
        report = Report(Verdict.GRADER_ERROR, internal_error(error), str(args.submission), "", "")
        return emit(report, fmt, None, args)


def unwritable_stdout(error: OSError) -> None:
    try:
        why = error.strerror or error
        print(f"grader: the report could not be written to standard output ({why}); write it to a file with --output FILE", file=sys.stderr, flush=True)
    except OSError:
        pass


def minimal_report(report: Report, fmt: str) -> str:
    """A report that needs nothing that could fail: the grader's own JSON fields, or three lines of text."""
    if fmt == "json":
        keys = ("verdict", "message", "submission", "seed_id", "isolation")
        return json.dumps({"score": 0.0, "max_score": 1.0, "cases": [], **{k: str(getattr(report, k)) for k in keys}}, indent=2)
    return printable(f"Submission: {report.submission}\nVerdict:    {report.verdict.value.upper()}\n\n{report.message}")


def emit(report: Report, fmt: str, spec: Spec | None, args: argparse.Namespace) -> int:
    """Print (or write to --output) the report in the requested format, and return the exit status.
    If the report cannot be rendered, a grader_error report takes its place, in the same format
    where possible."""
    options = Options(
        points=args.points,
        hidden_visibility=args.hidden_visibility,
        gradable_compile_errors=args.gradable_compile_errors,
        verbose=args.verbose or args.public,
        staff=args.staff,
    )
    try:
        rendered = render(report, fmt, spec, options)
        log = render(report, "text", spec, options) if args.output and fmt != "text" else None
    except Exception as error:  # noqa: BLE001 - never a traceback, and never the candidate's fault
        if report.verdict != Verdict.GRADER_ERROR:
            report = Report(Verdict.GRADER_ERROR, internal_error(error), report.submission, report.seed_id, report.isolation)
        try:
            rendered = render(report, fmt, spec, options)
        except Exception:  # noqa: BLE001
            rendered = minimal_report(report, fmt)
        log = None
    if args.output is None:
        try:
            print(rendered, flush=True)
        except OSError as error:  # a closed pipe, a full disk: say so, and not with a traceback
            unwritable_stdout(error)
            return EXIT_USAGE
    else:
        try:
            write_atomically(args.output, rendered + "\n")
        except OSError as error:
            print(f"grader: cannot write the report to {args.output}: {error.strerror or error}", file=sys.stderr)
            return EXIT_USAGE
        if log is not None:
            print(log)
    if report.verdict == Verdict.GRADER_ERROR:
        return EXIT_USAGE
    return EXIT_ACCEPTED if report.verdict == Verdict.ACCEPTED else EXIT_REJECTED


def _main(args: argparse.Namespace, fmt: str) -> int:
    try:
        spec = spec_of_arguments(args)
    except UnknownProblem as error:
        print(f"grader: {error}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as error:  # noqa: BLE001 - any fault of the file (TOML, missing keys, wrong types) is the grader's set-up
        # A report all the same, in the requested format: a platform must get a grader_error, never nothing.
        report = Report(Verdict.GRADER_ERROR, internal_error(error), str(args.submission or ""), "", "")
        if fmt != "text" or args.output:  # the report is for a program: say it to the person too
            print(f"grader: {report.message}", file=sys.stderr)
        return emit(report, fmt, None, args)
    if args.save_public:
        try:
            return save_public_cases(spec, args.save_public)
        except OSError as error:
            print(f"grader: cannot write the public cases to {args.save_public}: {error.strerror or error}", file=sys.stderr)
            return EXIT_USAGE
    if args.submission is None and os.environ.get("MLM_GRADER_SUBMISSION"):  # the image's default: /submission/solution.py
        args.submission = Path(os.environ["MLM_GRADER_SUBMISSION"])
    if args.submission is None:
        print("grader: a submission file is needed (or --save-public DIR)", file=sys.stderr)
        return EXIT_USAGE
    try:
        found = args.submission.exists()
    except OSError as error:  # e.g. a name too long, a folder that may not be searched
        print(f"grader: cannot look at {args.submission}: {error.strerror or error}", file=sys.stderr)
        return EXIT_USAGE
    if not found:
        print(f"grader: no such file: {args.submission}", file=sys.stderr)
        return EXIT_USAGE
    if args.submission.is_dir():
        print(
            f"grader: {args.submission} is a folder; to grade every submission in it: python -m grader batch {args.submission} --out results.jsonl",
            file=sys.stderr,
        )
        return EXIT_USAGE
    refuse_default = f"--format {fmt} grades for a course" if fmt in PLATFORM_FORMATS and not args.allow_default_seed else None

    def vet_backend(backend: str) -> str | None:
        for flag, given in (("--no-static-check", args.no_static_check), ("--unrestricted", args.unrestricted)):
            if given and not backend_named(backend).strong:
                return f"{flag} needs bubblewrap, uid or docker isolation (this run would use {backend})"
        return None

    try:
        seeding = take_seed(
            spec,
            args.seed,
            chooser(args.isolation),
            program="grader",
            refuse_default=refuse_default,
            public_only=args.public,
            vet_backend=vet_backend,
        )
    except (SeedRefused, IsolationUnavailable) as error:
        print(f"grader: {error}", file=sys.stderr)
        return EXIT_USAGE
    backend, seed = seeding.backend, seeding.seed
    try:
        # torch is first imported inside grade(), once the child has started (see grader/judge.py)
        report = grade(
            args.submission,
            spec,
            seed,
            public_only=args.public,
            backend=backend,
            static_check=not (args.no_static_check or args.unrestricted),
            restricted=not args.unrestricted,
        )
        from grader.report import hints

        report.hints = hints(report, spec)
    except Exception as error:  # noqa: BLE001 - a fault of the grader must never be blamed on the candidate
        report = Report(Verdict.GRADER_ERROR, internal_error(error), str(args.submission), "", backend)
    report.warnings = seeding.warnings
    return emit(report, fmt, spec, args)


def leave(status: int) -> None:
    """Flush what was written, then end the process without the interpreter's teardown: with torch
    loaded it takes about half a second, and everything the grader must finish (the report, the
    child, its cgroup, the temporary folder) is finished before main returns."""
    try:
        sys.stdout.flush()
    except OSError as error:
        unwritable_stdout(error)
        status = EXIT_USAGE
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(status)


def entry_point() -> None:
    """`python -m grader` and the console script `mlm-grader` (pyproject.toml [project.scripts])."""
    leave(main())
