"""The uid backend: every child runs as the dedicated user mlm-runner through setpriv, with no
capabilities and no_new_privs, inside a container that is the outer wall. Ending a run kills
every process of that user, so one grader process holds the user at a time (an flock) and its
gradings run one after another."""

from __future__ import annotations

import fcntl
import functools
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from grader.sandbox import IsolationUnavailable
from grader.sandbox.backends import Walled
from grader.sandbox.limits import PIDS_MAX
from grader.sandbox.process import LocalBackend, unshare_net_works
from grader.sandbox.workdir import open_to_runner

NOBODY = 65534  # a user shared with everything else on the machine: never the runner user
RUNNER_USER = "mlm-runner"  # the uid backend's user: dedicated to the grader, see "Ending a run"
CREATE_RUNNER_USER = f"useradd --system --no-create-home --shell /usr/sbin/nologin {RUNNER_USER}"
RUNNER_LOCK_DIR = Path("/tmp")  # where graders sharing a runner user meet to take turns


@functools.cache
def runner_ids() -> tuple[int, int] | None:
    """(uid, gid) of the dedicated runner user, if it exists. Never another user: after a run every
    process of this user is killed, which would end other people's processes under a shared one."""
    try:
        entry = pwd.getpwnam(RUNNER_USER)
    except KeyError:
        return None
    if entry.pw_uid in (0, NOBODY) or entry.pw_uid == os.getuid():
        return None  # root, nobody or ourselves: not a separate, dedicated user
    return entry.pw_uid, entry.pw_gid


_runner_lock: int | None = None  # the descriptor whose flock holds the runner user for this process


def hold_runner_user(uid: int) -> None:
    """Hold the runner user for this process until it exits, waiting while another grader holds
    it, so that every process of that user belongs to this process's runs (see "Ending a run")."""
    global _runner_lock
    if _runner_lock is not None:
        return
    path = RUNNER_LOCK_DIR / f"mlm-grader-runner-{uid}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise IsolationUnavailable(f"cannot open the runner user's lock file {path}: {error.strerror}; remove it if it is not a grader's") from None
    if os.fstat(fd).st_uid != os.geteuid():  # anyone else's file could be held to stop us, or shared with them
        os.close(fd)
        raise IsolationUnavailable(f"the runner user's lock file {path} belongs to another user; remove it")
    fcntl.flock(fd, fcntl.LOCK_EX)
    _runner_lock = fd


def uid_command(command: list[str]) -> list[str]:
    """Run `command` as the runner user with no capabilities left and no way to gain any. Holds the
    runner user for this process first (hold_runner_user)."""
    uid, gid = runner_ids()
    hold_runner_user(uid)
    drop = ["--inh-caps=-all", "--ambient-caps=-all", "--no-new-privs"]
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *drop, "--", *command]


@functools.cache
def uid_problem() -> str | None:
    """Why the uid backend cannot run here, or None when it can: the runner user must exist, we
    must be able to switch to it, and it must be able to run this interpreter (it cannot where the
    interpreter lives in a private home directory)."""
    if runner_ids() is None:
        return f"it needs the dedicated user {RUNNER_USER} (create it as root: {CREATE_RUNNER_USER}; the container has it)"
    if shutil.which("setpriv") is None:
        return "it needs setpriv (util-linux)"
    try:
        probe = uid_command([sys.executable, "-I", "-S", "-c", "pass"])
        result = subprocess.run(probe, capture_output=True, timeout=10, cwd="/")
    except IsolationUnavailable as error:
        return str(error)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"setpriv could not start ({error})"
    if result.returncode != 0:
        return (
            f"{RUNNER_USER} cannot run {sys.executable} (setpriv needs the setuid and setgid capabilities, "
            f"and the interpreter must be readable by {RUNNER_USER})"
        )
    return None


def _real_and_saved_uids(pid: str) -> set[int]:
    """The real, effective and saved uids of a process that is not a zombie (a zombie is ended
    already, and waits only for its parent); empty when it is gone. Read from its status, not from
    the owner of its /proc files, which a process that makes itself non-dumpable turns into root."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return set()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if fields.get("State", "").split()[:1] == ["Z"]:
        return set()
    return {int(value) for value in fields.get("Uid", "").split()[:3]}


def kill_processes_of(uid: int) -> None:
    """SIGKILL every process of the runner user `uid`, the only user whose processes may all be
    killed: it is dedicated to the grader and held by this process (see "Ending a run"). Catches
    the processes that left the run's process group and session."""
    if runner_ids() is None or uid != runner_ids()[0] or _runner_lock is None:
        raise ValueError(f"refusing to kill the processes of uid {uid}: only those of {RUNNER_USER}, held by this grader, may all be killed")
    for _ in range(100):
        found = [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and uid in _real_and_saved_uids(pid)]
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone meanwhile
                pass
        time.sleep(0.01)


class Uid(LocalBackend):
    name = "uid"
    strong = keeps_secret = True
    max_jobs = 1  # the runner user is held by one grading at a time: ending a run kills all its processes

    def problem(self) -> str | None:
        problem = uid_problem()
        return None if problem is None else f"the uid backend does not work here: {problem}"

    def wrap(self, command: list[str], inherited: list[int], kit: Path, submission_dir: Path, workdir: Path, home: Path) -> Walled:
        command = uid_command(command)  # first: it holds the runner user, waiting while another grader's runs use it
        open_to_runner(workdir, home)
        return Walled(["unshare", "--net", "--", *command] if unshare_net_works() else command, inherited, None, PIDS_MAX)

    def after(self) -> None:
        kill_processes_of(runner_ids()[0])  # those that left the process group and session

    def walls(self, uid: int | None) -> str:
        network = "network namespace" if unshare_net_works() else "the container's network"
        return f"uid (the dedicated user {RUNNER_USER}, uid {runner_ids()[0]}, no capabilities; {network}; the container is the outer wall)"


BACKEND = Uid()
