"""Check your solution on the public cases, as the grader does: python check.py solution.py

It runs the grader's own code (in grader/ beside this file): the static check of the rules, then
your file in a separate process under the same runtime guard and limits, then the comparison with
the expected outputs and gradients of the public cases (cases/, same tolerances), and prints the
grader's report. Passing here is necessary, not sufficient: the grader also runs hidden cases.
Exit status: 0 all public cases passed, 1 a case failed or the file was rejected, 2 usage error.
Runs on Linux, WSL and macOS with Python 3.11, numpy 2.4 and torch; works offline, from any
folder. Your file runs inside bubblewrap where the machine has it, else as a plain process (on macOS,
without Linux's walls): the kit holds no secret, and the report's last lines name the walls used.
"""

import sys

if sys.version_info[:2] != (3, 11):  # a candidate may run another Python: one clear line rather than a traceback
    sys.exit(f"check.py needs Python 3.11, the version the grader runs (its walls read CPython 3.11's frames); this is {sys.version.split()[0]}")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
EXIT_PASSED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python check.py",
        description="Run your solution on the public cases with the grader's own checks. "
        "Exit status: 0 all public cases passed, 1 a case failed or the file was rejected, 2 usage error.",
    )
    parser.add_argument("submission", type=Path, nargs="?", help="your solution.py")
    parser.add_argument("--rules", action="store_true", help="print what a submission may use (the grader's lists) and exit")
    args = parser.parse_args(argv)
    if args.submission is None and not args.rules:
        parser.error("give your solution.py (or --rules)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)  # argparse exits with status 2 on bad arguments
    if args.rules:
        return print_rules()
    try:
        if not args.submission.is_file():
            problem = "is a folder; give the .py file" if args.submission.is_dir() else "does not exist"
            print(f"check.py: {args.submission} {problem}", file=sys.stderr)
            return EXIT_USAGE
    except OSError as error:
        print(f"check.py: cannot look at {args.submission}: {error.strerror or error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        import numpy
        import torch
    except ImportError as error:
        print(f"check.py needs torch and numpy ({error}): pip install torch numpy==2.4.6", file=sys.stderr)
        return EXIT_USAGE
    if numpy.__version__.split(".")[:2] != ["2", "4"]:
        why = "the version the grader runs (its walls read numpy 2.4's dtypes)"
        print(f"check.py needs numpy 2.4, {why}; this is numpy {numpy.__version__}: pip install numpy==2.4.6", file=sys.stderr)
        return EXIT_USAGE
    sys.path.insert(0, str(HERE))  # the grader's modules beside this file, whatever the current folder
    try:
        from grader import GRADER_TORCH, judge
        from grader.expected import read_public_case
        from grader.formats.text import render_text
        from grader.report import hints
        from grader.results import Verdict
        from grader.sandbox import bubblewrap, process
        from grader.spec import parse_spec, seed_public_id
    except ImportError as error:
        print(f"check.py: the kit's grader/ folder is incomplete ({error}); unzip the kit again", file=sys.stderr)
        return EXIT_USAGE

    if torch.__version__.split("+")[0] != GRADER_TORCH:  # the allowed API is read from the installed torch, and rounding can differ
        print(f"check.py: note: the grader runs torch {GRADER_TORCH}; this is torch {torch.__version__}, so a result may differ slightly", file=sys.stderr)
    cases, expected = [], []
    try:
        spec = parse_spec(json.loads((HERE / "spec.json").read_text(encoding="utf-8")))
        spec = dataclasses.replace(spec, path=HERE / "spec.json")  # a package's property check (properties.py) is beside it
        for template in spec.templates:
            saved = torch.load(HERE / "cases" / f"{template.name}.pt", weights_only=True)  # tensors only: no code runs on loading
            case, want = read_public_case(saved, template, spec)
            cases.append(case)
            expected.append(want)
    except Exception as error:  # noqa: BLE001 - a damaged kit is no fault of the solution: say what to do
        print(f"check.py: the kit's spec.json or cases/ cannot be read ({type(error).__name__}: {error}); unzip the kit again", file=sys.stderr)
        return EXIT_USAGE

    # The kit holds no secret, so without bubblewrap a plain child process will do; the report names the walls used.
    # Where the system is not Linux (macOS), nothing Linux's is used: no namespaces, cgroups, /proc or prctl.
    if sys.platform == "linux":  # WSL included
        backend = "bubblewrap" if bubblewrap.bubblewrap_works() else "process"
    else:
        backend = process.PLAIN
    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    seed = spec.public_seed
    try:
        prepared = judge.Prepared(seed_public_id(seed), True, cases, expected)
        report = judge.grade(args.submission, spec, seed, public_only=True, backend=backend, prepared=prepared)
        report.hints = hints(report, spec)
    except Exception as error:  # noqa: BLE001 - never a traceback, and never blamed on the solution
        print(f"check.py: internal error of the checker (not your solution's fault): {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_USAGE
    if report.verdict == Verdict.GRADER_ERROR:
        print(f"check.py: internal error of the checker (not your solution's fault): {report.message}", file=sys.stderr)
        return EXIT_USAGE

    count = len(cases)
    if report.verdict == Verdict.ACCEPTED:  # the public cases alone never make a verdict: the report's last line says so
        report.message = f"all {count} public cases passed; the hidden cases are run by the grader"
        print(render_text(report, spec, verbose=True, isolation=True))  # the candidate's own run: how it was walled in is theirs to know
        return EXIT_PASSED
    print(render_text(report, spec, verbose=True, isolation=True))  # the candidate's own run: how it was walled in is theirs to know
    print(f"\n{sum(c.passed for c in report.cases)} of {count} public cases passed; fix what is reported above, then run check.py again")
    return EXIT_FAILED


def print_rules() -> int:
    """What `python -m grader rules` prints for this challenge: the lists the grader's walls read."""
    sys.path.insert(0, str(HERE))
    try:
        from grader.allowlist import text
        from grader.spec import parse_spec
    except ImportError as error:
        print(f"check.py: the kit's grader/ folder is incomplete ({error}); unzip the kit again", file=sys.stderr)
        return EXIT_USAGE
    spec = parse_spec(json.loads((HERE / "spec.json").read_text(encoding="utf-8")))
    try:
        print(text(spec.rules.listing()))
    except BrokenPipeError:  # `python check.py --rules | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_PASSED


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the child is ended on the way out
        print("check.py: interrupted", file=sys.stderr)
        sys.exit(130)
