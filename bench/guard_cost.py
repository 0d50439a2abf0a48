"""What the runtime guard costs a submission: the hidden cases of one file run as the child runs them
(grader/child/runner.py's run_case, then a read of the guard's record), in a process without the
guard beside a process with the guard armed (grader/child/guard.py), alternately, REPEATS times
each. Arming cannot be undone, so each measurement is a process of its own; each runs the cases
twice and times the second pass. Usage:

    .venv/bin/python bench/guard_cost.py [REPEATS] [SUBMISSION]
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = """
import importlib.util, json, sys, time
sys.path.insert(0, {root!r})
import torch
from grader.cases import make_cases
from grader.child import runner, wire
from grader.child.guard import Guard
from grader.spec import load_spec

torch.set_num_threads(1)  # as in the child
spec = load_spec()
requests = [case.request() for case in make_cases(spec, "bench-guard-cost")]
path = {submission!r}
found = importlib.util.spec_from_file_location("submission", path)
module = importlib.util.module_from_spec(found)
found.loader.exec_module(module)
guard = Guard(spec.policy["forbidden_functions"], spec.policy["forbidden_operators"], path)
if {armed!r}:
    guard.arm(protect=[runner, wire])
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


def measure(submission: str, armed: bool) -> dict:
    script = MEASURE.format(root=str(ROOT), submission=submission, armed=armed)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    return json.loads(result.stdout.splitlines()[-1])


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    submission = str((ROOT / (sys.argv[2] if len(sys.argv) > 2 else "tests/submissions/accepted/plain_helpers.py")).resolve())
    plain, armed = [], []
    for _ in range(repeats):
        plain.append(measure(submission, armed=False))
        armed.append(measure(submission, armed=True))
    if any(m["found"] for m in armed):
        raise SystemExit(f"the guard refused {submission}: {armed[0]['found']}")
    cases = plain[0]["cases"]
    p, a = statistics.median(m["run"] for m in plain), statistics.median(m["run"] for m in armed)
    r = statistics.median(m["read"] for m in armed)
    print(f"{cases} cases of {Path(submission).name}, medians of {repeats} processes each, alternating")
    print(f"  without the guard:  {p:.3f}s")
    print(f"  guard armed:        {a:.3f}s  ({a / p:.2f}x), plus {r:.3f}s reading its record after each case ({r / cases * 1000:.2f} ms a read)")


if __name__ == "__main__":
    main()
