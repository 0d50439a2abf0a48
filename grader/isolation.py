"""The walls around the child: an isolation backend, rlimits and a cgroup.

Backends, strongest first:
- bubblewrap: new user, pid, network, ipc, uts and mount namespaces; the child sees only the
  system libraries, the Python runtime and its site-packages (read-only), the child-side code and
  the submission (read-only) and a private, size-capped /tmp; no capabilities; a cleared
  environment; it dies with the grader. The repository, the reference and the seed are not there.
- uid: the child runs as a separate unprivileged user (mlm-runner, else nobody) through `setpriv`,
  with every capability dropped and no_new_privs; it cannot read what that user may not read
  (the container image keeps /app, the reference and the grader, from it) nor signal the grader.
  This is the backend inside a container, where bubblewrap may not create namespaces: the
  container is then the outer wall.
- process: a separate process with a cleared environment and its own session; a network
  namespace when `unshare` works; no file-system isolation. Used only when neither can run.

Both get rlimits (CPU, address space, file size, open files, no core files) and, where the grader
may create one, a cgroup (memory and number of processes: limits that hold even for root). The
rlimits and the cgroup are applied in the forked child before it executes anything, so every
process it starts inherits them. Under bubblewrap a seccomp filter (pyseccomp, where the system's
libseccomp is present) is a further layer: no internet sockets, no ptrace.
"""

import errno
import functools
import os
import pwd
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from grader.spec import Limits

MIB = 1 << 20
SANDBOX_KIT = "/sandbox/kit"
SANDBOX_SUBMISSION = "/sandbox/submission"
TMPFS_MIB = 64
PIDS_MAX = 64
UNPRIVILEGED_ID = 65534  # "nobody" inside the user namespace
RUNNER_USERS = ("mlm-runner", "nobody")  # the uid backend runs the child as the first that exists


class IsolationUnavailable(Exception):
    """The isolation level that was asked for cannot be had on this machine."""


@dataclass(frozen=True)
class Layout:
    """Where the child finds its files, as seen from inside its walls."""

    kit: str
    submission: str
    home: str


@functools.cache
def bubblewrap_works() -> bool:
    """Whether bwrap exists and may create namespaces here (inside many containers it may not)."""
    if shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def runner_ids() -> tuple[int, int] | None:
    """(uid, gid) of the user the uid backend runs the child as, if one exists."""
    for name in RUNNER_USERS:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    return None


def uid_command(command: list[str]) -> list[str]:
    """Run `command` as the runner user with no capabilities left and no way to gain any."""
    uid, gid = runner_ids()
    drop = ["--inh-caps=-all", "--ambient-caps=-all", "--no-new-privs"]
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *drop, "--", *command]


@functools.cache
def uid_separation_works() -> bool:
    """Whether we may switch to the runner user and it can run this interpreter (it cannot where
    the interpreter lives in a private home directory)."""
    if runner_ids() is None or runner_ids()[0] == os.getuid() or shutil.which("setpriv") is None:
        return False
    probe = uid_command([sys.executable, "-I", "-S", "-c", "pass"])
    try:
        return subprocess.run(probe, capture_output=True, timeout=10, cwd="/").returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def kill_processes_of(uid: int) -> None:
    """SIGKILL every process of `uid` (the runner user belongs to one grading at a time)."""
    for _ in range(50):
        found = False
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid == uid:
                    found = True
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass
        if not found:
            return
        time.sleep(0.01)


@functools.cache
def unshare_net_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "--net", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _system_binds() -> list[str]:
    """Read-only system directories; merged-/usr symlinks stay symlinks."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        path = Path(top)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            args += ["--ro-bind", top, top]
    return args


def _python_binds() -> list[str]:
    """The interpreter's installation and the virtual environment (site-packages), read-only."""
    args = []
    for prefix in sorted({sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}):
        if not prefix.startswith("/usr"):
            args += ["--ro-bind", prefix, prefix]
    return args


@functools.cache
def seccomp_program() -> bytes | None:
    """A BPF program refusing internet sockets and ptrace, or None without pyseccomp/libseccomp."""
    try:
        import pyseccomp as seccomp

        rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        for family in (socket.AF_INET, socket.AF_INET6):
            rules.add_rule(seccomp.ERRNO(errno.EACCES), "socket", seccomp.Arg(0, seccomp.EQ, family))
        for call in ("ptrace", "process_vm_readv", "process_vm_writev"):
            rules.add_rule(seccomp.ERRNO(errno.EPERM), call)
        with tempfile.TemporaryFile() as program:
            rules.export_bpf(program)
            program.seek(0)
            return program.read()
    except (ImportError, OSError, RuntimeError):
        return None


def seccomp_fd() -> int | None:
    """A descriptor holding the seccomp program, for bwrap --seccomp (the caller closes it)."""
    program = seccomp_program()
    if program is None:
        return None
    fd = os.memfd_create("mlm-grader-seccomp")
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def bubblewrap_command(command: list[str], kit: Path, submission_dir: Path, seccomp: int | None = None) -> list[str]:
    """`command` inside the sandbox; it finds the kit and the submission at SANDBOX_KIT and SANDBOX_SUBMISSION."""
    filters = ["--seccomp", str(seccomp)] if seccomp is not None else []
    wrapper = [
        "bwrap",
        "--unshare-all",  # user, ipc, pid, net, uts, cgroup namespaces
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
        "--uid", str(UNPRIVILEGED_ID),
        "--gid", str(UNPRIVILEGED_ID),
        # Mounts apply in order: the private /tmp first, so that binds below /tmp (a checkout
        # and its .venv there) are laid on top of it instead of being hidden by it.
        "--size", str(TMPFS_MIB * MIB),
        "--tmpfs", "/tmp",
        "--proc", "/proc",
        "--dev", "/dev",
        *_system_binds(),
        *_python_binds(),
        "--ro-bind", str(kit), SANDBOX_KIT,
        "--ro-bind", str(submission_dir), SANDBOX_SUBMISSION,
        "--chdir", "/tmp",
        *filters,
        "--",
    ]  # fmt: skip
    return wrapper + command


class Cgroup:
    """A memory + pids cgroup for one child (cgroup v1 controllers, or the v2 unified tree), with
    the CPU time of all its processes counted (v1 cpuacct where it can be had, v2 cpu.stat)."""

    V1 = Path("/sys/fs/cgroup")

    def __init__(self, limits: Limits, label: str) -> None:
        name = f"mlm-grader-{label}-{uuid.uuid4().hex[:12]}"
        self.dirs: list[Path] = []
        unified = self.V1 / "cgroup.controllers"
        if unified.exists():  # cgroup v2: one directory, both controllers
            self.memory = self.pids = self.V1 / name
            self._make(self.memory)
            (self.V1 / "cgroup.subtree_control").write_text("+memory +pids")
            (self.memory / "memory.max").write_text(str(limits.memory_mib * MIB))
            (self.memory / "memory.swap.max").write_text("0")
            (self.pids / "pids.max").write_text(str(PIDS_MAX))
            self.cpu: Path | None = self.memory
        else:
            self.memory, self.pids = self.V1 / "memory" / name, self.V1 / "pids" / name
            self._make(self.memory)
            self._make(self.pids)
            (self.memory / "memory.limit_in_bytes").write_text(str(limits.memory_mib * MIB))
            (self.pids / "pids.max").write_text(str(PIDS_MAX))
            self.cpu = self.V1 / "cpuacct" / name
            try:
                self._make(self.cpu)
            except OSError:  # no cpuacct hierarchy: the process tree is polled instead
                self.cpu = None
        self.v2 = unified.exists()

    def _make(self, path: Path) -> None:
        path.mkdir()
        self.dirs.append(path)

    @classmethod
    def remove_stale(cls, older_than_seconds: float = 600) -> None:
        """Remove empty cgroups of graders that were killed before they could clean up."""
        now = time.time()
        for d in [*cls.V1.glob("*/mlm-grader-*"), *cls.V1.glob("mlm-grader-*")]:
            try:
                if now - d.stat().st_mtime > older_than_seconds and not (d / "cgroup.procs").read_text().strip():
                    d.rmdir()
            except OSError:
                pass

    @classmethod
    def create(cls, limits: Limits, label: str) -> "Cgroup | None":
        """A new cgroup named after `label` (the submission), or None where this process may not
        create one (not root, read-only cgroup tree)."""
        label = re.sub(r"[^A-Za-z0-9_-]", "_", label)[:40]
        cls.remove_stale()
        try:
            return cls(limits, label)
        except OSError:
            return None

    def join_files(self) -> list[str]:
        """The cgroup.procs files the child writes its own pid into before it executes."""
        return sorted({str(d / "cgroup.procs") for d in self.dirs})

    def _counter(self, path: Path, key: str) -> int:
        try:
            for line in path.read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def oom_kills(self) -> int:
        return self._counter(self.memory / ("memory.events" if self.v2 else "memory.oom_control"), "oom_kill")

    def pids_limit_hits(self) -> int:
        return self._counter(self.pids / "pids.events", "max")

    def cpu_seconds(self) -> float | None:
        """CPU time used by every process that was ever in the cgroup, or None where not counted."""
        if self.cpu is None:
            return None
        try:
            if self.v2:
                return self._counter(self.cpu / "cpu.stat", "usage_usec") / 1e6
            return int((self.cpu / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def processes(self) -> set[int]:
        found = set()
        for d in self.dirs:
            try:
                found |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return found

    def kill_all(self) -> None:
        """SIGKILL everything in the cgroup (double-forked daemons too) until it is empty."""
        deadline = time.monotonic() + 5
        while (pids := self.processes()) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for d in reversed(self.dirs):
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # busy for a moment after its last process died
                    time.sleep(0.01)


def process_tree_cpu_seconds(root: int, seen: dict[tuple[int, int], float]) -> float:
    """CPU time of a process tree, without a cgroup: `root`, its descendants and every process of
    their sessions, polled from /proc. Two lower bounds, the larger returned: the live processes'
    own time plus what they reaped, and the own time of every process ever seen (`seen`, kept by
    the caller between polls, keyed by pid and start time) for those that died between polls."""
    table = {}  # pid -> (ppid, session, start, own ticks, reaped children's ticks)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            table[int(entry.name)] = (int(fields[1]), int(fields[3]), int(fields[19]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
        except (OSError, IndexError, ValueError):  # ended while we looked
            continue
    members = {root} if root in table else set()
    while True:
        sessions = {table[pid][1] for pid in members}
        grown = members | {pid for pid, (ppid, session, *_) in table.items() if ppid in members or session in sessions}
        if grown == members:
            break
        members = grown
    ticks = os.sysconf("SC_CLK_TCK")
    live = 0
    for pid in members:
        _, _, start, own, reaped = table[pid]
        live += own + reaped
        seen[(pid, start)] = max(seen.get((pid, start), 0), own)
    return max(live, sum(seen.values())) / ticks


def apply_limits_in_child(limits: Limits, cgroup_files: list[str], max_processes: int | None) -> None:
    """Runs in the forked child before exec (subprocess preexec_fn): join the cgroup, set rlimits.
    Only system calls here: no imports, no threads, no allocation-heavy work."""
    for path in cgroup_files:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mib * MIB,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mib * MIB,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if max_processes:  # counts per user: meaningful only for an unprivileged runner user
        resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))


def choose_backend(requested: str) -> str:
    """'auto' picks the strongest backend that works here; 'strict' refuses the plain process
    backend; a backend's name insists on it."""
    probes = {"bubblewrap": bubblewrap_works, "uid": uid_separation_works}  # strongest first
    if requested in ("auto", "strict"):
        for name, works in probes.items():
            if works():  # later probes are not run once one works
                return name
        if requested == "strict":
            raise IsolationUnavailable(
                "--isolation strict needs bubblewrap with permission to create namespaces (apt-get install bubblewrap), "
                "or a runner user to switch to (mlm-runner or nobody, with setpriv); neither works here"
            )
        return "process"
    if requested == "process" or (requested in probes and probes[requested]()):
        return requested
    if requested == "docker":
        try:
            from grader.docker_backend import docker_works
        except ImportError:
            raise IsolationUnavailable("--isolation docker needs the docker package (pip install -r requirements.txt)") from None
        if problem := docker_works():
            raise IsolationUnavailable(f"--isolation docker: {problem}")
        return "docker"
    if requested in ("bubblewrap", "uid"):
        raise IsolationUnavailable(f"the {requested} backend does not work here")
    raise IsolationUnavailable(f"unknown isolation level {requested!r}")


def describe(backend: str, cgroup: "Cgroup | None", limits: Limits) -> str:
    """One line for every report: what the child was walled in by."""
    if backend == "bubblewrap":
        walls = f"bubblewrap (user, pid, net, ipc, uts, mount namespaces; read-only runtime; private {TMPFS_MIB} MiB /tmp)"
        if seccomp_program() is not None:
            walls += "; seccomp (no internet sockets, no ptrace)"
    elif backend == "uid":
        network = "network namespace" if unshare_net_works() else "the container's network"
        walls = f"uid (separate user {runner_ids()[0]}, no capabilities; {network}; the container is the outer wall)"
    else:
        network = "network namespace" if unshare_net_works() else "shared network"
        walls = f"process ({network}; same user; no file-system isolation)"
    groups = f"cgroup memory {limits.memory_mib} MiB, pids {PIDS_MAX}" if cgroup else "no cgroup"
    return f"{walls}; {groups}; rlimits"
