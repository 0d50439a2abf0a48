"""python -m grader verify: the author's gate, tried on the harness's fixture problem."""

from tests.grading import ROOT, run_grader

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
