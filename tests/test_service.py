"""The grading service (`python -m grader serve`, grader/service/), started here on 127.0.0.1 with a
port the system picks: its answers are the --json report plus id, reward and retryable; it bounds its
queue (429 with Retry-After), cuts a request at its deadline, frees the place of a client that goes
away, replaces a pool that is killed, keeps its secrets, and stops on SIGTERM only once every request
it accepted is answered, leaving no process behind. Its clients (grader/client.py) against it."""

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

import grader.api
from grader.client import AsyncClient, Client
from grader.reward import reward
from grader.service.app import MAX_GRADE_BODY, Service, Settings
from grader.spec import load_spec
from tests.grading import ROOT, grade_json
from tests.service_process import CORRECT, HANGING, WRONG, alive, running_service, slow_correct
from tests.test_cli import without_timings

pytestmark = pytest.mark.sandbox

SEED = "service-test-seed-6Qz81"
TOKEN = "service-test-token-Yw3k"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    seed_file = tmp_path_factory.mktemp("secret") / "seed"
    seed_file.write_text(SEED + "\n")
    env = {"MLM_GRADER_TOKEN": TOKEN, "MLM_GRADER_SEED_FILE": str(seed_file)}
    with running_service("--jobs", "2", "--queue", "2", "--problem", "mlm-forward-tied", env=env) as running:
        yield running


def post(service, path: str, body: dict | bytes, timeout: float = 300, headers: dict | None = None) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{service.url}{path}", content=content, headers=AUTH | (headers or {}), timeout=timeout)


def wait_until(condition, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.1)


def test_health_and_readiness_are_told_without_the_token(service):
    assert httpx.get(f"{service.url}/healthz").json() == {"status": "alive"}
    assert httpx.get(f"{service.url}/readyz").json() == {"status": "ready", "problems": ["mlm-forward-tied"]}
    assert "mlm_grader_ready 1.0" in httpx.get(f"{service.url}/metrics").text


def test_every_v1_request_needs_the_bearer_token(service):
    body = json.dumps({"source": "x = 1"}).encode()
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = httpx.post(f"{service.url}/v1/grade", content=body, headers=headers)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer" in refused.json()["error"]
    assert httpx.get(f"{service.url}/v1/problems").status_code == 401
    problems = httpx.get(f"{service.url}/v1/problems", headers=AUTH).json()
    assert problems["default"] == "mlm-forward-tied" and [p["id"] for p in problems["problems"]] == ["mlm-forward-tied"]


def test_an_answer_is_the_json_report_of_the_command_line_plus_id_reward_and_retryable(service):
    answer = post(service, "/v1/grade", {"source": CORRECT.read_text(), "id": "s-1"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    graded = answer.json()
    assert (graded["verdict"], graded["reward"], graded["retryable"], graded["id"], graded["submission"]) == ("accepted", 1.0, False, "s-1", "<source s-1>")
    alone, _ = grade_json(str(CORRECT), "--seed", SEED)
    same = {key: graded.pop(key) for key in ("id", "reward", "retryable")}
    assert same == {"id": "s-1", "reward": 1.0, "retryable": False}
    # the same report but where the file came from and how its child was walled in (a warm pool's child, or one of its own)
    assert without_timings(graded) | {"isolation": "", "submission": ""} == without_timings(alone) | {"isolation": "", "submission": ""}
    wrong = post(service, "/v1/grade", {"source": WRONG.read_text()}).json()
    assert (wrong["verdict"], wrong["reward"], wrong["retryable"], wrong["id"]) == ("wrong_answer", 0.0, False, "")


def test_a_batch_streams_one_line_per_submission_each_as_it_is_graded(service):
    body = {"submissions": [{"id": "good", "source": CORRECT.read_text()}, {"id": "broken", "source": "def f(:\n"}, {"source": WRONG.read_text()}]}
    with httpx.stream("POST", f"{service.url}/v1/grade/batch", content=json.dumps(body).encode(), headers=AUTH, timeout=300) as answer:
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in answer.iter_lines() if line]
    assert {line["id"]: (line["verdict"], line["reward"]) for line in lines} == {
        "good": ("accepted", 1.0),
        "broken": ("compile_error", 0.0),
        "2": ("wrong_answer", 0.0),  # no id: its position
    }
    assert lines[0]["id"] == "broken"  # refused before any child: the first line, whatever the order sent


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [
        ("/v1/grade", b"not json", 400, "not JSON"),
        ("/v1/grade", b"[1, 2]", 400, "a JSON object"),
        ("/v1/grade", {"source": "x", "timeout": 3}, 400, "unknown field 'timeout'"),
        ("/v1/grade", {"source": 3}, 400, "source must be a string"),
        ("/v1/grade", {"source": "x", "deadline_seconds": 0}, 400, "deadline_seconds must be"),
        ("/v1/grade", {"source": "x", "problem": "no-such"}, 404, "there is no problem 'no-such' here (served: mlm-forward-tied)"),
        ("/v1/grade", {"source": "x" * MAX_GRADE_BODY}, 413, f"the limit is {MAX_GRADE_BODY} bytes"),
        ("/v1/grade/batch", {"submissions": []}, 400, "a list of 1 to"),
        ("/v1/grade/batch", {"submissions": [{"id": "a", "source": "x"}, {"id": "a", "source": "y"}]}, 400, "the same id"),
        ("/v1/grade/batch", {"submissions": [{"id": "a", "code": "x"}]}, 400, "submissions[0]: must be an object with the fields id, source"),
    ],
)
def test_a_bad_request_is_told_what_is_wrong(service, path, body, status, says):
    answer = post(service, path, body)
    assert answer.status_code == status and says in answer.json()["error"], answer.text


@pytest.mark.slow
def test_beyond_jobs_and_queue_a_request_gets_429_and_a_deadline_cuts_a_grading_or_a_wait(service):
    before = alive(service.descendants())  # the pool's server
    hanging = HANGING.read_text()
    answers: dict[str, httpx.Response] = {}

    def send(name: str, deadline: float) -> None:
        answers[name] = post(service, "/v1/grade", {"source": hanging, "id": name, "deadline_seconds": deadline})

    threads = [threading.Thread(target=send, args=(f"running-{n}", 8)) for n in range(2)]
    threads += [threading.Thread(target=send, args=(f"queued-{n}", 3)) for n in range(2)]
    for thread in threads:
        thread.start()
        time.sleep(0.3)
    wait_until(lambda: service.metric("mlm_grader_places") == 4)
    refused = post(service, "/v1/grade", {"source": hanging, "id": "one-too-many"})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1 and "queue is full" in refused.json()["error"]
    for thread in threads:
        thread.join()
    for name in ("queued-0", "queued-1"):
        report = answers[name].json()
        assert (report["verdict"], report["retryable"], report["reward"]) == ("grader_error", True, None)
        assert "waiting for a free job" in report["message"]
    for name in ("running-0", "running-1"):
        report = answers[name].json()
        assert (report["verdict"], report["retryable"]) == ("grader_error", True)
        assert "timeout of 8 s" in report["message"] and "its child was ended" in report["message"]
    assert (service.metric("mlm_grader_places"), service.metric("mlm_grader_running")) == (0, 0)
    wait_until(lambda: alive(service.descendants()) <= before)  # every child of those gradings is gone


def test_a_client_that_goes_away_frees_its_place_and_its_child(service):
    before = alive(service.descendants())
    with pytest.raises(httpx.ReadTimeout):
        post(service, "/v1/grade", {"source": HANGING.read_text()}, timeout=3)
    wait_until(lambda: service.metric("mlm_grader_places") == 0 and service.metric("mlm_grader_running") == 0, 10)
    wait_until(lambda: alive(service.descendants()) <= before, 10)
    assert post(service, "/v1/grade", {"source": CORRECT.read_text()}).json()["verdict"] == "accepted"


def test_a_killed_pool_server_is_replaced_and_every_request_still_gets_a_verdict(service):
    assert post(service, "/v1/grade", {"source": CORRECT.read_text()}).json()["verdict"] == "accepted"
    [server] = [pid for pid in alive(service.descendants()) if int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]) == service.process.pid]
    os.killpg(server, signal.SIGKILL)
    reports = [post(service, "/v1/grade", {"source": CORRECT.read_text()}).json() for _ in range(2)]
    assert [r["verdict"] for r in reports] == ["accepted", "accepted"]
    assert "warm pool" in reports[-1]["isolation"]  # the new server's child
    assert service.metric("mlm_grader_pool_restarts_total") >= 1
    assert any("warm pool: the server ended" in line for line in service.log)


def test_the_seed_and_the_token_are_in_no_answer_no_log_and_no_readable_environment(service):
    texts = [post(service, "/v1/grade", {"source": source}).text for source in (WRONG.read_text(), "import os\n", "def f(:\n")]
    texts.append(httpx.get(f"{service.url}/metrics").text)
    texts.append("".join(service.log))
    for secret in (SEED, TOKEN):
        assert not any(secret in text for text in texts)
        for name in ("environ", "cmdline"):
            assert secret.encode() not in open(f"/proc/{service.process.pid}/{name}", "rb").read()


def test_the_clients_grade_from_threads_and_from_asyncio_with_the_reports_reward(service):
    sources = {"good": CORRECT.read_text(), "wrong": WRONG.read_text(), "latin1": b"# caf\xe9\n"}
    with Client(service.url, token=TOKEN) as client, ThreadPoolExecutor(6) as threads:
        graded = list(threads.map(lambda item: client.grade(item[1], id=item[0]), list(sources.items()) * 2))
        many = {r.id: r for r in client.grade_many(sources)}
    assert [(r.id, r.verdict) for r in graded[:3]] == [("good", "accepted"), ("wrong", "wrong_answer"), ("latin1", "compile_error")]
    assert [reward(r) for r in graded[:2]] == [1.0, 0.0] and "not valid UTF-8 (byte 0xe9" in graded[2].message
    assert {k: r.verdict for k, r in many.items()} == {"good": "accepted", "wrong": "wrong_answer", "latin1": "compile_error"}

    async def with_asyncio() -> tuple[list[str], dict[str, str]]:
        async with AsyncClient(service.url, token=TOKEN) as client:
            one = await asyncio.gather(*(client.grade(s) for s in sources.values()))
            many = {r.id: r.verdict async for r in client.grade_many(list(sources.values()))}
            return [r.verdict for r in one], many

    assert asyncio.run(with_asyncio()) == (["accepted", "wrong_answer", "compile_error"], {"0": "accepted", "1": "wrong_answer", "2": "compile_error"})


@pytest.mark.slow
def test_sigterm_under_load_answers_every_request_it_accepted_then_leaves_no_process(tmp_path):
    with running_service("--jobs", "2", "--queue", "6", "--problem", "mlm-forward-tied", env={"MLM_GRADER_SEED": SEED}) as service:
        answers: dict[str, httpx.Response] = {}
        batch_lines: list[dict] = []

        def send(name: str) -> None:
            answers[name] = httpx.post(f"{service.url}/v1/grade", json={"source": slow_correct(), "id": name}, timeout=300)

        def send_batch() -> None:
            body = {"submissions": [{"id": f"b{n}", "source": slow_correct()} for n in range(4)]}
            with httpx.stream("POST", f"{service.url}/v1/grade/batch", json=body, timeout=300) as answer:
                batch_lines.extend(json.loads(line) for line in answer.iter_lines() if line)

        threads = [threading.Thread(target=send, args=(f"r{n}",)) for n in range(5)] + [threading.Thread(target=send_batch)]
        for thread in threads:
            thread.start()
        wait_until(lambda: service.metric("mlm_grader_places") == 6 and service.metric("mlm_grader_running") == 2)
        processes = alive(service.descendants())
        service.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        with pytest.raises(httpx.ConnectError):  # no new connection
            httpx.get(f"{service.url}/healthz")
        for thread in threads:
            thread.join()
        service.process.wait(120)
        assert {name: (a.status_code, a.json()["verdict"]) for name, a in answers.items()} == {f"r{n}": (200, "accepted") for n in range(5)}
        assert sorted(line["id"] for line in batch_lines) == ["b0", "b1", "b2", "b3"]
        for line in batch_lines:  # a submission in flight is graded; one not started yet is told to come again
            assert line["verdict"] == "accepted" or (line["verdict"] == "grader_error" and line["retryable"] and "stopped" in line["message"]), line
        assert service.process.returncode in (-signal.SIGTERM, 0)
        assert alive(processes) == set()
        assert "every request accepted was answered" in "".join(service.log)


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["--host", "0.0.0.0"], {"MLM_GRADER_SEED": SEED}, "--host 0.0.0.0 reaches beyond this machine, and MLM_GRADER_TOKEN is not set"),
        ([], {"MLM_GRADER_SEED": SEED, "MLM_GRADER_TOKEN": ""}, "MLM_GRADER_TOKEN is set but empty"),
        ([], {}, "a service grades for real, so it needs a secret seed"),
        (["--problem", "no-such"], {"MLM_GRADER_SEED": SEED}, "there is no problem 'no-such'"),
    ],
)
def test_the_service_refuses_to_start_in_one_line_when_it_could_not_serve_safely(args, env, says):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MLM_GRADER_")} | env
    command = [sys.executable, "-m", "grader", "serve", "--port", "0", *args]
    result = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_broken_challenge_stops_the_service_before_it_is_ready_saying_why(tmp_path, monkeypatch):
    package = tmp_path / "broken_service_reference"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module in ("generate", "reference"):
        (package / f"{module}.py").write_text("raise RuntimeError('no reference today')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(grader.api, "problem_spec", lambda problem: dataclasses.replace(load_spec(), hidden="broken_service_reference"))
    told: list[str] = []
    service = Service(Settings(("mlm-forward-tied",), "broken-service-seed", "process", 1, 1), on_fatal=told.append)

    async def start_and_close() -> None:
        await service.start()
        await service.close()

    asyncio.run(start_and_close())
    assert len(told) == 1 and "raised RuntimeError when imported: no reference today" in told[0]
    assert service.not_ready.startswith("cannot serve: mlm-forward-tied: grader set-up error")
