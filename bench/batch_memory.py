"""Memory of one `python -m grader batch --jobs JOBS` over N submissions (the mix of
bench/batch_time.py): the summed proportional set size (PSS) of the grader's whole process tree,
sampled every half second, its peak over the run and per quarter of it, the grader's own resident
peak, and the most processes seen at once. Bounded by --jobs, it stays flat from the first quarter
to the last; growing with the number of submissions, it climbs. Needs /proc/PID/smaps_rollup
(Linux 4.14 or newer); run as the user that runs the grader. Usage:

    .venv/bin/python bench/batch_memory.py [N] [JOBS]      (default: 200 submissions, 2 jobs)
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_time import ENV, FOLDERS, ROOT, class_folder  # noqa: E402

MIB = 1 << 20


def tree(root: int) -> list[int]:
    """root and every process below it, found through /proc/PID/task/TID/children."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            pass  # ended meanwhile
    return found


def proc_bytes(pid: int, file: str, key: str) -> int:
    """A size in kB that /proc/PID/FILE gives on its line `key:`, in bytes; 0 once the process has
    ended (or is not ours to read)."""
    try:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def pss_bytes(pid: int) -> int:
    return proc_bytes(pid, "smaps_rollup", "Pss")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with tempfile.TemporaryDirectory(prefix="mlm-grader-bench-") as tmp:
        folder = class_folder(Path(tmp), count)
        out = Path(tmp) / "results.jsonl"
        command = [sys.executable, "-m", "grader", "batch", str(folder), "--jobs", str(jobs), "--out", str(out)]
        started = time.perf_counter()
        batch = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, env=ENV)
        samples: list[tuple[float, int]] = []
        most_processes = grader_peak = 0
        while batch.poll() is None:
            grader_peak = max(grader_peak, proc_bytes(batch.pid, "status", "VmHWM"))  # its own resident peak so far
            pids = tree(batch.pid)
            most_processes = max(most_processes, len(pids))
            samples.append((time.perf_counter() - started, sum(map(pss_bytes, pids))))
            time.sleep(0.5)
        seconds = time.perf_counter() - started
        graded = len(out.read_text().splitlines()) if out.exists() else 0
    quarters = [[pss for at, pss in samples if q * seconds / 4 <= at < (q + 1) * seconds / 4] for q in range(4)]
    print(f"{count} submissions ({', '.join(FOLDERS)} in turn), python -m grader batch --jobs {jobs}")
    print(f"{graded} graded in {seconds:.1f}s, exit status {batch.returncode}")
    print(f"summed PSS of the grader's process tree, sampled every 0.5 s: peak {max(p for _, p in samples) / MIB:.0f} MiB")
    print("peak per quarter of the run: " + ", ".join(f"{max(q, default=0) / MIB:.0f} MiB" for q in quarters))
    print(f"most processes at once: {most_processes}; the grader's own resident peak: {grader_peak / MIB:.0f} MiB")
    sys.exit(0 if batch.returncode == 0 and graded == count else 1)


if __name__ == "__main__":
    main()
