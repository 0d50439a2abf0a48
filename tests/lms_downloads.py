"""Realistic LMS downloads made from the example submissions: a Canvas download (flat names, a late
file, a resubmission, a notebook, a student's zip, an archive the grader does not open, a text
entry, junk) and a Moodle download (a folder per student, `NAME (1).py`, two files that cannot be
told apart, an online text, junk), each as a folder and as the .zip the LMS hands over.

Each maker returns what every student's row must say: id -> (name, verdict, what the row's message
or the report's notes hold)."""

import json
import re
import zipfile
from pathlib import Path

from tests.grading import SUBMISSIONS

ACCEPTED = SUBMISSIONS / "accepted"


def example(name: str) -> str:
    return (SUBMISSIONS / f"{name}.py").read_text(encoding="utf-8-sig")


def near_copy(source: str) -> str:
    """What a student who copied does to hide it: other names, other layout, a comment of their own."""
    for old, new in [
        ("layer_norm", "norm"),
        ("gelu", "act"),
        ("softmax", "probs"),
        ("attention", "attend"),
        ("scores", "s"),
        ("hidden", "h"),
        ("d_head", "hd"),
    ]:
        source = re.sub(rf"\b{old}\b", new, source)
    return "# my own work, written from scratch\n" + source.replace("    ", "  ").replace('"""', "# ", 1).split('"""', 1)[-1]


def notebook(source: str, magics: bool = True) -> str:
    """A Jupyter notebook (format 4) holding `source` in a code cell, after a Markdown cell and a cell of IPython lines."""
    cells = [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Homework: the tied-head MLM forward pass\n"]},
        {
            "cell_type": "code",
            "id": "setup",
            "metadata": {},
            "execution_count": 1,
            "outputs": [],
            "source": ["%matplotlib inline\n", "!pip install torch\n", "import torch\n"] if magics else ["import torch\n"],
        },
        {"cell_type": "code", "id": "solution", "metadata": {}, "execution_count": 2, "outputs": [], "source": source.splitlines(keepends=True)},
        {"cell_type": "code", "id": "help", "metadata": {}, "execution_count": 3, "outputs": [], "source": ["mlm_forward_tied?\n"] if magics else []},
    ]
    return json.dumps(
        {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}}, "nbformat": 4, "nbformat_minor": 5}, indent=1
    )


def student_zip(inner: dict[str, str]) -> bytes:
    """A zip a student made of their work (with the folder macOS's Finder adds)."""
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in inner.items():
            zf.writestr(name, text)
        zf.writestr("__MACOSX/hw/._solution.py", b"\x00\x05\x16\x07")
    return buffer.getvalue()


def write_tree(folder: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def zipped(folder: Path, target: Path) -> Path:
    """The folder as the LMS's zip: its entries at the top of the archive."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder).as_posix())
    return target


def canvas_files() -> tuple[dict[str, str | bytes], dict[str, tuple[str, str, str]]]:
    runtime = example("accepted/typed_with_dataclass").replace("w_emb[input_ids]", "w_emb[input_ids.float()]", 1)
    assert runtime != example("accepted/typed_with_dataclass")
    files: dict[str, str | bytes] = {
        "smithbob_1001_5001_solution.py": example("accepted/plain_helpers"),
        "doejane_LATE_1002_5002_solution.py": near_copy(example("accepted/plain_helpers")),
        "leeann_1003_5003_solution.py": example("compile_error/syntax_error"),  # the first upload
        "leeann_1003_5010_solution-1.py": example("accepted/einsum_everywhere"),  # uploaded again: Canvas renamed it
        "kimmin_1004_5004_solution.ipynb": notebook(example("accepted/loops_over_heads")),
        "parkjo_1005_5005_work.zip": student_zip({"hw/solution.py": example("accepted/flat_rows_var_mean"), "hw/notes.md": "my notes\n"}),
        "nguyenan_1006_5006_solution.rar": b"Rar!\x1a\x07\x00",
        "garciaeva_LATE_1007_text.html": "<p>I could not finish</p>\n",
        "chenli_1008_5008_solution.py": runtime,
        "notes.txt": "grading notes of the TA\n",
        "__MACOSX/._smithbob_1001_5001_solution.py": b"\x00\x05",
    }
    expected = {
        "1001": ("smithbob", "accepted", ""),
        "1002": ("doejane", "accepted", ""),
        "1003": ("leeann", "accepted", "solution-1.py was graded, the newest of 2 files"),
        "1004": ("kimmin", "accepted", "graded from its 3 code cells"),
        "1005": ("parkjo", "accepted", ""),
        "1006": ("nguyenan", "invalid_submission", "solution.rar is an archive the grader does not open"),
        "1007": ("garciaeva", "invalid_submission", "a text entry typed into Canvas"),
        "1008": ("chenli", "runtime_error", "IndexError: tensors used as indices must be long"),
        "notes": ("", "invalid_submission", "its name is not one Canvas gives a student's file"),
    }
    return files, expected


def moodle_files() -> tuple[dict[str, str | bytes], dict[str, tuple[str, str, str]]]:
    files: dict[str, str | bytes] = {
        "Bob Smith_201_assignsubmission_file/solution.py": example("accepted/plain_helpers"),
        "Jane Doe_202_assignsubmission_file/mlm.py": near_copy(example("accepted/plain_helpers")),
        "Ann Lee_203_assignsubmission_file/solution.py": example("compile_error/syntax_error"),
        "Ann Lee_203_assignsubmission_file/solution (1).py": example("accepted/einsum_everywhere"),  # uploaded again
        "Min Kim_204_assignsubmission_file/homework/solution.ipynb": notebook(example("accepted/loops_over_heads")),
        "Jo Park_205_assignsubmission_file/work.zip": student_zip({"hw/solution.py": example("accepted/flat_rows_var_mean")}),
        "An Nguyen_206_assignsubmission_file/a.py": example("accepted/port_annotated_transformer"),
        "An Nguyen_206_assignsubmission_file/b.py": example("accepted/dataclass_default_factory"),
        "Eva Garcia_207_assignsubmission_onlinetext/onlinetext.html": "<p>see my file</p>\n",
        "grades.csv": "Identifier,Grade\n",
    }
    expected = {
        "201": ("Bob Smith", "accepted", ""),
        "202": ("Jane Doe", "accepted", ""),
        "203": ("Ann Lee", "accepted", "solution (1).py was graded, the newest of 2 files"),
        "204": ("Min Kim", "accepted", "graded from its 3 code cells"),
        "205": ("Jo Park", "accepted", ""),
        "206": ("An Nguyen", "invalid_submission", "Several Python files were submitted (a.py, b.py)"),
        "207": ("Eva Garcia", "invalid_submission", "an online text typed into Moodle"),
        "grades": ("", "invalid_submission", "its name is not one Moodle gives a student's folder or file"),
    }
    return files, expected
