"""A zip file, as an LMS hands a class's submissions over, opened safely into a private folder.

The download itself is only read, never changed. Its members are written under a private folder
(mode 0700, removed when the batch ends: Workspace), mirroring the zip's names, so that the batch
reads the zip as it reads the folder an unzip would make:

- only what the grader may read gets its content: Python files, notebooks and zip files inside the
  zip (a student's own archive); every other member (a PDF, an image) is an empty file of the same
  name, so that a student's entry can say what was handed in without the grader storing it;
- a member whose name would leave the folder (an absolute path, a `..`), a link, an encrypted
  member, a name that two members share, or a file past MEMBER_BYTES is not written; its name and
  why are kept (Extracted.refused) for the entry it belongs to;
- at most MEMBERS members, and at most TOTAL_BYTES written in all, counted as the bytes come out of
  the decompressor, not as the zip's headers claim them (a zip bomb claims little and expands to
  much): past either, the batch stops with a usage error.
"""

import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.batch.exits import UsageError
from grader.layout import GRADED_SUFFIXES

MEMBERS = 50_000
MEMBER_BYTES = 32 << 20  # a notebook with its outputs; a .py past the grader's own source limit is refused when graded
TOTAL_BYTES = 1 << 30
ARCHIVE_SUFFIXES = (".zip",)
OTHER_ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".gz", ".bz2", ".xz", ".rar", ".7z")  # never opened: named as such
CHUNK = 1 << 16


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES + OTHER_ARCHIVES)


def _wanted(name: str) -> bool:
    """Whether a member's content is written: what the grader may read (by any case of suffix, so
    that `Solution.PY` can be told to rename itself... it is never graded under that name)."""
    return name.lower().endswith(GRADED_SUFFIXES + ARCHIVE_SUFFIXES)


def _member_name(info: zipfile.ZipInfo) -> str:
    """The member's name as its author's tools wrote it: a name not flagged UTF-8 is decoded by
    zipfile as code page 437; most zip tools of today wrote UTF-8 all the same."""
    name = info.filename
    if not info.flag_bits & 0x800:
        try:
            name = name.encode("cp437").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            pass
    return name


def safe_parts(name: str) -> tuple[str, ...] | None:
    """The name's parts below the folder it is extracted into, or None when it would leave it (an
    absolute path, a drive, a `..`) or names nothing. Backslashes (Windows tools) separate too."""
    if "\x00" in name:
        return None
    name = name.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    parts = tuple(part for part in PurePosixPath(name).parts if part not in ("", "."))
    if not parts or ".." in parts:
        return None
    return parts


@dataclass
class Extracted:
    """A zip written under `root`; its members whose content was not written, by their path under
    root (an empty file stands there) -> why; those that have no place under root (an unsafe name,
    a second member of one name) as (name, why); and the zip's own name, for messages."""

    root: Path
    source: str
    refused: dict[Path, str] = field(default_factory=dict)
    unplaced: list[tuple[str, str]] = field(default_factory=list)

    def shown(self, path: Path) -> str:
        return f"{self.source}:{path.relative_to(self.root).as_posix()}"


class Workspace:
    """The private folder the batch's zips are opened in (mode 0700), removed when the batch ends.
    Budget: TOTAL_BYTES and MEMBERS for everything written, nested zips included."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.written = 0
        self.members = 0
        self.count = 0

    def new_folder(self) -> Path:
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="mlm-grader-download-"))  # mode 0700
        self.count += 1
        path = self.folder / str(self.count)
        path.mkdir(mode=0o700)
        return path

    def place(self, path: Path, name: str) -> Path:
        """A copy of the file under `name` in a new private folder; the file itself when it already
        has that name, or when `name` cannot be a file's name."""
        if name == path.name or not name or "/" in name or "\x00" in name or name in (".", "..") or len(name.encode()) > 255 or path.is_symlink():
            return path
        target = self.new_folder() / name
        try:
            shutil.copyfile(path, target, follow_symlinks=False)
        except OSError:
            return path  # the grading says why it cannot be read
        return target

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def extract(self, archive: Path, shown: str | None = None) -> Extracted:
        """The zip's members under a new private folder (see the module's docstring). UsageError
        when the file is not a zip that can be read, or when it is past the budget."""
        shown = shown or str(archive)
        try:
            with zipfile.ZipFile(archive) as zf:
                infos = zf.infolist()
                self.members += len(infos)
                if self.members > MEMBERS:
                    raise UsageError(f"{shown} holds {len(infos)} members: more than the {MEMBERS} the grader opens; unzip it and give the folder")
                extracted = Extracted(self.new_folder(), shown)
                taken: set[tuple[str, ...]] = set()
                for info in infos:
                    self._member(zf, info, extracted, taken)
                return extracted
        except zipfile.BadZipFile as error:
            raise UsageError(f"{shown} is not a zip file that can be read ({error}); give the LMS's download as it came, or the folder it unzips to") from None
        except OSError as error:
            raise UsageError(f"cannot read {shown}: {error.strerror or error}") from None

    def _member(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo, into: Extracted, taken: set[tuple[str, ...]]) -> None:
        name = _member_name(info)
        parts = safe_parts(name)
        if parts is None:
            into.unplaced.append((name, f"{name!r} is not written: its name would leave the download's folder"))
            return
        target = into.root.joinpath(*parts)
        kind = stat.S_IFMT(info.external_attr >> 16)
        if info.is_dir():
            if parts not in taken:
                target.mkdir(parents=True, exist_ok=True, mode=0o700)
            return
        if parts in taken:
            into.unplaced.append((name, f"{name} is not written: a second member of that name (the first one is kept)"))
            return
        taken.add(parts)
        try:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as error:  # a member named as a folder another member made a file
            into.refused[target] = f"{name}: cannot be written ({error.strerror or error})"
            return
        if kind == stat.S_IFLNK:
            into.refused[target] = f"{name} is a symbolic link (links are never followed)"
            self._placeholder(target, into)
            return
        if info.flag_bits & 0x1:
            into.refused[target] = f"{name} is encrypted"
            self._placeholder(target, into)
            return
        if not _wanted(name):
            self._placeholder(target, into)  # its name says what was handed in; its content is never read
            return
        if info.file_size > MEMBER_BYTES:
            into.refused[target] = f"{name} is {info.file_size} bytes, more than the {MEMBER_BYTES >> 20} MiB the grader reads of one file"
            self._placeholder(target, into)
            return
        self._copy(zf, info, target, into, name)

    def _placeholder(self, target: Path, into: Extracted) -> None:
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        except OSError as error:
            into.refused.setdefault(target, f"{target.name}: cannot be written ({error.strerror or error})")

    def _copy(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, into: Extracted, name: str) -> None:
        """The member's bytes, counted as they come out: past MEMBER_BYTES the member is refused,
        past the workspace's TOTAL_BYTES the batch stops."""
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError as error:
            into.refused[target] = f"{name}: cannot be written ({error.strerror or error})"
            return
        written = 0
        try:
            with os.fdopen(fd, "wb") as out, zf.open(info) as member:
                while chunk := member.read(CHUNK):
                    written += len(chunk)
                    self.written += len(chunk)
                    if written > MEMBER_BYTES:
                        break
                    if self.written > TOTAL_BYTES:
                        raise UsageError(
                            f"{into.source} expands to more than {TOTAL_BYTES >> 20} MiB of Python files, notebooks and zips: "
                            "more than the grader writes for one batch; unzip it yourself and give the folder"
                        )
                    out.write(chunk)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, ValueError) as error:
            into.refused[target] = f"{name} cannot be read from the zip ({error})"
            target.write_bytes(b"")
            return
        if written > MEMBER_BYTES:
            into.refused[target] = f"{name} expands to more than the {MEMBER_BYTES >> 20} MiB the grader reads of one file"
            target.write_bytes(b"")
