"""Starts the child process that runs the submission, and enforces its limits from outside.

The child sees a private working folder holding a copy of the submission and of the child-side
code (grader/child); its environment is cleared. Limits: wall clock (watched here, SIGKILL of the
whole process group), CPU time, address space, file size and open files (rlimits set by us on the
child before any submission code runs). Its stdout and stderr are drained continuously and capped.
"""

import json
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import torch

from grader.child import wire
from grader.spec import Spec

CHILD_PACKAGE = Path(__file__).resolve().parent / "child"
BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv[1]); from child.runner import main; main(sys.argv[2:])"
MIB = 1 << 20


class ChildGone(Exception):
    """The child ended (or was ended) while we were waiting for it."""


class ChildTimeout(Exception):
    """The child did not answer within the allowed wall time; it has been killed."""


class ChildProtocolError(Exception):
    """The child sent something that is not a well-formed frame."""


@dataclass
class Exit:
    returncode: int
    killed_by_grader: bool

    @property
    def signal_name(self) -> str | None:
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


class CappedBuffer:
    """Keeps the first `cap` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0

    def drain(self, stream: BinaryIO) -> None:
        while chunk := stream.read1(65536):
            self.total += len(chunk)
            room = self.cap - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]

    def text(self) -> str:
        body = self.kept.decode("utf-8", errors="replace")
        if self.total > len(self.kept):
            body += f"\n[... {self.total - len(self.kept)} more bytes not kept]"
        return body


class Child:
    """One child process running the submission; use as a context manager so it is always reaped."""

    def __init__(self, workdir: Path, source: bytes, filename: str, spec: Spec) -> None:
        self.limits = limits = spec.limits
        kit = workdir / "kit"
        shutil.copytree(CHILD_PACKAGE, kit / "child", ignore=shutil.ignore_patterns("__pycache__"))
        home = workdir / "home"
        home.mkdir()
        submission = workdir / "submission" / filename
        submission.parent.mkdir()
        submission.write_bytes(source)
        submission.chmod(0o444)

        request_read, request_write = os.pipe()
        result_read, result_write = os.pipe()
        config = {
            "request_fd": request_read,
            "result_fd": result_write,
            "submission": str(submission),
            "entry_point": spec.entry_point,
            "parameters": list(spec.parameters),
            "forbidden_functions": spec.policy["forbidden_functions"],
            "forbidden_operators": spec.policy["forbidden_operators"],
        }
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "TMPDIR": str(home),
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOTSTRAP, str(kit), json.dumps(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(request_read, result_write),
            cwd=home,
            env=env,
            start_new_session=True,  # its own process group, so one killpg ends everything it started
        )
        os.close(request_read)
        os.close(result_write)
        self._set_limits()
        self.started = time.monotonic()
        self.killed_by_grader = False
        self.requests = os.fdopen(request_write, "wb")
        self.stdout = CappedBuffer(limits.output_bytes)
        self.stderr = CappedBuffer(limits.output_bytes)
        self._frames: queue.Queue = queue.Queue()
        self._threads = [
            threading.Thread(target=self.stdout.drain, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self.stderr.drain, args=(self.process.stderr,), daemon=True),
            threading.Thread(target=self._read_frames, args=(os.fdopen(result_read, "rb"),), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _set_limits(self) -> None:
        """Applied from outside while the child is still importing torch: it runs no submission
        code until it receives the 'start' frame, sent after this."""
        limits, pid = self.limits, self.process.pid
        cpu = limits.cpu_seconds
        resource.prlimit(pid, resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU first, SIGKILL a second later
        resource.prlimit(pid, resource.RLIMIT_AS, (limits.memory_mib * MIB,) * 2)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (limits.file_size_mib * MIB,) * 2)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limits.open_files,) * 2)
        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))

    def _read_frames(self, stream: BinaryIO) -> None:
        with stream:
            while True:
                try:
                    self._frames.put(wire.read_frame(stream))
                except EOFError:
                    self._frames.put(None)
                    return
                except (wire.WireError, ValueError) as error:
                    self._frames.put(ChildProtocolError(str(error)))
                    return

    def send(self, message: dict[str, Any], tensors: dict[str, torch.Tensor] | None = None) -> None:
        try:
            wire.write_frame(self.requests, message, tensors)
        except (BrokenPipeError, OSError):
            raise ChildGone() from None

    def receive(self, seconds: float) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """The next frame from the child, within `seconds` and within the run's total wall time."""
        remaining_total = self.limits.total_seconds - (time.monotonic() - self.started)
        try:
            item = self._frames.get(timeout=max(0.0, min(seconds, remaining_total)))
        except queue.Empty:
            self.kill()
            raise ChildTimeout() from None
        if item is None:
            raise ChildGone()
        if isinstance(item, ChildProtocolError):
            self.kill()
            raise item
        return item

    def kill(self) -> None:
        if self.process.returncode is None:
            self.killed_by_grader = True
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def exit(self, wait_seconds: float = 5.0) -> Exit:
        """How the child ended: waits up to wait_seconds for it to end by itself, then kills it."""
        try:
            self.process.wait(timeout=wait_seconds)
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait()
        return Exit(self.process.returncode, self.killed_by_grader)

    def close(self) -> None:
        """End the child and everything in its process group (all results are in by now), then
        collect what is left of its output."""
        self.kill()
        self.process.wait()
        for thread in self._threads:
            thread.join(timeout=2)
        try:
            self.requests.close()
        except OSError:
            pass

    def __enter__(self) -> "Child":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
