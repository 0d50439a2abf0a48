"""Command line: python -m grader SUBMISSION [--public] [--json] [--seed S]."""

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

import torch

from grader import __version__
from grader.cases import make_cases
from grader.expected import expected_for
from grader.isolation import IsolationUnavailable, choose_backend
from grader.judge import STRONG_BACKENDS, grade
from grader.report import hints, render_json, render_text
from grader.results import Report, Verdict
from grader.spec import SPEC_PATH, Spec, load_spec

EXIT_ACCEPTED, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader",
        description="Grade a solution of the tied-head MLM forward pass. Exit status: 0 accepted, 1 any other verdict, 2 usage or grader error.",
    )
    parser.add_argument("submission", type=Path, nargs="?", help="the candidate's solution.py")
    parser.add_argument(
        "--save-public",
        type=Path,
        metavar="DIR",
        help="write each public case (inputs, expected logits and gradients) to DIR/<case>.pt and exit; load one with torch.load(path, weights_only=True)",
    )
    parser.add_argument("--public", action="store_true", help="run only the public cases, with full diagnostics")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument(
        "--seed",
        help="secret seed for the hidden cases (prefer the environment variable named in the spec, "
        "MLM_GRADER_SEED, which does not show in the process list); default: a fixed local seed",
    )
    parser.add_argument(
        "--isolation",
        choices=["auto", "strict", "bubblewrap", "uid", "process", "docker"],
        default="auto",
        help="how the submission is walled in: auto (the strongest that works here), strict (bubblewrap or uid "
        "separation, else refuse), docker (each child in a container from the runner image, through the Docker Engine "
        "API at DOCKER_HOST), or one backend by name; every report names the level used",
    )
    parser.add_argument(
        "--no-static-check",
        action="store_true",
        help="for testing the grader: skip the static policy check so the runtime guard and the sandbox face the "
        "submission alone; refused unless the isolation is bubblewrap or uid",
    )
    parser.add_argument("--verbose", action="store_true", help="show the message of every failing case")
    parser.add_argument("--spec", type=Path, default=SPEC_PATH, help="the problem's spec file (default: problem/spec.toml)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser.parse_args(argv)


def save_public_cases(spec: Spec, folder: Path) -> int:
    """Everything about the public cases, for a candidate to debug with. Hidden cases never."""
    folder.mkdir(parents=True, exist_ok=True)
    for case in make_cases(spec, spec.default_hidden_seed, public_only=True):
        expected = expected_for(case)
        content = {
            **case.inputs,
            "num_heads": case.num_heads,
            "grad_output": case.grad_output,
            "expected_logits": expected.output,
            **{f"expected_grad_{name}": grad for name, grad in expected.grads.items()},
        }
        torch.save(content, folder / f"{case.name}.pt")
        print(f"{folder / case.name}.pt  ({case.shape_text()}, {case.dtype})")
    return EXIT_ACCEPTED


def main(argv: list[str] | None = None) -> int:
    """Never a traceback: usage errors are one line on stderr (exit status 2); a fault of the grader
    is a grader_error report in the requested format (exit status 2)."""
    args = parse_args(argv)  # argparse exits with status 2 and a usage line on bad arguments
    try:
        return _main(args)
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - a fault of the grader must never be blamed on the candidate
        report = Report(Verdict.GRADER_ERROR, internal_error(error), str(args.submission), "", "")
        print(_render(report, None, args))
        return EXIT_USAGE


def internal_error(error: BaseException) -> str:
    """What a grader needs to report a fault of the grader: the exception and where it arose."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"internal error of the grader (not the submission's fault): {type(error).__name__}: {error}{where}"


def _render(report: Report, spec: Spec | None, args: argparse.Namespace) -> str:
    """The report in the requested format; if rendering itself fails, a minimal one that cannot."""
    try:
        if args.json:
            return render_json(report)
        if spec is not None:
            return render_text(report, spec, verbose=args.verbose or args.public)
    except Exception as error:  # noqa: BLE001
        report = Report(Verdict.GRADER_ERROR, internal_error(error), report.submission, report.seed_id, report.isolation)
    if args.json:
        keys = ("verdict", "message", "submission", "seed_id", "isolation")
        return json.dumps({"score": 0.0, "max_score": 1.0, "cases": [], **{k: str(getattr(report, k)) for k in keys}}, indent=2)
    return f"Submission: {report.submission}\nVerdict:    {report.verdict.value.upper()}\n\n{report.message}"


def _main(args: argparse.Namespace) -> int:
    try:
        spec = load_spec(args.spec.resolve())
    except Exception as error:  # noqa: BLE001 - any fault of the file (TOML, missing keys, wrong types) is the operator's to fix
        print(f"grader: cannot use the spec file {args.spec}: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.save_public:
        try:
            return save_public_cases(spec, args.save_public)
        except OSError as error:
            print(f"grader: cannot write the public cases to {args.save_public}: {error.strerror or error}", file=sys.stderr)
            return EXIT_USAGE
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
    try:
        backend = choose_backend(args.isolation)
    except IsolationUnavailable as error:
        print(f"grader: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.no_static_check and backend not in STRONG_BACKENDS:
        print(f"grader: --no-static-check needs bubblewrap or uid isolation (this run would use {backend})", file=sys.stderr)
        return EXIT_USAGE
    seed = args.seed or os.environ.get(spec.seed_env_var) or spec.default_hidden_seed
    # The tensors are tiny: threads only add overhead, and spin against other graders on the host.
    torch.set_num_threads(1)

    try:
        report = grade(args.submission, spec, seed, public_only=args.public, backend=backend, static_check=not args.no_static_check)
        report.hints = hints(report, spec)
    except Exception as error:  # noqa: BLE001 - a fault of the grader must never be blamed on the candidate
        report = Report(Verdict.GRADER_ERROR, internal_error(error), str(args.submission), "", backend)

    print(_render(report, spec, args))
    if report.verdict == Verdict.GRADER_ERROR:
        return EXIT_USAGE
    return EXIT_ACCEPTED if report.verdict == Verdict.ACCEPTED else EXIT_REJECTED
