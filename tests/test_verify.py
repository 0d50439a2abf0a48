"""python -m grader verify: the author's gate, tried on the harness's fixture problem."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.grading import ROOT, run_grader

pytestmark = pytest.mark.sandbox

FIXTURE = ROOT / "tests" / "fixture_problem" / "problem.toml"


def test_a_sound_package_passes_every_check():
    done = run_grader("verify", "--spec", str(FIXTURE), "--seeds", "1", "--skip", "kit", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if line.startswith("FAIL")]
    for check in ("form", "statement", "oracle", "mutants", "degenerate"):
        assert any(line.startswith(f"ok    {check}: ") for line in lines), check
    by_what = "by what no tolerance measures, on every seed: an exact output, a shape, a type, an exception or an input changed"
    assert f"ok    examples: wrong_answer/count_off_by_one.py: wrong_answer on 1 seed (margin: {by_what})" in lines
    assert any(line.startswith("ok    examples: accepted/correct.py: accepted on 1 seed (margin: worst case ") for line in lines)
    assert any("mutation score: 100.0%" in line for line in lines)
    assert lines[-1].startswith("fixture-scale-count: every check passed (")


def test_mutants_that_loose_tolerances_let_through_are_listed_with_what_to_do(tmp_path):
    """With tolerances a thousand times the values, mutants whose float64 results differ pass the
    hidden cases: each is named, with the way out, and the score says so (exit status 1)."""
    text = FIXTURE.read_text()
    loose = text.replace("float32 = 1e-5\nfloat64 = 1e-12\n", "float32 = 1e3\nfloat64 = 1e3\n")
    assert loose != text
    spec = tmp_path / "problem.toml"
    spec.write_text(loose)
    done = run_grader("verify", "--spec", str(spec), "--skip", "examples", "--skip", "kit", "--skip", "oracle", timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    survivors = [line for line in done.stdout.splitlines() if line.startswith("FAIL  mutants: survived: scale_count:")]
    what_to_do = "add a case that tells it apart, or mark it equivalent in tests/fixture_problem/mutants.toml with the reason"
    assert survivors and all(what_to_do in line for line in survivors)
    assert any("`alpha * x + y` -> `alpha * x - y`" in line for line in survivors), survivors
    score = next(line for line in done.stdout.splitlines() if "mutation score:" in line)
    assert score.startswith("FAIL  mutants: mutation score: ") and "100.0%" not in score


def test_an_unknown_problem_is_a_usage_error():
    done = run_grader("verify", "nope")
    assert done.returncode == 2 and "there is no problem 'nope'" in done.stderr


def test_a_hidden_case_a_degenerate_answer_passes_is_a_finding_with_what_to_change(tmp_path):
    """With tolerances a thousand times the values, zeros pass every case: each such case is named,
    with the answer that passes it and what to change."""
    loose = FIXTURE.read_text().replace("float32 = 1e-5\nfloat64 = 1e-12\n", "float32 = 1e3\nfloat64 = 1e3\n")
    spec = tmp_path / "problem.toml"
    spec.write_text(loose)
    done = run_grader("verify", "--spec", str(spec), "-p", "degenerate", timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    found = [line for line in done.stdout.splitlines() if line.startswith("FAIL  degenerate: case ")]
    assert found and any(" passes zeros as z " in line for line in found), found
    assert all("raise the data's scale (or the step's effect) in that family, or lower the tolerance or its scale_floor" in line for line in found)


@pytest.mark.slow
def test_a_new_package_passes_verify_as_written(tmp_path):
    """`python -m grader new ID` in a copy of the checkout's grader and template: the package it
    writes passes every part of verify but the kit (which needs deploy/), on one seed."""
    for name in ("grader", "template"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "reference").mkdir()
    shutil.copy(ROOT / "reference" / "__init__.py", tmp_path / "reference" / "__init__.py")
    shutil.copytree(ROOT / "problem" / "mlm-forward-tied", tmp_path / "problem" / "mlm-forward-tied")  # the default problem's spec is read at import
    shutil.copy(ROOT / "problem" / "DEFAULT", tmp_path / "problem" / "DEFAULT")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    made = subprocess.run([sys.executable, "-m", "grader", "new", "demo-norm"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0 and "next: python -m grader verify demo-norm" in made.stdout, made.stdout + made.stderr
    again = subprocess.run([sys.executable, "-m", "grader", "new", "demo-norm"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "exists already" in again.stderr
    command = [sys.executable, "-m", "grader", "verify", "demo-norm", "--seeds", "1", "--skip", "kit"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mutation score: 100.0%" in done.stdout and "ok    degenerate: " in done.stdout
    assert done.stdout.splitlines()[-1].startswith("demo-norm: every check passed")
