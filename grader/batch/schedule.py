"""How a batch is scheduled: Workers grades submission files `jobs` at a time on threads, each in
its own sandboxed child (judge.grade), a child of the warm pool where it keeps every wall. A stop
kills the running children and drops their gradings. The batch command and the Python API
(grader/api.py) both grade through Workers.map; Workers.grade_file is the one place that knows how.
"""

import functools
import os
import threading
import traceback
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from grader import judge
from grader.faults import internal_error
from grader.report import hints
from grader.results import Report, Verdict
from grader.sandbox.backends import backend_named, choose_backend
from grader.sandbox.child import Child
from grader.sandbox.zygote import ServerLost, Zygote, ZygoteError, zygote_problem
from grader.spec import Spec, setup_fault

POLL_SECONDS = 0.2  # how often a waiting batch looks for a stop request
K = TypeVar("K")


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)))


class _Cancelled(Exception):
    """The grading was stopped from outside; its report must not be used."""


class _Cancel:
    """The children of running gradings, so that a stop can kill them all at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: set[Child] = set()
        self.cancelled = False

    @contextmanager
    def watch(self, child: Child) -> Iterator[None]:
        with self._lock:
            self._children.add(child)
            if self.cancelled:  # stopped while this child was starting
                child.kill()
        try:
            yield
        finally:
            # Under the lock: cancel() never kills a child that its grading has already closed.
            with self._lock:
                self._children.discard(child)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            for child in self._children:
                child.kill()


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
        return None, f"the warm pool could not start ({error})"


class Workers:
    """Grades submission files `jobs` at a time, each in its own sandboxed child (judge.grade),
    with the cases and expected outputs computed once. grade_file is the only place that starts a
    grading: a pool of pre-started children can replace it without changing its callers."""

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
        self.warm_note = ""  # after map(): why its submissions were not graded through a warm pool, if they were not

    def grade_file(self, path: Path, cancel: _Cancel | None = None, warm: Zygote | None = None) -> Report:
        """The report of one file; a fault of the grader becomes a grader_error report. With a warm
        pool, the child is one of its children; if the pool cannot give one, or its server dies
        during the grading, the file is graded (again) with a child of its own."""
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
                watch=cancel.watch if cancel else None,
            )
            try:
                report = grade(start=warm.start_child) if warm else grade()
            except (ZygoteError, ServerLost):
                if cancel and cancel.cancelled:
                    raise _Cancelled() from None
                report = grade()
            report.hints = hints(report, self.spec)
        except Exception as error:  # noqa: BLE001 - one submission's grader fault must not end the batch
            report = grader_error(path, self.prepared.seed_id, self.backend, error)
            report.problem, report.problem_digest = self.spec.id, self.spec.digest  # as judge.grade's own reports
        report.warnings = list(self.warnings)
        if cancel and cancel.cancelled:
            raise _Cancelled()
        return report

    def map(self, items: Iterable[tuple[K, Path]], stop: threading.Event | None = None, warm: Zygote | None = None) -> Iterator[tuple[K, Report]]:
        """(key, report) for each (key, path), in the order they finish. Items are taken from
        `items` only as a job frees up. When `stop` is set, or the caller stops iterating (an
        exception, a closed generator), running children are killed and their gradings dropped;
        nothing of them is left when this returns. The children come from a warm pool (grader/sandbox/zygote.py)
        where it keeps every wall: `warm`, which the caller closes, else one of map's own."""
        cancel = _Cancel()
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
                    running[executor.submit(self.grade_file, path, cancel, warm)] = key
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
