"""A child as a local process: behind bubblewrap, as the uid backend's runner user, as a plain
process of the grader's user, or (the kit on a system that is not Linux) with only the limits the
system accepts. Its stdout and stderr are pipes, its channel a pair of pipes."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from grader.child import walls
from grader.sandbox.backends import Backend, Walled
from grader.sandbox.boxes import give_pipes
from grader.sandbox.child import BOOTSTRAP, Child, Exit, returncode_of
from grader.sandbox.limits import Cgroup, apply_limits_in_child, cpu_seconds_used
from grader.sandbox.workdir import child_environment, prepare_files
from grader.spec import Limits, Spec

# The kit's child on a system that is not Linux (check.py, macOS): a plain process with the limits the
# system accepts, and nothing that needs Linux (/proc, cgroups, namespaces, prctl, waitid). Never
# chosen by the grader: --isolation does not accept it.
PLAIN = "plain"


@functools.cache
def unshare_net_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "--net", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class LocalBackend(Backend):
    """A backend whose child is a local process (ProcessChild)."""

    def start(self, workdir: Path, source: bytes, filename: str, spec: Spec) -> Child:
        return ProcessChild(workdir, source, filename, spec, self)


class Process(LocalBackend):
    name = "process"

    def wrap(self, command: list[str], inherited: list[int], kit: Path, submission_dir: Path, workdir: Path, home: Path) -> Walled:
        return Walled(["unshare", "--net", "--", *command] if unshare_net_works() else command, inherited)

    def walls(self, uid: int | None) -> str:
        network = "network namespace" if unshare_net_works() else "shared network"
        return f"process ({network}; same user; no file-system isolation: not a security boundary, a secret seed is not protected)"


class Plain(LocalBackend):
    name = PLAIN

    def describe(self, cgroup: Cgroup | None, limits: Limits, uid: int | None = None) -> str:
        return (
            f"plain process on {sys.platform} (no bubblewrap, seccomp, cgroup or namespaces, which are Linux's; your own user; "
            f"the limits of CPU time, memory, file size and open files that the system accepts, and the wall-time limits): "
            "enough for the kit, which holds no secret; the grader walls your file in on Linux"
        )


class ProcessChild(Child):
    """The child as a local process, walled in by bubblewrap, a separate uid, or nothing."""

    def __init__(self, workdir: Path, source: bytes, filename: str, spec: Spec, backend: Backend) -> None:
        super().__init__(spec)
        limits = spec.limits
        self._backend = backend
        self._plain = backend.name == PLAIN  # the kit on a system that is not Linux
        self.counts_cpu = not self._plain
        kit, home, submission_dir = prepare_files(workdir, source, filename)
        layout = backend.layout(kit, submission_dir, home)
        request_read, request_write = os.pipe()
        result_read, result_write = os.pipe()
        config = self.child_config(spec, f"{layout.submission}/{filename}") | {"request_fd": request_read, "result_fd": result_write}
        command = [sys.executable, "-I", "-c", BOOTSTRAP, layout.kit, json.dumps(config)]
        try:
            walled = backend.wrap(command, [request_read, result_write], kit, submission_dir, workdir, home)
            self.box = walled.box
            self.cgroup = None if self._plain else Cgroup.create(limits, Path(filename).stem)
            self.isolation = backend.describe(self.cgroup, limits, walled.box.uid if walled.box else None)
            if self._plain:  # the limits the system accepts
                preexec = functools.partial(walls.apply_limits_where_possible, limits.cpu_seconds, limits.memory_mib, limits.file_size_mib, limits.open_files)
            else:
                join = self.cgroup.join_files() if self.cgroup else []
                preexec = functools.partial(apply_limits_in_child, limits, join, walled.max_processes, walled.box.uid if walled.box else None)
            if walled.box is not None:
                give_pipes(walled.inherited, walled.box.uid)
            self.process = subprocess.Popen(
                walled.command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=walled.inherited,
                cwd=home,
                env=child_environment(layout.home),
                start_new_session=True,  # its own process group, so one killpg ends everything it started
                preexec_fn=preexec,
            )
        except BaseException:
            self.release()
            raise
        for fd in walled.inherited:  # the child has its copies
            os.close(fd)
        self.request_fd = request_write
        os.set_blocking(request_write, False)  # send() waits with poll(), up to its deadline
        self.start_threads(
            threading.Thread(target=self.stdout.drain, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self.stderr.drain, args=(self.process.stderr,), daemon=True),
            threading.Thread(target=self._read_frames, args=(os.fdopen(result_read, "rb"),), daemon=True),
        )

    def _process_tree(self) -> int | None:
        return None if self.process.returncode is not None else self.process.pid

    def kill(self) -> None:
        """SIGKILL the child's process group, while its leader is alive or a zombie. Once reaped, its
        pid may be any new process's, and the group any new group's: nothing is sent then (exit()
        ends what the leader left before it reaps it, and the cgroup ends the rest)."""
        if self.process.returncode is not None:
            return
        self.killed_by_grader = True
        self._kill_group()

    def _kill_group(self) -> None:
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

    def _wait_reaping(self, seconds: float) -> float | None:
        """The plain backend's wait (no waitid where it is not Linux): reap the child when it ends,
        within `seconds`, and return the CPU time it and the children it waited for used; None if
        it has not ended."""
        deadline = time.monotonic() + seconds
        while True:
            pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
            if pid:
                self.process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it
                return usage.ru_utime + usage.ru_stime
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def exit(self, wait_seconds: float = 5.0) -> Exit:
        """How the child ended: waits up to wait_seconds for it to end by itself, then kills it."""
        if self._plain:
            used = None if self.process.returncode is not None else self._wait_reaping(wait_seconds)
            if used is None and self.process.returncode is None:
                self.kill()
                used = self._wait_reaping(60)
            return self.ended(self.process.wait(), used or 0.0)
        if not self._wait_unreaped(wait_seconds):
            self.kill()
            self._wait_unreaped(60)
        self._kill_group()  # what the leader left in its group, while the leader's zombie keeps the group's id from reuse
        cpu = max(cpu_seconds_used(self.process.pid), self.cpu_seconds() or 0.0)  # before the reaping, which frees its counters
        returncode = self.process.wait()
        return self.ended(returncode_of(returncode) if self._backend.reports_signal_as_status else returncode, cpu)

    def close(self) -> None:
        """End the child and everything it started (all results are in by now), remove its cgroup,
        then collect what is left of its output."""
        self.kill()
        self.process.wait()
        try:
            self._backend.after()
        finally:
            self.release()
        try:
            os.close(self.request_fd)
        except OSError:
            pass


BACKEND = Process()
PLAIN_BACKEND = Plain()
