"""The warm pool, a zygote: one sandboxed server with torch imported forks a walled-in child per submission.

The server is grader/child/server.py behind bubblewrap; here, on the grader's side, each child gets
its own pipes, box uid and cgroup, is put in the cgroup before it is sent the start frame, and is
watched and killed as a single child is. Used only where every wall of a single child holds
(zygote_problem); a server that dies is started again and its gradings given children of their own,
and one that could not start is tried again RETRY_SECONDS later; each time, a warning on the logger
"grader.pool". The design: docs/isolation.md, "The warm pool"; what it holds against: docs/threat-model.md.
"""

import fcntl
import json
import logging
import os
import queue
import secrets
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from grader.sandbox import IsolationUnavailable
from grader.sandbox.backends import backend_named
from grader.sandbox.boxes import BOX_UID_BASE, BOX_UIDS, BoxUid, give_pipes, take_box_uid
from grader.sandbox.bubblewrap import SANDBOX_KIT, SANDBOX_SUBMISSION, SHM_MIB, TMPFS_MIB, bubblewrap_command, bubblewrap_works, covered_folders
from grader.sandbox.child import Child, Exit, returncode_of
from grader.sandbox.limits import PIDS_MAX, Cgroup
from grader.sandbox.output import CappedBuffer
from grader.sandbox.seccomp import seccomp_fd, seccomp_program
from grader.sandbox.workdir import child_environment, copy_child_package
from grader.spec import Spec

SERVER_BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv[1]); from child.server import main; main(sys.argv[2:])"
START_SECONDS = 180  # importing torch and warming the guard, on a loaded machine
SPAWN_SECONDS = 60  # a fork and a few system calls; generous for a loaded machine
FIND_SECONDS = 10
STOP_SECONDS = 10  # for the processes below a stopped server to end (SIGKILLed: milliseconds, unless the machine is loaded)
SERVER_LOG_BYTES = 16384
RETRY_SECONDS = 30  # a server that could not start is tried again, at the next spawn, this long after
log = logging.getLogger("grader.pool")


class ZygoteError(Exception):
    """The pool could not give a child (no submission code ran): grade with a child of its own."""


class ServerLost(Exception):
    """The pool's server died while a submission was graded: its verdict cannot be trusted."""


def zygote_problem(backend: str) -> str | None:
    """Why the warm pool cannot keep every wall of a single child here, or None when it can."""
    if backend != "bubblewrap":
        return f"the {backend} backend starts a child per submission (the warm pool runs under bubblewrap only)"
    if not bubblewrap_works():
        return "bubblewrap does not work here"
    if seccomp_program("child") is None or seccomp_program("pool_server") is None:
        return "the pool needs libseccomp (pyseccomp) to refuse nested namespaces in its children"
    return None


def _nspids(pid: int) -> list[int]:
    """The pid of `pid` in each pid namespace it belongs to, ours first."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(n) for n in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def _children(pid: int) -> list[int]:
    found = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                found += [int(p) for p in (task / "children").read_text().split()]
            except (OSError, ValueError):
                pass
    except OSError:
        pass
    return found


OUR_DEPTH = len(_nspids(os.getpid())) or 1


def _descendants(pid: int) -> list[int]:
    found, parents = [], [pid]
    while parents:
        for child in _children(parents.pop()):
            if child not in found:
                found.append(child)
                parents.append(child)
    return found


def _pidfds(pids: list[int]) -> list[int]:
    """A pidfd for each process still there: what later signals and waits can name without a pid."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except OSError:  # ended meanwhile
            pass
    return fds


def _end(pidfds: list[int], seconds: float) -> None:
    """SIGKILL each process and wait, up to `seconds`, until every one has ended; closes the pidfds."""
    poller = select.poll()
    for fd in pidfds:
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:  # ended already
            pass
        poller.register(fd, select.POLLIN)  # readable once the process has ended
    waiting, deadline = set(pidfds), time.monotonic() + seconds
    while waiting and (left := deadline - time.monotonic()) > 0:
        for fd, _ in poller.poll(int(left * 1000) + 1):
            poller.unregister(fd)
            waiting.discard(fd)
    for fd in pidfds:
        os.close(fd)


def _find(parents: list[int], depth: int, inner: int) -> int | None:
    """Among the children of `parents`, the process `depth` pid namespaces below ours whose pid in
    its innermost namespace is `inner`."""
    for parent in parents:
        for pid in _children(parent):
            ids = _nspids(pid)
            if len(ids) == OUR_DEPTH + depth and ids[-1] == inner:
                return pid
    return None


def _wait_for(what: str, find: Any) -> int:
    deadline = time.monotonic() + FIND_SECONDS
    while (pid := find()) is None:
        if time.monotonic() > deadline:
            raise ZygoteError(f"the pool's {what} could not be found")
        time.sleep(0.002)
    return pid


class Zygote:
    """One server, started at once and waited for at the first spawn(), which gives a walled-in
    child per submission; close() ends it all."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        limits = spec.limits
        self.limits = {name: getattr(limits, name) for name in ("cpu_seconds", "memory_mib", "file_size_mib", "open_files")}
        self.root = os.geteuid() == 0  # then the server and each child run as box uids of their own
        if self.root:
            self.limits["processes"] = PIDS_MAX  # RLIMIT_NPROC: each child's uid is its own
        self.server_box: BoxUid | None = None
        self._lock = threading.Lock()
        self._replies: dict[str, queue.Queue] = {}  # spawn token -> where its messages go
        self.server: subprocess.Popen | None = None
        self.generation = 0  # how many servers were started: a child knows which one holds it
        self.restarts = 0  # servers started again, after one ended or could not start
        self.log = CappedBuffer(SERVER_LOG_BYTES)
        self.broken = ""  # why the server cannot be started: every child is then a child of its own
        self._broken_at = 0.0  # when it was found broken (time.monotonic())
        self._closed = False
        self._workdir = tempfile.TemporaryDirectory(prefix="mlm-grader-pool-")
        copy_child_package(Path(self._workdir.name) / "kit")
        # Every server is started from this one thread, which lives as long as the pool: bubblewrap's
        # --die-with-parent fires when the *thread* that started it ends, and a server started again
        # from a batch's job thread would die with that thread.
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mlm-grader-pool-server")
        self._start()

    # -- the server -------------------------------------------------------------------------------

    def _start(self) -> None:
        self._starter.submit(self._start_here).result()

    def _start_here(self) -> None:
        self.generation += 1
        self.control, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        runner_config = Child.child_config(self.spec, "")
        del runner_config["submission"]
        config = {
            "control_fd": server_end.fileno(),
            "runner": runner_config,
            "limits": self.limits,
            "tmp_mib": TMPFS_MIB,
            "shm_mib": SHM_MIB,
            "submission_dir": SANDBOX_SUBMISSION,
            "covered": covered_folders(),
            "seccomp": seccomp_program("child").hex(),
            "box_uids": [BOX_UID_BASE, BOX_UIDS] if self.root else None,
        }
        seccomp = seccomp_fd("pool_server")
        command = [sys.executable, "-I", "-c", SERVER_BOOTSTRAP, SANDBOX_KIT, json.dumps(config)]
        try:
            self.server_box = take_box_uid() if self.root else None
            uid = self.server_box.uid if self.server_box else None
            argv = bubblewrap_command(command, Path(self._workdir.name) / "kit", None, seccomp, uid)
            self.server = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=[server_end.fileno(), seccomp],
                env=child_environment("/tmp"),
                cwd=self._workdir.name,
                start_new_session=True,
            )
        except (OSError, IsolationUnavailable) as error:  # every spawn then says why, and grades with a child of its own
            self._mark_broken(f"the pool's server could not be started: {error}")
            self.control.close()
            if self.server_box is not None:
                self.server_box.release()
                self.server_box = None
            return
        finally:
            server_end.close()
            os.close(seccomp)
        threading.Thread(target=self.log.drain, args=(self.server.stderr,), daemon=True).start()
        self._ready: queue.Queue = queue.Queue()
        self.server_pid = 0  # known once the server is ready (_wait_ready)
        threading.Thread(target=self._read_control, args=(self.control, self._ready, self.generation, self.server), daemon=True).start()

    def _mark_broken(self, why: str) -> None:
        self.broken, self._broken_at = why, time.monotonic()
        log.warning("warm pool: %s; submissions are graded in sandboxed children of their own (slower) until it starts", why)

    def _start_again(self, why: str) -> None:
        """Under the lock: a new server in place of one that ended or could not start."""
        self.restarts += 1
        log.warning("warm pool: %s; starting a new server (restart %d)", why, self.restarts)
        self._stop_server()
        self.broken = ""
        self._start()

    def wait_ready(self) -> str:
        """Wait until the server is ready (started again if it died): "" then, else why it cannot be."""
        try:
            with self._lock:
                self._wait_ready()
        except ZygoteError as error:
            return str(error)
        return ""

    def _wait_ready(self) -> None:
        """Under the lock: the server is ready, started again if it died; ZygoteError if it cannot be."""
        if self.broken and (self._closed or time.monotonic() - self._broken_at < RETRY_SECONDS):
            raise ZygoteError(self.broken)
        if self.broken:
            self._start_again(f"trying again to start the server ({self.broken})")
            if self.broken:
                raise ZygoteError(self.broken)
        elif self.server_pid and self.alive():
            return
        elif self.server_pid:  # it was ready once and has died since: a new one
            self._start_again(f"the server ended (status {self.server.returncode if self.server else None})")
            if self.broken:
                raise ZygoteError(self.broken)
        try:
            message = self._ready.get(timeout=START_SECONDS)
        except queue.Empty:
            message = {"kind": "server_gone"}
        if message.get("kind") != "ready":
            self._stop_server()
            self._mark_broken(f"the pool's server did not start: {self.log.text()[-2000:] or 'no output'}")
            raise ZygoteError(self.broken)
        # bubblewrap's init is pid 1 of its namespace and the server pid 2
        init = _wait_for("server's init", lambda: _find([self.server.pid], 1, 1))
        self.server_pid = _wait_for("server", lambda: _find([init], 1, 2))

    def _map_server(self, server: subprocess.Popen) -> dict[str, str]:
        """The server (a box uid, root) has made its user namespace: map the box uids onto
        themselves in it, and nothing else (root is not in it), so that it may give each child a
        box uid of its own (grader/child/walls.py)."""
        try:
            init = _wait_for("server's init", lambda: _find([server.pid], 1, 1))
            pid = _wait_for("server", lambda: _find([init], 1, 2))
            ids = f"{BOX_UID_BASE} {BOX_UID_BASE} {BOX_UIDS}\n".encode()
            for name in ("uid_map", "gid_map"):
                fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY)
                try:
                    os.write(fd, ids)
                finally:
                    os.close(fd)
        except (ZygoteError, OSError) as error:
            return {"kind": "not_mapped", "why": str(error)}
        return {"kind": "mapped"}

    def _read_control(self, control: socket.socket, ready: queue.Queue, generation: int, server: subprocess.Popen) -> None:
        while True:
            try:
                data = control.recv(1 << 16)
            except OSError:
                data = b""
            try:
                message = json.loads(data) if data else {"kind": "server_gone"}
            except ValueError:
                message = {"kind": "server_gone"}  # the server never sends anything else
            if message.get("kind") == "map" and self.root:  # the server asks it once, before "ready"
                try:
                    control.send(json.dumps(self._map_server(server)).encode())
                except OSError:
                    pass  # the server is gone: recv() says so next
                continue
            if message.get("kind") in ("ready", "server_gone"):
                ready.put(message)
            if message.get("kind") == "server_gone":
                with self._lock:
                    for replies in self._replies.values():
                        if replies.generation == generation:
                            replies.put(message)
                return
            with self._lock:
                replies = self._replies.get(message.get("id"))
            if replies is not None:
                replies.put(message)

    def alive(self) -> bool:
        return self.server is not None and self.server.poll() is None

    def _stop_server(self) -> None:
        try:
            self.control.close()
        except OSError:
            pass
        if self.server is not None:
            if self.server.returncode is None:  # not reaped (alive() reaps a server that ended): the id is still its group's
                tree = _pidfds(_descendants(self.server.pid))  # taken first: the server's end would hand them to init
                try:
                    os.killpg(self.server.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.server.wait()
                _end(tree, STOP_SECONDS)  # what the group's kill did not reach, and what was still dying: gone before close() returns
            self.server.wait()
        if self.server_box is not None:
            self.server_box.release()
            self.server_box = None

    def close(self) -> None:
        with self._lock:
            self._stop_server()
            self.broken = "the warm pool was closed"  # a grading that asks it for a child after this gets a child of its own
            self._closed = True
        self._starter.shutdown()
        self._workdir.cleanup()

    # -- children ---------------------------------------------------------------------------------

    def start_child(self, workdir: Path, source: bytes, filename: str, spec: Spec, backend: str) -> "ZygoteChild":
        """judge.grade's `start`: a child of this pool in place of a child of its own."""
        return ZygoteChild(self, source, filename, spec)

    def spawn(self, filename: str, source: bytes, fds: list[int], uid: int | None) -> tuple[str, "_Replies", list[int]]:
        """A walled-in child on the descriptors `fds` (its ends of requests, results, stdout,
        stderr), running as the box uid `uid` (None: the grader is not root, the server's uid):
        its spawn token, the queue its "exited" message will arrive on, and the host pids of its
        outer process, its namespace's init and its runner. The server is sent an opaque random
        token; the source and the file's name travel in sealed memfds that only the child reads,
        so that nothing of a submission is ever in the memory a later child inherits."""
        sealed: list[int] = []
        try:
            sealed.append(_sealed("mlm-grader-submission", source))
            sealed.append(_sealed("mlm-grader-name", os.fsencode(os.path.basename(filename))))
            with self._lock:
                self._wait_ready()
                spawn_id = secrets.token_hex(8)
                replies = _Replies(self.generation)
                self._replies[spawn_id] = replies
                message = {"kind": "spawn", "id": spawn_id, "uid": uid}
                try:
                    socket.send_fds(self.control, [json.dumps(message).encode()], [*fds, *sealed])
                except OSError as error:
                    raise ZygoteError(f"the pool's server could not be reached ({error.strerror})") from None
                server_pid = self.server_pid
        finally:
            for fd in sealed:
                os.close(fd)
        try:
            reply = replies.get(timeout=SPAWN_SECONDS)
        except queue.Empty:
            reply = {"kind": "failed", "why": f"no answer within {SPAWN_SECONDS} s"}
        if reply.get("kind") != "spawned":
            self.forget(spawn_id)
            raise ZygoteError(f"the pool's server could not start a child: {reply.get('why', reply.get('kind'))}")
        outer = _wait_for("child", lambda: _find([server_pid], 1, reply["pid"]))
        init = _wait_for("child's init", lambda: _find([outer], 2, 1))
        runner = _wait_for("child's runner", lambda: _find([init], 2, 2))
        return spawn_id, replies, [outer, init, runner]

    def forget(self, spawn_id: str) -> None:
        with self._lock:
            self._replies.pop(spawn_id, None)


def _sealed(name: str, data: bytes) -> int:
    """A memfd holding data, sealed against any change (its reader cannot alter it for another)."""
    memfd = os.memfd_create(name, os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
    try:
        os.write(memfd, data)
        os.lseek(memfd, 0, os.SEEK_SET)
        fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    except BaseException:
        os.close(memfd)
        raise
    return memfd


class _Replies(queue.Queue):
    def __init__(self, generation: int) -> None:
        super().__init__()
        self.generation = generation


class ZygoteChild(Child):
    """A child of the warm pool, as the judge sees any child (grader/sandbox/child.py)."""

    def __init__(self, pool: Zygote, source: bytes, filename: str, spec: Spec) -> None:
        super().__init__(spec)
        self.pool = pool
        self.server_lost = False
        self.returncode: int | None = None
        try:
            self.box = take_box_uid() if pool.root else None  # the child's own host uid
        except IsolationUnavailable as error:
            raise ZygoteError(str(error)) from None
        uid = self.box.uid if self.box else None
        self.cgroup = Cgroup.create(spec.limits, Path(filename).stem)
        self.isolation = backend_named("bubblewrap").describe(self.cgroup, spec.limits, uid) + (
            "; warm pool (forked from a sandboxed server with torch imported, then walled in: its own user, pid, net, ipc, "
            "uts and mount namespaces, private /tmp and /dev/shm, read-only /proc, no capabilities, non-dumpable, "
            "no further namespaces)"
        )
        ours, theirs = [], []
        for _ in range(4):  # requests, results, stdout, stderr
            read, write = os.pipe2(os.O_CLOEXEC)
            ours.append(read)
            theirs.append(write)
        # The child reads requests: swap that pair's ends.
        ours[0], theirs[0] = theirs[0], ours[0]
        self._pidfds: list[int] = []
        try:
            if uid is not None:
                give_pipes(theirs, uid)
            self.spawn_id, self._replies, pids = pool.spawn(filename, source, theirs, uid)
            for pid in pids:
                self._pidfds.append(os.pidfd_open(pid))
            if _find([pids[0]], 2, 1) != pids[1] or _find([pids[1]], 2, 2) != pids[2]:  # the pidfds are theirs
                raise ZygoteError("the pool's child ended before it could be put in its cgroup")
            if self.cgroup:  # before the start frame, and so before any submission code runs
                for path in self.cgroup.join_files():
                    for pid in pids:
                        with open(path, "w") as f:
                            f.write(str(pid))
        except BaseException:
            self._kill_pids()
            for fd in ours + theirs + self._pidfds:
                os.close(fd)
            self.release()
            raise
        for fd in theirs:
            os.close(fd)
        self.pids = pids
        self.request_fd = ours[0]
        os.set_blocking(self.request_fd, False)
        self.start_threads(
            threading.Thread(target=self.stdout.drain, args=(os.fdopen(ours[2], "rb"),), daemon=True),
            threading.Thread(target=self.stderr.drain, args=(os.fdopen(ours[3], "rb"),), daemon=True),
            threading.Thread(target=self._read_frames, args=(os.fdopen(ours[1], "rb"),), daemon=True),
        )

    def _kill_pids(self) -> None:
        """SIGKILL the namespace's init (the kernel then kills everything in it) and the outer process."""
        for pidfd in self._pidfds[1::-1]:
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:  # ended already
                pass

    def _process_tree(self) -> int | None:
        return None if self.returncode is not None else self.pids[1]

    def kill(self) -> None:
        if self.returncode is None:
            self.killed_by_grader = True
        self._kill_pids()

    def _wait(self, seconds: float) -> bool:
        """Wait for the server's "exited" message; False if it did not come in time."""
        if self.returncode is not None:
            return True
        if self.server_lost:
            raise ServerLost("the pool's server ended while a submission was graded")
        try:
            message = self._replies.get(timeout=max(0.0, seconds))
        except queue.Empty:
            return False
        if message.get("kind") == "exited":
            self.returncode = int(message["returncode"])
            self.pool.forget(self.spawn_id)
            return True
        self.server_lost = True  # the server died first: how the child ended is not known
        raise ServerLost("the pool's server ended while a submission was graded")

    def exit(self, wait_seconds: float = 5.0) -> Exit:
        if not self._wait(wait_seconds):
            self.kill()
            if not self._wait(60):
                raise ServerLost("the pool's server did not report how a child ended")
        return self.ended(returncode_of(self.returncode), self.cpu_seconds() or 0.0)  # the init reports a signal as bwrap does

    def close(self) -> None:
        self.kill()
        try:
            if not self._wait(10):
                self.server_lost = True
        except ServerLost:
            pass
        self.release()  # its processes have ended (or, the server lost, are no longer listed: take_box_uid checks)
        fds, self._pidfds, self.request_fd = [self.request_fd, *self._pidfds], [], -1
        for fd in fds:  # forgotten first: a kill or a write after the close must never reach a later child's descriptors of the same numbers
            try:
                os.close(fd)
            except OSError:
                pass
        self.pool.forget(self.spawn_id)
