"""Time to grade one correct submission, beside the time of a bare `python -c "import torch"`.

The two are measured alternately in one run (this machine is noisy), REPEATS times each, and the
medians and their ratio are printed. Usage:

    .venv/bin/python bench/grade_time.py [REPEATS] [SUBMISSION]
"""

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    submission = sys.argv[2] if len(sys.argv) > 2 else "reference/mlm_forward_tied/submissions/accepted/plain_helpers.py"
    bare, grading = [], []
    for _ in range(repeats):
        bare.append(seconds([sys.executable, "-c", "import torch"]))
        grading.append(seconds([sys.executable, "-m", "grader", submission]))
    b, g = statistics.median(bare), statistics.median(grading)
    print(f"python -c 'import torch'      median {b:.2f}s  (min {min(bare):.2f}, max {max(bare):.2f})")
    print(f"python -m grader {submission}  median {g:.2f}s  (min {min(grading):.2f}, max {max(grading):.2f})")
    print(f"grading / bare torch import: {g / b:.2f}x   ({repeats} runs each, alternating)")


if __name__ == "__main__":
    main()
