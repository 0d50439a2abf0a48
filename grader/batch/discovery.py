"""How the submissions of a batch are found: a file, or every entry of a class folder (its layout
is grader/layout.py; an entry with nothing to grade is kept, to get a line saying why), each with
a unique id made inert for every place it goes."""

import dataclasses
from collections.abc import Iterable
from pathlib import Path

from grader.batch.exits import UsageError
from grader.formats.safe import printable
from grader.layout import SOLUTION, Entry, read_class_folder

Submission = Entry  # an entry of a class folder, graded or not (grader/layout.py)


def _folder_submissions(folder: Path, outputs: set[Path]) -> tuple[list[Submission], str]:
    try:
        entries, skipped = read_class_folder(folder)
    except OSError as error:
        raise UsageError(f"cannot read the folder {folder}: {error.strerror or error}") from None
    outputs_here = [e for e in entries if (folder / e.path.relative_to(folder).parts[0]).resolve() in outputs]
    entries = [e for e in entries if e not in outputs_here]  # the batch's own results file, gradebook, feedback folder
    files = [e for e in entries if not e.not_graded and e.path.parent == folder]
    folders = [e for e in entries if not e.not_graded and e.path.parent != folder]
    if files and folders:
        raise UsageError(
            f"{folder} mixes two layouts: {len(files)} *.py files (e.g. {files[0].path.name}) and {len(folders)} folders with a "
            f"Python file (e.g. {folders[0].path.relative_to(folder)}); keep one layout per folder, or pass the files themselves"
        )
    if not entries:
        raise UsageError(f"{folder} holds no submission: neither *.py files nor folders with a {SOLUTION}")
    layout = (
        f"one folder per submission (*/{SOLUTION} or the folder's only .py file; id = folder name)"
        if folders
        else ("one file per submission (*.py; id = file name without .py)")
    )
    not_graded = sum(bool(e.not_graded) for e in entries)
    if not_graded:
        layout += f"; {not_graded} not graded (each gets a line saying why)"
    ignored = [*skipped, *(e.path.name for e in outputs_here)]
    if ignored:
        layout += f"; ignored: {printable(', '.join(ignored))}"
    return entries, layout


def discover(paths: list[Path], outputs: Iterable[Path] = ()) -> tuple[list[Submission], list[str]]:
    """Every submission named by `paths`, sorted by id, and a note per folder saying its layout.
    A file's id is its name without .py, or its folder's name for a solution.py. Every entry of a
    folder is a submission, graded or not (grader/layout.py); `outputs` (the batch's own files) are
    not."""
    outputs = {path.resolve() for path in outputs}
    found: list[Submission] = []
    notes = []
    for path in paths:
        if path.is_dir():
            submissions, layout = _folder_submissions(path, outputs)
            notes.append(f"{path}: {len(submissions)} submissions, {layout}")
            found += submissions
        elif path.exists():
            found.append(Submission(path.resolve().parent.name if path.name == SOLUTION else path.stem, path))
        else:
            raise UsageError(f"no such file or folder: {path}")
    # An id is a file's name, which may hold terminal control sequences or bytes that are not UTF-8
    # (a lone surrogate once decoded): every place it goes (the results file, the gradebook, the
    # feedback files' names, the summary) gets it made inert, once, here.
    found = [dataclasses.replace(s, id=printable(s.id)) for s in found]
    by_id: dict[str, Submission] = {}
    for submission in found:
        if submission.id in by_id and by_id[submission.id].path != submission.path:
            raise UsageError(f"two submissions have the id {submission.id!r}: {by_id[submission.id].path} and {submission.path}; ids must be unique")
        by_id[submission.id] = submission
    return [by_id[i] for i in sorted(by_id)], notes
