"""Course staff's LMS downloads (docs/lms.md): Canvas's and Moodle's, each as its .zip and as the folder
it unzips to, graded with one command: every student once under the LMS's id, the newest file where
there are several, notebooks graded, every other entry named with its reason and 0 points; the
gradebook rebuilt from the whole results file, in the LMSs' import formats; opening a zip safely."""

import csv
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.batch import archive
from grader.batch.archive import Workspace
from grader.batch.discovery import discover
from grader.batch.exits import UsageError
from grader.batch.gradebook import Counting, write_csv
from grader.batch.lms import canvas_name, moodle_file, moodle_folder
from grader.batch.store import message_line
from grader.spec import Scoring
from tests.grading import ROOT, run_grader
from tests.lms_downloads import canvas_files, moodle_files, write_tree, zipped
from tests.test_batch import SECRET, lines_of, run_in_process

# --- the LMSs' names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "student", "who", "late", "order", "original", "kind"),
    [
        ("smithbob_1001_5001_solution.py", "1001", "smithbob", False, 5001, "solution.py", "file"),
        ("smithbob_LATE_1001_5010_solution-1.py", "1001", "smithbob", True, 5010, "solution-1.py", "file"),
        ("obrien_12_34_2024_hw_1.py", "12", "obrien", False, 34, "2024_hw_1.py", "file"),  # digits and _ in the file's own name
        ("anon_xY12z_77_solution.ipynb", "anon_xY12z", "", False, 77, "solution.ipynb", "file"),  # anonymous grading
        ("LATE_anon_xY12z_77_solution.py", "anon_xY12z", "", True, 77, "solution.py", "file"),
        ("smithbob_LATE_1001_text.html", "1001", "smithbob", True, 0, "smithbob_LATE_1001_text.html", "text"),
        ("smithbob_1001_link.html", "1001", "smithbob", False, 0, "smithbob_1001_link.html", "link"),
    ],
)
def test_canvas_file_names_give_the_student_id_name_lateness_and_upload_order(name, student, who, late, order, original, kind):
    named = canvas_name(name)
    assert named is not None
    assert (named.student, named.name, named.late, named.order, named.original, named.kind) == (student, who, late, order, original, kind)


def test_moodle_names_give_the_participant_number_and_full_name_in_both_download_modes():
    for folder in ("Bob Smith_201_assignsubmission_file", "Bob Smith_201_assignsubmission_file_"):  # Moodle 4.1 on; 3.1 to 4.0
        named = moodle_folder(folder)
        assert named is not None and (named.student, named.name, named.kind) == ("201", "Bob Smith", "file")
    flat = moodle_file("Bob Smith_201_assignsubmission_file_my solution (1).py")  # "download in folders" off
    assert flat is not None and (flat.student, flat.name, flat.original) == ("201", "Bob Smith", "my solution (1).py")
    assert moodle_folder("Eva Garcia_207_assignsubmission_onlinetext").kind == "onlinetext"
    assert canvas_name("notes.txt") is None and moodle_folder("alice") is None


# --- a download graded with one command ---------------------------------------------------------------


def tree_digest(path: Path) -> str:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return hashlib.sha256(b"".join(p.as_posix().encode() + p.read_bytes() for p in files)).hexdigest()


def unzipped(archive_path: Path, folder: Path) -> Path:
    with zipfile.ZipFile(archive_path) as zf:
        zf.extractall(folder)
    return folder


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_an_lms_download_as_zip_then_as_folder_grades_every_student_once_under_the_lms_id(tmp_path, lms):
    files, expected = (canvas_files if lms == "canvas" else moodle_files)()
    download = zipped(write_tree(tmp_path / "made", files), tmp_path / f"{lms}-download.zip")
    before = tree_digest(download)
    out, grades, feedback, page = tmp_path / "R.jsonl", tmp_path / "G.csv", tmp_path / "feedback", tmp_path / "C.html"
    command = ["batch", str(download), "--out", str(out), "--csv", str(grades), "--feedback", str(feedback), "--points", "10"]
    result = run_grader(*command, "--class-report", str(page), "--jobs", "2", env=SECRET, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"a {lms.title()} download: {sum(1 for i in expected if i.isdigit())} students" in result.stdout
    assert tree_digest(download) == before  # the download is only read

    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(grades.read_text(encoding="utf-8")))}
    assert sorted(rows) == sorted(expected)  # every student once, under the LMS's id; every other entry too
    lines = {line["id"]: line for line in lines_of(out)}
    for student, (name, verdict, says) in expected.items():
        row = rows[student]
        assert (row["name"], row["verdict"], row["max_points"]) == (name, verdict, "10"), row
        assert row["points"] == ("10" if verdict == "accepted" else "0"), row
        told = row["message"] + " ".join(lines[student].get("notes") or [])
        assert says in told, (student, told)
        text = (feedback / f"{student}.txt").read_text(encoding="utf-8")
        if verdict != "invalid_submission":
            assert text.splitlines()[2].startswith(f"Points:     {row['points']} / 10"), text[:300]
        assert "isolation:" not in text and "bubblewrap" not in text  # the sandbox's description is for staff
    notebook_student = "1004" if lms == "canvas" else "204"
    assert "not run (IPython, not Python)" in lines[notebook_student]["notes"][0]
    if lms == "canvas":
        assert rows["1002"]["late"] == "yes" and rows["1001"]["late"] == ""
        assert lines["1008"]["submission"] == f"{download}:chenli_1008_5008_solution.py"
        assert 'File "solution.py", line' in lines["1008"]["message"]  # the student's own file name, not Canvas's
    # the class page names the near-copy (a renamed, reformatted copy) and no other pair
    html = page.read_text(encoding="utf-8")
    copied = ("1001", "1002") if lms == "canvas" else ("201", "202")
    assert html.count('class="pair"') == 1 and f'data-a="{copied[0]}" data-b="{copied[1]}"' in html

    # The same download, unzipped by hand: the same students, ids and files: nothing is graded twice.
    folder = unzipped(download, tmp_path / "unzipped")
    before = tree_digest(folder)
    again = run_grader(*command[:1], str(folder), *command[2:], env=SECRET, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"skipped {len(expected)} submissions already graded" in again.stdout
    assert tree_digest(folder) == before


@pytest.mark.sandbox
def test_regrading_one_student_keeps_every_row_of_the_gradebook(tmp_path):
    files, expected = canvas_files()
    folder = write_tree(tmp_path / "download", {k: v for k, v in files.items() if k.startswith(("leeann", "nguyenan", "garciaeva", "notes"))})
    out, grades = tmp_path / "R.jsonl", tmp_path / "G.csv"
    # leeann's newest file replaced by one that does not compile: graded without a child, fast
    (folder / "leeann_1003_5010_solution-1.py").write_text("def mlm_forward_tied(:\n")
    status, text = run_in_process(str(folder), "--out", str(out), "--csv", str(grades), "--points", "10")
    assert status == 0, text
    assert sorted(row["id"] for row in csv.DictReader(grades.open())) == ["1003", "1006", "1007", "notes"]
    # staff grade a fixed file of that student on its own: the gradebook keeps every student
    newer = tmp_path / "fixed" / "leeann_1003_5011_solution-2.py"
    newer.parent.mkdir()
    newer.write_text("def mlm_forward_tied(x:\n")
    status, text = run_in_process(str(newer), "--out", str(out), "--csv", str(grades), "--points", "10")
    assert status == 0, text
    rows = {row["id"]: row for row in csv.DictReader(grades.open())}
    assert sorted(rows) == ["1003", "1006", "1007", "notes"] and "4 rows, every submission of the results file" in text
    assert lines_of(out)[-1]["submission"] == str(newer) and rows["1003"]["name"] == "leeann"
    # the download run again (for the LMS's gradebook): the regrade stays, the older file is not graded again
    graded = len(lines_of(out))
    status, text = run_in_process(str(folder), "--out", str(out), "--csv", str(grades), "--points", "10")
    assert status == 0, text
    assert "1003: kept its regrade" in text and len(lines_of(out)) == graded
    assert {row["id"]: row for row in csv.DictReader(grades.open())}["1003"]["message"] == rows["1003"]["message"]


# --- the gradebook's formats ---------------------------------------------------------------------------


def graded_lines() -> dict[str, dict]:
    traceback = (
        "case public_tiny failed (0 of 52 cases passed): raised during the call:\n"
        '  File "solution.py", line 36, in f\n    x = w[i]\n        ~^^^\n'
        "NameError: name 'x' is not defined"
    )
    return {
        "1001": {"id": "1001", "name": "smithbob", "verdict": "accepted", "message": "all 2 cases passed", "cases": [["basic", "passed", False]] * 2},
        "1002": {
            "id": "1002",
            "name": "doe, jane",
            "late": True,
            "verdict": "runtime_error",
            "message": traceback,
            "cases": [["basic", "runtime_error", False]] * 2,
        },
        "notes": {"id": "notes", "name": "", "verdict": "invalid_submission", "message": "notes.txt is not graded", "cases": [], "not_graded": "why"},
    }


def test_the_message_column_gives_the_exception_not_the_first_traceback_line():
    assert (
        message_line(graded_lines()["1002"]["message"])
        == "case public_tiny failed (0 of 52 cases passed): raised during the call: NameError: name 'x' is not defined"
    )
    assert (
        message_line("1 use of forbidden APIs (see the rules):\n  line 3:5: `torch.softmax`: forbidden")
        == "1 use of forbidden APIs (see the rules): line 3:5: `torch.softmax`: forbidden"
    )


def test_the_gradebook_is_written_in_canvas_and_moodles_own_import_formats(tmp_path):
    path, counting = tmp_path / "g.csv", Counting(Scoring(), 10)
    left_out = write_csv(path, graded_lines(), counting, "canvas", "MLM forward (4242)")
    rows = list(csv.reader(path.open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "MLM forward (4242)"]  # Canvas's importer's header
    assert rows[1:] == [["smithbob", "1001", "", "", "", "10"], ["doe, jane", "1002", "", "", "", "0"]] and left_out == ["notes"]

    left_out = write_csv(path, graded_lines(), counting, "moodle", when="2030-01-02 03:04:05")
    rows = list(csv.DictReader(path.open()))
    assert list(rows[0]) == ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)", "Feedback comments"]
    assert [(r["Identifier"], r["Grade"], r["Maximum Grade"], r["Last modified (grade)"]) for r in rows] == [
        ("Participant 1001", "10", "10", "2030-01-02 03:04:05"),
        ("Participant 1002", "0", "10", "2030-01-02 03:04:05"),
    ]
    assert rows[1]["Feedback comments"].startswith("0 / 10 points: case public_tiny failed") and "NameError" in rows[1]["Feedback comments"]
    assert left_out == ["notes"]

    write_csv(path, graded_lines(), counting)
    rows = list(csv.DictReader(path.open()))
    assert list(rows[0]) == ["id", "name", "verdict", "points", "max_points", "cases_passed", "cases", "late", "message"]
    assert [r["late"] for r in rows] == ["", "yes", ""]


@pytest.mark.sandbox
def test_a_canvas_gradebook_needs_the_assignments_column_title(tmp_path):
    result = run_grader("batch", str(tmp_path), "--out", str(tmp_path / "r.jsonl"), "--csv", str(tmp_path / "g.csv"), "--gradebook", "canvas")
    assert result.returncode == 2 and "--gradebook canvas needs --assignment 'TITLE (ID)'" in result.stderr


# --- opening a zip safely ----------------------------------------------------------------------------------


def hostile_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("smithbob_1001_5001_solution.py", "def mlm_forward_tied(:\n")
        zf.writestr("../../escaped_1002_5002_solution.py", "print('out')\n")
        zf.writestr("/abs/evil_1003_5003_solution.py", "print('abs')\n")
        link = zipfile.ZipInfo("linked_1004_5004_solution.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
        zf.writestr("bomb_1005_5005_solution.py", b"#" * (archive.MEMBER_BYTES + 1))  # deflates to a few KiB
        zf.writestr("locked_1006_5006_solution.py", "print('locked')\n")
        zf.writestr("..\\..\\windows_1007_5007_solution.py", "print('backslashes')\n")  # a Windows tool's separators
        zf.writestr("smithbob_1001_5001_solution.py", "second member of one name\n")
    path.write_bytes(encrypted(path.read_bytes(), "locked_1006_5006_solution.py"))
    return path


def encrypted(data: bytes, name: str) -> bytes:
    """The zip with `name` flagged encrypted (general-purpose bit 0) in its local and central headers,
    as a zip tool's password would leave it: zipfile itself cannot write an encrypted member."""
    out = bytearray(data)
    for signature, flags_at, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        start = out.find(signature)
        while start != -1:
            if out[start + name_at : start + name_at + len(name)] == name.encode():
                out[start + flags_at] |= 0x1
            start = out.find(signature, start + 1)
    return bytes(out)


def test_a_hostile_zip_writes_nothing_outside_its_private_folder_and_names_each_refusal(tmp_path):
    download = hostile_zip(tmp_path / "download.zip")
    assert download.stat().st_size < 1 << 20
    before = tree_digest(download)
    with Workspace() as workspace:
        found, notes = discover([download], [], workspace)
        private = workspace.folder
        assert private is not None and stat.S_IMODE(private.stat().st_mode) == 0o700
        written = [p for p in private.rglob("*") if p.is_file()]
        assert all(p.stat().st_size <= archive.MEMBER_BYTES for p in written)
        assert not any(p.is_symlink() for p in private.rglob("*"))
    assert not private.exists()  # removed at the end
    assert tree_digest(download) == before  # the download is only read
    for escaped in ("escaped_1002_5002_solution.py", "windows_1007_5007_solution.py"):  # where ../../ from the private folder leads
        assert not (private.parent / escaped).exists() and not (tmp_path / escaped).exists()
    assert not Path("/abs").exists()
    why = {s.id: s.not_graded for s in found}
    assert why["1001"] == "" and "a second member of that name" in " ".join(why.values())
    for unwritten in ("unwritten-1", "unwritten-2", "unwritten-3"):
        assert "would leave the download's folder" in why[unwritten]
    assert "symbolic link" in why["1004"] and f"more than the {archive.MEMBER_BYTES >> 20} MiB" in why["1005"]
    assert "locked_1006_5006_solution.py is encrypted" in why["1006"]


def test_a_zip_bomb_past_the_batchs_budget_stops_before_grading(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "TOTAL_BYTES", 1 << 20)
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(3):
            zf.writestr(f"student{i}_{100 + i}_{200 + i}_solution.py", b"#" * (600 << 10))
    with pytest.raises(Exception, match="expands to more than 1 MiB"):
        discover([download], [], Workspace())


def test_a_download_of_more_members_than_the_grader_opens_stops_before_grading(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MEMBERS", 3)
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as zf:
        for i in range(4):
            zf.writestr(f"student{i}_{100 + i}_{200 + i}_notes.txt", b"")
    with pytest.raises(UsageError, match="holds 4 members: more than the 3 the grader opens"):
        discover([download], [], Workspace())


def test_a_students_zip_is_opened_and_a_zip_inside_it_is_not(tmp_path):
    def zip_of(files: dict[str, bytes]) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, content in files.items():
                zf.writestr(name, content)
        return buffer.getvalue()

    inner = zip_of({"solution.py": b"print('inside a zip inside a zip')\n"})
    download = tmp_path / "download.zip"
    download.write_bytes(zip_of({"parkjo_1005_5005_work.zip": zip_of({"hw/inner.zip": inner})}))
    with Workspace() as workspace:
        found, _ = discover([download], [], workspace)
        assert workspace.folder is not None
        written = sorted(p.name for p in workspace.folder.rglob("*") if p.is_file())
    assert written == ["inner.zip", "parkjo_1005_5005_work.zip"]  # the inner zip is a file, never opened
    [student] = found
    assert student.id == "1005" and "holds no Python file or notebook (a zip inside a zip is not opened)" in student.not_graded


def test_an_archive_is_never_graded_as_python(tmp_path):
    tarball = tmp_path / "class.tar.gz"
    tarball.write_bytes(b"\x1f\x8b\x08\x00")
    notzip = tmp_path / "broken.zip"
    notzip.write_bytes(b"PK\x03\x04 not really")
    found, _ = discover([tarball], [], Workspace())
    assert "an archive of a kind the grader does not open" in found[0].not_graded
    with pytest.raises(Exception, match="is not a zip file that can be read"):
        discover([notzip], [], Workspace())


# --- standard output and the grader's own warnings ----------------------------------------------------------


@pytest.mark.sandbox
def test_a_closed_standard_output_is_named_and_the_batch_exits_quietly(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    for i in range(6):
        (folder / f"student{i}.py").write_text("def mlm_forward_tied(:\n")
    out = tmp_path / "results.jsonl"
    reader, writer = os.pipe()
    os.close(reader)  # as `| head` does once it has its lines
    done = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out)],
        cwd=ROOT,
        stdout=writer,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | SECRET,
    )
    os.close(writer)
    assert done.returncode == 141, done.stderr
    assert "standard output was closed before the batch ended" in done.stderr and "Traceback" not in done.stderr
    assert "cannot write" not in done.stderr and "Broken pipe" not in done.stderr
    assert all(json.loads(line)["verdict"] == "compile_error" for line in out.read_text().splitlines())


@pytest.mark.sandbox
def test_no_warning_of_the_graders_own_reaches_the_output(tmp_path, monkeypatch, capsys):
    import warnings

    from grader import cli
    from grader.batch import summary

    real = summary.summary

    def warns(*args, **kwargs):
        warnings.warn("a warning of the grader's own code", UserWarning, stacklevel=1)
        return real(*args, **kwargs)

    monkeypatch.setattr(summary, "summary", warns)
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "student.py").write_text("def mlm_forward_tied(:\n")
    assert cli.main(["batch", str(folder), "--out", str(tmp_path / "r.jsonl"), "--allow-default-seed"]) == 0
    printed = capsys.readouterr()
    assert "1 submissions: compile_error 1" in printed.out
    assert "UserWarning" not in printed.out + printed.err and "grader's own code" not in printed.out + printed.err
