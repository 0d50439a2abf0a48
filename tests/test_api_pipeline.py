"""The Python API as a pipeline's tool: a Grader shared by threads runs at most `jobs` gradings at once;
a call's timeout ends its child and answers a grader_error (never a verdict); AsyncGrader awaits the
same gradings and a cancelled one ends its child; a broken set-up is a grader_error report, never an
exception from Grader(); a warm pool that is restarted says so on the logger "grader.pool"."""

import asyncio
import dataclasses
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import grader.api
from grader import AsyncGrader, Grader, grade_source
from grader.batch import schedule
from grader.reward import NoVerdict, reward
from grader.sandbox.zygote import zygote_problem
from grader.spec import load_spec
from tests.grading import ROOT
from tests.service_process import CORRECT, HANGING, WRONG

pytestmark = pytest.mark.sandbox

SEED = "pipeline-test-seed"


@pytest.fixture(scope="module")
def shared():
    with Grader(jobs=2, seed=SEED) as grader:
        yield grader


def test_a_grader_shared_by_eight_threads_grades_at_most_jobs_at_once(shared, monkeypatch):
    running, most, lock = [0], [0], threading.Lock()
    grade = schedule.judge.grade

    def counted(*args, **kwargs):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            return grade(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(schedule.judge, "grade", counted)
    sources = [CORRECT.read_text(), WRONG.read_text()] * 4
    with ThreadPoolExecutor(8) as threads:
        reports = list(threads.map(shared.grade, sources))
    assert [r.verdict for r in reports] == ["accepted", "wrong_answer"] * 4
    assert [r.reward for r in reports[:2]] == [1.0, 0.0] and most[0] == 2


@pytest.mark.slow
def test_a_calls_timeout_ends_its_child_and_answers_a_retryable_grader_error_not_a_verdict(shared):
    started = time.monotonic()
    report = shared.grade(HANGING.read_text(), timeout=4)
    took = time.monotonic() - started
    assert (report.verdict, report.retryable, report.reward) == ("grader_error", True, None)
    assert "did not finish within its timeout of 4 s" in report.message and "not the submission's fault" in report.message
    assert 4 <= took < 12  # the hanging case alone runs until its limit of 10 s
    with pytest.raises(NoVerdict):
        reward(report)
    assert shared.grade(CORRECT.read_text(), timeout=120).verdict == "accepted"  # the job it held is free again


@pytest.mark.slow
def test_a_timeout_in_grade_many_applies_to_each_source(shared):
    sources = {"hangs": HANGING.read_text(), "broken": "def mlm_forward_tied(:\n", "also hangs": HANGING.read_text()}
    reports = {r.id: r for r in shared.grade_many(sources, timeout=4)}
    assert {key: r.verdict for key, r in reports.items()} == {"hangs": "grader_error", "broken": "compile_error", "also hangs": "grader_error"}
    assert all("timeout of 4 s" in reports[key].message for key in ("hangs", "also hangs"))


def test_public_only_may_differ_from_call_to_call(shared):
    public = shared.grade(WRONG.read_text(), public_only=True)
    full = shared.grade(WRONG.read_text())
    assert public.public_only and not full.public_only and len(public.cases) < len(full.cases)


@pytest.mark.slow
def test_async_grader_awaits_gradings_and_a_cancelled_one_ends_its_child_at_once():
    async def scenario() -> tuple[list[str], dict[str, str], float, str]:
        async with AsyncGrader(jobs=2, seed=SEED) as grader:
            reports = await asyncio.gather(*(grader.grade(s) for s in (CORRECT.read_text(), WRONG.read_text())))
            many = {r.id: r.verdict async for r in grader.grade_many({"good": CORRECT.read_text(), "broken": "def f(:\n"})}
            hanging = asyncio.create_task(grader.grade(HANGING.read_text()))
            await asyncio.sleep(3)
            cancelled_at = time.monotonic()
            hanging.cancel()
            with pytest.raises(asyncio.CancelledError):
                await hanging
            after = await grader.grade(CORRECT.read_text())  # waits, if it must, for the cancelled child to be gone
            return [r.verdict for r in reports], many, time.monotonic() - cancelled_at, after.verdict

    verdicts, many, seconds, after = asyncio.run(scenario())
    assert verdicts == ["accepted", "wrong_answer"] and many == {"good": "accepted", "broken": "compile_error"}
    assert after == "accepted" and seconds < 8  # the hanging case's limit is 10 s: it did not run to it


def test_a_reference_that_raises_at_import_makes_every_report_a_grader_error_not_grader_raise(tmp_path, monkeypatch, caplog):
    package = tmp_path / "broken_reference_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "generate.py").write_text("raise RuntimeError('the reference cannot start')\n")
    (package / "reference.py").write_text("raise RuntimeError('the reference cannot start')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = dataclasses.replace(load_spec(), hidden="broken_reference_pkg")
    monkeypatch.setattr(grader.api, "problem_spec", lambda problem: broken)
    with caplog.at_level(logging.WARNING, logger="grader"), Grader(jobs=1, seed="broken-ref-seed") as graded:
        report = graded.grade(CORRECT.read_text())
        many = list(graded.grade_many(["x", "y"]))
    assert report.verdict == "grader_error" and report.retryable and report.reward is None
    assert "raised RuntimeError when imported: the reference cannot start" in report.message and "grader set-up error" in report.message
    assert [r.verdict for r in many] == ["grader_error", "grader_error"] and graded.setup_fault == report.message
    assert "every report will be a grader_error" in caplog.text


def test_the_callers_own_mistakes_still_raise():
    with pytest.raises(ValueError, match="there is no problem 'no-such'"):
        Grader(problem="no-such")
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        Grader(jobs=0)
    with pytest.raises(ValueError, match="timeout must be a number of seconds above 0"):
        Grader(timeout=0)
    with pytest.raises(ValueError, match="unknown isolation level"):
        Grader(isolation="chroot")


def test_a_source_holding_lone_surrogates_is_a_compile_error_not_a_fault_of_the_grader():
    report = grade_source("# caf\udce9\ndef f():\n    pass\n")
    assert report.verdict == "compile_error" and "not valid UTF-8 (byte 0xe9" in report.message


@pytest.mark.skipif(zygote_problem("bubblewrap") is not None, reason="no warm pool here")
def test_a_pool_server_that_died_is_restarted_with_a_warning_and_counted(caplog):
    with Grader(jobs=1, seed=SEED) as graded:
        assert graded.warm_up() == ""
        os.killpg(graded._warm.server.pid, signal.SIGKILL)
        graded._warm.server.wait()
        with caplog.at_level(logging.WARNING, logger="grader.pool"):
            report = graded.grade(CORRECT.read_text())
        assert report.verdict == "accepted" and "warm pool" in report.isolation
        assert graded.pool_restarts == 1
    assert "warm pool: the server ended" in caplog.text and "starting a new server (restart 1)" in caplog.text


def test_importing_the_client_needs_neither_torch_nor_the_grader():
    probe = "import sys, grader.client; print(sorted(m for m in ('torch', 'grader.api', 'grader.judge', 'grader.sandbox') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "[]", result.stderr
