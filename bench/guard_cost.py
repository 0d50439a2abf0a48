"""What the in-process walls cost a submission: the hidden cases of one file run as the child runs
them (grader/child/runner.py's load_submission and run_case, then a read of the guard's record),
as plain Python, with the capability layer's rewrite (grader/child/capabilities/), and with the
runtime guard armed too (grader/child/guard.py: its refusing kernels, function mode and audit
hook), side by side, alternately, REPEATS times each; then what one small tensor operation costs
under each layer.
Arming cannot be undone, so each measurement is a process of its own; each runs the cases twice
and times the second pass. Usage:

    .venv/bin/python bench/guard_cost.py [REPEATS] [SUBMISSION]
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = """
import hashlib, json, sys, time
sys.path.insert(0, {root!r})
import torch
from grader.cases import make_cases
from grader.child import runner, wire
from grader.child.capabilities import checks
from grader.spec import load_spec

torch.set_num_threads(1)  # as in the child
spec = load_spec()
requests = [case.request() for case in make_cases(spec, "bench-guard-cost")]
path = {submission!r}
rules = spec.rules.child_config()
guard = runner.prepared_guard(rules, path)
capabilities = checks.Capabilities({{"rules": rules, "submission": path}}, guard.refuse) if {restricted!r} else None
if {armed!r}:
    guard.arm(protect=[runner, wire, checks])
with open(path, "rb") as f:
    module = runner.load_submission(path, hashlib.sha256(f.read()).hexdigest(), capabilities)
for _ in range(2):
    run = read = 0.0
    for header, tensors in requests:
        started = time.perf_counter()
        runner.run_case(module.mlm_forward_tied, header, tensors, path)
        ran = time.perf_counter()
        guard.findings(False)
        run, read = run + ran - started, read + time.perf_counter() - ran
print(json.dumps({{"run": run, "read": read, "cases": len(requests), "found": guard.findings()}}))
"""

SETTINGS = {  # name -> (the capability layer's rewrite, the guard armed)
    "plain Python": (False, False),
    "capability layer": (True, False),
    "capability layer and guard (the child)": (True, True),
}


PER_OPERATION = """
import json, sys, time
sys.path.insert(0, {root!r})
import torch
from torch.overrides import TorchFunctionMode
from grader.child import runner
from grader.spec import load_spec

torch.set_num_threads(1)
spec = load_spec()
guard = runner.prepared_guard(spec.rules.child_config(), "submission.py")
x = torch.randn(8, 16)
OPERATIONS = 3 * 3000


def loop():
    started = time.thread_time()
    for _ in range(3000):
        (x * 2 + 1).sum()
    return (time.thread_time() - started) / OPERATIONS * 1e6


class Empty(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {{}}))


def under(mode):
    if mode is None:
        return loop()
    with mode:
        return loop()


best = {{}}
layers = {{
    "plain": lambda: None,
    "an empty function mode": lambda: Empty(),
    "the guard's function mode": lambda: guard.function_watch,
}}
loop()
for _ in range({repeats}):
    for name, mode in layers.items():
        took = under(mode())
        best[name] = min(best.get(name, took), took)
guard.override_kernels()  # the refusing kernels of every operator off the list: the allowed ones keep theirs
loop()
for _ in range({repeats}):
    for name, mode in (("the guard's kernels in place", lambda: None), ("the guard's kernels and function mode (the child)", lambda: guard.function_watch)):
        took = under(mode())
        best[name] = min(best.get(name, took), took)
print(json.dumps(best))
"""


def per_operation(repeats: int) -> None:
    script = PER_OPERATION.format(root=str(ROOT), repeats=repeats)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    best = json.loads(result.stdout.splitlines()[-1])
    plain = best["plain"]
    print(f"one small tensor operation (x * 2, + 1, .sum() on an 8x16 tensor), CPU microseconds, fastest of {repeats} rounds:")
    for name, micros in best.items():
        print(f"  {name + ':':56s} {micros:6.2f}  ({micros / plain:.2f}x plain)")


def measure(submission: str, restricted: bool, armed: bool) -> dict:
    script = MEASURE.format(root=str(ROOT), submission=submission, restricted=restricted, armed=armed)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    return json.loads(result.stdout.splitlines()[-1])


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    submission = str((ROOT / (sys.argv[2] if len(sys.argv) > 2 else "reference/mlm_forward_tied/submissions/accepted/plain_helpers.py")).resolve())
    runs: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    for _ in range(repeats):
        for name, (restricted, armed) in SETTINGS.items():
            runs[name].append(measure(submission, restricted, armed))
    found = [m["found"] for ms in runs.values() for m in ms if m["found"]]
    if found:
        raise SystemExit(f"refused {submission}: {found[0]}")
    cases = runs["plain Python"][0]["cases"]
    base = statistics.median(m["run"] for m in runs["plain Python"])
    print(f"{cases} cases of {Path(submission).name}, medians of {repeats} processes each, alternating")
    for name, ms in runs.items():
        median = statistics.median(m["run"] for m in ms)
        print(f"  {name + ':':42s} {median:.3f}s  ({median / base:.2f}x plain Python)")
    reads = statistics.median(m["read"] for m in runs["capability layer and guard (the child)"])
    print(f"  reading the guard's record after each case: {reads:.3f}s ({reads / cases * 1000:.2f} ms a read)")
    per_operation(repeats)


if __name__ == "__main__":
    main()
