"""The operators the rules' lists need: what the allowed torch functions run, forward and backward,
with what Python's syntax does with tensors, and what every package's accepted examples run.

    .venv/bin/python tools/operators.py            # prints the [operators] tables of grader/rules.toml

Each allowed torch function is called once (tests/exercise.py) under torch's profiler, which sees
every operator the dispatcher runs, composite ones included; then its result is differentiated. An
operator run in a forward pass is allowed; one run only while autograd runs a backward pass is a
backward operator. Run it after changing the lists of functions, and paste what it prints over the
[operators] tables of grader/rules.toml: tests/test_rules.py checks that every allowed function
runs under the armed guard.
"""

import collections
import contextlib
import io
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.cases import make_cases  # noqa: E402
from grader.child.capabilities.allowed import resolve  # noqa: E402
from grader.child.runner import _run_calls  # noqa: E402
from grader.operators import example_module, profiled  # noqa: E402
from grader.rules import base_rules  # noqa: E402
from grader.spec import problem_ids, problem_spec  # noqa: E402
from tests import exercise  # noqa: E402


def main() -> int:
    torch.set_num_threads(1)
    rules = base_rules()
    allowed = resolve(rules.child_config())
    forward, backward, failed = set(), set(), []
    for name in exercise.torch_functions(list(rules.functions)):
        function = allowed.named.get(name)
        t = exercise.tensors()
        outcome: list = []

        def run(name=name, function=function, t=t, outcome=outcome) -> None:
            outcome.append(exercise.call(name, function, t))

        f, b = profiled(run)
        why, result = outcome[0]
        if why:
            failed.append(f"{name}: {why}")
            continue
        forward |= f
        backward |= b
        try:
            f, b = profiled(lambda result=result, t=t: exercise.backward(result, t))
        except RuntimeError as error:  # torch has no derivative for it (floor_divide, unique): the forward pass is what counts
            if "not implemented" not in str(error):
                failed.append(f"{name}, backward: {str(error).splitlines()[0][:160]}")
            continue
        forward |= f
        backward |= b
    t = exercise.tensors()
    f, b = profiled(lambda: exercise.syntax(t))
    forward |= f
    backward |= b
    for problem in problem_ids():
        spec = problem_spec(problem)
        cases, seen = [], set()
        for case in make_cases(spec, "operators", False):
            if case.family not in seen:
                seen.add(case.family)
                cases.append(case)
        for path in sorted((spec.hidden_folder / "submissions" / "accepted").glob("*.py")):
            fn = getattr(example_module(path), spec.entry_point)

            def examples(fn=fn, cases=cases, path=path) -> None:
                with contextlib.redirect_stdout(io.StringIO()):  # what the examples print is theirs
                    for case in cases:
                        _run_calls(fn, *case.request(), str(path))

            f, b = profiled(examples)
            forward |= f
            backward |= b
            print(f"# {problem}/{path.name}: {len(f)} forward, {len(b)} backward", file=sys.stderr)
    for line in failed:
        print(f"# not called: {line}", file=sys.stderr)
    backward -= forward
    by_namespace = collections.defaultdict(list)
    for name in sorted(forward):
        by_namespace[name.partition("::")[0]].append(name)
    print("[operators]")
    print("backward = [")
    print(_lines(sorted(backward)))
    print("]")
    for namespace, names in sorted(by_namespace.items()):
        print(f'\n[[operators.allowed]]\ngroup = "{namespace}"\nnames = [')
        print(_lines(names))
        print("]")
    return 1 if failed else 0


def _lines(names: list[str], width: int = 110) -> str:
    lines, line = [], "  "
    for name in names:
        piece = f'"{name}", '
        if len(line) + len(piece) > width:
            lines.append(line.rstrip())
            line = "  "
        line += piece
    lines.append(line.rstrip())
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
