"""`python -m grader problems`: the challenges installed, one line each, with what grading them takes."""

import argparse
import os
import sys

from grader.spec import DEFAULT_PROBLEM, ROOT, SetupError, problem_ids, problem_spec


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader problems",
        description="List the challenges installed (problem/<id>/); grade one with python -m grader --problem ID FILE.",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    parse_args(argv)
    try:
        return _list()
    except BrokenPipeError:  # `python -m grader problems | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _list() -> int:
    ids = problem_ids()
    if not ids:
        print(f"grader problems: no challenge is installed (no problem/<id>/problem.toml under {ROOT})", file=sys.stderr)
        return 2
    status = 0
    for problem_id in ids:
        marker = " (default)" if problem_id == DEFAULT_PROBLEM else ""
        try:
            spec = problem_spec(problem_id)
        except SetupError as error:
            print(f"{problem_id}{marker}: cannot be used: {error}")
            status = 2
            continue
        hidden = spec.hidden_folder.is_dir()
        public = sum(t.settings["visibility"] == "public" for t in spec.templates)
        signature = f"{spec.entry_point}({', '.join(spec.parameter_names)})"
        if spec.kind == "class":
            signature = f"class {signature}, then .{spec.method}({', '.join(p.name for p in spec.step_parameters)}) step by step"
        returned = {"tensor": "a tensor", "tuple": f"a tuple ({', '.join(o.name for o in spec.returned)})", "none": "nothing"}[spec.returns]
        updated = f", updating {', '.join(spec.updated)} in place" if spec.updated else ""
        returns = returned + updated + (" (judged by properties.py)" if spec.judge == "properties" else "")
        gradient = f"; gradients checked for {', '.join(spec.gradient_wrt)}" if spec.gradient_wrt else ""
        note = "" if hidden else "; its hidden side (reference/) is not here: only the public cases can be run"
        print(f"{problem_id}{marker}: {spec.title}")
        print(f"    {signature} -> {returns}{gradient}; {len(spec.templates)} cases, {public} public{note}")
    return status
