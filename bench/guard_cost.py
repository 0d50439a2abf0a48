"""What the in-process walls cost a submission: the hidden cases of one file run as the child runs
them (grader/child/runner.py's load_submission and run_case, then a read of the guard's record),
as plain Python, with the capability layer's rewrite (grader/child/restricted.py), with the
runtime guard armed too (grader/child/guard.py), and, as an experiment that is no product path,
with the guard armed but its profile function never installed (what that function costs), side by
side, alternately, REPEATS times each.
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
from grader.child import restricted, runner, wire
from grader.child.guard import Guard
from grader.spec import CHILD_POLICY, load_spec

torch.set_num_threads(1)  # as in the child
spec = load_spec()
requests = [case.request() for case in make_cases(spec, "bench-guard-cost")]
path = {submission!r}
guard = Guard(spec.policy["forbidden_functions"], spec.policy["forbidden_operators"], path)
config = {{key: spec.policy[key] for key in CHILD_POLICY}} | {{"submission": path}}
capabilities = restricted.Capabilities(config, guard.refuse) if {restricted!r} else None
if {armed!r}:
    if {no_profile!r}:  # the experiment: the profile function is handed to a holder, never installed
        _held = {{}}
        sys.setprofile = lambda function: _held.__setitem__(0, function)
        sys.getprofile = lambda: _held.get(0)
    guard.arm(protect=[runner, wire, restricted])
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

SETTINGS = {  # name -> (the capability layer's rewrite, the guard armed, its profile function left out)
    "plain Python": (False, False, False),
    "capability layer": (True, False, False),
    "capability layer and guard (the child)": (True, True, False),
    # Not a product path: what the guard's profile function costs, the rest of the guard armed.
    "the same, the profile function left out": (True, True, True),
}


PER_OPERATION = """
import json, sys, time
sys.path.insert(0, {root!r})
import torch
from torch.overrides import TorchFunctionMode
from grader.child.guard import Guard, _profile_function
from grader.spec import load_spec

torch.set_num_threads(1)
spec = load_spec()
guard = Guard(spec.policy["forbidden_functions"], spec.policy["forbidden_operators"], "submission.py")
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


def empty_profile(frame, event, arg):
    pass


def under(mode, profile):
    if mode is not None:
        mode.__enter__()
    sys.setprofile(profile)
    try:
        return loop()
    finally:
        sys.setprofile(None)
        if mode is not None:
            mode.__exit__(None, None, None)


guard_profile = _profile_function(guard)
layers = {{
    "plain": (None, None),
    "an empty function mode": (lambda: Empty(), None),
    "the guard's function mode": (lambda: guard.function_watch, None),
    "an empty profile function": (None, empty_profile),
    "the guard's profile function": (None, guard_profile),
    "the guard's mode and an empty profile function": (lambda: guard.function_watch, empty_profile),
    "the guard's mode and its profile function (the child)": (lambda: guard.function_watch, guard_profile),
}}
loop()
best = {{}}
for _ in range({repeats}):
    for name, (mode, profile) in layers.items():
        took = under(mode() if mode else None, profile)
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


def measure(submission: str, restricted: bool, armed: bool, no_profile: bool) -> dict:
    script = MEASURE.format(root=str(ROOT), submission=submission, restricted=restricted, armed=armed, no_profile=no_profile)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    return json.loads(result.stdout.splitlines()[-1])


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    submission = str((ROOT / (sys.argv[2] if len(sys.argv) > 2 else "reference/mlm_forward_tied/submissions/accepted/plain_helpers.py")).resolve())
    runs: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    for _ in range(repeats):
        for name, (restricted, armed, no_profile) in SETTINGS.items():
            runs[name].append(measure(submission, restricted, armed, no_profile))
    found = [m["found"] for name, ms in runs.items() for m in ms if m["found"] and not SETTINGS[name][2]]
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
