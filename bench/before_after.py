"""This checkout against another (an earlier version, with its own .venv), side by side in one run:
the figures a change to the child's walls must not make worse, each measured by each checkout's
own code, the two alternating round by round (the order reversed every other round) so that a
busy machine weighs on both alike.

- the child's walls on one file's hidden cases: bench/guard_cost.py's "capability layer and guard
  (the child)" row, seconds for the cases of the default challenge (fastest of its processes);
- one small tensor operation under the child's guard: the same script's per-operation row marked
  "(the child)", CPU microseconds;
- a file through a warm pool: bench/throughput.py's grade_all over the accepted examples of the
  default challenge with one job, the pool warm and the cases prepared, wall seconds per file;
- one `python -m grader FILE` of an accepted example, start to end (a single child of its own),
  wall seconds.

Each ratio is after / before within a round; the median of the rounds is printed, with the range.
Usage (the other checkout made with `git worktree add ../before COMMIT` and `make .venv/.dev-installed`
there):

    .venv/bin/python bench/before_after.py --before ../before [--rounds 3]
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}

WARM_POOL = """
import json, sys
sys.path.insert(0, {root!r})
from bench.throughput import correct_files, grade_all
files = [path for path in correct_files()][:{files}]
sources = {{path.name + str(i): path.read_bytes() for i, path in enumerate(files)}}
took, _, _ = grade_all(1, sources, warm=True)
print(json.dumps({{"per_file": took / len(sources)}}))
"""


def guard_cost(tree: Path) -> dict[str, float]:
    """The child's rows of tree's bench/guard_cost.py, one round."""
    out = subprocess.run(
        [str(tree / ".venv" / "bin" / "python"), str(tree / "bench" / "guard_cost.py"), "1"],
        capture_output=True, text=True, check=True, cwd=tree, env=ENV,
    ).stdout  # fmt: skip
    cases = re.search(r"capability layer and guard \(the child\):\s+([0-9.]+)s", out)
    operation = re.search(r"\(the child\):\s+([0-9.]+)\s+\(", out)
    if cases is None or operation is None:
        raise SystemExit(f"{tree}/bench/guard_cost.py printed no row for the child:\n{out}")
    return {"cases under the child's walls, s": float(cases.group(1)), "one small operation under the guard, us": float(operation.group(1))}


def warm_pool(tree: Path, files: int) -> dict[str, float]:
    script = WARM_POOL.format(root=str(tree), files=files)
    out = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", script], capture_output=True, text=True, check=True, cwd=tree, env=ENV).stdout
    return {"a file through a warm pool, one job, s": json.loads(out.splitlines()[-1])["per_file"]}


def one_grading(tree: Path) -> dict[str, float]:
    example = tree / "reference" / "mlm_forward_tied" / "submissions" / "accepted" / "plain_helpers.py"
    started = time.perf_counter()
    done = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-m", "grader", str(example)], capture_output=True, text=True, cwd=tree, env=ENV)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {example.name} was not accepted:\n{done.stdout}{done.stderr}")
    return {"one python -m grader FILE, s": took}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout, with its own .venv")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=12, help="files through the warm pool per round (default 12)")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": ROOT}
    for name, tree in trees.items():
        commit = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %s"], capture_output=True, text=True).stdout.strip()
        print(f"{name}: {tree} ({commit})", flush=True)
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    for round_ in range(args.rounds):
        order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
        for name in order:
            for measured in (guard_cost(trees[name]), warm_pool(trees[name], args.files), one_grading(trees[name])):
                for key, value in measured.items():
                    figures[name].setdefault(key, []).append(value)
        print(f"round {round_ + 1} of {args.rounds} done", flush=True)
    print(f"\n{'figure':44s} {'before':>9s} {'after':>9s}  after/before: median (range) of {args.rounds} rounds")
    for key in figures["after"]:
        before, after = figures["before"][key], figures["after"][key]
        ratios = [a / b for a, b in zip(after, before, strict=True)]
        print(f"{key:44s} {statistics.median(before):9.3f} {statistics.median(after):9.3f}  "
              f"{statistics.median(ratios):.2f}x ({min(ratios):.2f} to {max(ratios):.2f})")  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
