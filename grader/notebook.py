"""A Jupyter notebook as a submission: its code cells joined into one Python file, with IPython's
magics and shell lines neutralised, and each line of that file traced back to its cell.

The notebook is read with nbformat, the format's own library (any version it converts to 4).
Markdown and raw cells are left out; each code cell's lines follow the one before's, so that line
L of the joined file is one line of one cell. A cell that is valid Python is taken as it is. A cell
that is not has its IPython lines replaced, each by a `pass` with a comment (its indentation kept,
so the line numbers stay those of the cell):

- `%line_magic ...` and `!shell command` lines, and `x = %magic` or `x = !command` assignments;
- help requests: `?name`, `name?`, `name??`;
- a cell magic `%%name`: its first line; the rest of the cell too unless the magic runs its body as
  Python (`%%time`, `%%timeit`, `%%capture`, `%%prun`).

The grader checks and runs the joined file; `Converted.relocate` rewrites a message about its
lines (a syntax error, a traceback, the static check's findings, the runtime guard's) to name the
cell and the line within it. Cells are numbered from the top of the notebook, Markdown cells
included, as a reader counts them.
"""

import ast
import re
import warnings
from dataclasses import dataclass, field

NOTEBOOK_SUFFIX = ".ipynb"
NOTEBOOK_BYTES = 32 << 20  # a notebook keeps its outputs (plots as base64): far more than its code
PYTHON_BODY_MAGICS = frozenset({"time", "timeit", "capture", "prun"})  # %%name whose body is Python

_LINE_MAGIC = re.compile(r"\s*(?:[%!]|[\w.,\s\[\]()]+=\s*[%!])")  # %who, !ls, files = !ls
_HELP = re.compile(r"\s*(?:\?{1,2}\s*[\w.]+|[\w.]+\s*\?{1,2})\s*$")  # ?len, torch.softmax??
_CELL_MAGIC = re.compile(r"\s*%%(\w+)")


class NotebookError(Exception):
    """The file is not a notebook nbformat can read, or (no_code) it holds no code to grade."""

    def __init__(self, message: str, no_code: bool = False) -> None:
        super().__init__(message)
        self.no_code = no_code


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based, among all the notebook's cells
    first: int  # the joined file's line of the cell's first line
    count: int  # how many lines of the joined file are the cell's


@dataclass
class Converted:
    """The joined code of a notebook's code cells, and where each of its lines came from."""

    name: str  # the notebook's file name, as messages name it
    source: str
    cells: list[Cell]
    total_cells: int
    neutralised: list[str] = field(default_factory=list)  # "cell 2, line 1: `%matplotlib inline` (an IPython magic)"

    def where(self, line: int) -> str:
        """`cell C, line L` for line `line` of the joined file (the file's own line past the last cell)."""
        for cell in self.cells:
            if cell.first <= line < cell.first + cell.count:
                return f"cell {cell.number}, line {line - cell.first + 1}"
        return f"line {line}"

    def relocate(self, text: str) -> str:
        """A message about the joined file with each of its line numbers given as cell and line:
        `File "NAME", line 12` (a traceback), `line 12 of NAME` (the runtime guard), `line 12:5:` at
        the start of a line (the static check's findings), `at line 12, column 5` (a syntax error)."""
        name = re.escape(self.name)
        text = re.sub(rf'(File "{name}", )line (\d+)', lambda m: m[1] + self.where(int(m[2])), text)
        text = re.sub(rf"\bline (\d+)( of {name})", lambda m: self.where(int(m[1])) + m[2], text)
        text = re.sub(r"(?m)^(\s*)line (\d+)(:\d+)?:", lambda m: f"{m[1]}{self.where(int(m[2]))}{m[3] or ''}:", text)
        return re.sub(r"\bat line (\d+), column", lambda m: f"at {self.where(int(m[1]))}, column", text)

    def summary(self) -> str:
        """What the report says about how the notebook was read."""
        numbers = ", ".join(str(cell.number) for cell in self.cells)
        said = (
            f"{self.name} was graded from its {len(self.cells)} code cell{'s' if len(self.cells) != 1 else ''} "
            f"(cell{'s' if len(self.cells) != 1 else ''} {numbers} of {self.total_cells}, counting Markdown cells), run in order as one file"
        )
        if self.neutralised:
            said += "; not run (IPython, not Python): " + "; ".join(self.neutralised)
        return said


def _neutralised(line: str, why: str) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    return f"{indent}pass  # not run ({why}): {line.strip()}"


def _shown(line: str) -> str:
    text = line.strip()
    return text if len(text) <= 60 else text[:57] + "..."


def _python_cell(source: str, number: int) -> tuple[list[str], list[str]]:
    """The cell's lines as Python, and what was neutralised in it (nothing when it parses)."""
    lines = source.splitlines()
    try:
        ast.parse(source)
        return lines, []
    except SyntaxError:
        pass
    except (ValueError, RecursionError, MemoryError):  # NUL bytes, pathological nesting: the grader's parse says so
        return lines, []
    said: list[str] = []
    result = list(lines)
    magic = _CELL_MAGIC.match(lines[0]) if lines else None
    if magic:
        whole = magic[1] not in PYTHON_BODY_MAGICS
        result[0] = _neutralised(lines[0], "an IPython cell magic")
        said.append(f"cell {number}, line 1: `{_shown(lines[0])}` (an IPython cell magic{', and the whole cell' if whole and len(lines) > 1 else ''})")
        if whole:  # %%bash, %%writefile...: the body is not Python; each line becomes a comment
            return [result[0], *(f"# {line}" if line.strip() else line for line in lines[1:])], said
    for index, line in enumerate(lines):
        if index == 0 and magic:
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _LINE_MAGIC.match(line) and not _parses(line.strip()):
            kind = "a shell command" if stripped.startswith("!") or re.match(r"[^%!]*=\s*!", stripped) else "an IPython magic"
        elif _HELP.match(line):
            kind = "an IPython help request"
        else:
            continue
        result[index] = _neutralised(line, kind)
        said.append(f"cell {number}, line {index + 1}: `{_shown(line)}` ({kind})")
    return result, said


def _parses(line: str) -> bool:
    try:
        ast.parse(line)
        return True
    except (SyntaxError, ValueError):
        return False


def convert(data: bytes, name: str) -> Converted:
    """The notebook's code cells as one Python file (see the module's docstring); NotebookError
    says why there is none."""
    import nbformat  # only a notebook needs it

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookError(f"the notebook is not valid UTF-8 (byte {data[error.start]:#04x} at offset {error.start})") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbformat warns about cells without ids: nothing for the grader's output
        try:
            notebook = nbformat.reads(text, as_version=4, capture_validation_error={})
        except Exception as error:  # noqa: BLE001 - not JSON, not a notebook's shape, a version nbformat cannot convert
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise NotebookError(f"not a Jupyter notebook that nbformat can read ({first[:200]}); save it again from Jupyter, or submit a .py file") from None
    cells = list(notebook.get("cells") or [])
    code: list[tuple[int, list[str]]] = []
    neutralised: list[str] = []
    futures: list[str] = []
    for number, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source") or ""
        source = "".join(source) if isinstance(source, list) else str(source)
        lines, said = _python_cell(source, number)
        code.append((number, _without_futures(lines, futures)))
        neutralised += said
    if not code:
        raise NotebookError(f"the notebook has no code cell ({len(cells)} cells, none of them code): write your solution in a code cell", no_code=True)
    # `from __future__ import ...` must begin a file; in Jupyter it begins its cell and holds from then
    # on: each such import is moved to one first line of the joined file (its own line becomes a pass).
    joined = [f"from __future__ import {', '.join(dict.fromkeys(futures))}"] if futures else []
    spans = []
    for number, lines in code:
        spans.append(Cell(number, len(joined) + 1, max(1, len(lines))))
        joined += lines or [""]
    return Converted(name, "\n".join(joined) + "\n", spans, len(cells), neutralised)


_FUTURE = re.compile(r"\s*from\s+__future__\s+import\s+\(?\s*([\w\s,]+?)\s*\)?\s*(?:#.*)?$")


def _without_futures(lines: list[str], futures: list[str]) -> list[str]:
    """The cell's lines with each one-line `from __future__ import` replaced by a pass, its names
    added to `futures`."""
    result = []
    for line in lines:
        match = _FUTURE.fullmatch(line)
        if match and not line.startswith((" ", "\t")):
            futures += [name.strip() for name in match[1].split(",") if name.strip()]
            result.append(f"pass  # {line.strip()}: moved to the first line")
        else:
            result.append(line)
    return result
