"""Jupyter notebooks as submissions (grader/notebook.py, docs/lms.md): graded from their code cells,
IPython's lines not run and said so, every message naming the cell and the line within it."""

import json

import pytest

from grader.judge import Rejection, read_notebook
from grader.layout import choose_file
from grader.notebook import convert
from grader.results import Verdict
from tests.grading import run_grader
from tests.lms_downloads import example, notebook


def cells(*sources: str, markdown_first: bool = True) -> bytes:
    made = [{"cell_type": "markdown", "metadata": {}, "source": "# My work"}] if markdown_first else []
    made += [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source} for source in sources]
    return json.dumps({"cells": made, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}).encode()  # 4.4: cells without ids


def test_ipython_lines_are_not_run_and_each_is_named_by_cell_and_line():
    converted = convert(
        cells("%matplotlib inline\nimport torch\n!pip install numpy\nfiles = !ls\n", "torch.softmax?\nx = 1", "%%bash\necho hi", "%%time\ny = 2"), "hw.ipynb"
    )
    compile(converted.source, "hw.ipynb", "exec")  # what remains is Python
    assert [c.number for c in converted.cells] == [2, 3, 4, 5]  # the Markdown cell is counted, not joined
    said = converted.summary()
    for expected in (
        "cell 2, line 1: `%matplotlib inline` (an IPython magic)",
        "cell 2, line 3: `!pip install numpy` (a shell command)",
        "cell 2, line 4: `files = !ls` (a shell command)",
        "cell 3, line 1: `torch.softmax?` (an IPython help request)",
        "cell 4, line 1: `%%bash` (an IPython cell magic, and the whole cell)",
        "cell 5, line 1: `%%time` (an IPython cell magic)",
    ):
        assert expected in said
    assert "echo hi" not in converted.source.replace("# echo hi", "") and "\ny = 2\n" in converted.source  # %%time's body runs


def test_no_shell_line_or_magic_of_a_notebook_is_left_as_code_that_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    converted = convert(
        cells(
            "!touch shell_ran\nfiles = !touch assigned_ran\n%system touch magic_ran\n%run -i made_by_run.py\nx = 1",
            "%%bash\ntouch cell_ran",
            "%%writefile written.py\nprint('written')",
            "%%capture\n!touch captured_ran",
        ),
        "hw.ipynb",
    )
    exec(compile(converted.source, "hw.ipynb", "exec"), {})  # the joined file, run as the grader runs it: plain Python
    assert [p.name for p in tmp_path.iterdir()] == []  # nothing of the notebook's shell or magics ran
    for line in converted.source.splitlines():  # each such line is only a comment now
        if "touch" in line or "%" in line or "written" in line:
            assert line.lstrip().startswith(("pass  # not run (", "# ")), line


def test_messages_about_the_joined_file_name_the_cell_and_line():
    converted = convert(cells("import torch", "def f(x):\n    return x\n"), "hw.ipynb")
    assert converted.relocate('  File "hw.ipynb", line 3, in f') == '  File "hw.ipynb", cell 3, line 2, in f'
    assert converted.relocate("forbidden (line 2 of hw.ipynb)") == "forbidden (cell 3, line 1 of hw.ipynb)"
    assert converted.relocate("1 use:\n  line 3:12: `torch.softmax`") == "1 use:\n  cell 3, line 2:12: `torch.softmax`"


def test_a_syntax_error_names_its_cell_and_a_notebook_without_code_is_invalid(tmp_path):
    path = tmp_path / "hw.ipynb"
    path.write_bytes(cells("import torch", "def mlm_forward_tied(:\n    pass"))
    with pytest.raises(Rejection) as refused:
        read_notebook(path, 1 << 16)
    assert refused.value.verdict == Verdict.COMPILE_ERROR and "hw.ipynb: syntax error at cell 3, line 1, column 22" in refused.value.message
    path.write_bytes(
        json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": "only prose"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    )
    with pytest.raises(Rejection) as refused:
        read_notebook(path, 1 << 16)
    assert refused.value.verdict == Verdict.INVALID_SUBMISSION and "has no code cell" in refused.value.message
    path.write_bytes(b'{"not": "a notebook"')
    with pytest.raises(Rejection, match="not a Jupyter notebook that nbformat can read"):
        read_notebook(path, 1 << 16)


def test_a_future_import_in_a_later_cell_holds_as_in_jupyter():
    converted = convert(cells("%matplotlib inline", "from __future__ import annotations\nx: undefined_name = 1"), "hw.ipynb")
    exec(compile(converted.source, "hw.ipynb", "exec"), {})  # the annotation is never evaluated, as in Jupyter
    assert converted.where(3) == "cell 3, line 1"


def test_the_platform_wrappers_grade_a_notebook_when_there_is_no_solution_py(tmp_path):
    (tmp_path / "solution.ipynb").write_text("{}")
    assert choose_file(tmp_path) == (tmp_path / "solution.ipynb", "")
    (tmp_path / "solution.py").write_text("x = 1\n")
    assert choose_file(tmp_path) == (tmp_path / "solution.py", "")


@pytest.mark.sandbox
def test_python_m_grader_grades_a_notebook_and_its_traceback_names_the_cell(tmp_path):
    path = tmp_path / "solution.ipynb"
    path.write_text(notebook(example("runtime_error/raises_in_call")))
    report = json.loads(run_grader(str(path), "--json", "--public").stdout)
    assert report["verdict"] == "runtime_error"
    assert 'File "solution.ipynb", cell 3, line 36, in mlm_forward_tied' in report["message"]
    assert report["notes"][0].startswith("solution.ipynb was graded from its 3 code cells (cells 2, 3, 4 of 4, counting Markdown cells)")
    assert "`%matplotlib inline` (an IPython magic)" in report["notes"][0]
