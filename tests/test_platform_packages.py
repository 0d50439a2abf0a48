"""The Gradescope autograder zip and the PrairieLearn entrypoint, run as the platforms run them, off the
platform: a fake /autograder (AUTOGRADER_ROOT) and /grade (GRADE_ROOT) tree, a correct and a wrong
submission, and the results.json each leaves, validated by the schemas of tests/test_formats.py."""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grader.spec import seed_public_id
from tests.grading import ROOT, SUBMISSIONS, uid_backend_problem
from tests.test_formats import GRADESCOPE_SCHEMA, PRAIRIELEARN_SCHEMA

SEED = "platform-secret-2718"
CORRECT = SUBMISSIONS / "accepted" / "plain_helpers.py"
WRONG = SUBMISSIONS / "wrong_answer" / "causal_mask.py"
BUILD = ROOT / "deploy" / "gradescope" / "build.py"
RUN = ROOT / "deploy" / "prairielearn" / "run"
# The environment without any seed of the caller's; the scripts find the venv the tests run in.
ENV = {k: v for k, v in os.environ.items() if k != "MLM_GRADER_SEED"} | {"MLM_GRADER_VENV": sys.prefix}


def build_zip(folder: Path, seed: str | None = SEED, options: str = "--points 10") -> tuple[subprocess.CompletedProcess, Path]:
    out = folder / "gradescope-autograder.zip"
    args = [sys.executable, str(BUILD), "--out", str(out), f"--grader-options={options}"]  # as the Makefile passes it
    if seed is not None:
        (folder / "seed.txt").write_text(seed + "\n")
        args += ["--seed-file", str(folder / "seed.txt")]
    return subprocess.run(args, capture_output=True, text=True, timeout=60), out


def autograder_tree(folder: Path, archive: Path, submissions: dict[str, str]) -> Path:
    """/autograder as Gradescope lays it out: the zip unpacked in source/ (modes kept), run_autograder
    copied beside it, the student's files in submission/."""
    root = folder / "autograder"
    with zipfile.ZipFile(archive) as opened:
        for info in opened.infolist():
            path = Path(opened.extract(info, root / "source"))
            path.chmod(info.external_attr >> 16 & 0o777)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    for name, text in submissions.items():
        (root / "submission" / name).write_text(text)
    return root


def run_autograder(root: Path) -> tuple[dict, subprocess.CompletedProcess]:
    env = ENV | {"AUTOGRADER_ROOT": str(root)}
    run = subprocess.run(["bash", str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads((root / "results" / "results.json").read_text()), run


@pytest.mark.sandbox
def test_the_zip_holds_what_gradescope_runs_and_the_secret_seed(tmp_path):
    built, archive = build_zip(tmp_path, options="--points 10 --hidden-visibility after_due_date")
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(archive) as opened:
        names = set(opened.namelist())
        modes = {info.filename: info.external_attr >> 16 & 0o777 for info in opened.infolist()}
        assert opened.read("secret_seed").decode().strip() == SEED
        assert opened.read("grader_options").decode().split() == ["--points", "10", "--hidden-visibility", "after_due_date"]
    required = {"setup.sh", "run_autograder", "requirements.txt", "deploy/platform_grade.py", "secret_seed", "grader_options"}
    required |= {
        "grader/cli.py",
        "grader/formats/gradescope.py",
        "grader/child/runner.py",
        "reference/mlm_forward_tied/reference.py",
        "problem/mlm-forward-tied/problem.toml",
    }
    assert required <= names
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", ".venv/", "dist/"))]
    assert modes["run_autograder"] == modes["setup.sh"] == 0o755 and modes["secret_seed"] == 0o600
    (tmp_path / "again").mkdir()
    again, second = build_zip(tmp_path / "again", options="--points 10 --hidden-visibility after_due_date")
    assert again.returncode == 0 and second.read_bytes() == archive.read_bytes()  # the same inputs, the same zip


@pytest.mark.sandbox
@pytest.mark.parametrize("seed, why", [(None, "a secret seed is needed"), ("", "holds no secret seed"), ("local-default", "holds no secret seed")])
def test_the_zip_is_refused_without_a_secret_seed(tmp_path, seed, why):
    built, archive = build_zip(tmp_path, seed=seed)
    assert built.returncode == 2 and why in built.stderr and not archive.exists()
    allowed, archive = build_zip(tmp_path, seed=None, options="--allow-default-seed")
    assert allowed.returncode == 0 and "secret_seed" not in zipfile.ZipFile(archive).namelist()


@pytest.mark.sandbox
def test_make_gradescope_builds_dist_zip_from_seed_file():
    dry = subprocess.run(["make", "-n", "gradescope", "SEED_FILE=/path/to/seed", "GRADER_OPTIONS=--points 5"], cwd=ROOT, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    assert "deploy/gradescope/build.py" in dry.stdout and '--seed-file="/path/to/seed"' in dry.stdout
    assert '--grader-options="--points 5"' in dry.stdout and "dist/gradescope-autograder.zip" in dry.stdout


@pytest.fixture(scope="module")
def archive():
    folder = Path(tempfile.mkdtemp(prefix="mlm-grader-zip-"))
    built, path = build_zip(folder)
    assert built.returncode == 0, built.stderr
    yield path
    shutil.rmtree(folder)


@pytest.mark.parametrize(
    "files, score, verdict",
    [
        ({"solution.py": CORRECT.read_text()}, 10.0, "accepted"),
        ({"my_attempt.py": WRONG.read_text()}, 0.0, "wrong_answer"),  # the only .py file, whatever its name
    ],
    ids=["correct", "wrong"],
)
@pytest.mark.sandbox
def test_run_autograder_grades_the_submission_into_results_json(tmp_path, archive, files, score, verdict):
    root = autograder_tree(tmp_path, archive, files)
    results, run = run_autograder(root)
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["score"] == score and results["extra_data"]["verdict"] == verdict
    assert results["extra_data"]["max_score"] == 10.0 and results["extra_data"]["warnings"] == []
    assert results["extra_data"]["seed_id"] == seed_public_id(SEED)  # the seed in the zip was used
    assert len(results["tests"]) > 20 and {t["visibility"] for t in results["tests"]} == {"visible", "after_published"}
    assert "Verdict:" in run.stdout and SEED not in run.stdout + json.dumps(results)  # staff's log; the seed nowhere
    assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700


@pytest.mark.parametrize(
    "files, says",
    [({}, "No Python file was submitted"), ({"a.py": "x = 1\n", "b.py": "y = 2\n"}, "Several Python files were submitted (a.py, b.py)")],
    ids=["none", "two"],
)
@pytest.mark.sandbox
def test_run_autograder_asks_for_one_file(tmp_path, archive, files, says):
    results, _ = run_autograder(autograder_tree(tmp_path, archive, files))
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["score"] == 0 and says in results["output"]
    assert [t["visibility"] for t in results["tests"]] == ["visible"] and says in results["tests"][0]["output"]


@pytest.mark.sandbox
def test_run_autograder_without_a_seed_scores_nothing_and_tells_staff_why(tmp_path, archive):
    root = autograder_tree(tmp_path, archive, {"solution.py": CORRECT.read_text()})
    (root / "source" / "secret_seed").unlink()
    results, run = run_autograder(root)
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["score"] == 0 and "not your submission's fault" in results["output"]
    assert results["extra_data"]["verdict"] == "grader_error"
    [test] = results["tests"]
    assert test["visibility"] == "hidden" and "needs a secret seed" in test["output"]  # for staff only
    assert "needs a secret seed" in run.stdout


def probe_submission(*paths: str) -> str:
    """The correct file, plus an import-time check that raises if any of `paths` can be read."""
    probe = f"""
for _path in {list(paths)!r}:
    try:
        open(_path).read()
    except OSError:
        continue
    raise RuntimeError("read " + _path)
"""
    return CORRECT.read_text() + "\n" + probe


@pytest.mark.skipif(bool(UID_PROBLEM := uid_backend_problem()), reason=f"the uid backend does not work on this machine: {UID_PROBLEM}")
def test_the_submission_cannot_read_the_seed_or_the_grader_under_the_uid_backend(tmp_path):
    # --unrestricted lets the probe use open(); the uid backend is the wall under test. The tree
    # lies in a folder every user may enter, so only the modes run_autograder sets protect it.
    built, archive = build_zip(tmp_path, options="--isolation uid --unrestricted")
    assert built.returncode == 0, built.stderr
    public = Path(tempfile.mkdtemp(prefix="mlm-grader-public-", dir="/tmp"))
    try:
        public.chmod(0o755)
        source = public / "probe" / "autograder" / "source"
        (public / "probe").mkdir()
        root = autograder_tree(
            public / "probe",
            archive,
            {"solution.py": probe_submission(str(source / "secret_seed"), str(source / "reference" / "mlm_forward_tied" / "reference.py"))},
        )
        results, run = run_autograder(root)
        assert results["extra_data"]["verdict"] == "accepted", run.stdout
        assert results["extra_data"]["isolation"].startswith("uid")
        # The same probe on a file the runner user may read must notice it, or the check above proves nothing.
        (public / "open").write_text("not a secret\n")
        (public / "open").chmod(0o644)
        (public / "control").mkdir()
        control = autograder_tree(public / "control", archive, {"solution.py": probe_submission(str(public / "open"))})
        results, run = run_autograder(control)
        assert results["extra_data"]["verdict"] == "runtime_error" and "RuntimeError: read" in json.dumps(results), run.stdout
    finally:
        shutil.rmtree(public)


def run_prairielearn(grade_root: Path, *args: str, seed: str | None = SEED) -> tuple[dict, subprocess.CompletedProcess]:
    env = ENV | {"GRADE_ROOT": str(grade_root)} | ({"MLM_GRADER_SEED": seed} if seed else {})
    run = subprocess.run(["bash", str(RUN), *args], cwd=grade_root, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads((grade_root / "results" / "results.json").read_text()), run


def grade_tree(folder: Path, text: str) -> Path:
    (folder / "grade" / "student").mkdir(parents=True)
    (folder / "grade" / "student" / "solution.py").write_text(text)
    return folder / "grade"


@pytest.mark.sandbox
@pytest.mark.parametrize("submission, score, verdict", [(CORRECT, 1.0, "accepted"), (WRONG, 0.0, "wrong_answer")], ids=["correct", "wrong"])
def test_prairielearn_run_grades_the_student_file_into_results_json(tmp_path, submission, score, verdict):
    results, run = run_prairielearn(grade_tree(tmp_path, submission.read_text()))
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    assert results["gradable"] is True and results["score"] == score and results["verdict"] == verdict
    assert results["seed_id"] == seed_public_id(SEED) and results["warnings"] == []
    assert len(results["tests"]) > 20 and "Verdict:" in run.stdout


@pytest.mark.sandbox
def test_prairielearn_run_without_a_seed_uses_no_attempt(tmp_path):
    results, run = run_prairielearn(grade_tree(tmp_path, CORRECT.read_text()), seed=None)
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    assert results["gradable"] is False and results["verdict"] == "grader_error" and "needs a secret seed" in run.stdout


@pytest.mark.sandbox
def test_prairielearn_run_passes_its_arguments_to_the_grader(tmp_path):
    compile_error = (SUBMISSIONS / "compile_error" / "syntax_error.py").read_text()
    results, _ = run_prairielearn(grade_tree(tmp_path, compile_error), "--allow-default-seed", "--gradable-compile-errors", "--points", "5", seed=None)
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    assert results["gradable"] is True and results["verdict"] == "compile_error" and results["tests"][0]["max_points"] == 5.0
    assert len(results["warnings"]) == 1 and "fixed local seed" in results["warnings"][0]


def test_the_readmes_info_json_runs_this_entrypoint():
    readme = (ROOT / "deploy" / "prairielearn" / "README.md").read_text()
    [block] = re.findall(r"```json\n(.*?)```", readme, flags=re.DOTALL)
    options = json.loads(block)["externalGradingOptions"]
    assert options["enabled"] is True and options["entrypoint"] == "/app/deploy/prairielearn/run"
    assert options["image"] and 0 < options["timeout"] <= 600 and "MLM_GRADER_SEED" in options["environment"]


@pytest.mark.sandbox
def test_a_lone_surrogate_or_control_characters_in_an_exception_leave_a_gradable_runtime_error(tmp_path, archive):
    # A surrogate in the message once made the report unwritable: a grader_error, so the attempt was ungradable.
    from tests.test_cli import TRICKY_TEXT

    results, run = run_prairielearn(grade_tree(tmp_path / "prairielearn", TRICKY_TEXT))
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    assert results["gradable"] is True and results["verdict"] == "runtime_error" and results["score"] == 0.0, run.stdout
    assert "\x1b" not in run.stdout and "\x1b" not in json.dumps(results, ensure_ascii=False)
    (tmp_path / "gradescope").mkdir()
    results, run = run_autograder(autograder_tree(tmp_path / "gradescope", archive, {"solution.py": TRICKY_TEXT}))
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["extra_data"]["verdict"] == "runtime_error" and results["score"] == 0.0, run.stdout
    assert "\x1b" not in run.stdout and "\x1b" not in json.dumps(results, ensure_ascii=False)


# --- The documented container commands, checked without the image (make container-test runs them) --


def test_the_documented_container_commands_are_the_container_tests_and_keep_the_walls():
    from tests.container import check_container

    readme = check_container.documented()  # docs/platforms.md, docs/deployment.md
    lines = [check_container.OWNER_LINE, check_container.BATCH_LINE, *check_container.shard_lines()]
    lines += check_container.GRADESCOPE_LINES + check_container.PRAIRIELEARN_LINES
    assert not [line for line in lines if line not in readme]  # word for word, or the container test fails
    # The results folder is given to the image's user by the documented command itself, before the batch
    # (without it: "cannot open --out /results/results.jsonl: Permission denied"), in a one-off chown container;
    # the grading container keeps its walls and gains no capability for it.
    assert check_container.OWNER_LINE.endswith('--entrypoint chown -v "$CLASS/results:/results" mlm-grader:latest mlm-grader:mlm-grader /results')
    assert readme.index(check_container.OWNER_LINE) < readme.index(check_container.BATCH_LINE)
    assert check_container.WALLS in check_container.BATCH_LINE and "CHOWN" not in check_container.BATCH_LINE
    assert "install -d -o" not in readme  # the host-side chown worked only as root on the host


@pytest.mark.sandbox
def test_trial_folders_live_outside_the_checkout_or_are_ignored():
    from tests.container import check_container

    readme = check_container.documented()
    assert "$PWD/trial" not in readme and readme.count("${TMPDIR:-/tmp}/mlm-trial/") >= 4
    ignored = subprocess.run(["git", "check-ignore", "-q", "trial/autograder/source/secret_seed"], cwd=ROOT)
    assert ignored.returncode == 0  # an old trial folder in the checkout (a seed beside it) is never committed
