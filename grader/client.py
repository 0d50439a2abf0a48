"""Clients of the grading service (`python -m grader serve`, docs/service.md): Client for threads and
AsyncClient for asyncio, on httpx. Their grade and grade_many are Grader's (grader/api.py), over HTTP.

    from grader.client import Client
    from grader.reward import reward

    with Client("http://127.0.0.1:8000", token=os.environ.get("MLM_GRADER_TOKEN")) as client:
        report = client.grade(source)                       # from any number of threads at once
        print(report.verdict, reward(report), report.message)
        for report in client.grade_many({"a": source_a, "b": source_b}):
            print(report.id, report.verdict, report.reward)

Trying again is theirs: a request refused for a while (429 with Retry-After when the service's queue
is full, 503 while it starts or stops), a failure of the transport (refused, reset, timed out) or of
the service (5xx), and a report that is no verdict (`retryable`, a grader_error) are sent again, up to
`retries` times, after the wait Retry-After gives or else after a backoff (backoff, twice that, ...
up to max_backoff seconds, jittered). Grading is a pure function of the source, so sending it again
is safe.

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
RETRIED = (429, 502, 503, 504)  # a service refusing for a while, or a proxy before it
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
    """What Client and AsyncClient share: the request's form, what an answer means, how long to wait."""

    def __init__(self, url: str, token: str | None, problem: str | None, retries: int, backoff: float, max_backoff: float) -> None:
        if retries < 0 or backoff <= 0 or max_backoff < backoff:
            raise ValueError("retries must be at least 0, and 0 < backoff <= max_backoff")
        self.url = url.rstrip("/")
        self.token = token
        self.problem, self.retries, self.backoff, self.max_backoff = problem, retries, backoff, max_backoff

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

    def wait(self, attempt: int, told: float | None) -> float:
        """Seconds before trying again: what Retry-After told (spread a little, so that many
        clients do not come back at once), else the backoff of this attempt; at most max_backoff."""
        if told is not None:
            return min(self.max_backoff, told * random.uniform(1.0, 1.5))
        return min(self.max_backoff, self.backoff * 2**attempt) * random.uniform(0.5, 1.0)

    def refused(self, response: httpx.Response) -> str | None:
        """Why a refusal is worth another try (429, 503, a 5xx), or None; ServiceError for the caller's mistakes."""
        if response.status_code in RETRIED or response.status_code >= 500:
            return f"the service answered HTTP {response.status_code}: {_error_message(response)}"
        if response.status_code != 200:
            raise ServiceError(response.status_code, _error_message(response))
        return None

    def no_verdict(self, key: str, problem: str | None, failure: str, tries: int) -> Report:
        """The report of a submission the service could not grade, after `tries` tries."""
        message = (
            f"no verdict: the grading service at {self.url} could not grade this submission after {tries} "
            f"tr{'y' if tries == 1 else 'ies'} (the last: {failure}); not the submission's fault: grade it again later"
        )
        plain = PlainReport(Verdict.GRADER_ERROR, message, f"<source {key}>" if key else "<source>", "", "", problem=problem or self.problem or "")
        return Report.of(plain, key, None)


class Client:
    """A client of the grading service, for threads: one Client may be shared by any number of
    threads (httpx's connection pool is), each call waiting for its own answer.

        with Client("http://grader:8000", token=token) as client:
            report = client.grade(source, deadline=300)

    url: the service's address; token: its MLM_GRADER_TOKEN (None when it has none); problem: the
    challenge when a call names none (default: the service's default); timeout: seconds to wait for
    one answer (above the service's deadline, 300 s by default); retries, backoff, max_backoff: how
    often and how long to try again (see the module's docstring); http: an httpx.Client of your own
    (TLS, proxies, event hooks), which close() leaves open."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        problem: str | None = None,
        timeout: float = 600.0,
        retries: int = 6,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        self._policy = _Policy(url, token, problem, retries, backoff, max_backoff)
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
        failure = ""
        for attempt in range(policy.retries + 1):
            told = None
            try:
                response = self._http.post(f"{policy.url}/v1/grade", **policy.request(body))
            except httpx.TransportError as error:
                failure = f"{type(error).__name__}: {error}"
            else:
                failure = policy.refused(response) or ""
                told = _retry_after(response)
                if not failure:
                    report = Report.from_response(response.json())
                    if not report.retryable or attempt == policy.retries:
                        return report
                    failure = report.message
            if attempt < policy.retries:
                time.sleep(policy.wait(attempt, told))
        return policy.no_verdict(id, problem, failure, policy.retries + 1)

    def grade_many(self, sources: Sources, *, problem: str | None = None, public_only: bool = False, deadline: float | None = None) -> Iterator[Report]:
        """Grade many sources through POST /v1/grade/batch; yields each report as the service
        answers it, so not in the order given. report.id is the source's key when `sources` is a
        mapping, else its position ("0", "1", ...). Stopping the iteration early ends the gradings."""
        for chunk in _chunks(_keyed(sources)):
            yield from self._batch(chunk, problem, public_only, deadline)

    def _batch(self, todo: dict[str, str], problem: str | None, public_only: bool, deadline: float | None) -> Iterator[Report]:
        policy = self._policy
        failure = ""
        for attempt in range(policy.retries + 1):
            last = attempt == policy.retries
            told = None
            body = policy.body(problem, public_only, deadline) | {"submissions": [{"id": k, "source": s} for k, s in todo.items()]}
            try:
                with self._http.stream("POST", f"{policy.url}/v1/grade/batch", **policy.request(body)) as response:
                    if response.status_code != 200:
                        response.read()
                    failure = policy.refused(response) or ""
                    told = _retry_after(response)
                    if not failure:
                        for line in response.iter_lines():
                            if not line.strip():
                                continue
                            report = Report.from_response(json.loads(line))
                            if report.id in todo and (last or not report.retryable):
                                del todo[report.id]
                                yield report
                            elif report.retryable:
                                failure = report.message
                        if todo and not failure:
                            failure = "the answer ended before every submission had its line"
            except httpx.TransportError as error:
                failure = f"{type(error).__name__}: {error}"
            if not todo:
                return
            if not last:
                time.sleep(policy.wait(attempt, told))
        for key in todo:
            yield policy.no_verdict(key, problem, failure, policy.retries + 1)

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
        retries: int = 6,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._policy = _Policy(url, token, problem, retries, backoff, max_backoff)
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
        failure = ""
        for attempt in range(policy.retries + 1):
            told = None
            try:
                response = await self._http.post(f"{policy.url}/v1/grade", **policy.request(body))
            except httpx.TransportError as error:
                failure = f"{type(error).__name__}: {error}"
            else:
                failure = policy.refused(response) or ""
                told = _retry_after(response)
                if not failure:
                    report = Report.from_response(response.json())
                    if not report.retryable or attempt == policy.retries:
                        return report
                    failure = report.message
            if attempt < policy.retries:
                await asyncio.sleep(policy.wait(attempt, told))
        return policy.no_verdict(id, problem, failure, policy.retries + 1)

    async def grade_many(
        self, sources: Sources, *, problem: str | None = None, public_only: bool = False, deadline: float | None = None
    ) -> AsyncIterator[Report]:
        """As Client.grade_many."""
        for chunk in _chunks(_keyed(sources)):
            async for report in self._batch(chunk, problem, public_only, deadline):
                yield report

    async def _batch(self, todo: dict[str, str], problem: str | None, public_only: bool, deadline: float | None) -> AsyncIterator[Report]:
        policy = self._policy
        failure = ""
        for attempt in range(policy.retries + 1):
            last = attempt == policy.retries
            told = None
            body = policy.body(problem, public_only, deadline) | {"submissions": [{"id": k, "source": s} for k, s in todo.items()]}
            try:
                async with self._http.stream("POST", f"{policy.url}/v1/grade/batch", **policy.request(body)) as response:
                    if response.status_code != 200:
                        await response.aread()
                    failure = policy.refused(response) or ""
                    told = _retry_after(response)
                    if not failure:
                        async for line in response.aiter_lines():
                            if not line.strip():
                                continue
                            report = Report.from_response(json.loads(line))
                            if report.id in todo and (last or not report.retryable):
                                del todo[report.id]
                                yield report
                            elif report.retryable:
                                failure = report.message
                        if todo and not failure:
                            failure = "the answer ended before every submission had its line"
            except httpx.TransportError as error:
                failure = f"{type(error).__name__}: {error}"
            if not todo:
                return
            if not last:
                await asyncio.sleep(policy.wait(attempt, told))
        for key in todo:
            yield policy.no_verdict(key, problem, failure, policy.retries + 1)

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
