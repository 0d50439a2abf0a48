"""The Python API for pipelines: grade source text held in memory.

    from grader import Grader, AsyncGrader, grade_source, grade_many
    with Grader(jobs=2) as grader:                   # cases, expected outputs and the pool kept warm
        report = grader.grade(text, timeout=120)     # one submission, from any thread, as often as you like
        for report in grader.grade_many({"a": text_a, "b": text_b}):
            print(report.id, report.verdict, report.reward)
    async with AsyncGrader(jobs=2) as grader:        # the same, awaited
        report = await grader.grade(text)
    report = grade_source(text)                      # one-off: a Grader for one call
    Grader(problem="ID")                             # another challenge (python -m grader problems)

The source never runs in the caller's process: it is written to a private temporary file and
graded exactly as `python -m grader FILE` would, in its own sandboxed child; a Grader's children
come from the same warm pool as `python -m grader batch`. The HTTP service (`python -m grader
serve`, grader/service/) grades through AsyncGrader.
"""

import asyncio
import functools
import itertools
import logging
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from grader import judge, results
from grader.batch.schedule import Cancel, Cancelled, Deadline, Workers, default_jobs, start_warm_pool
from grader.faults import internal_error
from grader.graded import Report
from grader.sandbox.backends import ISOLATION_LEVELS, choose_backend
from grader.seeding import SeedRefused, secret_from
from grader.spec import DEFAULT_PROBLEM, Spec, UnknownProblem, problem_spec

SOURCE_NAME = "submission.py"  # the file name the submission is graded under
Source = str | bytes
Sources = Iterable[Source] | Mapping[str, Source]
log = logging.getLogger("grader")

__all__ = ["AsyncGrader", "Grader", "Report", "grade_many", "grade_source"]


@functools.lru_cache(maxsize=8)
def _prepared(problem: str, seed: str, public_only: bool) -> judge.Prepared:
    """Cases and expected outputs, computed once per problem and seed for every later call in this process."""
    return judge.prepare(problem_spec(problem), seed, public_only)


def source_bytes(source: Source) -> bytes:
    """The bytes of a source. A str holding lone surrogates (bytes that were not UTF-8, decoded with
    errors="surrogateescape", as the service's clients send them) gets those bytes back, so that the
    judge tells the file is not UTF-8 (a compile_error) rather than the grader failing."""
    if isinstance(source, bytes):
        return source
    try:
        return source.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return source.encode("utf-8", "surrogatepass")


def _write(folder: Path, source: Source) -> Path:
    path = folder / SOURCE_NAME
    path.write_bytes(source_bytes(source))
    return path


def _keyed(sources: Sources) -> Iterator[tuple[str, Source]]:
    return ((str(k), s) for k, s in sources.items()) if isinstance(sources, Mapping) else ((str(i), s) for i, s in enumerate(sources))


def _deadline(timeout: float | None) -> Deadline | None:
    return None if timeout is None else Deadline.after(timeout)


class Grader:
    """A grader kept warm between calls: the cases and expected outputs are computed once, and the
    children come from one warm pool (grader/sandbox/zygote.py) that stays up until close() or the
    end of the `with` block. Use one for a pipeline that grades sources one at a time or in groups.

        with Grader(jobs=4, seed=secret) as grader:
            report = grader.grade(source, timeout=120)
            print(report.verdict, report.reward, report.message)

    jobs: gradings at once (default: the number of CPU cores; one under uid isolation); seed: the
    secret seed (default: MLM_GRADER_SEED, else the fixed local seed); public_only: only the
    public cases, as `--public` does (each call may say otherwise); warm: False grades each source
    in a child of its own (what a single grade_source call does: starting the pool's server costs
    more than one child); problem: the challenge's id (default: problem/DEFAULT's); isolation: as
    --isolation (default auto); timeout: each call's default timeout in seconds (None: none).

    Threads: a Grader may be shared. grade() and grade_many() may be called from many threads at
    once; at most `jobs` gradings run at a time, the others wait for a free job. close() ends the
    pool: call it once every call has returned.

    Timeouts: a call's timeout counts from the call, its wait for a free job included. When it
    runs out, the child is ended and the report is a grader_error (retryable, no reward), never a
    verdict: the challenge's own limits decide time_limit_exceeded.

    Faults: Grader() raises only for the caller's mistakes (an unknown problem or isolation level,
    an empty seed, jobs below 1, a timeout not above 0: ValueError). A broken set-up (the
    spec file, a reference that does not import or raises, no isolation that works here) makes
    every report a grader_error saying what to fix, and `setup_fault` holds the message. A warm
    pool that cannot start, ends or is restarted is told on the logger "grader.pool" (warning)."""

    def __init__(
        self,
        *,
        jobs: int | None = None,
        seed: str | None = None,
        public_only: bool = False,
        warm: bool = True,
        problem: str = DEFAULT_PROBLEM,
        isolation: str = "auto",
        timeout: float | None = None,
    ) -> None:
        if jobs is not None and jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        if isolation not in ISOLATION_LEVELS:
            raise ValueError(f"unknown isolation level {isolation!r} (one of {', '.join(ISOLATION_LEVELS)})")
        _deadline(timeout)  # a ValueError for a timeout that is not above 0
        self.problem, self.public_only, self.timeout = problem, public_only, timeout
        self.setup_fault = ""  # why every report is a grader_error: a broken set-up
        self.spec: Spec | None = None
        self._workers: dict[bool, Workers] = {}
        self._lock = threading.Lock()  # guards _workers
        self._warm, self.warm_note = None, ""
        self._folder = tempfile.TemporaryDirectory(prefix="mlm-grader-sources-")  # mode 0700: private
        self._numbers = itertools.count()  # each source its own folder, so that calls may overlap
        try:
            self.spec = problem_spec(problem)
            secret = secret_from(self.spec, seed)
        except UnknownProblem:
            self._folder.cleanup()
            raise
        except SeedRefused as error:
            self._folder.cleanup()
            raise ValueError(str(error)) from None
        except Exception as error:  # noqa: BLE001 - the spec file: the set-up's
            self._fault(error)
            return
        self._seed = secret or self.spec.default_hidden_seed  # reports then carry the spec's warning about it
        try:
            self._backend = choose_backend(isolation, secret_seed=secret is not None)
            self._new_workers(public_only, jobs or default_jobs())
        except Exception as error:  # noqa: BLE001 - the reference, the cases, the isolation: the set-up's, never the caller's
            self._fault(error)
            return
        self._warm, self.warm_note = start_warm_pool(self.spec, self._backend) if warm else (None, "")

    def _fault(self, error: Exception) -> None:
        self.setup_fault = internal_error(error)
        log.warning("Grader(problem=%r): every report will be a grader_error: %s", self.problem, self.setup_fault)

    def _new_workers(self, public_only: bool, jobs: int) -> Workers:
        assert self.spec is not None
        slots = self._workers[self.public_only].slots if self._workers else None
        workers = Workers(
            self.spec,
            self._seed,
            jobs=jobs,
            backend=self._backend,
            public_only=public_only,
            prepared=_prepared(self.problem, self._seed, public_only),
            slots=slots,
        )
        if workers.slots is None:
            workers.slots = threading.BoundedSemaphore(workers.jobs)  # shared by every call of this Grader
        self._workers[public_only] = workers
        return workers

    def _workers_for(self, public_only: bool | None) -> Workers | None:
        """The Workers of this choice of public cases (made on first use); None after a set-up fault."""
        wanted = self.public_only if public_only is None else public_only
        with self._lock:
            if self.setup_fault:
                return None
            if wanted not in self._workers:
                try:
                    self._new_workers(wanted, self.jobs)
                except Exception as error:  # noqa: BLE001 - as in __init__
                    self._fault(error)
                    return None
            return self._workers[wanted]

    @property
    def backend(self) -> str:
        """The isolation backend every grading uses ("" after a set-up fault)."""
        return self._workers[self.public_only].backend if self._workers else ""

    @property
    def jobs(self) -> int:
        """Gradings at once (what was asked, or less where the isolation allows fewer); 1 after a set-up fault."""
        return self._workers[self.public_only].jobs if self._workers else 1

    @property
    def pool_restarts(self) -> int:
        """How often the warm pool's server was started again (it ended, or could not start)."""
        return self._warm.restarts if self._warm else 0

    @property
    def pool_fallbacks(self) -> int:
        """Gradings the warm pool could not give a child, graded in a child of their own."""
        return sum(workers.fallbacks for workers in list(self._workers.values()))

    def warm_up(self) -> str:
        """Wait until the warm pool is ready to give children: "" then, else why the gradings use
        children of their own (no pool here, or its server cannot start) or fail (a set-up fault)."""
        if self.setup_fault:
            return self.setup_fault
        if self._warm is None:
            return self.warm_note
        return self._warm.wait_ready()

    def __enter__(self) -> "Grader":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """End the warm pool and remove the sources' folder; grading after this is an error."""
        if self._warm:
            self._warm.close()
            self._warm = None
        self._folder.cleanup()

    def _own_folder(self) -> Path:
        folder = Path(self._folder.name)
        if not folder.is_dir():
            raise RuntimeError("this Grader is closed: make a new one (or grade inside its `with` block)")
        own = folder / str(next(self._numbers))
        own.mkdir()
        return own

    def _report(self, report: results.Report, key: str | None) -> Report:
        report.submission = "<source>" if key is None else f"<source {key}>"
        return Report.of(report, key or "", self.spec.scoring if self.spec else None)

    def _fault_report(self, key: str | None) -> Report:
        return self._report(results.Report(results.Verdict.GRADER_ERROR, self.setup_fault, "", "", ""), key)

    def grade(self, source: Source, *, public_only: bool | None = None, timeout: float | None = None) -> Report:
        """The report of one submission's source text (report.submission is "<source>").
        public_only: this call's choice (default: the Grader's); timeout: seconds from now, the
        wait for a free job included (default: the Grader's)."""
        return self._grade(source, public_only, _deadline(timeout if timeout is not None else self.timeout), None, None)

    def _grade(self, source: Source, public_only: bool | None, deadline: Deadline | None, cancel: Cancel | None, key: str | None) -> Report:
        """grade(), for AsyncGrader too: `cancel` ends the grading early (its report then says so)."""
        own = self._own_folder()
        try:
            workers = self._workers_for(public_only)
            if workers is None:
                return self._fault_report(key)
            try:
                report = workers.grade_file(_write(own, source), cancel, self._warm, deadline)
            except Cancelled:
                message = "the grading was cancelled by its caller before it was over, so the submission has no verdict"
                report = results.Report(results.Verdict.GRADER_ERROR, message, "", workers.prepared.seed_id, workers.backend)
        finally:
            shutil.rmtree(own, ignore_errors=True)
        return self._report(report, key)

    def grade_many(self, sources: Sources, *, public_only: bool | None = None, timeout: float | None = None) -> Iterator[Report]:
        """Grade many sources `jobs` at a time; yields each report as soon as it is ready, so not in
        the order given. report.id is the source's key when `sources` is a mapping, else its
        position ("0", "1", ...). Sources are read from `sources` only as a job frees up; stopping
        the iteration early ends the running gradings. timeout: each grading's, from when its
        source is taken (default: the Grader's)."""
        keyed = _keyed(sources)
        workers = self._workers_for(public_only)
        if workers is None:
            for key, _ in keyed:
                yield self._fault_report(key)
            return

        def files() -> Iterator[tuple[tuple[str, Path], Path]]:
            for key, source in keyed:
                own = self._own_folder()
                yield (key, own), _write(own, source)

        for (key, own), report in workers.map(files(), warm=self._warm, timeout=timeout if timeout is not None else self.timeout):
            shutil.rmtree(own, ignore_errors=True)  # only the sources being graded are on disk
            yield self._report(report, key)


class AsyncGrader:
    """A Grader for asyncio code: the same gradings, awaited, each on a thread of its own while the
    event loop runs on.

        async with AsyncGrader(jobs=4, seed=secret) as grader:
            report = await grader.grade(source, timeout=120)
            async for report in grader.grade_many(sources):
                print(report.id, report.verdict, report.reward)

    The arguments are Grader's; the Grader is made (cases prepared, pool started) on a thread when
    the `async with` block is entered. Any number of tasks may await grade() at once: at most
    `jobs` gradings run at a time. A grade() whose task is cancelled ends its child; the next
    grading waits until that child is gone."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self.grader: Grader | None = None
        self._executor: ThreadPoolExecutor | None = None

    async def __aenter__(self) -> "AsyncGrader":
        self.grader = await asyncio.to_thread(functools.partial(Grader, **self._options))
        # More threads than jobs: a cancelled grading's thread may still be ending its child.
        self._executor = ThreadPoolExecutor(max_workers=2 * self.grader.jobs + 2, thread_name_prefix="mlm-grader-async")
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the warm pool, once every grading has returned."""
        if self._executor is not None:
            await asyncio.to_thread(self._executor.shutdown, True)
            self._executor = None
        if self.grader is not None:
            await asyncio.to_thread(self.grader.close)

    def _started(self) -> Grader:
        if self.grader is None or self._executor is None:
            raise RuntimeError("grade inside `async with AsyncGrader(...) as grader:`")
        return self.grader

    async def grade(self, source: Source, *, public_only: bool | None = None, timeout: float | None = None, key: str | None = None) -> Report:
        """As Grader.grade; key: the report's id (and its submission "<source KEY>")."""
        grader = self._started()
        deadline = _deadline(timeout if timeout is not None else grader.timeout)
        cancel = Cancel()
        running = asyncio.get_running_loop().run_in_executor(self._executor, grader._grade, source, public_only, deadline, cancel, key)
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            cancel.cancel()  # its child is killed; its thread returns at once
            running.cancel()  # not started yet: it never starts
            raise

    async def grade_many(self, sources: Sources, *, public_only: bool | None = None, timeout: float | None = None) -> AsyncIterator[Report]:
        """As Grader.grade_many: reports as they are ready, `jobs` gradings at once; leaving the
        loop early cancels the others."""
        grader = self._started()
        keyed = _keyed(sources)
        pending: set[asyncio.Task[Report]] = set()
        try:
            while True:
                for key, source in itertools.islice(keyed, grader.jobs - len(pending)):
                    pending.add(asyncio.create_task(self.grade(source, public_only=public_only, timeout=timeout, key=key)))
                if not pending:
                    return
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    yield task.result()
        finally:
            for task in pending:
                task.cancel()


def grade_source(source: Source, *, seed: str | None = None, public_only: bool = False, problem: str = DEFAULT_PROBLEM, timeout: float | None = None) -> Report:
    """Grade one submission's source text. seed: the secret seed (default: MLM_GRADER_SEED, else the
    fixed local seed); public_only: run only the public cases, as `--public` does; problem: the
    challenge; timeout: as Grader.grade's. For many calls, keep a Grader instead: it keeps its pool
    warm between them."""
    with Grader(jobs=1, seed=seed, public_only=public_only, warm=False, problem=problem) as grader:
        return grader.grade(source, timeout=timeout)


def grade_many(
    sources: Sources,
    *,
    jobs: int | None = None,
    seed: str | None = None,
    public_only: bool = False,
    problem: str = DEFAULT_PROBLEM,
    timeout: float | None = None,
) -> Iterator[Report]:
    """Grade many sources through one Grader (see Grader.grade_many), closed when the iteration ends."""
    with Grader(jobs=jobs, seed=seed, public_only=public_only, problem=problem) as grader:
        yield from grader.grade_many(sources, timeout=timeout)
