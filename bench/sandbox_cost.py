"""Start cost of the sandbox: a trivial Python child started bare, under `unshare --net`, and under
the bubblewrap wrapper the grader uses, measured alternately in one run. Usage:

    .venv/bin/python bench/sandbox_cost.py [REPEATS]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.sandbox.boxes import take_box_uid  # noqa: E402
from grader.sandbox.bubblewrap import bubblewrap_command, bubblewrap_works  # noqa: E402
from grader.sandbox.process import unshare_net_works  # noqa: E402


def seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    child = [sys.executable, "-I", "-S", "-c", "pass"]
    box = take_box_uid() if os.geteuid() == 0 else None  # a root grader's child runs as a box uid
    with tempfile.TemporaryDirectory() as kit, tempfile.TemporaryDirectory() as submission:
        os.chmod(kit, 0o755)
        os.chmod(submission, 0o755)
        variants = {"bare": child}
        if unshare_net_works():
            variants["unshare --net"] = ["unshare", "--net", "--", *child]
        if bubblewrap_works():
            variants["bubblewrap"] = bubblewrap_command(child, Path(kit), Path(submission), uid=box.uid if box else None)
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(repeats):
            for name, command in variants.items():
                times[name].append(seconds(command))
    if box is not None:
        box.release()
    bare = statistics.median(times["bare"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:14} median {median * 1000:6.1f} ms   +{(median - bare) * 1000:5.1f} ms over bare   ({repeats} runs, alternating)")


if __name__ == "__main__":
    main()
