"""The files a child is given: the child-side code, a home folder and the submission, and the
environment it starts with (nothing of the grader's, the secret seed least)."""

import shutil
from pathlib import Path

CHILD_PACKAGE = Path(__file__).resolve().parents[1] / "child"


def child_environment(home: str) -> dict[str, str]:
    """The whole environment of a child process (nothing of the grader's: the secret seed least)."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def copy_child_package(kit: Path) -> None:
    """The child-side code in `kit` (the folder bound at SANDBOX_KIT), readable by anyone whatever
    the grader's umask: a root grader's child runs as a box uid, which owns none of it."""
    shutil.copytree(CHILD_PACKAGE, kit / "child", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [kit, *kit.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def prepare_files(workdir: Path, source: bytes, filename: str) -> tuple[Path, Path, Path]:
    """The child-side code, a home folder and the submission (read-only) in the private folder."""
    kit = workdir / "kit"
    copy_child_package(kit)
    home = workdir / "home"
    home.mkdir()
    submission_dir = workdir / "submission"
    submission_dir.mkdir()
    submission_dir.chmod(0o755)
    (submission_dir / filename).write_bytes(source)
    (submission_dir / filename).chmod(0o444)
    return kit, home, submission_dir


def open_to_runner(workdir: Path, home: Path) -> None:
    """The runner user may traverse the private folder, read the kit and the submission, and
    write only in its home; nothing else of the grader's is readable to it."""
    workdir.chmod(0o711)
    for path in workdir.rglob("*"):
        if path != home:
            path.chmod(0o755 if path.is_dir() else 0o444)
    home.chmod(0o1777)
