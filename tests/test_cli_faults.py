"""The command line never shows a traceback: usage errors are one line on stderr, and a fault of
the grader itself is a grader_error report in the requested format, with exit status 2."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from grader import cli
from grader.formats import FORMATS
from grader.results import Report, Verdict
from grader.spec import MissingReference
from tests.grading import ROOT, SUBMISSIONS, run_grader

CORRECT = SUBMISSIONS / "accepted" / "plain_helpers.py"


def simulated_fault(*args, **kwargs):
    raise RuntimeError("simulated fault")


@pytest.mark.parametrize("json_output", [True, False], ids=["json", "text"])
def test_a_fault_during_grading_is_a_grader_error_report_in_the_requested_format(monkeypatch, capsys, json_output):
    monkeypatch.setattr(cli, "grade", simulated_fault)
    assert cli.main([str(CORRECT), *(["--json"] if json_output else [])]) == 2
    out, err = capsys.readouterr()
    message = json.loads(out)["message"] if json_output else out
    assert "Traceback" not in out + err
    expected = r"internal error of the grader \(not the submission's fault\): RuntimeError: simulated fault \(at test_cli_faults.py:\d+ in simulated_fault\)"
    assert re.search(expected, message), message
    if not json_output:
        assert "Verdict:    GRADER_ERROR" in out


@pytest.mark.parametrize("json_output", [True, False], ids=["json", "text"])
def test_a_report_that_cannot_be_rendered_still_gives_a_report(monkeypatch, capsys, json_output):
    monkeypatch.setattr(cli, "grade", lambda path, *args, **kwargs: Report(Verdict.ACCEPTED, "all passed", str(path), "id", "test"))
    monkeypatch.setattr(cli, "render", simulated_fault)
    assert cli.main([str(CORRECT), *(["--json"] if json_output else [])]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if json_output:
        assert json.loads(out)["verdict"] == Verdict.GRADER_ERROR
    else:
        assert "Verdict:    GRADER_ERROR" in out


SET_UP = "grader set-up error (not the submission's fault)"


def broken_spec_file(tmp_path: Path) -> Path:
    spec = tmp_path / "spec.toml"
    spec.write_text("[limits\ncase_seconds = 10\n")  # a table header never closed
    return spec


def check_set_up_fault(fmt: str, out: str, why: str) -> None:
    """out is a grader_error report in format fmt whose message (for staff, where a student reads the
    platform's words) says the grader's set-up failed, and why; never a student's verdict."""
    assert "Traceback" not in out
    if fmt == "text":
        assert "Verdict:    GRADER_ERROR" in out and SET_UP in out and why in out, out
    elif fmt == "json":
        report = json.loads(out)
        assert report["verdict"] == "grader_error" and report["message"].startswith(SET_UP) and why in report["message"], report
    elif fmt == "gradescope":
        results = json.loads(out)
        assert results["score"] == 0 and results["extra_data"]["verdict"] == "grader_error", results
        assert "not the submission's fault" in results["output"] and why not in results["output"]  # the student's words
        assert [(t["visibility"], t["output"].startswith(SET_UP), why in t["output"]) for t in results["tests"]] == [("hidden", True, True)]
    elif fmt == "prairielearn":
        results = json.loads(out)
        assert results["gradable"] is False and results["verdict"] == "grader_error" and "not the submission's fault" in results["output"], results
    else:
        suite = ET.fromstring(out)
        error = suite.find("testcase/error")
        assert error is not None and error.get("type") == "grader_error" and SET_UP in error.get("message") and why in error.get("message")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_spec_that_does_not_parse_is_a_grader_error_in_every_format(tmp_path, capsys, fmt):
    code = cli.main([str(CORRECT), "--spec", str(broken_spec_file(tmp_path)), "--format", fmt, "--allow-default-seed"])
    out, err = capsys.readouterr()
    assert code == 2
    check_set_up_fault(fmt, out, "cannot be used (TOMLDecodeError")
    assert (SET_UP in err) is (fmt != "text")  # a program reads the report: the person reads stderr


@pytest.mark.sandbox
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_missing_reference_is_a_grader_error_in_every_format(monkeypatch, capsys, fmt):
    from grader import cases

    def no_reference(name):
        raise MissingReference(f"the hidden reference module {name} cannot be imported (simulated)", name=name)

    monkeypatch.setattr(cases, "hidden_module", no_reference)  # where the grader first imports it, in the parent
    code = cli.main([str(CORRECT), "--format", fmt, "--allow-default-seed", "--isolation", "process"])
    out, _ = capsys.readouterr()
    assert code == 2
    check_set_up_fault(fmt, out, "the hidden reference module reference.mlm_forward_tied.generate cannot be imported")


def test_public_cases_that_cannot_be_written_are_a_usage_error(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert cli.main(["--save-public", str(blocker / "cases")]) == 2
    assert capsys.readouterr().err.startswith(f"grader: cannot write the public cases to {blocker / 'cases'}")


def test_an_unsearchable_name_is_a_usage_error(capsys):
    assert cli.main(["x" * 5000 + ".py"]) == 2
    assert capsys.readouterr().err.startswith("grader: cannot look at")


def test_an_interrupt_ends_quietly(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "grade", interrupted)
    assert cli.main([str(CORRECT)]) == 130
    out, err = capsys.readouterr()
    assert err.endswith("grader: interrupted\n") and "Traceback" not in out + err


@pytest.mark.sandbox
def test_a_fault_in_the_middle_of_a_real_run_prints_a_report_and_no_traceback(tmp_path):
    # A limit that is a number (the format's type) but not a usable one, NaN, passes the spec file's
    # loading and fails the grader once the child runs. (A limit of the wrong type is refused when
    # the file is read: tests/test_package_format.py.)
    spec = tmp_path / "spec.toml"
    spec.write_text((ROOT / "problem" / "mlm-forward-tied" / "problem.toml").read_text().replace("case_seconds = 10 ", "case_seconds = nan "))
    result = run_grader(str(CORRECT), "--json", "--spec", str(spec))
    assert "Traceback" not in result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert (report["verdict"], result.returncode) == ("grader_error", 2)
    assert report["message"].startswith("internal error of the grader (not the submission's fault): ValueError")


# A child that cannot start (its Python has no torch, its code cannot be read) fails before the
# runner's hello, so before any code of the submission's ran: the grader's fault in every format.
NO_TORCH = "import sys; sys.stderr.write(\"ModuleNotFoundError: No module named 'torch'\\n\"); sys.exit(1)"


@pytest.mark.sandbox
@pytest.mark.parametrize("fmt", ["json", "gradescope"])
def test_a_child_that_never_starts_is_a_grader_error_never_the_candidates(monkeypatch, capsys, fmt):
    from grader.sandbox import process

    monkeypatch.setattr(process, "BOOTSTRAP", NO_TORCH)  # what a local child runs
    code = cli.main([str(CORRECT), "--isolation", "process", "--public", "--format", fmt] + (["--allow-default-seed"] if fmt == "gradescope" else []))
    out, _ = capsys.readouterr()
    report = json.loads(out)
    if fmt == "json":
        assert code == 2 and report["verdict"] == "grader_error", report
        assert "a fault of the grader's set-up, not of the submission" in report["message"] and "No module named 'torch'" in report["message"]
    else:  # the student is never scored on it: a hidden test, no points counted as theirs
        assert [t["visibility"] for t in report["tests"]] == ["hidden"] and report["extra_data"]["verdict"] == "grader_error", report


# --- The same faults in the batch, the Python API and the platform wrappers ---------------------------


def test_a_broken_set_up_stops_a_batch_with_grader_error_and_blames_no_submission(tmp_path, monkeypatch, capsys):
    from grader import cases
    from grader.batch import command

    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.py").write_bytes(CORRECT.read_bytes())
    out = tmp_path / "results.jsonl"
    arguments = [str(folder), "--out", str(out), "--csv", str(tmp_path / "grades.csv"), "--jobs", "1", "--isolation", "process", "--allow-default-seed"]
    assert command.main([*arguments, "--spec", str(broken_spec_file(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "grader_error: the grader's set-up is broken, so no submission was graded and none is blamed" in err, err
    assert "cannot be used (TOMLDecodeError" in err and "Traceback" not in err
    assert not out.exists() or out.read_text() == ""  # no line a rerun would have to take back
    monkeypatch.setattr(cases, "hidden_module", lambda name: (_ for _ in ()).throw(MissingReference(f"no {name} (simulated)", name=name)))
    assert command.main(arguments) == 2
    err = capsys.readouterr().err
    assert "grader_error: the grader's set-up is broken" in err and "no reference.mlm_forward_tied.generate (simulated)" in err and "Traceback" not in err


def test_a_broken_set_up_gives_the_python_api_grader_error_reports(tmp_path, monkeypatch):
    from grader import api, spec

    bad = broken_spec_file(tmp_path)
    monkeypatch.setattr(api, "problem_spec", lambda problem=spec.DEFAULT_PROBLEM: spec.load_spec(bad))
    api._prepared.cache_clear()
    try:
        report = api.grade_source(CORRECT.read_text())
        assert report.verdict == Verdict.GRADER_ERROR and report.message.startswith(SET_UP) and str(bad) in report.message
        many = list(api.grade_many({"a": "x = 1", "b": CORRECT.read_text()}, jobs=1))
        assert sorted((r.id, r.verdict) for r in many) == [("a", Verdict.GRADER_ERROR), ("b", Verdict.GRADER_ERROR)]
        assert report.to_dict()["verdict"] == "grader_error"
    finally:
        api._prepared.cache_clear()


def checkout_without(tmp_path: Path, missing: str) -> Path:
    """A copy of the grader's checkout (grader/, problem/, deploy/) without `missing` (reference/ is
    never copied: the grader then cannot import its reference, as after a broken deployment)."""
    import shutil

    copy = tmp_path / "checkout"
    for part in ("grader", "problem", "deploy"):
        if part != missing:
            shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.mark.sandbox
@pytest.mark.parametrize("platform", ["gradescope", "prairielearn"])
def test_the_platform_wrapper_reports_a_missing_reference_as_the_graders_fault(tmp_path, platform):
    import subprocess
    import sys

    copy = checkout_without(tmp_path, "reference")
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "solution.py").write_bytes(CORRECT.read_bytes())
    results = tmp_path / "results.json"
    command = [sys.executable, str(copy / "deploy" / "platform_grade.py"), platform, str(submission), str(results), "--allow-default-seed"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stdout + run.stderr
    check_set_up_fault(platform, results.read_text(), "the hidden reference module reference.mlm_forward_tied.generate cannot be imported")
    assert "grader set-up error" in run.stdout  # the platform's log, for staff
