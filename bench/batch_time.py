"""Time to grade N submissions one after the other with the single-file command, beside one
`python -m grader batch --jobs JOBS` over the same N files, in one run; the verdicts must be equal.

The files are a mix of correct, wrong, crashing and forbidden submissions from reference/mlm_forward_tied/submissions
(taken in turn from each folder). Half of the single gradings run before the batch and half after
it, so that a load that drifts during the run weighs on both sides alike. Then the pool's own cost:
how long a submission waits for a child ready to grade, a child of its own beside one from the warm
pool (grader/sandbox/zygote.py). Usage:

    .venv/bin/python bench/batch_time.py [N] [JOBS]      (default: 40 submissions, 2 jobs)
"""

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ENV, ROOT, copy_folder, submissions  # noqa: E402, F401 - ENV and ROOT for the benchmarks that import them from here

FOLDERS = ("accepted", "wrong_answer", "runtime_error", "forbidden_api")


def mix(count: int) -> list[Path]:
    return submissions(FOLDERS, count)


def class_folder(parent: Path, count: int) -> Path:
    """A folder of `count` submissions from mix(), each named for its place, folder and file."""
    return copy_folder(parent, mix(count))


def grade_one_by_one(files: list[Path], verdicts: dict[str, str]) -> float:
    started = time.perf_counter()
    for path in files:
        result = subprocess.run([sys.executable, "-m", "grader", str(path), "--json"], cwd=ROOT, capture_output=True, text=True, env=ENV)
        verdicts[path.stem] = json.loads(result.stdout)["verdict"]
    return time.perf_counter() - started


def child_start_seconds(samples: int) -> tuple[float, float]:
    """Median seconds from asking for a child to its answer to the start frame (the submission
    loaded, the guard armed): a child of its own (a Python start, import torch, the guard's
    warm-up) beside a child of the warm pool (a fork, the walls, the guard armed), in this process."""
    sys.path.insert(0, str(ROOT))
    from grader import protocol
    from grader.sandbox.process import ProcessChild
    from grader.sandbox.zygote import Zygote, zygote_problem
    from grader.spec import load_spec

    spec = load_spec()
    source = (ROOT / "reference" / "mlm_forward_tied" / "submissions" / "accepted" / "plain_helpers.py").read_bytes()

    def timed(start) -> float:
        began = time.perf_counter()
        with start() as child:
            child.request({"kind": "start"}, None, protocol.STARTUP, spec.limits.startup_seconds)
            return time.perf_counter() - began

    own = []
    for _ in range(max(1, samples // 4)):
        with tempfile.TemporaryDirectory(prefix="mlm-grader-bench-") as tmp:
            own.append(timed(lambda: ProcessChild(Path(tmp), source, "solution.py", spec, "bubblewrap")))
    if zygote_problem("bubblewrap"):
        return statistics.median(own), float("nan")
    warm = Zygote(spec)
    try:
        timed(lambda: warm.start_child(Path(), source, "solution.py", spec, "bubblewrap"))  # waits for the server to be ready
        pooled = [timed(lambda: warm.start_child(Path(), source, "solution.py", spec, "bubblewrap")) for _ in range(samples)]
    finally:
        warm.close()
    return statistics.median(own), statistics.median(pooled)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with tempfile.TemporaryDirectory(prefix="mlm-grader-bench-") as tmp:
        folder = class_folder(Path(tmp), count)
        files = sorted(folder.glob("*.py"))

        single: dict[str, str] = {}
        single_seconds = grade_one_by_one(files[0::2], single)

        out = Path(tmp) / "results.jsonl"
        started = time.perf_counter()
        command = [sys.executable, "-m", "grader", "batch", str(folder), "--jobs", str(jobs), "--out", str(out)]
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env=ENV)
        batch_seconds = time.perf_counter() - started
        batched = {line["id"]: line["verdict"] for line in map(json.loads, out.read_text().splitlines())}
        single_seconds += grade_one_by_one(files[1::2], single)

    differing = sorted(i for i in single if single[i] != batched.get(i))
    print(f"{count} submissions ({', '.join(FOLDERS)} in turn); half of the single gradings before the batch, half after")
    print(f"one after the other, python -m grader FILE: {single_seconds:7.1f}s  ({single_seconds / count:.2f}s per submission)")
    print(f"python -m grader batch --jobs {jobs}:          {batch_seconds:7.1f}s  ({batch_seconds / count:.2f}s per submission)")
    print(f"speed-up: {single_seconds / batch_seconds:.2f}x   verdicts: {'identical' if not differing else 'DIFFERENT for ' + ', '.join(differing)}")
    own, pooled = child_start_seconds(12)
    print(f"per submission, a child ready to grade (median): of its own {own:.2f}s, from the warm pool {pooled:.3f}s ({own / pooled:.0f}x)")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
