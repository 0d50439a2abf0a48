"""How the submissions of a batch are found: a file, every entry of a class folder (its layout is
grader/layout.py), an LMS's download, as its .zip or as the folder it unzips to (Canvas's or
Moodle's: grader/batch/lms.py; a zip is opened in a private folder: grader/batch/archive.py); an
entry with nothing to grade is kept, to get a line saying why; each with a unique id made inert for
every place it goes."""

import dataclasses
from collections.abc import Iterable
from pathlib import Path

from grader.batch.archive import Extracted, Workspace, is_archive
from grader.batch.exits import UsageError
from grader.batch.lms import Reader, lms_name, read_download
from grader.formats.safe import printable
from grader.layout import SOLUTION, Entry, ignored, read_class_folder

Submission = Entry  # an entry of a class folder, graded or not (grader/layout.py)


def _own_outputs(folder: Path, outputs: set[Path]) -> list[str]:
    """The names in `folder` that are the batch's own results file, gradebook or feedback folder."""
    try:
        return sorted(p.name for p in folder.iterdir() if p.resolve() in outputs)
    except OSError as error:
        raise UsageError(f"cannot read the folder {folder}: {error.strerror or error}") from None


def _plain_folder(folder: Path, own: list[str], extracted: Extracted | None) -> tuple[list[Submission], str]:
    """A class folder of grader/layout.py's kind (one file or folder per student)."""
    try:
        entries, skipped = read_class_folder(folder)
    except OSError as error:
        raise UsageError(f"cannot read the folder {folder}: {error.strerror or error}") from None
    entries = [e for e in entries if e.path.relative_to(folder).parts[0] not in own]
    if extracted is not None:  # a file of a zip: named as in the zip; one whose content was not written says why
        entries = [dataclasses.replace(e, shown=extracted.shown(e.path), not_graded=e.not_graded or extracted.refused.get(e.path, "")) for e in entries]
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
        f"one folder per submission (*/{SOLUTION} or the folder's only .py or .ipynb file; id = folder name)"
        if folders
        else ("one file per submission (*.py or *.ipynb; id = file name without its extension)")
    )
    return entries, _with_counts(layout, entries, [*skipped, *own])


def _with_counts(layout: str, entries: list[Submission], ignored_names: list[str]) -> str:
    not_graded = sum(bool(e.not_graded) for e in entries)
    if not_graded:
        layout += f"; {not_graded} not graded (each gets a line saying why)"
    if ignored_names:
        layout += f"; ignored: {printable(', '.join(ignored_names))}"
    return layout


def _folder(folder: Path, outputs: set[Path], workspace: Workspace, extracted: Extracted | None = None) -> tuple[list[Submission], str]:
    """A class folder: an LMS's download (grader/batch/lms.py), else grader/layout.py's layouts."""
    own = _own_outputs(folder, outputs)
    download = read_download(folder, workspace, extracted, skip=set(own))
    if download is None:
        entries, layout = _plain_folder(folder, own, extracted)
        return entries, f"{len(entries)} submissions, {layout}"
    entries, layout = download
    skipped = sorted(p.name for p in folder.iterdir() if ignored(p.name))
    return entries, _with_counts(layout, entries, [*skipped, *own])


def _zip(path: Path, outputs: set[Path], workspace: Workspace) -> tuple[list[Submission], str]:
    """A zip of a class folder or an LMS's download, opened in the private workspace; a zip holding
    one folder and nothing else is read as that folder."""
    extracted = workspace.extract(path)
    root = extracted.root
    top = [p for p in root.iterdir() if not ignored(p.name)]
    if len(top) == 1 and top[0].is_dir() and lms_name(top[0]) is None:
        root = top[0]
    entries, note = _folder(root, outputs, workspace, extracted)
    return entries, f"a zip; {note}"


def _file(path: Path, workspace: Workspace) -> Submission:
    """A file named on the command line: graded whatever its name (a solution.py takes its folder's
    name), but for an archive; a file named as an LMS names a student's file takes the LMS's id."""
    if is_archive(path.name):
        return Submission(path.name, path, f"{path.name} is not graded: it is an archive of a kind the grader does not open (only .zip), never Python.")
    named = lms_name(path)
    if named is not None and named.kind == "file":
        reader = Reader(path.parent, workspace, None)
        students, _ = reader.canvas([path.name]) if named.lms == "canvas" else reader.moodle([path.name])
        return reader.entry(students[named.student], named.lms)
    return Submission(path.resolve().parent.name if path.name == SOLUTION else path.stem, path)


def discover(paths: list[Path], outputs: Iterable[Path] = (), workspace: Workspace | None = None) -> tuple[list[Submission], list[str]]:
    """Every submission named by `paths`, sorted by id, and a note per folder or zip saying its
    layout. A file's id is its name without its extension, or its folder's name for a
    solution.py; a student's of an LMS's download, the LMS's id. Every entry of a folder is a
    submission, graded or not (grader/layout.py, grader/batch/lms.py); `outputs` (the batch's own
    files) are not. A zip is opened in `workspace` (closed by the caller)."""
    outputs = {path.resolve() for path in outputs}
    workspace = workspace if workspace is not None else Workspace()
    found: list[Submission] = []
    notes = []
    for path in paths:
        if path.is_dir():
            named = lms_name(path)
            if named is not None:  # one student's folder of a Moodle download
                reader = Reader(path.parent, workspace, None)
                students, _ = reader.moodle([path.name])
                found.append(reader.entry(students[named.student], named.lms))
                continue
            submissions, layout = _folder(path, outputs, workspace)
            notes.append(f"{path}: {layout}")
            found += submissions
        elif path.is_file() and path.name.lower().endswith(".zip"):
            submissions, layout = _zip(path, outputs, workspace)
            notes.append(f"{path}: {layout}")
            found += submissions
        elif path.exists():
            found.append(_file(path, workspace))
        else:
            raise UsageError(f"no such file or folder: {path}")
    # An id is a file's name, which may hold terminal control sequences or bytes that are not UTF-8
    # (a lone surrogate once decoded): every place it goes (the results file, the gradebook, the
    # feedback files' names, the summary) gets it made inert, once, here.
    found = [dataclasses.replace(s, id=printable(s.id), name=printable(s.name)) for s in found]
    by_id: dict[str, Submission] = {}
    for submission in found:
        if submission.id in by_id and by_id[submission.id].path != submission.path:
            raise UsageError(f"two submissions have the id {submission.id!r}: {by_id[submission.id].path} and {submission.path}; ids must be unique")
        by_id[submission.id] = submission
    return [by_id[i] for i in sorted(by_id)], notes
