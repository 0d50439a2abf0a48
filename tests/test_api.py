"""The Python API: grade_source and grade_many give what the command line gives, and the source
never runs in the caller's process."""

import subprocess
import sys

import pytest

from grader import Grader, grade_many, grade_source
from grader.cases import make_cases
from grader.sandbox.zygote import zygote_problem
from grader.spec import load_spec
from tests.grading import ROOT, SUBMISSIONS, grade_json
from tests.test_cli import without_timings

CORRECT = SUBMISSIONS / "accepted" / "plain_helpers.py"
WRONG = SUBMISSIONS / "wrong_answer" / "causal_mask.py"


@pytest.mark.sandbox
def test_good_source_is_accepted_and_to_dict_is_the_json_report():
    report = grade_source(CORRECT.read_text(), seed="api-seed")
    assert (report.verdict, report.score) == ("accepted", 1.0)
    count = len(make_cases(load_spec(), "api-seed"))
    assert report.message == f"all {count} cases passed" and len(report.cases) == count
    alone, _ = grade_json(str(CORRECT), "--seed", "api-seed")
    assert without_timings(report.to_dict()) == without_timings(alone) | {"submission": "<source>"}


def test_syntax_error_and_bytes_that_are_not_utf8_are_compile_errors():
    report = grade_source("def mlm_forward_tied(:\n")
    assert report.verdict == "compile_error" and "syntax error at line 1" in report.message and report.score == 0.0
    report = grade_source(b"# caf\xe9\ndef mlm_forward_tied():\n    pass\n")
    assert report.verdict == "compile_error" and "not valid UTF-8 (byte 0xe9" in report.message
    assert report.to_dict()["verdict"] == "compile_error"


@pytest.mark.sandbox
def test_the_source_runs_in_the_sandbox_not_in_the_callers_process(capfd):
    # Run in this process, the print would reach this process's stdout, and the exception its caller.
    source = 'print("hello from the submission", flush=True)\nraise ValueError("boom at import")\n'
    report = grade_source(source, public_only=True)
    assert report.verdict == "runtime_error" and "boom at import" in report.message
    assert "hello from the submission" in report.stdout
    assert "hello from the submission" not in capfd.readouterr().out


@pytest.mark.sandbox
def test_grade_many_yields_every_report_with_its_id():
    sources = {"good": CORRECT.read_text(), "wrong": WRONG.read_bytes(), "broken": "def mlm_forward_tied(:\n"}
    reports = {report.id: report for report in grade_many(sources, jobs=2)}
    assert {i: r.verdict for i, r in reports.items()} == {"good": "accepted", "wrong": "wrong_answer", "broken": "compile_error"}
    assert reports["wrong"].to_dict()["submission"] == "<source wrong>" and 0 < reports["wrong"].score < 1
    assert [r.id for r in grade_many(["def mlm_forward_tied(:\n"])] == ["0"]  # a plain list: ids are positions


@pytest.mark.sandbox
def test_a_grader_keeps_one_warm_pool_across_calls_and_gives_what_one_off_calls_give():
    with Grader(jobs=2, seed="api-seed") as grader:
        server = grader._warm  # the pool the first call starts its server in
        # where the pool cannot keep every wall (a Python under /tmp, no bubblewrap), the Grader says why
        assert (server is None) == bool(zygote_problem(grader.backend)) and (server is not None or grader.warm_note)
        first = grader.grade(CORRECT.read_text())
        again = grader.grade(WRONG.read_bytes())
        many = {r.id: r for r in grader.grade_many({"good": CORRECT.read_text(), "wrong": WRONG.read_text()})}
        assert grader._warm is server and not (server and server.broken), server.broken if server else grader.warm_note
    assert (first.verdict, first.score, again.verdict) == ("accepted", 1.0, "wrong_answer")
    alone = grade_source(CORRECT.read_text(), seed="api-seed").to_dict()  # a child of its own: its walls are described otherwise
    assert without_timings(first.to_dict()) | {"isolation": ""} == without_timings(alone) | {"isolation": ""}
    assert (many["good"].verdict, many["wrong"].verdict, many["wrong"].score) == ("accepted", "wrong_answer", again.score)
    with pytest.raises(RuntimeError, match="this Grader is closed"):
        grader.grade(CORRECT.read_text())


@pytest.mark.sandbox
def test_public_only_grades_only_the_public_cases_in_every_entry_point():
    public = [case for case in make_cases(load_spec(), "api-seed") if case.public]
    with Grader(jobs=1, seed="api-seed", public_only=True) as grader:
        report = grader.grade(CORRECT.read_text())
    assert len(report.cases) == len(public) and report.verdict == "accepted"
    [many] = grade_many([WRONG.read_text()], jobs=1, seed="api-seed", public_only=True)
    assert len(many.cases) == len(public)


@pytest.mark.sandbox
def test_importing_grader_stays_cheap():
    """The API is loaded on first use: `python -m grader` can start its child before importing torch."""
    loaded = "print('grader.api' in sys.modules"
    probe = f"import sys, grader; {loaded}, 'torch' in sys.modules); from grader import grade_source; {loaded})"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["False", "False", "True"], result.stderr
