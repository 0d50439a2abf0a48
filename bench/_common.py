"""What the benchmarks share: where the repository is, the secret seed they grade with, which
submissions they take from reference/mlm_forward_tied/submissions, a class folder of copies, and a command timed from
outside (its wall-clock seconds, and the CPU seconds of every process it waited for)."""

import itertools
import os
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = "bench-secret"
ENV = os.environ | {"MLM_GRADER_SEED": SEED}  # every side grades with one secret seed, as for real


EXAMPLES = ROOT / "reference" / "mlm_forward_tied" / "submissions"  # the default challenge's example submissions


def submissions(folders: tuple[str, ...], count: int) -> list[Path]:
    """count files of reference/mlm_forward_tied/submissions, taken in turn from each folder (hostile_* left out), each
    folder's files over again when it has fewer."""
    per_folder = [sorted(p for p in (EXAMPLES / f).glob("*.py") if not p.stem.startswith("hostile_")) for f in folders]
    turns = (path for group in itertools.zip_longest(*[itertools.cycle(files) for files in per_folder]) for path in group)
    return list(itertools.islice(turns, count))


def copy_folder(parent: Path, files: list[Path], name: str = "class") -> Path:
    """A new folder parent/name holding a copy of each file, named for its place, folder and file."""
    folder = parent / name
    folder.mkdir()
    for number, source in enumerate(files):
        shutil.copy(source, folder / f"s{number:03}_{source.parent.name}_{source.stem}.py")
    return folder


@dataclass(frozen=True)
class Timed:
    wall: float  # seconds from the start to the exit
    cpu: float  # user + system seconds of the command and the processes it waited for (not those reaped inside a sandbox)
    returncode: int


def run_timed(command: list[str], env: dict[str, str] | None = None) -> Timed:
    """Run a command to its end, its output thrown away; call it from one thread only (the CPU
    seconds are those of the children this process reaped meanwhile)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, env=env or ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timed(wall, cpu, result.returncode)
