"""A warm pool: one sandboxed server process with torch imported forks a child per submission.

The server (grader/child/server.py) runs behind the same bubblewrap walls as a single child; each
child it forks then walls itself in further (grader/child/walls.py) before any submission code
runs. The grader gives every child its own pipes, its own cgroup (memory, pids, CPU accounting)
and kills it by its host pid, which it finds from the pid the server reports (NSpid in /proc).
So a submission graded through the pool keeps every wall of a single grading, and pays neither a
Python start nor `import torch`.
"""

import json
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

SERVER_BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv[1]); from child.server import main; main(sys.argv[2:])"
START_SECONDS = 120  # importing torch and warming the guard, on a loaded machine


class PoolError(Exception):
    """The pool's server failed (not any submission's fault)."""


def children_of(pid: int) -> list[int]:
    """Host pids of the children of `pid` (every thread's list: a child may have any parent thread)."""
    found = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                found += [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                pass
    except OSError:
        pass
    return found


def namespace_pids(pid: int) -> list[int]:
    """The pid of `pid` in each pid namespace it belongs to, outermost (the host's) first."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(n) for n in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def find_descendant(root: int, inner_pid: int, depth: int) -> int | None:
    """The host pid of the descendant of `root` whose pid is `inner_pid` in its namespace number
    `depth` (0 = the host's), searching breadth first."""
    frontier = children_of(root)
    while frontier:
        pid = frontier.pop(0)
        ids = namespace_pids(pid)
        if len(ids) > depth and ids[depth] == inner_pid:
            return pid
        frontier += children_of(pid)
    return None


class Pool:
    """Start with `Pool(command_for, runner_config)`; `spawn()` a child per submission; `close()`."""

    def __init__(self, sandboxed_command: Any, runner_config: dict[str, Any], tmp_mib: int, limits: dict[str, int]) -> None:
        """sandboxed_command(command, kit, pass_fds) -> (argv, extra descriptors to pass): the
        isolation backend's wrapper (bubblewrap) around the server's command line."""
        self.runner_config = runner_config
        self.tmp_mib = tmp_mib
        self.limits = limits
        self.workdir = tempfile.TemporaryDirectory(prefix="mlm-grader-pool-")
        kit = Path(self.workdir.name) / "kit"
        import shutil

        from grader.sandbox import CHILD_PACKAGE  # the same child-side code a single child gets

        shutil.copytree(CHILD_PACKAGE, kit / "child", ignore=shutil.ignore_patterns("__pycache__"))
        self.control, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = {"control_fd": server_end.fileno(), "runner": runner_config}
        command = [sys.executable, "-I", "-c", SERVER_BOOTSTRAP, "KIT", json.dumps(config)]
        argv, extra_fds = sandboxed_command(command, kit, [server_end.fileno()])
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=[server_end.fileno(), *extra_fds],
            start_new_session=True,
        )
        server_end.close()
        for fd in extra_fds:
            os.close(fd)
        self._lock = threading.Lock()
        self._next_id = 0
        self._replies: dict[int, queue.Queue] = {}
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read_control, daemon=True)
        self._reader.start()
        if not self._ready.wait(START_SECONDS):
            self.close()
            raise PoolError(f"the pool's server did not start within {START_SECONDS} s")
        if self.process.poll() is not None:
            raise PoolError(f"the pool's server failed to start: {self.process.stderr.read().decode(errors='replace')[-2000:]}")
        self.server_pid = find_descendant(self.process.pid, 2, -1) or 0  # bubblewrap's init is 1 there, the server 2

    def _read_control(self) -> None:
        while True:
            try:
                data = self.control.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                self._ready.set()
                for replies in list(self._replies.values()):
                    replies.put({"kind": "server_gone"})
                return
            try:
                message = json.loads(data)
            except ValueError:
                continue
            if message.get("kind") == "ready":
                self._ready.set()
            elif (replies := self._replies.get(message.get("id"))) is not None:
                replies.put(message)

    def alive(self) -> bool:
        return self.process.poll() is None

    def spawn(self, filename: str, source: bytes, fds: dict[str, int]) -> tuple[int, "queue.Queue[dict]"]:
        """Ask the server for a child; returns (the child's host pid, the queue its "exited"
        message will arrive on). fds: requests, results, stdout, stderr (the child's ends)."""
        memfd = os.memfd_create("submission", os.MFD_ALLOW_SEALING)
        try:
            os.write(memfd, source)
            os.lseek(memfd, 0, os.SEEK_SET)
            import fcntl

            fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
            with self._lock:
                self._next_id += 1
                spawn_id = self._next_id
                replies: queue.Queue = queue.Queue()
                self._replies[spawn_id] = replies
                message = {"kind": "spawn", "id": spawn_id, "filename": filename, "tmp_mib": self.tmp_mib, "limits": self.limits, "runner": self.runner_config}
                descriptors = [fds["requests"], fds["results"], fds["stdout"], fds["stderr"], memfd]
                socket.send_fds(self.control, [json.dumps(message).encode()], descriptors)
        finally:
            os.close(memfd)
        try:
            reply = replies.get(timeout=30)
        except queue.Empty:
            raise PoolError("the pool's server did not answer a spawn request") from None
        if reply.get("kind") != "spawned":
            raise PoolError(f"the pool's server could not start a child: {reply}")
        outer = find_descendant(self.server_pid or self.process.pid, reply["pid"], 1)  # the child outside its own namespace
        deadline = time.monotonic() + 10
        inner = None
        while outer and inner is None and time.monotonic() < deadline:
            inner = next(iter(children_of(outer)), None)  # pid 1 of the child's namespace, once it has forked
            if inner is None:
                time.sleep(0.001)
        if inner is None:
            raise PoolError("the pool's child did not wall itself in")
        return inner, replies

    def forget(self, spawn_queue: "queue.Queue[dict]") -> None:
        with self._lock:
            for key, value in list(self._replies.items()):
                if value is spawn_queue:
                    del self._replies[key]

    def close(self) -> None:
        try:
            self.control.close()
        except OSError:
            pass
        try:
            os.killpg(self.process.pid, 9)
        except ProcessLookupError:
            pass
        self.process.wait()
        self.workdir.cleanup()
