"""What every child shares, whatever walls it: the channel, read by one thread that checks every
frame (grader/protocol.py) and queues at most QUEUED_FRAMES, each bounded by what the current
request can need; writes with deadlines; the capped output; a watchdog that ends the child at the
total wall-clock limit or when its processes together have used the CPU limit; and how it ended."""

from __future__ import annotations

import fcntl
import os
import queue
import select
import signal
import stat
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from grader import protocol
from grader.child import wire
from grader.sandbox.boxes import BoxUid
from grader.sandbox.limits import Cgroup, process_tree_cpu_seconds
from grader.sandbox.output import CappedBuffer, unread_bytes
from grader.spec import Spec

if TYPE_CHECKING:  # the grader starts a child before it imports torch (see grader/child/wire.py)
    import torch

BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv[1]); from child.runner import main; main(sys.argv[2:])"
WATCH_SECONDS = 0.1  # how often the watchdog looks at the clock and the CPU time
QUEUED_FRAMES = 2  # frames read ahead of the judge; the reader waits (and so does the child) beyond
# The request pipe's size, where the kernel allows it: a request sent ahead (Child.send_ahead) goes
# in whole, without waiting, only while the pipe holds at most half of it.
REQUEST_PIPE_BYTES = 1 << 20
# Bubblewrap, the zygote's init and container engines report a process killed by signal N as 128 + N.
SIGNALLED = 128


def _widened_pipe(fd: int | None) -> int:
    """The size of the pipe `fd` writes to, made REQUEST_PIPE_BYTES where the kernel allows it; 0
    where fd is not a pipe (a container's socket)."""
    try:
        if fd is None or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return 0
        try:
            return fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, REQUEST_PIPE_BYTES)
        except OSError:  # over /proc/sys/fs/pipe-max-size for this user: the size it has
            return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    except OSError:
        return 0


def returncode_of(status: int) -> int:
    """The exit status a wrapper reports, as Popen reports a process's own: negative for a signal."""
    return -(status - SIGNALLED) if SIGNALLED < status <= SIGNALLED + 64 else status


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
    returncode: int  # negative: killed by that signal (a wrapper's 128 + N already translated: returncode_of)
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


class Child:
    """What every kind of child shares: the framed channel, the capped output, the clocks.
    Subclasses start the child, then the threads (start_threads), and know how to end it; use
    them as context managers."""

    isolation: str
    request_fd: int  # the grader's end of the request channel, written without blocking
    cgroup: Cgroup | None = None  # where the child's processes are counted and limited, if the grader may make one
    box: BoxUid | None = None  # the child's own host uid, where the grader is root
    counts_cpu = True  # whether the grader sees the child's processes, to count their CPU time

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
        # What may answer each request sent and not yet answered, oldest first (a case's request may
        # go out while the case before is computed): the reader checks each frame against the oldest.
        self._expects: deque[protocol.Expectation] = deque()
        self._pipe_bytes: int | None = None  # the request pipe's size once looked up (0: not a pipe, never sent ahead)
        self._unsent = memoryview(b"")  # what the pipe did not take of a request sent ahead (send_rest)
        self._closed = threading.Event()
        self._watchdog_error: BaseException | None = None
        self._threads: list[threading.Thread] = []
        self.answered_at = 0.0  # when the last answer's frame arrived (time.monotonic())
        self._cpu_seen: dict[tuple[int, int], float] = {}  # process_tree_cpu_seconds's memory between polls

    @staticmethod
    def child_config(spec: Spec, submission: str) -> dict:
        return {
            "submission": submission,
            "entry_point": spec.entry_point,
            "parameters": list(spec.parameter_names),
            "keywords": [p.name for p in spec.parameters if p.keyword],
            **({"method": spec.method} if spec.method else {}),
            "gradient": bool(spec.gradient_wrt),  # the warm-up takes a gradient only where the cases do
            "rules": spec.rules.child_config(),  # what the submission may use: the capability layer's and the guard's lists
        }

    def start_threads(self, *threads: threading.Thread) -> None:
        """Start the subclass's reading threads and the watchdog."""
        self._threads = [*threads, threading.Thread(target=self._watch, daemon=True)]
        for thread in self._threads:
            thread.start()

    @property
    def total_deadline(self) -> float:
        return self.started + self.limits.total_seconds

    def _process_tree(self) -> int | None:
        """The pid at the root of the child's processes in the grader's /proc, None once reaped
        (its pid may be another process's by then)."""
        raise NotImplementedError

    def cpu_seconds(self) -> float | None:
        """CPU time used so far by all of the child's processes together: the cgroup's count where
        there is one, else the process tree polled from /proc; None where it cannot be measured
        (counts_cpu False: the child's RLIMIT_CPU, or its container's, holds alone)."""
        if not self.counts_cpu:
            return None
        used = self.cgroup.cpu_seconds() if self.cgroup else None
        if used is not None:
            return used
        root = self._process_tree()
        return self.cpu_used if root is None else process_tree_cpu_seconds(root, self._cpu_seen)

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
                    expect = self._expects.popleft() if self._expects else self._expect  # read once the header is in
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
        self._send_bytes(memoryview(wire.encode(message, tensors)), deadline)

    def _send_bytes(self, data: memoryview, deadline: float | None) -> None:
        deadline = min(deadline if deadline is not None else self.total_deadline, self.total_deadline)
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
        self, message: dict[str, Any], tensors: dict[str, torch.Tensor] | None, expect: protocol.Expectation, seconds: float
    ) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """Send a request and return its answer, checked against `expect`, within `seconds` in all
        (writing the request included). Raises ChildTimeout, ChildGone or protocol.ProtocolError;
        the child has been killed for the first and the last. The two halves, submit() and answer(),
        let the grader do its own work while the child computes (an answer that arrives meanwhile is
        on time: answered_at says when it came)."""
        return self.answer(expect, self.submit(message, tensors, expect, seconds))

    def submit(self, message: dict[str, Any], tensors: dict[str, torch.Tensor] | None, expect: protocol.Expectation, seconds: float) -> float:
        """The first half of request(): send the request, whose answer answer(expect, deadline) then
        reads, and return that deadline. Raises ChildTimeout or ChildGone as request() does."""
        deadline = time.monotonic() + seconds
        self._expect = expect
        self._expects.append(expect)
        self.send(message, tensors, deadline)
        return deadline

    def send_ahead(self, message: dict[str, Any], tensors: dict[str, torch.Tensor] | None, expect: protocol.Expectation) -> bool:
        """Send a request while the child still computes the one before, so that it finds it waiting
        when it is done, where the whole frame fits in the request pipe now; never waits (the child
        is busy with the request before, whose limit is the one running). What the pipe did not take
        (the child can shrink or fill its pipe) waits for send_rest(), when the request's turn comes.
        False when nothing was sent: then send it with submit() once the answer before has come."""
        self._check_watchdog()
        data = wire.encode(message, tensors)
        if self._pipe_bytes is None:
            self._pipe_bytes = _widened_pipe(getattr(self, "request_fd", None))
        try:
            if not self._pipe_bytes or len(data) > self._pipe_bytes // 4 or unread_bytes(self.request_fd) + len(data) > self._pipe_bytes // 2:
                return False
        except OSError:
            return False
        self._expects.append(expect)
        try:
            written = self._write_some(memoryview(data))
        except BlockingIOError:
            written = 0
        except OSError:  # the read end is closed: the child is gone (and will answer nothing)
            try:
                self._expects.remove(expect)
            except ValueError:  # the reader took it already, for a frame the child sent unasked
                pass
            raise ChildGone() from None
        self._unsent = memoryview(data)[written:]
        return True

    def send_rest(self, deadline: float) -> None:
        """Write what the pipe did not take of the request sent ahead, before the deadline of that
        request's turn, as send() does (ChildTimeout "write" when the child does not read it)."""
        rest, self._unsent = self._unsent, memoryview(b"")
        if rest:
            self._send_bytes(rest, deadline)

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

    def ended(self, returncode: int, cpu_seconds: float, oom_kills: int | None = None) -> Exit:
        """How the child ended, with what the cgroup counted: the tail of every backend's exit()."""
        if oom_kills is None:
            oom_kills = self.cgroup.oom_kills() if self.cgroup else 0
        pids_limit_hits = self.cgroup.pids_limit_hits() if self.cgroup else 0
        return Exit(returncode, self.killed_by_grader, max(cpu_seconds, self.cpu_used), oom_kills, pids_limit_hits, self.limit_reached)

    def release(self) -> None:
        """Once every process of the child has ended: remove its cgroup, give back its box uid and
        wait for the reading threads to finish the output."""
        if self.cgroup:
            self.cgroup.remove()
        if self.box is not None:  # its processes have all ended: the uid may be another child's now
            self.box.release()
            self.box = None
        for thread in self._threads:
            thread.join(timeout=2)

    def finish_output(self, seconds: float = 2.0) -> None:
        """Wait, up to `seconds` each, for the reading threads to read what an ended child wrote
        (its last words before it ended are read after exit() returns)."""
        for thread in self._threads[:-1]:  # (the last is the watchdog, which runs until the child is closed)
            thread.join(timeout=seconds)

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
