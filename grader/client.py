"""Clients of the grading service (`python -m grader serve`, docs/service.md): Client for threads and
AsyncClient for asyncio, on httpx. Their grade and grade_many are Grader's (grader/api.py), over HTTP.

    from grader.client import Client
    from grader.reward import reward

    with Client("http://127.0.0.1:8000", token=os.environ.get("MLM_GRADER_TOKEN")) as client:
        report = client.grade(source)                       # from any number of threads at once
        print(report.verdict, reward(report), report.message)
        for report in client.grade_many({"a": source_a, "b": source_b}):
            print(report.id, report.verdict, report.reward)

Trying again is theirs. A request refused for a while (429 with Retry-After when the service's queue
is full, 503 while it starts or stops) is sent again after the wait Retry-After gives, for as long
as `patience` seconds from the call allow. A failure of the transport (refused, reset, timed out) or
of the service (another 5xx), and a report that is no verdict (`retryable`, a grader_error), are
sent again up to `retries` times, after a backoff (backoff, twice that, ... up to max_backoff
seconds, jittered). Grading is a pure function of the source, so sending it again is safe.

What still fails after that comes back as a grader_error report (`retryable`, no reward, the message
saying what failed), never as an exception and never as a verdict: an infrastructure failure must
not be scored as a wrong answer, and grader.reward.reward() raises NoVerdict on it. A mistake of the
caller (400 a bad request, 401 a missing or wrong token, 404 an unknown problem, 413 a body over the
limit) raises ServiceError at once: sending it again would not help.
"""

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any

import httpx

from grader.graded import Report
from grader.results import Report as PlainReport
from grader.results import Verdict

Source = str | bytes
Sources = Iterable[Source] | Mapping[str, Source]
REFUSED_FOR_A_WHILE = (429, 503)  # the queue is full; starting or stopping: waited out within `patience`
BATCH_BYTES = 8 * 1024 * 1024  # a batch request's sources, at most (the service takes 32 MiB)
BATCH_COUNT = 1000  # submissions in one batch request, at most (the service takes 5000)


class ServiceError(Exception):
    """The service refused the request as the caller's mistake (status 400, 401, 404, 413...)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message = status, message


def _text(source: Source) -> str:
    """A source as JSON text: bytes that are not UTF-8 travel as lone surrogates, which the service
    turns back into those bytes (and the judge into a compile_error)."""
    return source.decode("utf-8", "surrogateescape") if isinstance(source, bytes) else source


def _keyed(sources: Sources) -> Iterator[tuple[str, Source]]:
    return ((str(k), s) for k, s in sources.items()) if isinstance(sources, Mapping) else ((str(i), s) for i, s in enumerate(sources))


def _chunks(keyed: Iterator[tuple[str, Source]]) -> Iterator[dict[str, str]]:
    """The sources in batch requests of at most BATCH_COUNT submissions and about BATCH_BYTES."""
    chunk: dict[str, str] = {}
    size = 0
    for key, source in keyed:
        text = _text(source)
        if chunk and (len(chunk) >= BATCH_COUNT or size + len(text) > BATCH_BYTES):
            yield chunk
            chunk, size = {}, 0
        if key in chunk:
            raise ValueError(f"two sources have the id {key!r}")
        chunk[key] = text
        size += len(text)
    if chunk:
        yield chunk


def _error_message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", response.text))
    except ValueError:
        return response.text[:500]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    return float(value) if value.isdigit() else None


class _Policy:
    """What Client and AsyncClient share: the request's form, what an answer means, the report of no verdict."""

    def __init__(self, url: str, token: str | None, problem: str | None, retries: int, backoff: float, max_backoff: float, patience: float) -> None:
        if retries < 0 or backoff <= 0 or max_backoff < backoff or patience < 0:
            raise ValueError("retries and patience must be at least 0, and 0 < backoff <= max_backoff")
        self.url = url.rstrip("/")
        self.token = token
        self.problem, self.retries, self.backoff, self.max_backoff, self.patience = problem, retries, backoff, max_backoff, patience

    def request(self, body: dict[str, Any]) -> dict[str, Any]:
        """httpx's keywords for a request with this JSON body (ASCII: httpx's own json= cannot carry
        lone surrogates) and the token."""
        headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {self.token}"} if self.token else {})
        return {"content": json.dumps(body).encode(), "headers": headers}

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def body(self, problem: str | None, public_only: bool, deadline: float | None) -> dict[str, Any]:
        body: dict[str, Any] = {"public_only": public_only}
        if problem or self.problem:
            body["problem"] = problem or self.problem
        if deadline is not None:
            body["deadline_seconds"] = deadline
        return body

    def check(self, response: httpx.Response) -> None:
        """ServiceError for an answer that says the caller erred (a 4xx, but 429)."""
        if 400 <= response.status_code < 500 and response.status_code not in REFUSED_FOR_A_WHILE:
            raise ServiceError(response.status_code, _error_message(response))

    def no_verdict(self, key: str, problem: str | None, tries: "_Tries") -> Report:
        """The report of a submission the service could not grade."""
        count = tries.count
        message = (
            f"no verdict: the grading service at {self.url} could not grade this submission after {count} "
            f"tr{'y' if count == 1 else 'ies'} in {tries.seconds():.0f} s (the last: {tries.why}); not the submission's fault: grade it again later"
        )
        plain = PlainReport(Verdict.GRADER_ERROR, message, f"<source {key}>" if key else "<source>", "", "", problem=problem or self.problem or "")
        return Report.of(plain, key, None)


class _Tries:
    """One call's tries: a failure counts against `retries`; a refusal for a while (429, 503) is
    waited out as long as `patience` allows. after() gives the seconds to wait before the next try,
    or None: no more tries."""

    def __init__(self, policy: _Policy) -> None:
        self.policy = policy
        self.failures = self.refusals = 0
        self.started = time.monotonic()
        self.why = ""

    @property
    def count(self) -> int:
        return self.failures + self.refusals + 1

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def after(self, response: httpx.Response | None, why: str) -> float | None:
        """After a try that gave no verdict: a transport failure (response None), a refusal, a 5xx,
        or a retryable report (a 200)."""
        self.why = why
        policy = self.policy
        if response is not None and response.status_code in REFUSED_FOR_A_WHILE:
            told = _retry_after(response)
            wait = min(policy.max_backoff, told * random.uniform(1.0, 1.5)) if told is not None else self._backoff(self.refusals)
            self.refusals += 1
            return wait if self.seconds() + wait <= policy.patience else None
        if self.failures >= policy.retries:
            return None
        self.failures += 1
        return self._backoff(self.failures - 1)

    def _backoff(self, attempt: int) -> float:
        return min(self.policy.max_backoff, self.policy.backoff * 2**attempt) * random.uniform(0.5, 1.0)


def _why(response: httpx.Response) -> str:
    return f"the service answered HTTP {response.status_code}: {_error_message(response)}"


class Client:
    """A client of the grading service, for threads: one Client may be shared by any number of
    threads (httpx's connection pool is), each call waiting for its own answer.

        with Client("http://grader:8000", token=token) as client:
            report = client.grade(source, deadline=300)

    url: the service's address; token: its MLM_GRADER_TOKEN (None when it has none); problem: the
    challenge when a call names none (default: the service's default); timeout: seconds to wait for
    one answer (above the service's deadline, 300 s by default); retries, backoff, max_backoff,
    patience: how often and how long to try again (see the module's docstring: a failure is tried
    `retries` more times, a full queue is waited out for up to `patience` seconds from the call);
    http: an httpx.Client of your own (TLS, proxies, event hooks), which close() leaves open."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        problem: str | None = None,
        timeout: float = 600.0,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        patience: float = 900.0,
        http: httpx.Client | None = None,
    ) -> None:
        self._policy = _Policy(url, token, problem, retries, backoff, max_backoff, patience)
        limits = httpx.Limits(max_connections=512, max_keepalive_connections=64)
        self._own = http is None
        self._http = http or httpx.Client(timeout=httpx.Timeout(timeout, connect=10.0), limits=limits)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._own:
            self._http.close()

    def grade(self, source: Source, *, problem: str | None = None, public_only: bool = False, id: str = "", deadline: float | None = None) -> Report:
        """The report of one submission's source text (report.id is `id`). deadline: seconds the
        service may take, its queue included (default: the service's, 300 s); past it the report is
        a retryable grader_error."""
        policy = self._policy
        body = policy.body(problem, public_only, deadline) | {"source": _text(source), "id": id}
        tries = _Tries(policy)
        while True:
            try:
                response = self._http.post(f"{policy.url}/v1/grade", **policy.request(body))
            except httpx.TransportError as error:
                wait = tries.after(None, f"{type(error).__name__}: {error}")
            else:
                policy.check(response)
                if response.status_code != 200:
                    wait = tries.after(response, _why(response))
                else:
                    report = Report.from_response(response.json())
                    if not report.retryable:
                        return report
                    wait = tries.after(response, report.message)
                    if wait is None:
                        return report
            if wait is None:
                return policy.no_verdict(id, problem, tries)
            time.sleep(wait)

    def grade_many(self, sources: Sources, *, problem: str | None = None, public_only: bool = False, deadline: float | None = None) -> Iterator[Report]:
        """Grade many sources through POST /v1/grade/batch; yields each report as the service
        answers it, so not in the order given. report.id is the source's key when `sources` is a
        mapping, else its position ("0", "1", ...). Stopping the iteration early ends the gradings."""
        for chunk in _chunks(_keyed(sources)):
            yield from self._batch(chunk, problem, public_only, deadline)

    def _batch(self, todo: dict[str, str], problem: str | None, public_only: bool, deadline: float | None) -> Iterator[Report]:
        policy = self._policy
        tries = _Tries(policy)
        while True:
            response, why, kept = None, "", {}
            body = policy.body(problem, public_only, deadline) | {"submissions": [{"id": k, "source": s} for k, s in todo.items()]}
            try:
                with self._http.stream("POST", f"{policy.url}/v1/grade/batch", **policy.request(body)) as response:
                    if response.status_code != 200:
                        response.read()
                        policy.check(response)
                        why = _why(response)
                    else:
                        for line in response.iter_lines():
                            if line.strip():
                                report = Report.from_response(json.loads(line))
                                if report.id not in todo:
                                    continue
                                if report.retryable:
                                    kept[report.id], why = report, report.message
                                    continue
                                del todo[report.id]
                                yield report
                        why = why or "the answer ended before every submission had its line"
            except httpx.TransportError as error:
                response, why = None, f"{type(error).__name__}: {error}"
            if not todo:
                return
            wait = tries.after(response, why)
            if wait is None:
                for key in todo:
                    yield kept.get(key) or policy.no_verdict(key, problem, tries)
                return
            time.sleep(wait)

    def problems(self) -> list[dict[str, Any]]:
        """The challenges the service grades (GET /v1/problems)."""
        response = self._http.get(f"{self._policy.url}/v1/problems", headers=self._policy.headers)
        if response.status_code != 200:
            raise ServiceError(response.status_code, _error_message(response))
        return list(response.json()["problems"])

    def ready(self) -> bool:
        """True when the service says it is ready (GET /readyz); False when it is not, or not reachable."""
        try:
            return self._http.get(f"{self._policy.url}/readyz").status_code == 200
        except httpx.TransportError:
            return False


class AsyncClient:
    """Client for asyncio: the same calls, awaited; any number of tasks may share one.

        async with AsyncClient("http://grader:8000", token=token) as client:
            reports = await asyncio.gather(*(client.grade(s) for s in sources))
            async for report in client.grade_many(sources):
                ...

    The arguments are Client's (http: an httpx.AsyncClient of your own)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        problem: str | None = None,
        timeout: float = 600.0,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        patience: float = 900.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._policy = _Policy(url, token, problem, retries, backoff, max_backoff, patience)
        limits = httpx.Limits(max_connections=512, max_keepalive_connections=64)
        self._own = http is None
        self._http = http or httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=10.0), limits=limits)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    async def grade(self, source: Source, *, problem: str | None = None, public_only: bool = False, id: str = "", deadline: float | None = None) -> Report:
        """As Client.grade."""
        policy = self._policy
        body = policy.body(problem, public_only, deadline) | {"source": _text(source), "id": id}
        tries = _Tries(policy)
        while True:
            try:
                response = await self._http.post(f"{policy.url}/v1/grade", **policy.request(body))
            except httpx.TransportError as error:
                wait = tries.after(None, f"{type(error).__name__}: {error}")
            else:
                policy.check(response)
                if response.status_code != 200:
                    wait = tries.after(response, _why(response))
                else:
                    report = Report.from_response(response.json())
                    if not report.retryable:
                        return report
                    wait = tries.after(response, report.message)
                    if wait is None:
                        return report
            if wait is None:
                return policy.no_verdict(id, problem, tries)
            await asyncio.sleep(wait)

    async def grade_many(
        self, sources: Sources, *, problem: str | None = None, public_only: bool = False, deadline: float | None = None
    ) -> AsyncIterator[Report]:
        """As Client.grade_many."""
        for chunk in _chunks(_keyed(sources)):
            async for report in self._batch(chunk, problem, public_only, deadline):
                yield report

    async def _batch(self, todo: dict[str, str], problem: str | None, public_only: bool, deadline: float | None) -> AsyncIterator[Report]:
        policy = self._policy
        tries = _Tries(policy)
        while True:
            response, why, kept = None, "", {}
            body = policy.body(problem, public_only, deadline) | {"submissions": [{"id": k, "source": s} for k, s in todo.items()]}
            try:
                async with self._http.stream("POST", f"{policy.url}/v1/grade/batch", **policy.request(body)) as response:
                    if response.status_code != 200:
                        await response.aread()
                        policy.check(response)
                        why = _why(response)
                    else:
                        async for line in response.aiter_lines():
                            if line.strip():
                                report = Report.from_response(json.loads(line))
                                if report.id not in todo:
                                    continue
                                if report.retryable:
                                    kept[report.id], why = report, report.message
                                    continue
                                del todo[report.id]
                                yield report
                        why = why or "the answer ended before every submission had its line"
            except httpx.TransportError as error:
                response, why = None, f"{type(error).__name__}: {error}"
            if not todo:
                return
            wait = tries.after(response, why)
            if wait is None:
                for key in todo:
                    yield kept.get(key) or policy.no_verdict(key, problem, tries)
                return
            await asyncio.sleep(wait)

    async def problems(self) -> list[dict[str, Any]]:
        """As Client.problems."""
        response = await self._http.get(f"{self._policy.url}/v1/problems", headers=self._policy.headers)
        if response.status_code != 200:
            raise ServiceError(response.status_code, _error_message(response))
        return list(response.json()["problems"])

    async def ready(self) -> bool:
        """As Client.ready."""
        try:
            return (await self._http.get(f"{self._policy.url}/readyz")).status_code == 200
        except httpx.TransportError:
            return False


__all__ = ["AsyncClient", "Client", "ServiceError"]
