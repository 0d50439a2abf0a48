"""How a batch is scheduled: Workers grades submission files `jobs` at a time on threads, each in
its own sandboxed child (judge.grade), a child of the warm pool where it keeps every wall. A stop
kills the running children and drops their gradings; a grading's deadline kills its child and makes
its report a grader_error. The batch command, the Python API (grader/api.py) and through it the
service all grade through Workers; Workers.grade_file is the one place that knows how.
"""

import functools
import logging
import os
import threading
import time
import traceback
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from grader import judge
from grader.faults import internal_error
from grader.report import hints
from grader.results import Report, Verdict
from grader.sandbox.backends import backend_named, choose_backend
from grader.sandbox.zygote import ServerLost, Zygote, ZygoteError, zygote_problem
from grader.spec import Spec, setup_fault

POLL_SECONDS = 0.2  # how often a waiting batch looks for a stop request
K = TypeVar("K")
log = logging.getLogger("grader.pool")


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)))


class Cancelled(Exception):
    """The grading was stopped from outside; its report must not be used."""


class Killable(Protocol):
    def kill(self) -> None: ...


@dataclass(frozen=True)
class Deadline:
    """When a grading must be over (time.monotonic()), and the timeout it was given, for its message."""

    seconds: float
    at: float

    @classmethod
    def after(cls, seconds: float) -> "Deadline":
        if not seconds > 0:
            raise ValueError(f"a timeout must be a number of seconds above 0, not {seconds!r}")
        return cls(seconds, time.monotonic() + seconds)

    def left(self) -> float:
        return self.at - time.monotonic()


class Cancel:
    """What runs for one grading (its child) or for many (the Cancel of each), so that a stop, a
    deadline or a caller that went away can kill it all at once. A Cancel is itself killable: an
    outer one (a batch's) can watch the Cancel of each of its gradings."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: set[Killable] = set()
        self.cancelled = False
        self.expired = False  # cancelled by its deadline
        self._over = False

    @contextmanager
    def watch(self, child: Killable) -> Iterator[None]:
        with self._lock:
            self._watched.add(child)
            if self.cancelled:  # stopped while this child was starting
                child.kill()
        try:
            yield
        finally:
            # Under the lock: cancel() never kills a child that its grading has already closed.
            with self._lock:
                self._watched.discard(child)

    def cancel(self, expired: bool = False) -> None:
        with self._lock:
            if self.cancelled or self._over:
                return
            self.cancelled, self.expired = True, expired
            for child in self._watched:
                child.kill()

    kill = cancel

    def over(self) -> bool:
        """The grading has ended: later cancels change nothing. True when it was cancelled before."""
        with self._lock:
            self._over = True
            return self.cancelled


def grader_error(path: Path, seed_id: str, backend: str, error: Exception) -> Report:
    if setup_fault(error):
        return Report(Verdict.GRADER_ERROR, internal_error(error), str(path), seed_id, backend)
    where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" (at {Path(where.filename).name}:{where.lineno})" if where else ""
    message = (
        f"internal error of the grader (not the submission's fault): {type(error).__name__}: {error}{at}. "
        f"Grade this file alone with `python -m grader {path}` for the details, and report it."
    )
    return Report(Verdict.GRADER_ERROR, message, str(path), seed_id, backend)


def start_warm_pool(spec: Spec, backend: str) -> tuple[Zygote | None, str]:
    """A warm pool, started now, or None and why each submission gets a child of its own."""
    problem = zygote_problem(backend)
    if problem:
        return None, problem
    try:
        return Zygote(spec), ""
    except (OSError, ZygoteError) as error:
        log.warning("the warm pool could not start (%s): each submission is graded in a sandboxed child of its own, which is slower", error)
        return None, f"the warm pool could not start ({error})"


def timed_out(path: Path, seed_id: str, backend: str, deadline: Deadline, started: bool) -> Report:
    """The report of a grading cut short by its deadline: a grader_error, never a verdict (the
    submission's own limits decide time_limit_exceeded)."""
    where = "before a job was free to grade it" if not started else "before its grading was over (its child was ended)"
    message = (
        f"the grading did not finish within its timeout of {round(deadline.seconds, 1):g} s, waiting for a free job included: it ran out {where}, "
        "so the submission has no verdict (not the submission's fault). Grade it again, with a longer timeout or when fewer gradings run at once"
    )
    return Report(Verdict.GRADER_ERROR, message, str(path), seed_id, backend)


class Workers:
    """Grades submission files `jobs` at a time, each in its own sandboxed child (judge.grade),
    with the cases and expected outputs computed once. grade_file is the only place that starts a
    grading: a pool of pre-started children can replace it without changing its callers. It may
    be called from many threads at once: `slots`, when given, holds the gradings to as many at once
    as it has (shared by the Workers of one Grader, grade_file's and map's alike)."""

    def __init__(
        self,
        spec: Spec,
        seed: str,
        *,
        jobs: int = 1,
        backend: str | None = None,
        public_only: bool = False,
        prepared: judge.Prepared | None = None,
        static_check: bool = True,
        restricted: bool = True,
        slots: threading.Semaphore | None = None,
    ) -> None:
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.spec, self.seed, self.public_only = spec, seed, public_only
        self.static_check, self.restricted = static_check and restricted, restricted
        self.warnings = spec.seed_warnings(seed, public_only)
        self.backend = backend or choose_backend("auto", secret_seed=seed != spec.default_hidden_seed)
        # The uid backend kills every process of the runner user after each grading.
        self.jobs = min(jobs, backend_named(self.backend).max_jobs or jobs)
        self.prepared = prepared or judge.prepare(spec, seed, public_only)
        self.slots = slots
        self.warm_note = ""  # after map(): why its submissions were not graded through a warm pool, if they were not
        self.fallbacks = 0  # gradings the warm pool could not give a child, graded in a child of their own

    def grade_file(self, path: Path, cancel: Cancel | None = None, warm: Zygote | None = None, deadline: Deadline | None = None) -> Report:
        """The report of one file; a fault of the grader becomes a grader_error report. With a warm
        pool, the child is one of its children; if the pool cannot give one, or its server dies
        during the grading, the file is graded (again) with a child of its own. At `deadline` (its
        wait for one of `slots` included) the child is killed and the report is a grader_error
        saying so; when `cancel` is cancelled, Cancelled is raised instead of a report."""
        own = Cancel()  # this grading's: cancelled by `cancel` or at the deadline
        started = False
        with ExitStack() as stack:
            if cancel is not None:
                stack.enter_context(cancel.watch(own))
            if deadline is not None:
                timer = threading.Timer(max(0.0, deadline.left()), own.cancel, kwargs={"expired": True})
                timer.daemon = True
                timer.start()
                stack.callback(timer.cancel)
            if self.slots is not None:
                if not self._take_slot(own):
                    cut = own.over()
                else:
                    stack.callback(self.slots.release)
                    started = True
                    report = self._grade_file(path, own, warm)
                    cut = own.over()
            else:
                started = True
                report = self._grade_file(path, own, warm)
                cut = own.over()
        if cut and own.expired and deadline is not None:
            report = timed_out(path, self.prepared.seed_id, self.backend, deadline, started)
            report.problem, report.problem_digest = self.spec.id, self.spec.digest
            report.warnings = list(self.warnings)
        elif cut:
            raise Cancelled()
        return report

    def _take_slot(self, own: Cancel) -> bool:
        """Wait for one of the slots until `own` is cancelled: True once it is taken."""
        assert self.slots is not None
        while not own.cancelled:
            if self.slots.acquire(timeout=POLL_SECONDS):
                if own.cancelled:
                    self.slots.release()
                    return False
                return True
        return False

    def _grade_file(self, path: Path, cancel: Cancel, warm: Zygote | None) -> Report:
        try:
            grade = functools.partial(
                judge.grade,
                path,
                self.spec,
                self.seed,
                public_only=self.public_only,
                backend=self.backend,
                prepared=self.prepared,
                static_check=self.static_check,
                restricted=self.restricted,
                watch=cancel.watch,
            )
            try:
                report = grade(start=warm.start_child) if warm else grade()
            except (ZygoteError, ServerLost) as error:
                if cancel.cancelled:
                    return Report(Verdict.GRADER_ERROR, "cancelled", str(path), self.prepared.seed_id, self.backend)  # dropped by grade_file
                self.fallbacks += 1
                log.warning("warm pool: %s; this submission is graded in a sandboxed child of its own, which is slower", error)
                report = grade()
            report.hints = hints(report, self.spec)
        except Exception as error:  # noqa: BLE001 - one submission's grader fault must not end the batch
            report = grader_error(path, self.prepared.seed_id, self.backend, error)
            report.problem, report.problem_digest = self.spec.id, self.spec.digest  # as judge.grade's own reports
        report.warnings = list(self.warnings)
        return report

    def map(
        self, items: Iterable[tuple[K, Path]], stop: threading.Event | None = None, warm: Zygote | None = None, timeout: float | None = None
    ) -> Iterator[tuple[K, Report]]:
        """(key, report) for each (key, path), in the order they finish. Items are taken from
        `items` only as a job frees up. When `stop` is set, or the caller stops iterating (an
        exception, a closed generator), running children are killed and their gradings dropped;
        nothing of them is left when this returns. The children come from a warm pool (grader/sandbox/zygote.py)
        where it keeps every wall: `warm`, which the caller closes, else one of map's own.
        timeout: each grading's, from when its item is taken (grade_file's deadline)."""
        cancel = Cancel()
        items = iter(items)
        running: dict[Future, K] = {}
        own, self.warm_note = (None, "") if warm else start_warm_pool(self.spec, self.backend)  # it starts while the first items are read
        warm = warm or own
        executor = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="mlm-grader-job")
        try:
            exhausted = False
            while not (stop and stop.is_set()):
                while not exhausted and len(running) < self.jobs:
                    try:
                        key, path = next(items)
                    except StopIteration:
                        exhausted = True
                        break
                    deadline = Deadline.after(timeout) if timeout is not None else None
                    running[executor.submit(self.grade_file, path, cancel, warm, deadline)] = key
                if not running:
                    return
                done, _ = wait(running, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                for future in done:
                    yield running.pop(future), future.result()
        finally:
            cancel.cancel()
            executor.shutdown(wait=True, cancel_futures=True)
            if warm:
                self.warm_note = warm.broken
            if own:
                own.close()
