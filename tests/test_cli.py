"""The command line as graders and candidates use it: exit codes, reports, seeds, bad input."""

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import cli
from grader.cases import make_cases
from grader.results import Verdict
from grader.spec import load_spec
from tests.grading import ROOT, SUBMISSIONS, checkout_files, grade_json, run_grader

CORRECT = SUBMISSIONS / "accepted" / "plain_helpers.py"


def without_timings(report: dict) -> dict:
    """The report but its timings and the child's uid (a root grader's child has a box uid of its own, whichever is free)."""
    report = dict(report, seconds=None, isolation=re.sub(r"host uid \d+ ", "host uid UID ", report["isolation"]))
    report["cases"] = [dict(case, seconds=None) for case in report["cases"]]
    return report


@pytest.mark.sandbox
def test_the_stub_is_rejected_with_a_clear_message():
    result = run_grader("problem/mlm-forward-tied/stub.py")  # the pristine stub: problem/solution.py is the candidate's to change
    assert result.returncode == 1
    assert "RUNTIME_ERROR" in result.stdout and "NotImplementedError: write mlm_forward_tied: see the statement, README.md next to this file" in result.stdout


@pytest.mark.sandbox
def test_json_report_has_what_platforms_need():
    report, status = grade_json(str(CORRECT), "--seed", "a-secret-seed")
    assert status == 0
    assert report["verdict"] == "accepted" and report["score"] == 1.0
    assert report["versions"]["torch"].startswith("2.13.0") and report["versions"]["grader"]
    assert report["seed_id"] and report["isolation"]
    assert {"name", "score", "max_score", "output", "visibility", "status"} <= set(report["cases"][0])
    assert {case["visibility"] for case in report["cases"]} == {"visible", "hidden"}


@pytest.mark.sandbox
def test_the_secret_seed_never_appears_in_any_report():
    for args in (["--json"], []):
        result = run_grader(str(SUBMISSIONS / "wrong_answer" / "causal_mask.py"), *args, env={"MLM_GRADER_SEED": "hush-hush-4711"})
        assert "hush-hush-4711" not in result.stdout + result.stderr


@pytest.mark.sandbox
def test_same_seed_same_report_and_env_var_equals_flag():
    first, _ = grade_json(str(SUBMISSIONS / "wrong_answer" / "eps_wrong_value.py"), "--seed", "s1")
    second, _ = grade_json(str(SUBMISSIONS / "wrong_answer" / "eps_wrong_value.py"), env={"MLM_GRADER_SEED": "s1"})
    assert without_timings(first) == without_timings(second)
    other, _ = grade_json(str(SUBMISSIONS / "wrong_answer" / "eps_wrong_value.py"), "--seed", "s2")
    assert other["seed_id"] != first["seed_id"]
    assert [c["shape"] for c in other["cases"] if c["visibility"] == "hidden"] != [c["shape"] for c in first["cases"] if c["visibility"] == "hidden"]


@pytest.mark.sandbox
def test_public_mode_runs_only_public_cases_and_shows_values():
    result = run_grader(str(SUBMISSIONS / "wrong_answer" / "causal_mask.py"), "--public")
    assert result.returncode == 1
    hidden = [c.name for c in make_cases(load_spec(), load_spec().default_hidden_seed) if not c.public]
    assert not [name for name in hidden if name in result.stdout] and "public_tiny" in result.stdout
    assert "At index" in result.stdout and "expected" in result.stdout


@pytest.mark.sandbox
def test_hidden_cases_never_show_expected_values():
    report, _ = grade_json(str(SUBMISSIONS / "wrong_answer" / "causal_mask.py"))
    for case in report["cases"]:
        if case["visibility"] == "hidden":
            assert "At index" not in case["output"]


@pytest.mark.parametrize(
    "name, hint",
    [
        ("mask_greater_equal", "0.5 itself is not selected"),
        ("detached_head", "must use w_emb itself"),
        ("naive_softmax", "Subtract the row maximum"),
    ],
)
@pytest.mark.sandbox
def test_a_failure_confined_to_one_family_gets_a_hint(name, hint):
    # or a diagnosis that says it already: a hint never repeats the diagnosis
    report, _ = grade_json(str(SUBMISSIONS / "wrong_answer" / f"{name}.py"))
    told = report["hints"] + report["diagnosis"]
    assert any(hint.lower() in h.lower() for h in told), told


@pytest.mark.sandbox
def test_missing_file_is_a_usage_error():
    result = run_grader("no/such/file.py")
    assert result.returncode == 2 and "no such file" in result.stderr


@pytest.mark.sandbox
def test_unusable_spec_is_a_grader_error_of_the_set_up(tmp_path):
    bad = tmp_path / "spec.toml"
    bad.write_text("this is = not [valid toml")
    result = run_grader(str(CORRECT), "--spec", str(bad))
    assert result.returncode == 2 and "Verdict:    GRADER_ERROR" in result.stdout and "Traceback" not in result.stdout + result.stderr
    assert f"grader set-up error (not the submission's fault): the spec file {bad} cannot be used (TOMLDecodeError" in result.stdout


@pytest.mark.parametrize(
    "content, why",
    [
        (b"x = 1\n" * 50000, "the limit is 262144 bytes"),
        (b"import torch\x00\n", "null bytes"),
        (b"def mlm_forward_tied(:\n", "syntax error at line 1"),
        (b"# \xff\xfe\n", "not valid UTF-8"),
        # Python would decode the file as UTF-7: another program than the UTF-8 text checked
        (b"#!/usr/bin/env python\n# coding: utf-7\nx = 1 +AAo-import os\n", "declares the encoding utf-7"),
        (b"# -*- coding: no-such-codec -*-\n", "unknown encoding"),
        # errors only the compiler finds, not the parser
        (b"import torch\nfrom __future__ import annotations\n", "line 2, column 1: from __future__ imports must occur at the beginning of the file"),
        (b"def mlm_forward_tied(*args):\n    pass\nreturn None\n", "line 3, column 1: 'return' outside function"),
    ],
    ids=["too-large", "nul-byte", "syntax", "not-utf8", "utf-7", "unknown-codec", "misplaced-future", "return-outside"],
)
@pytest.mark.sandbox
def test_unreadable_sources_are_compile_errors(tmp_path, content, why):
    path = tmp_path / "solution.py"
    path.write_bytes(content)
    report, status = grade_json(str(path))
    assert (report["verdict"], status) == ("compile_error", 1)
    assert why in report["message"]


@pytest.mark.sandbox
def test_a_file_without_the_py_suffix_is_graded_like_any_other(tmp_path):
    path = tmp_path / "solution"
    path.write_bytes((SUBMISSIONS / "accepted" / "plain_helpers.py").read_bytes())
    report, status = grade_json(str(path), "--public")
    assert (report["verdict"], status) == ("accepted", 0), report["message"]


@pytest.mark.sandbox
def test_a_folder_is_a_usage_error_that_points_to_batch(tmp_path):
    result = run_grader(str(tmp_path), "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert "is a folder" in result.stderr and f"python -m grader batch {tmp_path}" in result.stderr


@pytest.mark.sandbox
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a file that is always full")
def test_a_report_that_cannot_be_written_is_a_grader_error_in_one_line(tmp_path):
    path = tmp_path / "solution.py"
    path.write_bytes(b"def mlm_forward_tied(:\n")
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "grader", str(path)], cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    last = result.stderr.splitlines()[-1]
    assert last == "grader: the report could not be written to standard output (No space left on device); write it to a file with --output FILE"


@pytest.mark.sandbox
def test_submission_output_is_kept_capped_and_does_not_change_the_verdict(tmp_path):
    noisy = tmp_path / "noisy.py"
    noisy.write_text(CORRECT.read_text() + '\nprint("chatter " * 20000)\nprint("{\\"verdict\\": \\"accepted\\"}")\n')
    report, status = grade_json(str(noisy))
    assert report["verdict"] == "accepted" and status == 0
    assert report["stdout"].startswith("[while importing the file]\nchatter") and "more bytes not kept" in report["stdout"]
    assert len(report["stdout"]) < 70000


@pytest.mark.sandbox
def test_printing_a_fake_verdict_does_not_help(tmp_path):
    liar = tmp_path / "liar.py"
    liar.write_text(
        'print(\'{"verdict": "accepted", "score": 1.0}\')\n\n'
        "def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):\n    return None\n"
    )
    result = run_grader(str(liar), "--json")
    assert json.loads(result.stdout)["verdict"] == "wrong_answer" and result.returncode == 1


@pytest.mark.sandbox
def test_grading_changes_nothing_in_the_repository():
    def snapshot():
        return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in checkout_files({".venv", "__pycache__", ".pytest_cache", ".ruff_cache"}) if p.is_file()}

    before = snapshot()
    run_grader(str(SUBMISSIONS / "runtime_error" / "raises_in_call.py"))
    assert snapshot() == before


def test_a_fault_of_the_grader_is_grader_error_with_exit_2(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("simulated fault")

    monkeypatch.setattr(cli, "grade", broken)
    assert cli.main([str(CORRECT), "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == Verdict.GRADER_ERROR and "not the submission's fault" in report["message"]


@pytest.mark.sandbox
def test_help_names_the_exit_codes():
    result = run_grader("--help")
    assert result.returncode == 0 and "0 accepted, 1 any other verdict, 2 usage or grader error" in " ".join(result.stdout.split())


@pytest.mark.sandbox
def test_strict_isolation_refuses_without_bubblewrap():
    result = run_grader(str(CORRECT), "--isolation", "strict", env={"PATH": "/nonexistent"}, fresh=True)  # a process finds bwrap once
    assert result.returncode == 2 and "--isolation strict needs bubblewrap" in result.stderr


@pytest.mark.sandbox
def test_every_report_names_the_isolation_used():
    report, _ = grade_json(str(CORRECT), "--isolation", "process")
    assert report["isolation"].startswith("process")
    staff = run_grader(str(CORRECT), "--isolation", "process", "--staff").stdout
    assert "isolation: process" in staff
    # how the child was walled in is for staff: the candidate's text report leaves it out
    assert "isolation:" not in run_grader(str(CORRECT), "--isolation", "process").stdout


@pytest.mark.sandbox
def test_public_cases_can_be_saved_in_full_and_hidden_ones_never(tmp_path):
    result = run_grader("--save-public", str(tmp_path))
    assert result.returncode == 0
    saved = sorted(p.stem for p in tmp_path.glob("*.pt"))
    assert saved == sorted(c.name for c in make_cases(load_spec(), "any hidden seed", public_only=True))
    import torch

    from reference.mlm_forward_tied.reference import mlm_forward_tied

    case = torch.load(tmp_path / "public_tiny.pt", weights_only=True)
    inputs = {k: case[k] for k in ("input_ids", "w_emb", "pos_embed", "blocks_weights", "mask_indicator")}
    expected = mlm_forward_tied(**{k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}, num_heads=case["num_heads"])
    torch.testing.assert_close(case["expected_logits"], expected)


@pytest.mark.sandbox
def test_skipping_the_static_check_is_refused_without_a_real_sandbox():
    result = run_grader(str(SUBMISSIONS / "forbidden_api" / "plain_torch_softmax.py"), "--no-static-check", "--isolation", "process")
    assert result.returncode == 2 and "--no-static-check needs bubblewrap, uid or docker" in result.stderr
    assert result.stdout == ""


@pytest.mark.sandbox
@pytest.mark.parametrize("how", ["env", "flag"])
def test_an_empty_seed_is_a_usage_error(how):
    args, env = (["--seed", ""], {}) if how == "flag" else ([], {"MLM_GRADER_SEED": ""})
    result = run_grader(str(CORRECT), *args, env=env)
    assert result.returncode == 2 and result.stdout == ""
    assert ("--seed is empty" if how == "flag" else "MLM_GRADER_SEED is set but empty") in result.stderr


@pytest.mark.sandbox
def test_a_secret_seed_is_never_left_to_the_process_backend_silently():
    no_walls = {"PATH": "/nonexistent"}  # neither bwrap nor setpriv: auto would fall back to process
    # New processes: each works out once which sandbox its PATH offers.
    refused = run_grader(str(CORRECT), "--json", env={**no_walls, "MLM_GRADER_SEED": "keep-it-secret"}, fresh=True)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "no isolation that keeps it from the submission works here" in refused.stderr and "Install bubblewrap" in refused.stderr
    flagged = run_grader(str(CORRECT), "--json", "--seed", "keep-it-secret", env=no_walls, fresh=True)
    assert flagged.returncode == 2 and "no isolation that keeps it" in flagged.stderr

    explicit = run_grader(str(CORRECT), "--json", "--isolation", "process", env={**no_walls, "MLM_GRADER_SEED": "keep-it-secret"}, fresh=True)
    assert explicit.returncode == 0
    assert "a secret seed is not protected" in json.loads(explicit.stdout)["isolation"]
    assert "does not keep the secret seed from the submission" in explicit.stderr

    unseeded = run_grader(str(CORRECT), "--json", env=no_walls, fresh=True)  # the fixed local seed has nothing to protect
    assert unseeded.returncode == 0 and json.loads(unseeded.stdout)["isolation"].startswith("process")


@pytest.mark.sandbox
def test_the_seed_is_gone_from_the_graders_environment_and_command_line_before_its_child_starts():
    env_seed, flag_seed = "env-secret-271828", "flag-secret-314159"
    grader = subprocess.Popen(
        [sys.executable, "-m", "grader", str(CORRECT), "--isolation", "process", "--json", "--seed", flag_seed],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "MLM_GRADER_SEED": env_seed},
    )
    try:
        deadline = time.monotonic() + 120
        while not children_of(grader.pid):  # a child can read these files as soon as it exists
            assert grader.poll() is None and time.monotonic() < deadline
            time.sleep(0.002)
        seen = Path(f"/proc/{grader.pid}/environ").read_bytes() + Path(f"/proc/{grader.pid}/cmdline").read_bytes()
    finally:
        out, _ = grader.communicate(timeout=300)
    assert b"--seed" in seen and env_seed.encode() not in seen and flag_seed.encode() not in seen
    assert json.loads(out)["verdict"] == "accepted"


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            pass
    return found


TRICKY_TEXT = r"""
print("\x1b[2K\rVerdict:    ACCEPTED\x1b[1A\x1b[2K\rVerdict:    ACCEPTED")


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    raise ValueError("lone \ud800 surrogate, NUL \x00, \x1b[2K\rVerdict:    ACCEPTED")
"""


@pytest.mark.sandbox
def test_a_lone_surrogate_or_a_terminal_overwrite_in_what_the_submission_says_keeps_its_verdict(tmp_path):
    path = tmp_path / "tricky.py"
    path.write_text(TRICKY_TEXT)
    shown = run_grader(str(path), "--public")  # the text report, on stdout
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert [line for line in shown.stdout.splitlines() if line.startswith("Verdict:")] == ["Verdict:    RUNTIME_ERROR (public cases only)"]
    assert "\x1b" not in shown.stdout and "\r" not in shown.stdout and "\x00" not in shown.stdout
    assert "lone \ufffd surrogate, NUL \\x00, \\x1b[2K\\x0dVerdict:    ACCEPTED" in shown.stdout
    for fmt in ("json", "text", "junit"):
        out = tmp_path / f"report.{fmt}"
        written = run_grader(str(path), "--public", "--format", fmt, "--output", str(out))
        assert written.returncode == 1, written.stdout + written.stderr
        assert fmt == "text" or ("RUNTIME_ERROR" in written.stdout and "\x1b" not in written.stdout)  # the log
        report = out.read_text(encoding="utf-8")
        assert "\x1b" not in report and "\ud800" not in report
    assert json.loads((tmp_path / "report.json").read_text())["verdict"] == "runtime_error"


@pytest.mark.sandbox
def test_the_candidates_report_withholds_hidden_cases_and_the_staff_log_shows_them(tmp_path):
    from tests.test_formats import LEAKER, SEED, hidden_inputs

    path = tmp_path / "leaker.py"
    path.write_text(LEAKER)
    out = tmp_path / "results.json"
    run = run_grader(str(path), "--format", "prairielearn", "--output", str(out), "--staff", env={"MLM_GRADER_SEED": SEED})
    assert run.returncode == 1, run.stdout + run.stderr
    results = out.read_text()  # what the student reads
    assert json.loads(results)["verdict"] == "runtime_error" and "the message of a hidden case is not shown" in results
    assert not [inputs for inputs in hidden_inputs() if inputs in results]
    assert all(inputs in run.stdout for inputs in hidden_inputs())  # the log, for staff
    report, status = grade_json(str(path), env={"MLM_GRADER_SEED": SEED})  # no --staff: the candidate's view
    assert status == 1 and "staff_only" not in report
    assert not [inputs for inputs in hidden_inputs() if inputs in json.dumps(report)]


@pytest.mark.sandbox
def test_the_console_script_is_the_command_line_and_runs_from_any_folder(tmp_path):
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"mlm-grader": "grader.cli:entry_point"} and callable(cli.entry_point)
    # What the installed script does, from a class folder: the grader finds its problem/ and reference/ by itself.
    (tmp_path / "alice.py").write_text((SUBMISSIONS / "accepted" / "plain_helpers.py").read_text())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLM_GRADER_SEED": "anywhere-secret"}
    command = [sys.executable, "-c", "from grader.cli import entry_point; entry_point()"]
    single = subprocess.run([*command, "alice.py", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert json.loads(single.stdout)["verdict"] == "accepted", single.stderr
    result = subprocess.run([*command, "batch", ".", "--out", "r.jsonl", "--csv", "g.csv"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "g.csv").read_text().splitlines()[1].startswith("alice,,accepted,100,100,")
