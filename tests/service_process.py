"""A grading service started by the tests themselves: `python -m grader serve` on 127.0.0.1, on a port
the system picks, its log kept, every process it started listed, and stopped at the end."""

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.grading import ROOT, SUBMISSIONS

CORRECT = SUBMISSIONS / "accepted" / "plain_helpers.py"
WRONG = SUBMISSIONS / "wrong_answer" / "causal_mask.py"
HANGING = SUBMISSIONS / "time_limit_exceeded" / "infinite_loop_in_call.py"  # its first case runs until the case's limit (10 s)


def slow_correct(additions: int = 40_000_000) -> str:
    """A correct solution that first adds up `additions` numbers at import (a second or two of CPU):
    a grading that takes a while, and is accepted."""
    return f"_ = sum(range({additions}))\n\n" + CORRECT.read_text()


@dataclass
class Service:
    url: str
    process: subprocess.Popen
    log: list[str] = field(default_factory=list)

    def descendants(self) -> set[int]:
        """Every process below the service's (its pools' servers, their children, its children of their own)."""
        found, parents = set(), [self.process.pid]
        while parents:
            parent = parents.pop()
            for task in Path(f"/proc/{parent}/task").glob("*"):
                try:
                    children = {int(pid) for pid in (task / "children").read_text().split()}
                except (OSError, ValueError):
                    continue
                parents += list(children - found)
                found |= children
        return found

    def metric(self, name: str) -> float:
        """The value of an unlabelled metric, or the sum of a labelled one's values."""
        text = httpx.get(f"{self.url}/metrics").text
        values = [float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.MULTILINE)]
        return sum(values)


def alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid)}


def _state(pid: int) -> str:
    try:
        return next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:")).lower()
    except (OSError, StopIteration):
        return "zombie"


@contextlib.contextmanager
def running_service(*args: str, env: dict[str, str] | None = None, ready_within: float = 240) -> Iterator[Service]:
    """The service with `args`, once /readyz says it is ready; SIGTERM (then SIGKILL) at the end."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MLM_GRADER_")} | (env or {})
    command = [sys.executable, "-m", "grader", "serve", "--host", "127.0.0.1", "--port", "0", *args]
    process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log: list[str] = []
    listening = threading.Event()

    def read_log() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if "listening on http://" in line:
                listening.set()
        listening.set()  # it ended

    threading.Thread(target=read_log, daemon=True).start()
    try:
        if not listening.wait(60) or process.poll() is not None:
            raise AssertionError("the service did not start:\n" + "".join(log))
        url = re.search(r"listening on (http://\S+)", "".join(log)).group(1)
        service = Service(url, process, log)
        deadline = time.monotonic() + ready_within
        while httpx.get(f"{url}/readyz").status_code != 200:
            if time.monotonic() > deadline or process.poll() is not None:
                raise AssertionError("the service did not get ready:\n" + "".join(log))
            time.sleep(0.2)
        yield service
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
