"""The isolation backends by name, and the choice `--isolation` makes among them.

A backend is an object that says what it promises (strong, keeps_secret, max_jobs), why it cannot
run here (problem), how it starts a child (start) and how it describes its walls (describe). Each
lives in its own module, imported only when its name is first asked for, so that a copy of the
sandbox with some backends left out (the candidate's kit) runs the ones it has. Strongest first:
bubblewrap, uid (inside a container), docker, process (not a security boundary); plain is the
kit's child on a system that is not Linux, which --isolation never chooses.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.sandbox import IsolationUnavailable
from grader.sandbox.limits import PIDS_MAX
from grader.spec import Limits, Spec

if TYPE_CHECKING:
    from grader.sandbox.boxes import BoxUid
    from grader.sandbox.child import Child
    from grader.sandbox.limits import Cgroup

OPTIONAL_PACKAGES = {"docker": ("docker", "requests")}  # what a backend may lack here: it is then unavailable, not broken
REGISTRY = {  # name -> the module of grader/sandbox/ that defines it (as BACKEND, or PLAIN_BACKEND)
    "bubblewrap": "bubblewrap",
    "uid": "uid",
    "docker": "docker_child",
    "process": "process",
    "plain": "process",
}
ISOLATION_LEVELS = ("auto", "strict", "bubblewrap", "uid", "process", "docker")  # what --isolation accepts
AUTO = ("bubblewrap", "uid")  # what auto and strict try, strongest first


@dataclass(frozen=True)
class Layout:
    """Where the child finds its files, as seen from inside its walls."""

    kit: str
    submission: str
    home: str


@dataclass
class Walled:
    """A child's command line with its walls, and what they need from the grader."""

    command: list[str]
    inherited: list[int]  # descriptors the child keeps: its channel's ends, a seccomp program
    box: BoxUid | None = None  # the child's own host uid, where the grader is root
    max_processes: int | None = None  # RLIMIT_NPROC, where the child's uid is its own


class Backend:
    """One way of walling in a child. The defaults are a local process's (grader/sandbox/process.py)."""

    name: str
    strong = False  # a security boundary: it holds without the static check and the capability layer
    keeps_secret = False  # the submission cannot read the secret seed (the grader's environment, memory, files)
    max_jobs: int | None = None  # how many children may run at once; None: as many as asked
    reports_signal_as_status = False  # a child killed by signal N ends its wrapper with 128 + N

    def problem(self) -> str | None:
        """Why this backend cannot run here, or None when it can."""
        return None

    def start(self, workdir: Path, source: bytes, filename: str, spec: Spec) -> Child:
        """A child running `source` (named `filename`) from the private folder `workdir`."""
        raise NotImplementedError

    def layout(self, kit: Path, submission_dir: Path, home: Path) -> Layout:
        """Where the child sees its files: where they are, unless the walls move them."""
        return Layout(str(kit), str(submission_dir), str(home))

    def wrap(self, command: list[str], inherited: list[int], kit: Path, submission_dir: Path, workdir: Path, home: Path) -> Walled:
        """The command that runs `command` behind this backend's walls."""
        return Walled(command, inherited)

    def after(self) -> None:
        """Once the child's process has ended: end whatever of it the process group did not hold."""

    def walls(self, uid: int | None) -> str:
        raise NotImplementedError

    def describe(self, cgroup: Cgroup | None, limits: Limits, uid: int | None = None) -> str:
        """One line for every report: what the child was walled in by. uid: a box uid of its own."""
        groups = f"cgroup memory {limits.memory_mib} MiB, pids {PIDS_MAX}" if cgroup else "no cgroup"
        return f"{self.walls(uid)}; {groups}; rlimits"


@functools.cache
def backend_named(name: str) -> Backend:
    """The backend named `name` (a key of REGISTRY); IsolationUnavailable where its module is not here."""
    if name not in REGISTRY:
        raise IsolationUnavailable(f"unknown isolation level {name!r}")
    module_name = f"grader.sandbox.{REGISTRY[name]}"
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        if error.name == module_name:  # the kit leaves out the backends it does not run
            raise IsolationUnavailable(f"the {name} backend is not part of this copy of the grader") from None
        if error.name in OPTIONAL_PACKAGES.get(name, ()):
            raise IsolationUnavailable(f"--isolation {name} needs the {error.name} package (pip install -r requirements.txt)") from None
        raise  # a fault of the grader's own installation: never taken for a backend that is merely absent
    return module.PLAIN_BACKEND if name == "plain" else module.BACKEND


def problem_of(name: str) -> str | None:
    """Why the backend `name` cannot run here, or None when it can."""
    try:
        return backend_named(name).problem()
    except IsolationUnavailable as error:
        return str(error)


def choose_backend(requested: str, secret_seed: bool = False) -> str:
    """'auto' picks the strongest backend that works here; 'strict' refuses the plain process
    backend; a backend's name insists on it. With a secret seed, 'auto' refuses rather than fall
    back to a backend that cannot keep the seed from the submission."""
    if requested in ("auto", "strict"):
        for name in AUTO:
            if problem_of(name) is None:  # later probes are not run once one works
                return name
        uid = problem_of("uid").removeprefix("the uid backend does not work here: ")
        walls = f"bubblewrap 0.8 or newer with permission to create namespaces (apt-get install bubblewrap), or the uid backend ({uid})"
        if requested == "strict":
            raise IsolationUnavailable(f"--isolation strict needs {walls}; neither works here")
        if secret_seed:
            raise IsolationUnavailable(
                f"a secret seed is set, and no isolation that keeps it from the submission works here: it needs {walls}. "
                "Install bubblewrap, grade in the grader's container (see docs/deployment.md), or use --isolation docker; "
                "--isolation process grades anyway, without protecting the seed"
            )
        return "process"
    if requested not in ISOLATION_LEVELS:
        raise IsolationUnavailable(f"unknown isolation level {requested!r}")
    if problem := backend_named(requested).problem():
        raise IsolationUnavailable(problem)
    return requested


def chooser(requested: str) -> Callable[[bool], Backend]:
    """choose_backend for the isolation level `requested`, as grader.seeding.take_seed calls it:
    told whether a secret seed is set, it gives the backend (or raises IsolationUnavailable)."""
    return lambda secret_seed: backend_named(choose_backend(requested, secret_seed))


def start_child(workdir: Path, source: bytes, filename: str, spec: Spec, name: str) -> Child:
    """A child of the backend `name`, walled in and importing torch; it runs nothing of the
    submission until it is sent the start frame."""
    return backend_named(name).start(workdir, source, filename, spec)
