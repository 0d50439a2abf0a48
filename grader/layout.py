"""Which file of a submission folder is graded, and what a class folder holds.

Used by `python -m grader batch` (grader/batch/discovery.py) and by the platform wrappers
(deploy/platform_grade.py), so that a folder is read the same way everywhere. Only the standard
library: the wrappers import this module even where the grader's dependencies do not import.

A class folder's entries are its files and folders; names starting with "." and the folders that
archivers and Python leave behind (__MACOSX, __pycache__) are ignored, and the batch says so. Every
other entry is one student's submission:

- a file `ID.py` or `ID.ipynb` (a Jupyter notebook) is graded (id = the name without .py);
- any other file (`bob.PY`, `carol.py.txt`, `notes.txt`) is not graded, and says why;
- a folder `ID/` is graded through its `solution.py`, else its `solution.ipynb`, else its only
  `.py` or `.ipynb` file; none or several is not graded, and says why (what the folder holds).

An LMS's download (Canvas, Moodle) is read by grader/batch/lms.py, which falls back on these rules.
"""

from dataclasses import dataclass
from pathlib import Path

SOLUTION = "solution.py"
NOTEBOOK = "solution.ipynb"
GRADED_SUFFIXES = (".py", ".ipynb")  # Python, and Jupyter notebooks (their code cells: grader/notebook.py)
LEFT_BY_TOOLS = ("__MACOSX", "__pycache__")  # a zip made on macOS; Python's bytecode cache


def ignored(name: str) -> bool:
    return name.startswith(".") or name in LEFT_BY_TOOLS


def _listing(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def graded_name(name: str) -> bool:
    """A file's name the grader grades: ending in .py, or .ipynb for a notebook (lower-case)."""
    return name.endswith(GRADED_SUFFIXES)


def choose_file(folder: Path) -> tuple[Path | None, str]:
    """(the file to grade, "") or (None, what the student must change): the folder's solution.py,
    else its solution.ipynb, else its only .py or .ipynb file."""
    for name in (SOLUTION, NOTEBOOK):
        if (folder / name).is_file():
            return folder / name, ""
    try:
        names = sorted(p.name for p in folder.iterdir() if not ignored(p.name))
    except OSError as error:
        return None, f"The submission folder could not be read ({error.strerror or error}); submit your solution as one file named {SOLUTION}."
    found = [name for name in names if graded_name(name) and (folder / name).is_file()]
    if len(found) == 1:
        return folder / found[0], ""
    if found:
        return None, f"Several Python files were submitted ({_listing(found)}): submit exactly one, named {SOLUTION} (or {NOTEBOOK})."
    if not names:
        return None, f"No Python file was submitted (the submission is empty): submit your solution as one file named {SOLUTION}."
    upper = [name for name in names if name.lower().endswith(GRADED_SUFFIXES)]
    if upper:  # Solution.PY: a Python file, but not by its name
        return None, f"No file ending in .py was submitted (found: {_listing(names)}): rename {upper[0]} to {SOLUTION}, ending in lower-case .py."
    return None, f"No Python file was submitted (found: {_listing(names)}): submit your solution as one file named {SOLUTION}."


@dataclass(frozen=True)
class Entry:
    """One entry of a class folder (or one file named on the command line): its id, the file to
    grade (for an entry that is not graded, the entry itself), and why it is not graded ("" when it is).
    From an LMS's download (grader/batch/lms.py) also the student's name as the LMS wrote it, whether
    the LMS marked the file late, what the report says about the file chosen (notes), and where the
    file was found, for messages (shown: `download.zip:NAME` for a file of a zip; else the path)."""

    id: str
    path: Path
    not_graded: str = ""
    name: str = ""
    late: bool = False
    notes: tuple[str, ...] = ()
    shown: str = ""


def _file_entry(path: Path) -> Entry:
    if graded_name(path.name):
        return Entry(path.stem, path)
    if path.suffix.lower() in GRADED_SUFFIXES:
        lower = path.suffix.lower()
        why = f"{path.name} is not graded: its name ends in {path.suffix}, not {lower}; rename it {path.stem}{lower} to have it graded."
    else:
        why = f"{path.name} is not graded: it is not a Python file (a submission is a file ending in .py, or a folder holding {SOLUTION})."
    return Entry(path.name.split(".")[0] or path.name, path, why)


def _folder_entry(path: Path) -> Entry:
    chosen, why = choose_file(path)
    return Entry(path.name, chosen, "") if chosen else Entry(path.name, path, f"{path.name}/ is not graded: {why}")


def read_class_folder(folder: Path) -> tuple[list[Entry], list[str]]:
    """Every entry of `folder` as a submission, graded or not, and the names that were ignored.
    An entry that is not graded takes the id its name suggests (carol.py.txt: carol), or its whole
    name when another entry has that id."""
    entries, skipped = [], []
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if ignored(path.name):
            skipped.append(path.name)
            continue
        try:
            if path.is_dir():
                entries.append(_folder_entry(path))
            elif path.is_file():
                entries.append(_file_entry(path))
            elif path.is_symlink():
                entries.append(Entry(path.name, path, f"{path.name} is not graded: it is a link to nothing."))
            else:
                entries.append(Entry(path.name, path, f"{path.name} is not graded: it is not a regular file or a folder."))
        except OSError as error:
            entries.append(Entry(path.name, path, f"{path.name} is not graded: it could not be read ({error.strerror or error})."))
    taken = {e.id for e in entries if not e.not_graded}
    result = []
    for entry in entries:
        if entry.not_graded and entry.id in taken:
            whole = entry.path.name if entry.path.name not in taken else f"{entry.path.name} (folder)"
            entry = Entry(whole, entry.path, entry.not_graded)
        taken.add(entry.id)
        result.append(entry)
    return result, skipped
