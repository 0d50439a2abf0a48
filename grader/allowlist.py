"""`python -m grader rules [--problem ID] [--json | --markdown]`: what a submission may use, printed
from the one place the static check, the capability layer and the runtime guard all read
(grader/rules.toml, narrowed by the problem's [rules])."""

import argparse
import json
import os
import sys

from grader.spec import SetupError, UnknownProblem, add_problem_arguments, spec_of_arguments

TEXT_KEYS = (
    ("modules", "modules a file may import or reach by dotted path"),
    ("functions", "functions, classes and methods"),
    ("attributes", "attributes of tensors and arrays that may be read"),
    ("writable_attributes", "attributes of library objects that may be set"),
    ("builtins", "built-ins"),
    ("special_methods", "special methods a class may define"),
    ("special_attributes", "special attributes that may be read"),
    ("operators", "ATen operators (every other refuses at the dispatcher)"),
    ("backward_operators", "operators that run only while autograd runs them"),
)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader rules",
        description="Print what a submission may use: every list, by category. Anything else is refused, with a message naming it.",
    )
    add_problem_arguments(parser)
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="one JSON object: modules, functions, operators, builtins, special_methods, ...")
    shown.add_argument("--markdown", action="store_true", help="the compact list a statement's Rules section shows")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        rules = spec_of_arguments(args).rules
    except UnknownProblem as error:
        print(f"grader rules: {error}", file=sys.stderr)
        return 2
    except SetupError as error:
        print(f"grader rules: grader set-up error: {error}", file=sys.stderr)
        return 2
    try:
        if args.json:
            print(json.dumps(rules.listing(), indent=1))
        elif args.markdown:
            print(rules.markdown())
        else:
            print(text(rules.listing()))
    except BrokenPipeError:  # `python -m grader rules | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def text(listing: dict) -> str:
    """The lists for a person: what the candidate writes themselves first, then each list."""
    lines = []
    if listing["write_yourself"]:
        lines.append("Write yourself (refused with this advice):")
        lines += [f"  {entry['what']}: {entry['advice']}" for entry in listing["write_yourself"]]
        lines.append("")
    for key, title in TEXT_KEYS:
        names = listing[key]
        lines.append(f"{title} ({len(names)}):")
        lines.append("  " + " ".join(names) if names else "  (none)")
        lines.append("")
    lines.append("Anything else is refused: the static check names it with what to use instead, and the run ends with forbidden_api.")
    return "\n".join(lines)
