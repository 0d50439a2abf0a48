"""An LMS's download of an assignment's submissions, Canvas's or Moodle's, read as a class: one entry
per student, under the LMS's own student id, with the name the LMS wrote (docs/lms.md cites the
LMSs' code for each rule).

Canvas ("Download Submissions"): one flat folder, a file per uploaded file, named
`NAME_[LATE_]USERID_FILEID_ORIGINAL` (lib/content_zipper.rb): NAME the student's sortable name,
lower-case, letters and digits only; LATE when Canvas marked the submission late; USERID Canvas's
user id (`anon_ID` under anonymous grading, without a name); FILEID the uploaded file's id, which
Canvas numbers in the order files are uploaded; ORIGINAL the file's name, which Canvas gives a
`-1`, `-2` suffix when the student uploaded a file of a name already taken. A text entry is
`NAME_[LATE_]USERID_text.html`, a web address `..._link.html`.

Moodle ("Download all submissions", mod/assign): a folder per student and submission plugin,
`FULL NAME_PARTICIPANTID_assignsubmission_file` (with a trailing `_` before Moodle 4.1), holding the
files as uploaded (in their sub-folders); or, with "Download submissions in folders" off, flat
files `FULL NAME_PARTICIPANTID_assignsubmission_file_ORIGINAL`. PARTICIPANTID is the assignment's
participant number, the one the grading worksheet calls `Participant N`; an online text is the
folder `..._assignsubmission_onlinetext`. Moodle renames a second upload of one name `NAME (1).py`.

Which file of a student is graded: the Python files and notebooks (in a zip of the student's too);
of several, those named solution (solution.py, solution.ipynb, solution-1.py, `solution (1).py`)
when there are any; then the newest: on Canvas the highest file id (the last uploaded); elsewhere
the highest `-N` or ` (N)` suffix of one name; when nothing tells which is newest, none, and the
entry says why. Every entry of the download that is no student's file gets an entry saying so.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch.archive import ARCHIVE_SUFFIXES, Extracted, Workspace, is_archive
from grader.batch.exits import UsageError
from grader.layout import NOTEBOOK, SOLUTION, Entry, graded_name, ignored

CANVAS = "canvas"
MOODLE = "moodle"
_CANVAS_FILE = re.compile(r"(?:(?P<name>.*?)_)??(?:(?P<late>LATE)_)?(?P<user>\d+|anon_[A-Za-z0-9]+)_(?P<order>\d+)_(?P<original>.+)", re.S)
_CANVAS_PAGE = re.compile(r"(?:(?P<name>.*?)_)??(?:(?P<late>LATE)_)?(?P<user>\d+|anon_[A-Za-z0-9]+)_(?P<kind>text|link)\.html", re.S)
_MOODLE_FOLDER = re.compile(r"(?P<name>[^_]+)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z0-9]+)_?")
_MOODLE_FILE = re.compile(r"(?P<name>[^_]+)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z0-9]+)_(?P<original>.+)", re.S)
_DUPLICATE = re.compile(r"(?P<base>.*?)(?:-(?P<dash>\d+)| \((?P<paren>\d+)\))?")  # solution-2 (Canvas), solution (2) (Moodle)
CANVAS_RULE = "NAME_[LATE_]USERID_FILEID_FILE"
MOODLE_RULE = "FULL NAME_PARTICIPANTID_assignsubmission_PLUGIN"
PAGES = {"text": "a text entry typed into Canvas", "link": "a web address submitted to Canvas", "onlinetext": "an online text typed into Moodle"}


@dataclass(frozen=True)
class Named:
    """What an LMS's name of one file or folder says about it."""

    lms: str
    student: str  # the LMS's id of the student (Canvas user id, Moodle participant number)
    name: str  # as the LMS wrote it
    late: bool = False
    order: int = 0  # Canvas's file id: the higher, the later uploaded
    original: str = ""  # the file's own name, as uploaded
    kind: str = "file"  # file, or text / link / onlinetext: nothing to grade


def canvas_name(name: str) -> Named | None:
    if match := _CANVAS_PAGE.fullmatch(name):
        return Named(CANVAS, match["user"], match["name"] or "", bool(match["late"]), kind=match["kind"], original=name)
    if match := _CANVAS_FILE.fullmatch(name):
        return Named(CANVAS, match["user"], match["name"] or "", bool(match["late"]), int(match["order"]), match["original"])
    return None


def moodle_folder(name: str) -> Named | None:
    match = _MOODLE_FOLDER.fullmatch(name)
    return Named(MOODLE, match["user"], match["name"].strip(), kind=match["plugin"]) if match else None


def moodle_file(name: str) -> Named | None:
    match = _MOODLE_FILE.fullmatch(name)
    return Named(MOODLE, match["user"], match["name"].strip(), original=match["original"], kind=match["plugin"]) if match else None


def lms_name(path: Path) -> Named | None:
    """What the name of a file or folder given alone says (a student's file or folder of a download)."""
    if path.is_dir():
        return moodle_folder(path.name)
    return moodle_file(path.name) or canvas_name(path.name)


@dataclass
class Candidate:
    """A file a student handed in."""

    path: Path
    original: str  # its name as uploaded (inside a student's zip: ZIP/NAME)
    order: int = 0
    late: bool = False
    kind: str = "file"


@dataclass
class Student:
    id: str
    name: str
    files: list[Candidate] = field(default_factory=list)
    first: Path | None = None  # the first of the student's entries in the download


def _stem_number(original: str) -> tuple[str, int]:
    """(the name without its duplicate suffix and extension, the suffix's number: 0 for none)."""
    stem = Path(original.rsplit("/", 1)[-1]).stem
    match = _DUPLICATE.fullmatch(stem)
    assert match is not None  # the pattern matches every string
    return match["base"], int(match["dash"] or match["paren"] or 0)


def _listing(names: list[str], limit: int = 6) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


class Reader:
    """Reads one download (a folder, or a zip opened in the workspace)."""

    def __init__(self, root: Path, workspace: Workspace, extracted: Extracted | None) -> None:
        self.root, self.workspace, self.extracted = root, workspace, extracted
        self.opened: dict[Path, str] = {}  # a file of a student's zip -> how messages name it (ZIP:NAME)

    def shown(self, path: Path) -> str:
        if self.extracted is not None and path.is_relative_to(self.extracted.root):
            return self.extracted.shown(path)
        return str(path)

    def refused(self, path: Path) -> str:
        return self.extracted.refused.get(path, "") if self.extracted is not None else ""

    # --- the students and their files -----------------------------------------------------------

    def canvas(self, names: list[str]) -> tuple[dict[str, Student], list[Entry]]:
        students: dict[str, Student] = {}
        junk = []
        for name in names:
            path = self.root / name
            named = canvas_name(name) if path.is_file() or path.is_symlink() else None
            if named is None:
                junk.append(self._junk(path, f"its name is not one Canvas gives a student's file ({CANVAS_RULE})"))
                continue
            student = students.setdefault(named.student, Student(named.student, named.name, first=path))
            student.files.append(Candidate(path, named.original, named.order, named.late, named.kind))
        return students, junk

    def moodle(self, names: list[str]) -> tuple[dict[str, Student], list[Entry]]:
        students: dict[str, Student] = {}
        junk = []
        for name in names:
            path = self.root / name
            named = moodle_folder(name) if path.is_dir() else moodle_file(name)
            if named is None:
                junk.append(self._junk(path, f"its name is not one Moodle gives a student's folder or file ({MOODLE_RULE}[_FILE])"))
                continue
            student = students.setdefault(named.student, Student(named.student, named.name, first=path))
            if path.is_dir():
                student.files += [Candidate(file, file.relative_to(path).as_posix(), kind=named.kind) for file in _files_under(path)]
            else:
                student.files.append(Candidate(path, named.original, kind=named.kind))
        return students, junk

    def _junk(self, path: Path, why: str) -> Entry:
        return Entry(path.name.split(".")[0] or path.name, path, f"{path.name} is not graded: {why}.", shown=self.shown(path))

    # --- which file is graded -------------------------------------------------------------------

    def _opened(self, candidate: Candidate) -> tuple[list[Candidate], str]:
        """A student's zip: its Python files and notebooks as candidates, or why none."""
        if not candidate.path.name.lower().endswith(ARCHIVE_SUFFIXES):
            return [], f"{candidate.original} is an archive the grader does not open (only .zip): submit the .py or .ipynb file itself"
        try:
            inner = self.workspace.extract(candidate.path, self.shown(candidate.path))
        except UsageError as error:
            return [], f"{candidate.original}: {error}"
        files = [f for f in _files_under(inner.root) if graded_name(f.name) and f not in inner.refused]
        archives = [f for f in _files_under(inner.root) if is_archive(f.name)]
        if not files:
            found = [f.relative_to(inner.root).as_posix() for f in _files_under(inner.root)]
            more = " (a zip inside a zip is not opened)" if archives else ""
            return [], f"{candidate.original} holds no Python file or notebook{more} (found: {_listing(found) or 'nothing'})"
        self.opened.update((file, inner.shown(file)) for file in files)
        return [Candidate(f, f"{candidate.original}/{f.relative_to(inner.root).as_posix()}", candidate.order, candidate.late) for f in files], ""

    def entry(self, student: Student, lms: str) -> Entry:
        """The student's entry: the file chosen (see the module's docstring), or why none is."""
        gradeable: list[Candidate] = []
        problems: list[str] = []
        others: list[str] = []
        for candidate in student.files:
            if ignored(Path(candidate.original).name):
                continue
            why = self.refused(candidate.path)
            if candidate.kind in PAGES:
                others.append(f"{Path(candidate.original).name} ({PAGES[candidate.kind]})")
            elif why:
                problems.append(why)
            elif graded_name(Path(candidate.original).name):
                gradeable.append(candidate)
            elif is_archive(candidate.original):
                inner, why = self._opened(candidate)
                gradeable += inner
                if why:
                    problems.append(why)
            else:
                others.append(Path(candidate.original).name)
        late = any(c.late for c in student.files)
        first = student.first or self.root
        if not gradeable:
            found = ", ".join(problems + ([f"found: {_listing(others)}"] if others else []))
            found = found or "nothing was handed in"
            why = f"No Python file or notebook was submitted ({found}): submit your solution as one file named {SOLUTION} (or {NOTEBOOK})."
            return Entry(student.id, first, why, student.name, late, shown=self.shown(first))
        chosen, how = _newest(gradeable, lms)
        if chosen is None:
            why = f"Several Python files were submitted ({_listing([c.original for c in gradeable])}) and {how}: submit exactly one, named {SOLUTION}."
            return Entry(student.id, first, why, student.name, late, shown=self.shown(first))
        notes = []
        if len(gradeable) > 1:
            rest = [c.original for c in gradeable if c is not chosen]
            notes.append(f"{chosen.original} was graded, {how}; not graded: {_listing(rest)}")
        notes += [f"also handed in, not graded: {problem}" for problem in problems]
        shown = self.opened.get(chosen.path) or self.shown(chosen.path)
        # Graded under the name the student gave it, so that messages name the file they know
        # (File "solution.py", line 3), not the LMS's name for it: a copy in the private workspace.
        path = self.workspace.place(chosen.path, Path(chosen.original).name)
        return Entry(student.id, path, "", student.name, chosen.late, tuple(notes), shown)


def _newest(files: list[Candidate], lms: str) -> tuple[Candidate | None, str]:
    """The file to grade among several, and how it was chosen (or, with None, why none could be)."""
    if len(files) == 1:
        return files[0], ""
    named = [c for c in files if _stem_number(c.original)[0] == "solution"]
    pool = named or files
    why_named = f"the only one named {SOLUTION} or {NOTEBOOK} of {len(files)} files" if len(named) == 1 else ""
    if len(pool) == 1:
        return pool[0], why_named
    if lms == CANVAS:
        newest = max(pool, key=lambda c: c.order)
        return (
            newest,
            f"the newest of {len(pool)} files{' named solution' if named else ''} (Canvas numbers each uploaded file in turn: {newest.order} is the highest)",
        )
    bases = {_stem_number(c.original)[0] for c in pool}
    numbers = [_stem_number(c.original)[1] for c in pool]
    if len(bases) == 1 and len(set(numbers)) == len(numbers):
        newest = max(pool, key=lambda c: _stem_number(c.original)[1])
        return newest, f"the newest of {len(pool)} files of one name (the LMS numbers a name uploaded again: NAME (1), NAME (2); NAME-1, NAME-2)"
    return None, "nothing tells which of them is the newest"


def _files_under(folder: Path) -> list[Path]:
    """The files under a folder, at any depth, in name order, without what tools leave behind."""
    found = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(ignored(part) for part in relative.parts):
            continue
        if path.is_file() or path.is_symlink():
            found.append(path)
    return found


def detect(root: Path, names: list[str]) -> str | None:
    """CANVAS or MOODLE when more than half of the folder's entries are named as that LMS names
    them; else None (a class folder of another kind: grader/layout.py)."""
    if not names:
        return None
    moodle = sum(bool(moodle_folder(n) if (root / n).is_dir() else moodle_file(n)) for n in names)
    canvas = sum(bool(canvas_name(n)) and not (root / n).is_dir() for n in names)
    if moodle * 2 > len(names):
        return MOODLE
    if canvas * 2 > len(names):
        return CANVAS
    return None


def read_download(root: Path, workspace: Workspace, extracted: Extracted | None = None, skip: set[str] = frozenset()) -> tuple[list[Entry], str] | None:
    """The entries of a Canvas or Moodle download and a note saying which it is, or None when the
    folder is neither. `skip`: names of the folder that are not the download's (the batch's own files)."""
    names = sorted(p.name for p in root.iterdir() if not ignored(p.name) and p.name not in skip)
    lms = detect(root, names)
    if lms is None:
        return None
    reader = Reader(root, workspace, extracted)
    students, junk = reader.canvas(names) if lms == CANVAS else reader.moodle(names)
    entries = [reader.entry(student, lms) for student in students.values()]
    taken = {e.id for e in entries}
    for entry in junk:  # an entry that is no student's never takes a student's id
        entries.append(entry if entry.id not in taken else Entry(entry.path.name, entry.path, entry.not_graded, shown=entry.shown))
        taken.add(entries[-1].id)
    if extracted is not None:
        for number, (name, why) in enumerate(extracted.unplaced, start=1):
            entries.append(Entry(f"unwritten-{number}", extracted.root, why, shown=f"{extracted.source}:{name}"))
    files = sum(len(s.files) for s in students.values())
    title = {CANVAS: "a Canvas download", MOODLE: "a Moodle download"}[lms]
    late = sum(e.late for e in entries)
    note = f"{title}: {len(students)} students from {files} files (id = the LMS's student id)"
    if late:
        note += f", {late} marked late"
    return entries, note
