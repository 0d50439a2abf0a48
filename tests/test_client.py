"""The service's clients (grader/client.py), against a stand-in for the service (httpx.MockTransport):
what they try again (429 with Retry-After, 503, a transport failure, a retryable report), what they
give back when the service never answers (a grader_error report, never an exception, never a
verdict), and what they raise at once (the caller's mistakes). The clients against the real service:
tests/test_service.py."""

import asyncio
import json

import httpx
import pytest

from grader.client import AsyncClient, Client, ServiceError
from grader.reward import NoVerdict, reward

URL = "http://grader.test"


def response_object(verdict: str, key: str = "", reward_value: float | None = None) -> dict:
    """The service's JSON object, as app.py sends it (the --json object's fields, then id, reward, retryable)."""
    return {
        "verdict": verdict,
        "public_only": False,
        "score": 1.0 if verdict == "accepted" else 0.0,
        "max_score": 1.0,
        "message": "all 52 cases passed" if verdict == "accepted" else f"a {verdict}",
        "diagnosis": [],
        "hints": [],
        "warnings": [],
        "submission": f"<source {key}>",
        "seed_id": "abc",
        "problem": "mlm-forward-tied",
        "problem_digest": "",
        "isolation": "bubblewrap",
        "seconds": 0.5,
        "versions": {"grader": "0.1.0", "torch": "2.13.0"},
        "stdout": "",
        "stderr": "",
        "cases": [],
        "id": key,
        "reward": reward_value,
        "retryable": verdict == "grader_error",
    }


class Script:
    """A stand-in service that answers each request with the next of `answers` (a response, or an
    exception to raise as the transport), and records what it was sent."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def client(self, **options) -> Client:
        return Client(URL, http=httpx.Client(transport=httpx.MockTransport(self)), **({"backoff": 0.01, "max_backoff": 0.05} | options))


def ok(verdict: str, key: str = "", reward_value: float | None = None) -> httpx.Response:
    return httpx.Response(200, json=response_object(verdict, key, reward_value))


def test_a_429_is_tried_again_after_its_retry_after_and_the_token_is_sent_every_time(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr("grader.client.time.sleep", slept.append)
    script = Script(httpx.Response(429, json={"error": "queue full"}, headers={"Retry-After": "2"}), ok("accepted", "a", 1.0))
    report = script.client(token="s3cret", max_backoff=30).grade("source text", id="a")
    assert (report.verdict, report.id, report.reward, reward(report)) == ("accepted", "a", 1.0, 1.0)
    assert len(script.requests) == 2 and all(r.headers["authorization"] == "Bearer s3cret" for r in script.requests)
    assert 2 <= slept[0] <= 3  # Retry-After, spread by up to half again (max_backoff caps it)
    assert json.loads(script.requests[0].content) == {"public_only": False, "source": "source text", "id": "a"}


def test_a_transport_failure_and_a_503_are_tried_again_then_the_verdict_comes(monkeypatch):
    monkeypatch.setattr("grader.client.time.sleep", lambda seconds: None)
    script = Script(httpx.ConnectError("refused"), httpx.Response(503, json={"error": "starting"}), ok("wrong_answer", "", 0.0))
    report = script.client().grade("x")
    assert (report.verdict, report.reward, len(script.requests)) == ("wrong_answer", 0.0, 3)


def test_a_service_that_never_answers_gives_a_retryable_grader_error_never_an_exception_or_a_verdict(monkeypatch):
    monkeypatch.setattr("grader.client.time.sleep", lambda seconds: None)
    script = Script(*[httpx.ConnectError("connection refused")] * 3)
    report = script.client(retries=2).grade("x", id="k")
    assert (report.verdict, report.retryable, report.reward, report.id) == ("grader_error", True, None, "k")
    assert "could not grade this submission after 3 tries" in report.message and "connection refused" in report.message
    with pytest.raises(NoVerdict):
        reward(report)
    assert report.to_dict()["verdict"] == "grader_error"


def test_a_retryable_report_is_graded_again_and_the_last_one_is_kept(monkeypatch):
    monkeypatch.setattr("grader.client.time.sleep", lambda seconds: None)
    script = Script(ok("grader_error"), ok("accepted", "", 1.0))
    assert script.client().grade("x").verdict == "accepted"
    script = Script(ok("grader_error"), ok("grader_error"))
    report = script.client(retries=1).grade("x")
    assert report.verdict == "grader_error" and report.retryable and len(script.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 413])
def test_the_callers_mistakes_raise_at_once(status):
    script = Script(httpx.Response(status, json={"error": "what was wrong"}))
    with pytest.raises(ServiceError, match=f"HTTP {status}: what was wrong"):
        script.client().grade("x")
    assert len(script.requests) == 1


def test_bytes_that_are_not_utf8_travel_as_lone_surrogates_the_service_turns_back_into_those_bytes():
    script = Script(ok("compile_error"))
    script.client().grade(b"# caf\xe9\n")
    sent = json.loads(script.requests[0].content)["source"]
    from grader.api import source_bytes

    assert source_bytes(sent) == b"# caf\xe9\n"


def lines(*objects: dict) -> httpx.Response:
    return httpx.Response(200, content="".join(json.dumps(o) + "\n" for o in objects).encode(), headers={"content-type": "application/x-ndjson"})


def test_grade_many_sends_one_batch_and_sends_again_only_what_had_no_verdict(monkeypatch):
    monkeypatch.setattr("grader.client.time.sleep", lambda seconds: None)
    script = Script(
        lines(response_object("accepted", "a", 1.0), response_object("grader_error", "b")),  # c: the stream ended without it
        lines(response_object("wrong_answer", "c", 0.0), response_object("accepted", "b", 1.0)),
    )
    reports = {r.id: r.verdict for r in script.client().grade_many({"a": "1", "b": "2", "c": "3"})}
    assert reports == {"a": "accepted", "b": "accepted", "c": "wrong_answer"}
    first, second = (json.loads(r.content)["submissions"] for r in script.requests)
    assert [s["id"] for s in first] == ["a", "b", "c"] and sorted(s["id"] for s in second) == ["b", "c"]


def test_grade_many_gives_every_source_a_report_when_the_service_stays_away(monkeypatch):
    monkeypatch.setattr("grader.client.time.sleep", lambda seconds: None)
    script = Script(*[httpx.ReadTimeout("timed out")] * 2)
    reports = list(script.client(retries=1).grade_many(["x", "y"]))
    assert sorted(r.id for r in reports) == ["0", "1"] and {r.verdict for r in reports} == {"grader_error"}


def test_the_async_client_tries_again_and_grades_many_as_the_client_does(monkeypatch):
    async def no_wait(seconds: float) -> None:
        pass

    monkeypatch.setattr("grader.client.asyncio.sleep", no_wait)
    script = Script(
        httpx.Response(429, headers={"Retry-After": "1"}, json={"error": "full"}),
        ok("accepted", "a", 1.0),
        lines(response_object("accepted", "0", 1.0), response_object("time_limit_exceeded", "1", 0.0)),
    )

    async def scenario() -> tuple[str, dict[str, str]]:
        async with AsyncClient(URL, http=httpx.AsyncClient(transport=httpx.MockTransport(script))) as client:
            one = await client.grade("x", id="a")
            many = {r.id: r.verdict async for r in client.grade_many(["p", "q"])}
            return one.verdict, many

    assert asyncio.run(scenario()) == ("accepted", {"0": "accepted", "1": "time_limit_exceeded"})


def test_a_full_queue_is_waited_out_for_as_long_as_patience_allows_then_told(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("grader.client.time.monotonic", lambda: clock[0])
    monkeypatch.setattr("grader.client.time.sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    full = httpx.Response(429, json={"error": "every job is busy and the queue is full"}, headers={"Retry-After": "10"})
    script = Script(*[full] * 8, ok("accepted", "", 1.0))
    assert script.client(retries=0, max_backoff=30, patience=200).grade("x").verdict == "accepted"  # 8 refusals, no failure
    script = Script(*[full] * 50)
    report = script.client(retries=0, max_backoff=30, patience=60).grade("x")
    assert report.verdict == "grader_error" and report.retryable and "HTTP 429: every job is busy" in report.message
    assert 5 <= len(script.requests) <= 7  # waits of 10 to 15 s, within 60 s
