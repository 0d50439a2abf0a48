"""Backpressure: `jobs` gradings at a time, at most `queue` requests waiting beyond those, and the
rest refused at once (429) with a Retry-After, rather than everyone slowed down.

A request holds a place (admit) from its arrival to its answer: a single grading's request, or a
whole batch. Each grading then waits for one of the `jobs` (job), first come first served, until its
deadline; a batch feeds its submissions to them at most `jobs` at a time, so that it shares the
jobs with the requests that came after it.
"""

import asyncio
import math
import statistics
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType

from grader.batch.schedule import Deadline

RECENT = 50  # gradings whose seconds estimate the wait told in Retry-After


class Full(Exception):
    """No place is left: the request is refused (429); retry_after: seconds until one is likely free."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"every job is busy and the queue is full; retry in {retry_after} s")
        self.retry_after = retry_after


class Expired(Exception):
    """The deadline passed while the grading waited for a job: it never started."""


class Admission:
    """Places (jobs + queue of them) and jobs, on the service's event loop (not thread-safe)."""

    def __init__(self, jobs: int, queue: int) -> None:
        if jobs < 1 or queue < 0:
            raise ValueError("jobs must be at least 1 and queue at least 0")
        self.jobs, self.queue = jobs, queue
        self.places = 0  # requests admitted and not yet answered
        self.running = 0  # gradings holding a job
        self._waiters: deque[asyncio.Future[None]] = deque()  # gradings waiting for a job, in order
        self._recent: deque[float] = deque(maxlen=RECENT)

    @property
    def waiting(self) -> int:
        """Gradings waiting for a job (the queue's depth)."""
        return len(self._waiters)

    def retry_after(self) -> int:
        """Whole seconds until a place is likely free: what the waiting gradings and the running ones
        take, at the recent pace (1 s when nothing was graded yet), at least 1."""
        each = statistics.fmean(self._recent) if self._recent else 1.0
        return max(1, math.ceil(each * (self.waiting + 1) / self.jobs))

    def record(self, seconds: float) -> None:
        """A grading's seconds, for retry_after."""
        self._recent.append(seconds)

    def admit(self) -> "Place":
        """A place for one request, held until the Place is left (`with`); Full at once when none is left."""
        if self.places >= self.jobs + self.queue:
            raise Full(self.retry_after())
        self.places += 1
        return Place(self)

    @asynccontextmanager
    async def job(self, deadline: Deadline) -> AsyncIterator[None]:
        """Hold one of the jobs while the block runs, waiting for it in turn until the deadline
        (Expired). A task cancelled while it waits leaves the queue."""
        if self.running < self.jobs and not self._waiters:
            self.running += 1
        else:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await asyncio.wait_for(asyncio.shield(waiter), max(0.0, deadline.left()))
            except BaseException as error:
                if waiter.done() and not waiter.cancelled():  # given the job meanwhile: hand it on
                    self._release()
                else:
                    waiter.cancel()
                    self._waiters.remove(waiter)
                if isinstance(error, TimeoutError):
                    raise Expired() from None
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        """A job is free: the first waiter takes it, else it is one less running."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the job passes to it: `running` stays as it is
                return
        self.running -= 1


class Place:
    """A request's place, given back once when its `with` block ends."""

    def __init__(self, admission: Admission) -> None:
        self._admission: Admission | None = admission

    def __enter__(self) -> "Place":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._admission is not None:
            self._admission.places -= 1
            self._admission = None
