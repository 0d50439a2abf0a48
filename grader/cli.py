"""Command line: python -m grader SUBMISSION [--public] [--json] [--seed S]."""

import argparse
import os
import sys
import traceback
from pathlib import Path

import torch

from grader import __version__
from grader.cases import make_cases
from grader.expected import expected_for
from grader.isolation import IsolationUnavailable, choose_backend, scrub_secret
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
    args = parse_args(argv)
    try:
        spec = load_spec(args.spec.resolve())
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"grader: cannot use the spec file {args.spec}: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.save_public:
        return save_public_cases(spec, args.save_public)
    if args.submission is None:
        print("grader: a submission file is needed (or --save-public DIR)", file=sys.stderr)
        return EXIT_USAGE
    if not args.submission.exists():
        print(f"grader: no such file: {args.submission}", file=sys.stderr)
        return EXIT_USAGE
    # The secret seed leaves the environment and the command line before any process starts (the
    # backend probes included), and auto never falls back to a backend that cannot keep it.
    secret = args.seed if args.seed is not None else os.environ.get(spec.seed_env_var)
    if secret == "":
        given = "--seed is" if args.seed is not None else f"{spec.seed_env_var} is set but"
        print(f"grader: {given} empty; give a secret seed, or leave it out to use the fixed local seed", file=sys.stderr)
        return EXIT_USAGE
    if secret is not None:
        scrub_secret(spec.seed_env_var, secret)
    try:
        backend = choose_backend(args.isolation, secret_seed=secret is not None)
    except IsolationUnavailable as error:
        print(f"grader: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.no_static_check and backend not in STRONG_BACKENDS:
        print(f"grader: --no-static-check needs bubblewrap or uid isolation (this run would use {backend})", file=sys.stderr)
        return EXIT_USAGE
    if secret is not None and backend == "process":
        print("grader: warning: --isolation process does not keep the secret seed from the submission (same user, no walls)", file=sys.stderr)
    seed = secret or spec.default_hidden_seed
    # The tensors are tiny: threads only add overhead, and spin against other graders on the host.
    torch.set_num_threads(1)

    try:
        report = grade(args.submission, spec, seed, public_only=args.public, backend=backend, static_check=not args.no_static_check)
        report.hints = hints(report, spec)
    except Exception:  # noqa: BLE001 - a fault of the grader must never be blamed on the candidate
        message = "internal error of the grader (not the submission's fault):\n" + traceback.format_exc()
        report = Report(Verdict.GRADER_ERROR, message, str(args.submission), "", backend)

    print(render_json(report) if args.json else render_text(report, spec, verbose=args.verbose or args.public))
    if report.verdict == Verdict.GRADER_ERROR:
        return EXIT_USAGE
    return EXIT_ACCEPTED if report.verdict == Verdict.ACCEPTED else EXIT_REJECTED
