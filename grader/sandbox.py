"""Starts the child process that runs the submission, talks to it, and ends it.

The child gets a copy of the submission and of the child-side code (grader/child) in a private
folder, behind the walls of grader/isolation.py. Its stdout and stderr are drained continuously and
capped. The channel is read by one thread that checks every frame (grader/protocol.py) and queues at
most two, each bounded by what the current request can need, so the grader's memory stays bounded
whatever the child writes. Writes to the child have deadlines. A watchdog
ends the child (SIGKILL of its process group and cgroup) at the total wall-clock limit or when its
processes together have used the CPU limit, whatever the grader's main thread is doing.
"""

from __future__ import annotations

import array
import fcntl
import functools
import json
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from grader import isolation, protocol
from grader.child import walls, wire
from grader.spec import CHILD_POLICY, Spec

if TYPE_CHECKING:  # the grader starts a child before it imports torch (see grader/child/wire.py)
    import torch


CHILD_PACKAGE = Path(__file__).resolve().parent / "child"
BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv[1]); from child.runner import main; main(sys.argv[2:])"
WATCH_SECONDS = 0.1  # how often the watchdog looks at the clock and the CPU time
QUEUED_FRAMES = 2  # frames read ahead of the judge; the reader waits (and so does the child) beyond


def child_environment(home: str) -> dict[str, str]:
    """The whole environment of a child process (nothing of the grader's: the secret seed least)."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


class ChildGone(Exception):
    """The child ended (or was ended) while we were waiting for it."""


class ChildTimeout(Exception):
    """The child did not answer, or did not read its request, in time; it has been killed.
    `limit` says which limit ran out: "answer" (the request's own time), "write" (the request's
    time, while the child did not read it) or "total" (the run's total wall time)."""

    def __init__(self, limit: str) -> None:
        super().__init__(limit)
        self.limit = limit


@dataclass
class Exit:
    returncode: int  # negative: killed by that signal (bwrap's 128 + signal already translated)
    killed_by_grader: bool
    cpu_seconds: float  # of all the child's processes, as far as they could be counted
    oom_kills: int  # processes the cgroup's memory limit killed
    pids_limit_hits: int  # times the cgroup refused a new process
    limit: str = ""  # "cpu" or "total": the watchdog ended the child at that limit

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


WITHHELD_OUTPUT = "[... what the submission printed once the hidden cases began is not shown]"
# A label line the runner writes (wire.OUTPUT_LABEL, then what it labels): a case's name, then the call.
_LABEL = re.compile(rb"(import)|([A-Za-z0-9_]{1,100}) (forward|gradient)")
MAX_LABEL_BYTES = 128  # a label line longer than this is not a label: it is output
MAX_LABELS = 4096  # labels kept per stream (two per case); later ones are dropped, their output kept


def label_text(payload: bytes) -> str | None:
    """How a label line reads in the report, or None when the payload is not a label."""
    found = _LABEL.fullmatch(payload)
    if found is None:
        return None
    if found.group(1):
        return "[while importing the file]"
    return f"[case {found.group(2).decode()}, {found.group(3).decode()} call]"


class CappedBuffer:
    """Keeps the first `cap` bytes of what a stream's writer printed and counts the rest, with the
    runner's label lines (wire.OUTPUT_LABEL) taken out and kept as labels at the place they came.
    After hold_back(), what arrives is kept for staff (text()) and left out of what the candidate is
    shown (shown()); labels arriving after it too. Which bytes are held back is decided by offsets
    in the stream alone, never by the labels."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()  # what was printed, labels taken out, up to cap bytes
        self.total = 0  # bytes printed, labels taken out
        self.labels: list[tuple[int, str]] = []  # (offset in what was printed, label text), in order
        self.received = 0  # bytes read from the stream, labels included
        self.held_from: int | None = None  # offset in the stream where hold_back() was called
        self.shown_bytes: int | None = None  # bytes printed before that offset (once the reading passed it)
        self.shown_labels: int | None = None  # labels before that offset
        self._pending = b""  # the end of the stream read so far, when it may be the start of a label line
        self._lock = threading.Lock()
        self._fd: int | None = None

    def feed(self, chunk: bytes) -> None:
        """Take in the next bytes of the stream."""
        data = self._pending + chunk
        at = self.received - len(self._pending)  # offset in the stream of data[0]
        self.received += len(chunk)
        self._pending = b""
        i = 0
        while i < len(data):
            j = data.find(wire.OUTPUT_LABEL, i)
            if j < 0:
                keep = _label_start_at_end(data, i)
                self._printed(data[i : len(data) - keep], at + i)
                self._pending = data[len(data) - keep :]
                return
            self._printed(data[i:j], at + i)
            start = j + len(wire.OUTPUT_LABEL)
            end = data.find(b"\n", start, start + MAX_LABEL_BYTES + 1)
            if end < 0 and len(data) - start <= MAX_LABEL_BYTES:  # the rest of the line is still to come
                self._pending = data[j:]
                return
            text = None if end < 0 else label_text(data[start:end])
            if text is None:  # not a label: output like any other
                self._printed(data[j:start], at + j)
                i = start
                continue
            self._label(text, at + j, at + end + 1)
            i = end + 1

    def end(self) -> None:
        """The stream ended: what was waiting to be told apart from a label line is output."""
        pending, self._pending = self._pending, b""
        self._printed(pending, self.received - len(pending))

    def _passed_hold_back(self) -> None:
        if self.shown_bytes is None:
            self.shown_bytes, self.shown_labels = self.total, len(self.labels)

    def _printed(self, data: bytes, offset: int) -> None:
        """Output that began at `offset` in the stream; the part from hold_back() on is held back."""
        if self.held_from is not None and offset + len(data) > self.held_from:
            before = max(0, self.held_from - offset)
            self._keep(data[:before])
            self._passed_hold_back()
            data = data[before:]
        self._keep(data)

    def _keep(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    def _label(self, text: str, start: int, end: int) -> None:
        """A label line from `start` to `end` in the stream: shown only when all of it came before hold_back()."""
        if self.held_from is not None and end > self.held_from:
            self._passed_hold_back()
        if len(self.labels) < MAX_LABELS and self.total <= self.cap:
            self.labels.append((self.total, text))

    def drain(self, stream: BinaryIO) -> None:
        """Read the stream to its end. Each read happens under the lock, once the pipe is readable,
        so that hold_back() sees every byte either counted or still in the pipe."""
        try:
            fd = stream.fileno()
            self._fd = fd
            while True:
                select.select([fd], [], [])
                with self._lock:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        self.end()
                        return
                    self.feed(chunk)
        except (OSError, ValueError):  # closed under us at the end of the run: what was read is kept
            pass

    def text(self) -> str:
        """Everything kept, labelled, and how much more there was."""
        return self._text(self.total, len(self.labels))

    def _text(self, upto: int, labels: int) -> str:
        """What was printed up to `upto`, each part under its label (a label with nothing printed
        after it is left out), and how much more there was."""
        kept = bytes(self.kept[:upto])
        marks = [(min(offset, len(kept)), text) for offset, text in self.labels[:labels]]
        parts: list[str] = []
        for k, (start, text) in enumerate([(0, ""), *marks]):
            stop = marks[k][0] if k < len(marks) else len(kept)
            if start >= stop:
                continue
            if text:
                if parts and not parts[-1].endswith("\n"):
                    parts.append("\n")
                parts.append(text + "\n")
            parts.append(kept[start:stop].decode("utf-8", errors="replace"))
        body = "".join(parts)
        if upto > len(kept):
            body += f"\n[... {upto - len(kept)} more bytes not kept]"
        return body

    def hold_back(self) -> None:
        """From now on, what arrives is for staff only (called just before the first hidden case is
        sent: what the child writes after it may spell out hidden data). What the child wrote
        before, and the pipe still holds, is shown: it is counted in."""
        with self._lock:
            if self.held_from is None:
                pending = array.array("i", [0])
                if self._fd is not None:
                    try:
                        fcntl.ioctl(self._fd, termios.FIONREAD, pending)
                    except OSError:  # closed: nothing is pending
                        pending[0] = 0
                self.held_from = self.received + pending[0]

    @property
    def held_back(self) -> bool:
        """Whether the submission printed anything after hold_back() (labels are not printing)."""
        return self.shown_bytes is not None and self.total > self.shown_bytes

    def shown(self) -> str:
        """What the candidate may read: text() up to hold_back(), then one line saying the rest is not shown."""
        if not self.held_back:
            return self._text(self.total, len(self.labels) if self.shown_labels is None else self.shown_labels)
        before = self._text(self.shown_bytes or 0, self.shown_labels or 0).rstrip("\n")
        return f"{before}\n{WITHHELD_OUTPUT}" if before else WITHHELD_OUTPUT


def _label_start_at_end(data: bytes, start: int) -> int:
    """How many bytes at the end of data[start:] may be the beginning of a label line."""
    for size in range(min(len(wire.OUTPUT_LABEL) - 1, len(data) - start), 0, -1):
        if wire.OUTPUT_LABEL.startswith(data[len(data) - size :]):
            return size
    return 0


class Child:
    """What every kind of child shares: the framed channel, the capped output, the clocks.
    Subclasses start the child, then the threads (start_threads), and know how to end it; use
    them as context managers."""

    isolation: str
    request_fd: int  # the grader's end of the request channel, written without blocking

    def __init__(self, spec: Spec) -> None:
        self.limits = spec.limits
        self.started = time.monotonic()
        self.killed_by_grader = False
        self.limit_reached = ""  # "cpu" or "total" once the watchdog has ended the child
        self.cpu_used = 0.0  # the most CPU time the watchdog has seen the child's processes use
        self.stdout = CappedBuffer(spec.limits.output_bytes)
        self.stderr = CappedBuffer(spec.limits.output_bytes)
        self._frames: queue.Queue = queue.Queue(maxsize=QUEUED_FRAMES)
        self._expect = protocol.STARTUP  # what may answer the current request: the reader checks each frame against it
        self._closed = threading.Event()
        self._watchdog_error: BaseException | None = None
        self._threads: list[threading.Thread] = []
        self.answered_at = 0.0  # when the last answer's frame arrived (time.monotonic())

    @staticmethod
    def child_config(spec: Spec, submission: str) -> dict:
        return {
            "submission": submission,
            "entry_point": spec.entry_point,
            "parameters": list(spec.parameters),
            **{key: spec.policy[key] for key in CHILD_POLICY},
        }

    def start_threads(self, *threads: threading.Thread) -> None:
        """Start the subclass's reading threads and the watchdog."""
        self._threads = [*threads, threading.Thread(target=self._watch, daemon=True)]
        for thread in self._threads:
            thread.start()

    @property
    def total_deadline(self) -> float:
        return self.started + self.limits.total_seconds

    def cpu_seconds(self) -> float | None:
        """CPU time used so far by all of the child's processes together; None where it cannot be measured."""
        return None

    def _watch(self) -> None:
        """End the child at the total wall-clock limit or at the CPU limit of all its processes."""
        try:
            while not self._closed.wait(WATCH_SECONDS):
                used = self.cpu_seconds()
                if used is not None:
                    self.cpu_used = max(self.cpu_used, used)
                if self.cpu_used > self.limits.cpu_seconds:
                    self.limit_reached = "cpu"
                elif time.monotonic() >= self.total_deadline:
                    self.limit_reached = "total"
                else:
                    continue
                self.kill()
                return
        except BaseException as error:  # noqa: BLE001 - a child left unwatched must not go on: end it, and fault the grader
            self._watchdog_error = error
            self.kill()

    def _check_watchdog(self) -> None:
        if self._watchdog_error is not None:
            raise RuntimeError(f"the grader's watchdog failed: {type(self._watchdog_error).__name__}: {self._watchdog_error}")

    def _deliver(self, item: Any) -> bool:
        """Queue an item for the judge, waiting while the queue is full; False once the run is over."""
        while not self._closed.is_set():
            try:
                self._frames.put(item, timeout=WATCH_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def _read_frames(self, stream: BinaryIO) -> None:
        """The reader thread: queues only frames that passed the protocol's checks, reading no more
        tensor bytes than the current request can need; whatever the child sends, it ends by
        queueing None (the stream ended) or a ProtocolError, never by an exception of its own."""
        try:
            with stream:
                while not self._closed.is_set():
                    header, described = wire.read_header(stream)
                    expect = self._expect  # read once the header is in: the current request's
                    reply = protocol.check(header, described, expect)
                    if not self._deliver((reply, protocol.read_tensors(stream, described, expect), described, time.monotonic())):
                        return
        except EOFError:
            self._deliver(None)
        except (wire.WireError, protocol.ProtocolError) as error:
            self._deliver(protocol.ProtocolError(str(error)))
        except BaseException as error:  # noqa: BLE001 - e.g. MemoryError: still the child's malformed data
            self._deliver(protocol.ProtocolError(f"the frame could not be read ({type(error).__name__})"))

    def _write_some(self, data: memoryview) -> int:
        """Write what fits now without blocking; raises BlockingIOError when nothing fits."""
        return os.write(self.request_fd, data)

    def send(self, message: dict[str, Any], tensors: dict[str, torch.Tensor] | None = None, deadline: float | None = None) -> None:
        """Write one frame before the deadline (and the total limit), or kill the child and raise
        ChildTimeout: a child that stops reading cannot block the grader."""
        self._check_watchdog()
        deadline = min(deadline if deadline is not None else self.total_deadline, self.total_deadline)
        data = memoryview(wire.encode(message, tensors))
        poller = select.poll()
        poller.register(self.request_fd, select.POLLOUT)
        while data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise ChildTimeout("total" if deadline >= self.total_deadline else "write")
            if not poller.poll(max(1, int(remaining * 1000))):
                continue
            try:
                data = data[self._write_some(data) :]
            except BlockingIOError:
                continue
            except OSError:  # the read end is closed: the child is gone
                raise ChildGone() from None

    def receive(self, deadline: float) -> tuple[dict[str, Any], dict[str, torch.Tensor], protocol.Described]:
        """The next frame from the child (its checked header, its tensors, their descriptions) before
        the deadline and within the run's total wall time."""
        limit = min(deadline, self.total_deadline)
        try:
            item = self._frames.get(timeout=max(0.0, limit - time.monotonic()))
        except queue.Empty:
            self.kill()
            self._check_watchdog()
            raise ChildTimeout("total" if limit >= self.total_deadline else "answer") from None
        self._check_watchdog()
        if item is None:
            raise ChildGone()
        if isinstance(item, protocol.ProtocolError):
            self.kill()
            raise item
        reply, tensors, described, self.answered_at = item
        if self.answered_at > limit:  # it came while the grader was busy elsewhere, but too late
            self.kill()
            raise ChildTimeout("total" if limit >= self.total_deadline else "answer")
        return reply, tensors, described

    def request(
        self,
        message: dict[str, Any],
        tensors: dict[str, torch.Tensor] | None,
        expect: protocol.Expectation,
        seconds: float,
        meanwhile: Callable[[], object] | None = None,
    ) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """Send a request and return its answer, checked against `expect`, within `seconds` in all
        (writing the request included). meanwhile(), when given, runs once the request is written,
        while the child computes: the grader's own work for the request (an answer that arrives
        during it is on time; answered_at says when it came). Raises ChildTimeout, ChildGone or
        protocol.ProtocolError; the child has been killed for the first and the last."""
        deadline = time.monotonic() + seconds
        self._expect = expect
        self.send(message, tensors, deadline)
        if meanwhile is not None:
            meanwhile()
        return self.answer(expect, deadline)

    def answer(self, expect: protocol.Expectation, deadline: float) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """The next frame, checked against `expect`, before the deadline: the answer to a request
        already sent (or a second frame answering it). Raises as request() does."""
        self._expect = expect
        reply, received, described = self.receive(deadline)
        try:  # again: a frame the child sent ahead of this request was checked against the previous one
            return protocol.check(reply, described, expect), received
        except protocol.ProtocolError:
            self.kill()
            raise

    def kill(self) -> None:
        raise NotImplementedError

    def exit(self, wait_seconds: float = 5.0) -> Exit:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()  # the watchdog and the reader stop
        self.close()


def copy_child_package(kit: Path) -> None:
    """The child-side code in `kit` (the folder bound at SANDBOX_KIT), readable by anyone whatever
    the grader's umask: a root grader's child runs as a box uid, which owns none of it."""
    shutil.copytree(CHILD_PACKAGE, kit / "child", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [kit, *kit.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def prepare_files(workdir: Path, source: bytes, filename: str) -> tuple[Path, Path, Path]:
    """The child-side code, a home folder and the submission (read-only) in the private folder."""
    kit = workdir / "kit"
    copy_child_package(kit)
    home = workdir / "home"
    home.mkdir()
    submission_dir = workdir / "submission"
    submission_dir.mkdir()
    submission_dir.chmod(0o755)
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
        env = child_environment(layout.home)
        command = [sys.executable, "-I", "-c", BOOTSTRAP, layout.kit, json.dumps(config)]
        max_processes = None
        inherited = [request_read, result_write]
        seccomp = None
        self.box: isolation.BoxUid | None = None  # the child's own host uid, where the grader is root
        uid = None
        if backend == "bubblewrap":
            if os.geteuid() == 0:
                self.box = isolation.take_box_uid()
                uid = self.box.uid
                max_processes = isolation.PIDS_MAX  # the box uid is this child's alone
            seccomp = isolation.seccomp_fd()
            inherited += [seccomp] if seccomp is not None else []
            command = isolation.bubblewrap_command(command, kit, submission_dir, seccomp, uid)
        elif backend != isolation.PLAIN:
            if backend == "uid":
                command = isolation.uid_command(command)
                max_processes = isolation.PIDS_MAX
                self._open_to_runner(workdir, home)
            if isolation.unshare_net_works():
                command = ["unshare", "--net", "--", *command]
        self.cgroup = None if backend == isolation.PLAIN else isolation.Cgroup.create(limits, Path(filename).stem)
        self.isolation = isolation.describe(backend, self.cgroup, limits, uid)
        join = self.cgroup.join_files() if self.cgroup else []
        if backend == isolation.PLAIN:  # the kit on a system that is not Linux: the limits it accepts
            preexec = functools.partial(walls.apply_limits_where_possible, limits.cpu_seconds, limits.memory_mib, limits.file_size_mib, limits.open_files)
        else:
            preexec = functools.partial(isolation.apply_limits_in_child, limits, join, max_processes, uid)
        try:
            if uid is not None:
                isolation.give_pipes(inherited, uid)
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=inherited,
                cwd=home,
                env=env,
                start_new_session=True,  # its own process group, so one killpg ends everything it started
                preexec_fn=preexec,
            )
        except BaseException:
            if self.cgroup:
                self.cgroup.remove()
            if self.box is not None:
                self.box.release()
            raise
        for fd in inherited:  # the child has its copies
            os.close(fd)
        self.request_fd = request_write
        os.set_blocking(request_write, False)  # send() waits with poll(), up to its deadline
        self._cpu_seen: dict[tuple[int, int], float] = {}
        self.start_threads(
            threading.Thread(target=self.stdout.drain, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self.stderr.drain, args=(self.process.stderr,), daemon=True),
            threading.Thread(target=self._read_frames, args=(os.fdopen(result_read, "rb"),), daemon=True),
        )

    @staticmethod
    def _open_to_runner(workdir: Path, home: Path) -> None:
        """The runner user may traverse the private folder, read the kit and the submission, and
        write only in its home; nothing else of the grader's is readable to it."""
        workdir.chmod(0o711)
        for path in workdir.rglob("*"):
            if path != home:
                path.chmod(0o755 if path.is_dir() else 0o444)
        home.chmod(0o1777)

    def cpu_seconds(self) -> float | None:
        """The cgroup's CPU accounting where there is one; else the process tree, polled (from
        /proc: None for the plain backend, whose child's RLIMIT_CPU holds alone)."""
        if self.backend == isolation.PLAIN:
            return None
        used = self.cgroup.cpu_seconds() if self.cgroup else None
        if used is not None:
            return used
        if self.process.returncode is not None:  # reaped: its pid may belong to another process now
            return self.cpu_used
        return isolation.process_tree_cpu_seconds(self.process.pid, self._cpu_seen)

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
        if self.backend == isolation.PLAIN:
            used = None if self.process.returncode is not None else self._wait_reaping(wait_seconds)
            if used is None and self.process.returncode is None:
                self.kill()
                used = self._wait_reaping(60)
            return Exit(self.process.wait(), self.killed_by_grader, max(used or 0.0, self.cpu_used), 0, 0, self.limit_reached)
        if not self._wait_unreaped(wait_seconds):
            self.kill()
            self._wait_unreaped(60)
        cpu = max(cpu_seconds_used(self.process.pid), self.cpu_seconds(), self.cpu_used)
        returncode = self.process.wait()
        if self.backend == "bubblewrap" and 128 < returncode <= 128 + 64:
            returncode = -(returncode - 128)  # bwrap reports a child killed by signal N as 128 + N
        oom = self.cgroup.oom_kills() if self.cgroup else 0
        pids = self.cgroup.pids_limit_hits() if self.cgroup else 0
        return Exit(returncode, self.killed_by_grader, cpu, oom, pids, self.limit_reached)

    def close(self) -> None:
        """End the child and everything it started (all results are in by now), remove its cgroup,
        then collect what is left of its output."""
        self.kill()
        self.process.wait()
        if self.cgroup:
            self.cgroup.remove()
        if self.backend == "uid":
            isolation.kill_processes_of(isolation.runner_ids()[0])
        if self.box is not None:  # every process of the child has ended with bwrap's pid namespace
            self.box.release()
        for thread in self._threads:
            thread.join(timeout=2)
        try:
            os.close(self.request_fd)
        except OSError:
            pass
