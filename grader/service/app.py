"""The service's HTTP API (Starlette): the routes, the bearer token, body limits, requests checked,
and the answers. Each grading goes through admission.py (`jobs` at a time, a bounded queue, 429
beyond) and the problem's AsyncGrader (grader/api.py): the service is the Python API over HTTP, not
a second grader, and its answer is the report's to_response() (grader/graded.py).

    POST /v1/grade          {"source", "problem"?, "public_only"?, "id"?, "deadline_seconds"?} -> one report
    POST /v1/grade/batch    {"submissions": [{"id"?, "source"}...], "problem"?, "public_only"?, "deadline_seconds"?}
                            -> one JSON line per submission (application/x-ndjson), each as it is graded
    GET  /v1/problems       the challenges served
    GET  /healthz           the process is alive (200)
    GET  /readyz            200 once the cases are prepared and the pools warm; 503 while starting or stopping
    GET  /metrics           Prometheus (metrics.py)
"""

import asyncio
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from grader import results
from grader.api import AsyncGrader
from grader.batch.schedule import Deadline
from grader.faults import internal_error
from grader.formats.safe import printable
from grader.graded import Report
from grader.service.admission import Admission, Expired, Full
from grader.service.metrics import Metrics
from grader.spec import DEFAULT_PROBLEM, problem_spec

MAX_GRADE_BODY = 2 * 1024 * 1024  # bytes: a source at the spec's limit (256 KiB) fits, even written all in \uXXXX escapes
MAX_BATCH_BODY = 32 * 1024 * 1024
MAX_BATCH_SUBMISSIONS = 5000
MAX_DEADLINE = 3600.0  # seconds
MAX_ID = 256  # characters of a submission's id
STARTING_RETRY = 5  # Retry-After (seconds) while the service starts or stops
GRADE_FIELDS = ("source", "problem", "public_only", "id", "deadline_seconds")
BATCH_FIELDS = ("submissions", "problem", "public_only", "deadline_seconds")
SUBMISSION_FIELDS = ("id", "source")
NDJSON = "application/x-ndjson"
log = logging.getLogger("grader.service")


@dataclass(frozen=True)
class Settings:
    problems: tuple[str, ...]  # the challenges served, each with a warm pool of its own
    seed: str = field(repr=False)  # the hidden cases' seed (never in a response or a log, nor in a repr)
    isolation: str  # the backend every grading uses
    jobs: int  # gradings at a time, all problems together
    queue: int  # requests waiting beyond those; the rest get 429
    deadline: float = 300.0  # a request's deadline when it gives none (seconds)
    token: str | None = field(default=None, repr=False)  # the bearer token every /v1 request must carry, when set


class Refused(Exception):
    """A request the service answers with an error status and a JSON {"error": message}."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    # ASCII only: whatever a submission printed, the body is valid UTF-8 (grader/formats/safe.py made it inert)
    return Response(json.dumps(data, allow_nan=False), status_code=status, headers=headers, media_type="application/json")


def _line(report: Report) -> bytes:
    return (json.dumps(report.to_response(), allow_nan=False) + "\n").encode()


async def _until_disconnected(receive: Receive) -> None:
    """Returns when the client has gone (the request's body read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class Service:
    """The graders of the problems served, the admission, the metrics, and whether it is ready."""

    def __init__(self, settings: Settings, on_fatal: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.default_problem = DEFAULT_PROBLEM if DEFAULT_PROBLEM in settings.problems else settings.problems[0]
        self.graders: dict[str, AsyncGrader] = {}
        self.admission = Admission(settings.jobs, settings.queue)
        self.metrics = Metrics(self._pool_counts)
        self.not_ready = "starting: preparing the cases and warming the pools"
        self.stopping = False
        self.on_fatal = on_fatal or (lambda why: None)
        self._stack = AsyncExitStack()
        self._expected_token = f"Bearer {settings.token}".encode() if settings.token else None

    # -- life ---------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Each problem's grader made (cases prepared, pool started), then each pool waited for. A
        set-up fault stops the service: nothing it graded could be trusted."""
        started = time.monotonic()
        try:
            for problem in self.settings.problems:
                grader = AsyncGrader(problem=problem, seed=self.settings.seed, isolation=self.settings.isolation, jobs=self.settings.jobs)
                await self._stack.enter_async_context(grader)
                assert grader.grader is not None
                if grader.grader.setup_fault:
                    raise RuntimeError(f"{problem}: {grader.grader.setup_fault}")
                self.graders[problem] = grader
            for problem, grader in self.graders.items():
                assert grader.grader is not None
                if note := await asyncio.to_thread(grader.grader.warm_up):
                    log.warning("%s: no warm pool (%s): each submission is graded in a sandboxed child of its own", problem, note)
        except Exception as error:  # noqa: BLE001 - told in one line, and the service stops
            why = str(error) if isinstance(error, RuntimeError) else internal_error(error)
            log.error("cannot serve: %s", why)
            self.not_ready = f"cannot serve: {why}"
            self.on_fatal(why)
            return
        if not self.stopping:
            self.not_ready = ""
        jobs = self.settings.jobs
        log.info(
            "ready in %.1f s: %s; %d job%s, queue %d, %s isolation",
            time.monotonic() - started,
            ", ".join(self.settings.problems),
            jobs,
            "" if jobs == 1 else "s",
            self.settings.queue,
            self.settings.isolation,
        )

    def stop(self) -> None:
        """Told at SIGTERM (from a signal handler: flags only): not ready any more, and no batch
        starts another submission. Requests already accepted are answered."""
        self.stopping = True
        self.not_ready = "stopping: answering the requests already accepted"

    async def close(self) -> None:
        await self._stack.aclose()

    def _pool_counts(self) -> dict[str, tuple[int, int]]:
        return {p: (g.grader.pool_restarts, g.grader.pool_fallbacks) for p, g in self.graders.items() if g.grader is not None}

    # -- checks of a request --------------------------------------------------------------------------

    def check_token(self, request: Request) -> None:
        if self._expected_token is None:
            return
        given = request.headers.get("authorization", "").encode("latin-1")
        if not hmac.compare_digest(given, self._expected_token):
            raise Refused(401, "a bearer token is required: send the header `Authorization: Bearer <MLM_GRADER_TOKEN>`", {"WWW-Authenticate": "Bearer"})

    def check_ready(self) -> None:
        if self.not_ready:
            raise Refused(503, self.not_ready, {"Retry-After": str(STARTING_RETRY)})

    async def read_json(self, request: Request, limit: int) -> dict[str, Any]:
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise Refused(413, f"the request body is {int(length)} bytes; the limit is {limit} bytes")
        body, size = bytearray(), 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise Refused(413, f"the request body is over the limit of {limit} bytes")
            body += chunk
        try:
            data = json.loads(body)
        except ValueError as error:
            raise Refused(400, f"the request body is not JSON ({error})") from None
        if not isinstance(data, dict):
            raise Refused(400, "the request body must be a JSON object")
        return data

    def fields(self, data: dict[str, Any], allowed: tuple[str, ...]) -> tuple[str, bool, float]:
        """problem, public_only and deadline_seconds of a request, checked (the problem must be served)."""
        if unknown := sorted(set(data) - set(allowed)):
            raise Refused(400, f"unknown field {', '.join(map(repr, unknown))}; the fields are {', '.join(allowed)}")
        problem = data.get("problem", self.default_problem)
        if not isinstance(problem, str):
            raise Refused(400, "problem must be a string (GET /v1/problems lists them)")
        if problem not in self.settings.problems:
            raise Refused(404, f"there is no problem {problem!r} here (served: {', '.join(self.settings.problems)})")
        public_only = data.get("public_only", False)
        if not isinstance(public_only, bool):
            raise Refused(400, "public_only must be true or false")
        deadline = data.get("deadline_seconds", self.settings.deadline)
        if isinstance(deadline, bool) or not isinstance(deadline, int | float) or not 0 < deadline <= MAX_DEADLINE:
            raise Refused(400, f"deadline_seconds must be a number of seconds above 0 and at most {MAX_DEADLINE:g}")
        return problem, public_only, float(deadline)

    @staticmethod
    def source_and_id(data: dict[str, Any], default_id: str, where: str = "") -> tuple[str, str]:
        source, key = data.get("source"), data.get("id", default_id)
        if not isinstance(source, str):
            raise Refused(400, f"{where}source must be a string: the submission's text")
        if not isinstance(key, str) or len(key) > MAX_ID or printable(key) != key:
            raise Refused(400, f"{where}id must be a string of at most {MAX_ID} printable characters")
        return source, key

    # -- grading --------------------------------------------------------------------------------------

    def _no_verdict(self, problem: str, key: str, message: str) -> Report:
        report = results.Report(results.Verdict.GRADER_ERROR, message, f"<source {key}>" if key else "<source>", "", "", problem=problem)
        return Report.of(report, key, None)

    async def grade_one(self, problem: str, source: str, public_only: bool, key: str, deadline: Deadline) -> Report:
        """One submission's report, through a job; a grader_error when its deadline passes first."""
        arrived = time.monotonic()
        grader = self.graders[problem]
        try:
            async with self.admission.job(deadline):
                began = time.monotonic()
                left = deadline.left()
                if left <= 0:
                    raise Expired()
                report = await grader.grade(source, public_only=public_only, timeout=left, key=key or None)
                self.admission.record(time.monotonic() - began)
        except Expired:
            waited = time.monotonic() - arrived
            report = self._no_verdict(
                problem,
                key,
                f"its deadline of {deadline.seconds:g} s passed after {waited:.0f} s waiting for a free job (the service is busy): "
                "no verdict, not the submission's fault; send it again, later or with a longer deadline_seconds",
            )
        self.metrics.verdicts.labels(problem, report.verdict.value).inc()
        self.metrics.seconds.labels(problem).observe(time.monotonic() - arrived)
        return report

    def batch_lines(self, problem: str, items: list[tuple[str, str]], public_only: bool, deadline_seconds: float) -> "BatchLines":
        return BatchLines(self, problem, items, public_only, deadline_seconds)


class BatchLines(Response):
    """The answer to a batch: one JSON line per submission as each is graded, `jobs` of them at a
    time. The request holds one place while it streams; a client that goes away ends its gradings.
    Once the service is stopping, the submissions not started yet get a grader_error line each."""

    media_type = NDJSON

    def __init__(self, service: Service, problem: str, items: list[tuple[str, str]], public_only: bool, deadline_seconds: float) -> None:
        super().__init__(status_code=200)
        self.service, self.problem, self.items, self.public_only, self.deadline_seconds = service, problem, items, public_only, deadline_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        service = self.service
        try:
            place = service.admission.admit()
        except Full as full:
            service.metrics.requests.labels("batch", "429").inc()
            await _json({"error": str(full)}, 429, {"Retry-After": str(full.retry_after)})(scope, receive, send)
            return
        with place:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", NDJSON.encode())]})
            writing = asyncio.create_task(self._write_all(send))
            gone = asyncio.create_task(_until_disconnected(receive))
            try:
                await asyncio.wait({writing, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                gone.cancel()
                writing.cancel()  # nothing if it is done
                await asyncio.gather(writing, gone, return_exceptions=True)
            status = "200" if writing.done() and not writing.cancelled() and writing.exception() is None else "499"
            service.metrics.requests.labels("batch", status).inc()
            if status == "200":
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _write_all(self, send: Send) -> None:
        service = self.service
        items: Iterator[tuple[str, str]] = iter(self.items)
        pending: dict[asyncio.Task[Report], str] = {}
        try:
            while True:
                for key, source in items if len(pending) < service.admission.jobs else ():
                    if service.stopping:
                        report = service._no_verdict(self.problem, key, "the service stopped before grading this submission: send it again")
                        await send({"type": "http.response.body", "body": _line(report), "more_body": True})
                        continue
                    deadline = Deadline.after(self.deadline_seconds)
                    pending[asyncio.create_task(service.grade_one(self.problem, source, self.public_only, key, deadline))] = key
                    if len(pending) >= service.admission.jobs:
                        break
                if not pending:
                    return
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    key = pending.pop(task)
                    try:
                        report = task.result()
                    except Exception as error:  # noqa: BLE001 - a line for every submission, whatever failed
                        report = service._no_verdict(self.problem, key, internal_error(error))
                    await send({"type": "http.response.body", "body": _line(report), "more_body": True})
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


def build_app(service: Service) -> Starlette:
    """The ASGI application of a Service: the routes, and its start and stop (the lifespan)."""

    def endpoint(name: str, handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            try:
                response = await handler(request)
            except Refused as refused:
                response = _json({"error": refused.message}, refused.status, refused.headers)
            except ClientDisconnect:
                response = Response(status_code=499)  # nobody reads it
            if not isinstance(response, BatchLines):  # it counts itself once streamed
                service.metrics.requests.labels(name, str(response.status_code)).inc()
            return response

        return answer

    async def grade(request: Request) -> Response:
        service.check_token(request)
        data = await service.read_json(request, MAX_GRADE_BODY)
        problem, public_only, deadline_seconds = service.fields(data, GRADE_FIELDS)
        source, key = service.source_and_id(data, "")
        service.check_ready()
        try:
            place = service.admission.admit()
        except Full as full:
            raise Refused(429, str(full), {"Retry-After": str(full.retry_after)}) from None
        with place:
            grading = asyncio.create_task(service.grade_one(problem, source, public_only, key, Deadline.after(deadline_seconds)))
            gone = asyncio.create_task(_until_disconnected(request.receive))
            try:
                await asyncio.wait({grading, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                gone.cancel()
                grading.cancel()  # nothing if it is done; else the client has gone: its job and place are freed
                await asyncio.gather(grading, gone, return_exceptions=True)
            if grading.cancelled():
                return Response(status_code=499)
            if error := grading.exception():
                return _json(service._no_verdict(problem, key, internal_error(error)).to_response())
            return _json(grading.result().to_response())

    async def grade_batch(request: Request) -> Response:
        service.check_token(request)
        data = await service.read_json(request, MAX_BATCH_BODY)
        problem, public_only, deadline_seconds = service.fields(data, BATCH_FIELDS)
        submissions = data.get("submissions")
        if not isinstance(submissions, list) or not 0 < len(submissions) <= MAX_BATCH_SUBMISSIONS:
            raise Refused(400, f'submissions must be a list of 1 to {MAX_BATCH_SUBMISSIONS} objects {{"id": ..., "source": ...}}')
        items = []
        for number, submission in enumerate(submissions):
            where = f"submissions[{number}]: "
            if not isinstance(submission, dict) or set(submission) - set(SUBMISSION_FIELDS):
                raise Refused(400, f"{where}must be an object with the fields {', '.join(SUBMISSION_FIELDS)}")
            items.append(service.source_and_id(submission, str(number), where)[::-1])
        if len({key for key, _ in items}) < len(items):
            raise Refused(400, "two submissions have the same id: each line of the answer is told by its id")
        service.check_ready()
        return service.batch_lines(problem, items, public_only, deadline_seconds)

    async def problems(request: Request) -> Response:
        service.check_token(request)
        listed = []
        for problem in service.settings.problems:
            spec = problem_spec(problem)
            listed.append(
                {
                    "id": problem,
                    "title": spec.title,
                    "entry_point": spec.entry_point,
                    "parameters": list(spec.parameter_names),
                    "cases": len(spec.templates),
                    "public_cases": sum(t.settings["visibility"] == "public" for t in spec.templates),
                    "scoring": spec.scoring.mode,
                }
            )
        return _json({"default": service.default_problem, "problems": listed})

    async def healthz(request: Request) -> Response:
        return _json({"status": "alive"})

    async def readyz(request: Request) -> Response:
        if service.not_ready:
            return _json({"status": "not ready", "why": service.not_ready}, 503, {"Retry-After": str(STARTING_RETRY)})
        return _json({"status": "ready", "problems": list(service.settings.problems)})

    async def metrics(request: Request) -> Response:
        m, admission = service.metrics, service.admission
        m.queue_depth.set(admission.waiting)
        m.running.set(admission.running)
        m.places.set(admission.places)
        m.ready.set(0 if service.not_ready else 1)
        return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        starting = asyncio.create_task(service.start())
        try:
            yield
        finally:
            service.stop()
            await starting  # a grader half made is closed too
            await service.close()
            log.info("stopped: every request accepted was answered, and the pools are closed")

    routes = [
        Route("/v1/grade", endpoint("grade", grade), methods=["POST"]),
        Route("/v1/grade/batch", endpoint("batch", grade_batch), methods=["POST"]),
        Route("/v1/problems", endpoint("problems", problems), methods=["GET"]),
        Route("/healthz", endpoint("healthz", healthz), methods=["GET"]),
        Route("/readyz", endpoint("readyz", readyz), methods=["GET"]),
        Route("/metrics", endpoint("metrics", metrics), methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)
