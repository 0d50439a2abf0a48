"""`python -m grader new ID`: write a new challenge package, a small worked example that passes
`python -m grader verify ID` as written, for its author to edit (docs/authoring.md).

The example is the checkout's template/ folder (an RMS normalisation), copied to problem/<id>/ and
reference/<module>/ with its names replaced: template-id by the id, template_module by the module
(the id with "-" written "_"), template_entry_point by the entry point (the module's name too), and
the statement's rules block made from the package's [rules] (what `python -m grader rules --markdown`
prints for it).
"""

import argparse
import re
import sys
import tomllib
from pathlib import Path

from grader.rules import narrowed
from grader.spec import PROBLEMS, ROOT, problem_ids

TEMPLATE = ROOT / "template"
PROBLEM_ID = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")  # lowercase words joined by "-": also a Python name once "-" is "_"
NAMES = ("template_entry_point", "template_module", "template-id")  # replaced in every file, longest first


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader new",
        description="Write a new challenge package (problem/ID/ and reference/ID_WITH_UNDERSCORES/): a worked example that passes "
        "`python -m grader verify ID` as written, to edit into your challenge (docs/authoring.md). Exit status 0 when written, 2 otherwise.",
    )
    parser.add_argument("problem", metavar="ID", help="the new challenge's id: lowercase letters and digits, words joined by '-' (e.g. softmax-backward)")
    return parser.parse_args(argv)


def package_files(problem: str) -> dict[Path, str]:
    """Each file the package gets, by its path, with the template's names replaced."""
    module = problem.replace("-", "_")
    replacements = dict(zip(NAMES, (module, module, problem), strict=True))
    found = {}
    for side, target in (("problem", PROBLEMS / problem), ("reference", ROOT / "reference" / module)):
        for path in sorted((TEMPLATE / side).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                text = path.read_text(encoding="utf-8")
                for name, value in replacements.items():
                    text = text.replace(name, value)
                found[target / path.relative_to(TEMPLATE / side)] = text
    rules = narrowed(tomllib.loads(found[PROBLEMS / problem / "problem.toml"]).get("rules", {}), gradient=True)
    statement = PROBLEMS / problem / "README.md"
    found[statement] = found[statement].replace("template_rules_block", rules.markdown())
    return found


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    problem = args.problem
    if not PROBLEM_ID.fullmatch(problem):
        print(f"grader new: {problem!r} is not a problem id: use lowercase letters and digits, words joined by '-' (e.g. softmax-backward)", file=sys.stderr)
        return 2
    if not TEMPLATE.is_dir():
        print(f"grader new: the template {TEMPLATE} is not here (an image without it): write the package from docs/problem-format.md", file=sys.stderr)
        return 2
    files = package_files(problem)
    if taken := [path for path in (PROBLEMS / problem, ROOT / "reference" / problem.replace("-", "_")) if path.exists()]:
        known = ", ".join(problem_ids())
        print(f"grader new: {taken[0]} exists already: choose another id (installed: {known})", file=sys.stderr)
        return 2
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    shown = sorted(str(path.relative_to(ROOT)) for path in files)
    print(f"wrote the challenge {problem}, a worked example (an RMS normalisation) to edit: {len(shown)} files")
    for name in shown:
        print(f"  {name}")
    print(f"next: python -m grader verify {problem}   (then edit it into your challenge: docs/authoring.md)")
    return 0
