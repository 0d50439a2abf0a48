"""`python -m grader merge`: the shard files of a batch become the file one batch would have written,
and files that cannot belong to one batch are refused with where and why, writing nothing."""

import csv
import io
import json
import re
from pathlib import Path

import pytest

from grader import merge
from grader.batch.command import parse_args, run
from grader.batch.exits import UsageError
from grader.batch.stop import Stop
from tests.grading import run_grader
from tests.test_batch import lines_of, run_in_process, syntax_errors

pytestmark = pytest.mark.sandbox

SHARDS = 3


def graded_in_shards(tmp_path: Path, count: int = 6, *extra: str) -> tuple[Path, list[Path]]:
    """A class graded by SHARDS shard batches (compile errors: no child is started, so fast)."""
    folder = syntax_errors(tmp_path / "class", count)
    files = []
    for index in range(SHARDS):
        files.append(tmp_path / f"shard-{index}.jsonl")
        status, _ = run_in_process(str(folder), "--shard", f"{index}/{SHARDS}", "--out", str(files[-1]), *extra)
        assert status == 0
    assert all(lines_of(f) for f in files), "every shard should hold a submission for these tests to mean something"
    return folder, files


def merged(files: list[Path], out: Path, csv_path: Path | None = None) -> tuple[int, str]:
    log = io.StringIO()
    return merge.merge(files, out, csv_path, log), log.getvalue()


def test_the_merged_shards_are_the_file_of_one_batch_sorted_by_id(tmp_path):
    folder, files = graded_in_shards(tmp_path)
    out, gradebook = tmp_path / "results.jsonl", tmp_path / "grades.csv"
    result = run_grader("merge", *map(str, files), "--out", str(out), "--csv", str(gradebook))
    assert result.returncode == 0, result.stderr
    single = tmp_path / "single.jsonl"
    assert run_in_process(str(folder), "--out", str(single))[0] == 0

    lines = lines_of(out)
    assert [line["id"] for line in lines] == sorted(line["id"] for line in lines_of(single))
    key = ("id", "sha256", "seed_id", "spec_sha256", "grader_version", "verdict", "score", "message")
    assert [tuple(line[k] for k in key) for line in lines] == [tuple(line[k] for k in key) for line in sorted(lines_of(single), key=lambda x: x["id"])]
    shard_lines = {line["id"]: line for f in files for line in lines_of(f)}
    assert lines == [shard_lines[line["id"]] for line in lines]  # each line exactly as its shard wrote it
    # The batch's own summary, then where the result is.
    assert (
        "6 submissions: compile_error 6" in result.stdout
        and "points (of 100, scoring all_or_nothing): mean 0, median 0; 0: 6" in result.stdout
        and "slowest:" in result.stdout
    )
    assert f"merged 3 shard files: 6 submissions in {out}" in result.stdout
    with open(gradebook) as f:
        assert [row["id"] for row in csv.DictReader(f)] == [line["id"] for line in lines]

    again = tmp_path / "again.jsonl"  # any order of the shard files: the same bytes
    assert merged(files[::-1], again)[0] == 0
    assert again.read_bytes() == out.read_bytes()


def test_the_last_line_of_an_id_counts_as_in_the_batch(tmp_path):
    _, files = graded_in_shards(tmp_path)
    line = lines_of(files[0])[0]
    with open(files[0], "a") as f:  # a rerun appended a newer grading of the same submission
        f.write(json.dumps(line | {"verdict": "accepted", "score": 1.0}) + "\n")
    out = tmp_path / "results.jsonl"
    status, log = merged(files, out)
    assert status == 0 and "accepted 1" in log
    assert next(x for x in lines_of(out) if x["id"] == line["id"])["verdict"] == "accepted"
    assert len(lines_of(out)) == 6


@pytest.mark.parametrize(
    ("key", "what"), [("problem", "problems"), ("seed_id", "seeds"), ("grader_version", "grader versions"), ("spec_sha256", "problem packages")]
)
def test_shards_of_different_gradings_are_refused(tmp_path, key, what):
    _, files = graded_in_shards(tmp_path)
    lines = lines_of(files[1])
    lines[0][key] = "something-else"
    files[1].write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "results.jsonl"
    with pytest.raises(UsageError, match=f"different {what}: {files[1]}:1 has {key} 'something-else' but {files[0]}:1 has"):
        merged(files, out)
    assert not out.exists()


def test_shards_graded_with_different_secret_seeds_are_refused_from_the_command_line(tmp_path):
    folder = syntax_errors(tmp_path / "class", 6)
    files = [tmp_path / "shard-0.jsonl", tmp_path / "shard-1.jsonl"]
    for index, seed in enumerate(["one-secret", "another-secret"]):
        args = parse_args([str(folder), "--shard", f"{index}/2", "--out", str(files[index]), "--seed", seed])
        assert run(args, Stop(), io.StringIO()) == 0
    out = tmp_path / "results.jsonl"
    result = run_grader("merge", *map(str, files), "--out", str(out))
    assert result.returncode == 2 and "grader merge: different seeds" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_a_submission_in_two_files_is_refused_naming_it(tmp_path):
    _, files = graded_in_shards(tmp_path)
    copy = tmp_path / "copy.jsonl"
    copy.write_text(files[0].read_text())
    first = lines_of(files[0])[0]["id"]
    with pytest.raises(UsageError, match=f"submission '{first}' is in two files \\({files[0]}:1 and {copy}:1\\)"):
        merged([*files, copy], tmp_path / "results.jsonl")
    with pytest.raises(UsageError, match="is given twice"):
        merged([files[0], files[0]], tmp_path / "results.jsonl")
    with pytest.raises(UsageError, match="is one of the shard files"):
        merged(files, files[0])


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"id": "x", "verdict": "accep', "not a JSON line"),
        ("[1, 2]", "not a result of the grader"),
        ('{"verdict": "accepted", "score": 1}', "not a result of the grader (missing or invalid: id, problem, seed_id, grader_version, spec_sha256)"),
    ],
)
def test_a_malformed_line_is_refused_with_its_file_and_line(tmp_path, bad, message):
    _, files = graded_in_shards(tmp_path)
    count = len(lines_of(files[2]))
    with open(files[2], "a") as f:
        f.write(bad + "\n")
    out = tmp_path / "results.jsonl"
    with pytest.raises(UsageError, match="^" + re.escape(f"{files[2]}:{count + 1}: {message}")):
        merged(files, out)
    assert not out.exists()


def test_a_line_with_a_wrong_verdict_or_score_is_refused(tmp_path):
    _, files = graded_in_shards(tmp_path)
    line = lines_of(files[0])[0]
    files[0].write_text(json.dumps(line | {"verdict": "great", "score": "1"}) + "\n")
    with pytest.raises(UsageError, match=f"{files[0]}:1: not a result of the grader \\(missing or invalid: verdict, score\\)"):
        merged(files, tmp_path / "results.jsonl")


def test_a_grader_error_is_reported_with_exit_status_2(tmp_path):
    _, files = graded_in_shards(tmp_path)
    line = lines_of(files[1])[0]
    with open(files[1], "a") as f:
        f.write(json.dumps(line | {"verdict": "grader_error"}) + "\n")
    status, log = merged(files, tmp_path / "results.jsonl")
    assert status == 2 and f"grader_error for 1 submissions ({line['id']})" in log and "rerun the batch of their shard" in log
    assert (tmp_path / "results.jsonl").exists()  # the merge is written all the same


def test_a_missing_shard_file_is_a_usage_error(tmp_path):
    result = run_grader("merge", str(tmp_path / "shard-9.jsonl"), "--out", str(tmp_path / "results.jsonl"))
    assert result.returncode == 2 and "grader merge: no such file:" in result.stderr and "Traceback" not in result.stderr
