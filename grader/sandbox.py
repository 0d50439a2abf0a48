"""Starts the child process that runs the submission, talks to it, and ends it.

The child gets a copy of the submission and of the child-side code (grader/child) in a private
folder, behind the walls of grader/isolation.py. Wall-clock limits are watched here (SIGKILL of
its process group and cgroup); its stdout and stderr are drained continuously and capped.
"""

import functools
import json
import os
import queue
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

from grader import isolation
from grader.child import wire
from grader.spec import Spec

CHILD_PACKAGE = Path(__file__).resolve().parent / "child"
BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv[1]); from child.runner import main; main(sys.argv[2:])"


class ChildGone(Exception):
    """The child ended (or was ended) while we were waiting for it."""


class ChildTimeout(Exception):
    """The child did not answer within the allowed wall time; it has been killed."""


class ChildProtocolError(Exception):
    """The child sent something that is not a well-formed frame."""


@dataclass
class Exit:
    returncode: int  # negative: killed by that signal (bwrap's 128 + signal already translated)
    killed_by_grader: bool
    cpu_seconds: float  # of the child and everything it waited for
    oom_kills: int  # processes the cgroup's memory limit killed
    pids_limit_hits: int  # times the cgroup refused a new process

    @property
    def signal_name(self) -> str | None:
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def cpu_seconds_used(pid: int) -> float:
    """CPU time of a process that has ended but not been reaped (a zombie keeps its counters),
    including the children it waited for (bwrap waits for the submission's process)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class CappedBuffer:
    """Keeps the first `cap` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]

    def drain(self, stream: BinaryIO) -> None:
        while chunk := stream.read1(65536):
            self.feed(chunk)

    def text(self) -> str:
        body = self.kept.decode("utf-8", errors="replace")
        if self.total > len(self.kept):
            body += f"\n[... {self.total - len(self.kept)} more bytes not kept]"
        return body


class Child:
    """What every kind of child shares: the framed channel, the capped output, the wall clock.
    Subclasses start the child and know how to end it; use them as context managers."""

    isolation: str
    requests: BinaryIO

    def __init__(self, spec: Spec) -> None:
        self.limits = spec.limits
        self.started = time.monotonic()
        self.killed_by_grader = False
        self.stdout = CappedBuffer(spec.limits.output_bytes)
        self.stderr = CappedBuffer(spec.limits.output_bytes)
        self._frames: queue.Queue = queue.Queue()

    @staticmethod
    def child_config(spec: Spec, submission: str) -> dict:
        return {
            "submission": submission,
            "entry_point": spec.entry_point,
            "parameters": list(spec.parameters),
            "forbidden_functions": spec.policy["forbidden_functions"],
            "forbidden_operators": spec.policy["forbidden_operators"],
        }

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
        raise NotImplementedError

    def exit(self, wait_seconds: float = 5.0) -> Exit:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> "Child":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prepare_files(workdir: Path, source: bytes, filename: str) -> tuple[Path, Path, Path]:
    """The child-side code, a home folder and the submission (read-only) in the private folder."""
    kit = workdir / "kit"
    shutil.copytree(CHILD_PACKAGE, kit / "child", ignore=shutil.ignore_patterns("__pycache__"))
    home = workdir / "home"
    home.mkdir()
    submission_dir = workdir / "submission"
    submission_dir.mkdir()
    (submission_dir / filename).write_bytes(source)
    (submission_dir / filename).chmod(0o444)
    return kit, home, submission_dir


class ProcessChild(Child):
    """The child as a local process, walled in by bubblewrap, a separate uid, or nothing."""

    def __init__(self, workdir: Path, source: bytes, filename: str, spec: Spec, backend: str) -> None:
        super().__init__(spec)
        limits = spec.limits
        self.backend = backend
        kit, home, submission_dir = prepare_files(workdir, source, filename)

        if backend == "bubblewrap":
            layout = isolation.Layout(isolation.SANDBOX_KIT, isolation.SANDBOX_SUBMISSION, "/tmp")
        else:
            layout = isolation.Layout(str(kit), str(submission_dir), str(home))
        request_read, request_write = os.pipe()
        result_read, result_write = os.pipe()
        config = self.child_config(spec, f"{layout.submission}/{filename}")
        config |= {"request_fd": request_read, "result_fd": result_write}
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": layout.home,
            "TMPDIR": layout.home,
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        command = [sys.executable, "-I", "-c", BOOTSTRAP, layout.kit, json.dumps(config)]
        max_processes = None
        inherited = [request_read, result_write]
        seccomp = None
        if backend == "bubblewrap":
            seccomp = isolation.seccomp_fd()
            inherited += [seccomp] if seccomp is not None else []
            command = isolation.bubblewrap_command(command, kit, submission_dir, seccomp)
        else:
            if backend == "uid":
                command = isolation.uid_command(command)
                max_processes = isolation.PIDS_MAX
                self._open_to_runner(workdir, home)
            if isolation.unshare_net_works():
                command = ["unshare", "--net", "--", *command]
        self.cgroup = isolation.Cgroup.create(limits, Path(filename).stem)
        self.isolation = isolation.describe(backend, self.cgroup, limits)
        join = self.cgroup.join_files() if self.cgroup else []
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=inherited,
            cwd=home,
            env=env,
            start_new_session=True,  # its own process group, so one killpg ends everything it started
            preexec_fn=functools.partial(isolation.apply_limits_in_child, limits, join, max_processes),
        )
        for fd in inherited:  # the child has its copies
            os.close(fd)
        self.requests = os.fdopen(request_write, "wb")
        self._threads = [
            threading.Thread(target=self.stdout.drain, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self.stderr.drain, args=(self.process.stderr,), daemon=True),
            threading.Thread(target=self._read_frames, args=(os.fdopen(result_read, "rb"),), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _open_to_runner(workdir: Path, home: Path) -> None:
        """The runner user may traverse the private folder, read the kit and the submission, and
        write only in its home; nothing else of the grader's is readable to it."""
        workdir.chmod(0o711)
        for path in workdir.rglob("*"):
            if path != home:
                path.chmod(0o755 if path.is_dir() else 0o444)
        home.chmod(0o1777)

    def kill(self) -> None:
        if self.process.returncode is None:
            self.killed_by_grader = True
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _wait_unreaped(self, seconds: float) -> bool:
        """Wait for the child to end without reaping it, so its counters can still be read."""
        deadline = time.monotonic() + seconds
        while os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def exit(self, wait_seconds: float = 5.0) -> Exit:
        """How the child ended: waits up to wait_seconds for it to end by itself, then kills it."""
        if not self._wait_unreaped(wait_seconds):
            self.kill()
            self._wait_unreaped(60)
        cpu = cpu_seconds_used(self.process.pid)
        returncode = self.process.wait()
        if self.backend == "bubblewrap" and 128 < returncode <= 128 + 64:
            returncode = -(returncode - 128)  # bwrap reports a child killed by signal N as 128 + N
        oom = self.cgroup.oom_kills() if self.cgroup else 0
        pids = self.cgroup.pids_limit_hits() if self.cgroup else 0
        return Exit(returncode, self.killed_by_grader, cpu, oom, pids)

    def close(self) -> None:
        """End the child and everything it started (all results are in by now), remove its cgroup,
        then collect what is left of its output."""
        self.kill()
        self.process.wait()
        if self.cgroup:
            self.cgroup.remove()
        if self.backend == "uid":
            isolation.kill_processes_of(isolation.runner_ids()[0])
        for thread in self._threads:
            thread.join(timeout=2)
        try:
            self.requests.close()
        except OSError:
            pass
