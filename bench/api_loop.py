"""A pipeline's loop through the Python API, side by side in one run: N sources graded one at a
time through one Grader (`grader.grade(source)` in a loop), beside the same N through
`grader.grade_many(sources)` of a Grader with the same number of jobs, and through the one-off
`grade_source` per source (each call its own child, as a pipeline without a Grader pays). Prints
the time from constructing the Grader to its first report, each way's seconds per submission and
their ratios; the verdicts must be equal. Usage:

    .venv/bin/python bench/api_loop.py [N] [ONE_OFF]     (default: 200 sources; 10 one-off calls)
"""

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batch_time import mix  # noqa: E402

from grader import Grader, grade_source  # noqa: E402

SEED = "bench-secret"


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    one_off = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    sources = {f"{n:03}_{p.stem}": p.read_bytes() for n, p in enumerate(mix(count))}
    grade_source(b"", seed=SEED)  # the cases and expected outputs of this seed, computed once for every way

    started = time.perf_counter()
    loop: dict[str, str] = {}
    with Grader(jobs=1, seed=SEED) as grader:
        first = None
        for key, source in sources.items():
            loop[key] = grader.grade(source).verdict
            first = first or time.perf_counter() - started
    loop_seconds = time.perf_counter() - started

    started = time.perf_counter()
    with Grader(jobs=1, seed=SEED) as grader:
        many = {report.id: report.verdict for report in grader.grade_many(sources)}
    many_seconds = time.perf_counter() - started

    chosen = list(sources)[:one_off]
    times = []
    for key in chosen:
        started = time.perf_counter()
        assert grade_source(sources[key], seed=SEED).verdict == loop[key], key
        times.append(time.perf_counter() - started)

    assert loop == many, {k: (loop[k], many[k]) for k in loop if loop[k] != many.get(k)}
    per_loop, per_many, per_one_off = loop_seconds / count, many_seconds / count, statistics.median(times)
    print(f"{count} sources, one job; first report {first:.2f} s after Grader() was called")
    print(f"Grader.grade in a loop : {per_loop:.3f} s per submission ({loop_seconds:.1f} s)")
    print(f"Grader.grade_many      : {per_many:.3f} s per submission ({many_seconds:.1f} s)")
    print(f"grade_source per call  : {per_one_off:.3f} s per submission (median of {len(times)})")
    print(f"loop / grade_many: {per_loop / per_many:.2f}x; grade_source / loop: {per_one_off / per_loop:.2f}x; verdicts equal")


if __name__ == "__main__":
    main()
