"""The command line never shows a traceback: usage errors are one line on stderr, and a fault of
the grader itself is a grader_error report in the requested format, with exit status 2."""

import json
import re

import pytest

from grader import cli
from grader.results import Report, Verdict
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


def test_any_fault_of_the_spec_file_is_a_usage_error(monkeypatch, capsys):
    def broken_spec(path):
        raise AttributeError("'list' object has no attribute 'get'")

    monkeypatch.setattr(cli, "load_spec", broken_spec)
    assert cli.main([str(CORRECT)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("grader: cannot use the spec file") and "AttributeError" in err


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


def test_a_fault_in_the_middle_of_a_real_run_prints_a_report_and_no_traceback(tmp_path):
    # A limit of the wrong type passes the spec file's loading and fails the grader once the child runs.
    spec = tmp_path / "spec.toml"
    spec.write_text((ROOT / "problem" / "spec.toml").read_text().replace("case_seconds = 10 ", 'case_seconds = "ten" '))
    result = run_grader(str(CORRECT), "--json", "--spec", str(spec))
    assert "Traceback" not in result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert (report["verdict"], result.returncode) == ("grader_error", 2)
    assert report["message"].startswith("internal error of the grader (not the submission's fault): TypeError")


# A child that cannot start (its Python has no torch, its code cannot be read) fails before the
# runner's hello, so before any code of the submission's ran: the grader's fault in every format.
NO_TORCH = "import sys; sys.stderr.write(\"ModuleNotFoundError: No module named 'torch'\\n\"); sys.exit(1)"


@pytest.mark.parametrize("fmt", ["json", "gradescope"])
def test_a_child_that_never_starts_is_a_grader_error_never_the_candidates(monkeypatch, capsys, fmt):
    from grader import sandbox

    monkeypatch.setattr(sandbox, "BOOTSTRAP", NO_TORCH)
    code = cli.main([str(CORRECT), "--isolation", "process", "--public", "--format", fmt] + (["--allow-default-seed"] if fmt == "gradescope" else []))
    out, _ = capsys.readouterr()
    report = json.loads(out)
    if fmt == "json":
        assert code == 2 and report["verdict"] == "grader_error", report
        assert "a fault of the grader's set-up, not of the submission" in report["message"] and "No module named 'torch'" in report["message"]
    else:  # the student is never scored on it: a hidden test, no points counted as theirs
        assert [t["visibility"] for t in report["tests"]] == ["hidden"] and report["extra_data"]["verdict"] == "grader_error", report
