"""The walls around the child: an isolation backend, rlimits and a cgroup.

Backends, strongest first:
- bubblewrap: new pid, network, ipc, uts and mount namespaces and no user namespace of its own
  making (a seccomp filter refuses them, and bwrap --disable-userns where the grader is not root);
  the child sees only the system libraries, the Python runtime and its site-packages (read-only),
  the child-side code and the submission (read-only). Every writable place is sized: a private
  /tmp and /dev/shm; the root, /dev, /proc and everything bound are read-only. No capabilities, a
  cleared environment, a seccomp filter, and it dies with the grader. The repository, the
  reference and the seed are not there. Whose uid the child has depends on who starts it:
  - the grader is root: a box uid (BOX_UID_BASE + a slot: a host uid that no account owns, held by
    this grader for this child alone, as the isolate sandbox gives each box its own uid; see
    take_box_uid). bwrap runs as root without a user namespace (so it can bind what only root may
    reach, such as a Python under /root), keeps for the command only the capabilities to change
    its ids, and the command is setpriv, which becomes the box uid with every capability and the
    bounding set emptied and no_new_privs before Python starts. Sysctls and most of /proc and /sys
    check the host uid, not capabilities: the child must never be host root, even in a namespace.
  - otherwise: the grader's own uid, through an unprivileged user namespace (uid 65534 inside).
- uid: the child runs as the dedicated unprivileged user mlm-runner through `setpriv`, with every
  capability dropped and no_new_privs; it cannot read what that user may not read (the container
  image keeps /app, the reference and the grader, from it) nor signal the grader. This is the
  backend inside a container, where bubblewrap may not create namespaces: the container is then
  the outer wall. There is no fallback to a shared user such as nobody: see "Ending a run" below.
- process: a separate process with a cleared environment and its own session; a network
  namespace when `unshare` works; no file-system isolation and not a security boundary (the
  child is the grader's user). Used only when neither can run, and never silently for a secret seed.

All get rlimits (CPU, address space, file size, open files, no core files) and, where the grader
may create one, a cgroup (memory and number of processes: limits that hold even for root). The
rlimits and the cgroup are applied in the forked child before it executes anything, so every
process it starts inherits them. Under bubblewrap a seccomp filter (pyseccomp, where the system's
libseccomp is present) is a further layer: sockets of the AF_UNIX family only; no ptrace, no
reading other processes' memory, and none of the kernel interfaces a computation never needs
(see DENIED_CALLS).

Ending a run. A run's processes are ended by its cgroup where there is one (nothing can leave it
without privileges), else by its process group; under bubblewrap, also by the pid namespace. A
process of the uid backend can leave its process group and session (setsid after a double fork),
and without a cgroup nothing else marks it as the run's: it would outlive the run and could
tamper with the next run of the same user (read its files, open its channel through /proc). So
after a run every process of the runner user is killed: the user is dedicated to the grader
(never nobody, whose processes belong to others) and a grader process holds it exclusively (an
flock, waited for by other graders) from its first child until it exits, so every process of that
user belongs to the run being ended. Gradings under the uid backend are therefore serialised per
runner user; give each concurrent grader its own runner user, or use bubblewrap.
"""

import ctypes
import errno
import fcntl
import functools
import grp
import os
import pwd
import re
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from grader.child import walls
from grader.spec import Limits

MIB = 1 << 20
SANDBOX_KIT = "/sandbox/kit"
SANDBOX_SUBMISSION = "/sandbox/submission"
TMPFS_MIB = 64  # the private /tmp
SHM_MIB = 16  # the private /dev/shm (POSIX semaphores and shared memory)
PIDS_MAX = 64
UNPRIVILEGED_ID = 65534  # "nobody" inside the user namespace (bubblewrap maps it to the grader's uid)
# A root grader's children run as box uids: BOX_UID_BASE + a slot, each held by one grader for one
# child (or one pool server) at a time (take_box_uid). 60000-60999, as isolate's boxes: above the
# ranges accounts are made in, below systemd's dynamic users (61184-65519); a uid an account or a
# group owns, or a running process has, is skipped.
BOX_UID_BASE = 60000
BOX_UIDS = 1000
BOX_LOCK_DIR = Path("/tmp")  # where graders meet to hold box uids (one lock file per uid)
# What bwrap keeps for the command when it runs as root: setpriv needs them to become the box uid
# and to empty the bounding set; it drops them all before Python starts.
SETPRIV_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
RUNNER_USER = "mlm-runner"  # the uid backend's user: dedicated to the grader, see "Ending a run"
CREATE_RUNNER_USER = f"useradd --system --no-create-home --shell /usr/sbin/nologin {RUNNER_USER}"
RUNNER_LOCK_DIR = Path("/tmp")  # where graders sharing a runner user meet to take turns


ISOLATION_LEVELS = ("auto", "strict", "bubblewrap", "uid", "process", "docker")  # what --isolation accepts
# The kit's child on a system that is not Linux (check.py, macOS): a plain process with the limits the
# system accepts, and nothing that needs Linux (/proc, cgroups, namespaces, prctl, waitid). Never
# chosen by the grader: choose_backend does not know it, and --isolation does not accept it.
PLAIN = "plain"


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
    """Whether bwrap exists, knows every option we use (0.8 or newer) and may create namespaces
    here (inside many containers it may not), and, for a root grader, whether setpriv exists, a
    box uid is free and may run this Python (not where it is readable by root alone): the real
    sandbox starts the interpreter."""
    if shutil.which("bwrap") is None:
        return False
    root = os.geteuid() == 0
    if root and shutil.which("setpriv") is None:
        return False
    with tempfile.TemporaryDirectory(prefix="mlm-grader-probe-") as folder:
        kit, submission = Path(folder, "kit"), Path(folder, "submission")
        kit.mkdir()
        submission.mkdir()
        box = None
        try:
            box = take_box_uid() if root else None
            command = bubblewrap_command([sys.executable, "-I", "-c", "pass"], kit, submission, uid=box.uid if box else None)
            return subprocess.run(command, capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired, IsolationUnavailable):
            return False
        finally:
            if box is not None:
                box.release()


@functools.cache
def runner_ids() -> tuple[int, int] | None:
    """(uid, gid) of the dedicated runner user, if it exists. Never another user: after a run every
    process of this user is killed, which would end other people's processes under a shared one."""
    try:
        entry = pwd.getpwnam(RUNNER_USER)
    except KeyError:
        return None
    if entry.pw_uid in (0, UNPRIVILEGED_ID) or entry.pw_uid == os.getuid():
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


def uid_separation_works() -> bool:
    return uid_problem() is None


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


class BoxUid:
    """A box uid (and the gid of the same number) held by this process: no other grader takes it
    until release(). One per child, one per pool server; the child's processes are all ended
    before it is released."""

    def __init__(self, uid: int, lock: int) -> None:
        self.uid = uid
        self._lock = lock

    def release(self) -> None:
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


def _has_account(uid: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except KeyError:
            pass
    return False


def _running_uids() -> set[int]:
    """The effective uid of every process: the owner of its /proc folder, whether or not it is
    dumpable (a twentieth of the time of reading every status)."""
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            found.add(os.stat(f"/proc/{pid}").st_uid)
        except OSError:  # ended meanwhile
            pass
    return found


def take_box_uid() -> BoxUid:
    """A free box uid, held by this process (an flock on BOX_LOCK_DIR/mlm-grader-box-UID.lock, a
    file of ours) until released: no account or group owns it, and no process runs as it now (so
    not one left by a grader that was killed, nor one of a container that happens to use it)."""
    running = _running_uids()
    for uid in range(BOX_UID_BASE, BOX_UID_BASE + BOX_UIDS):
        if uid in running or _has_account(uid):
            continue
        try:
            fd = os.open(BOX_LOCK_DIR / f"mlm-grader-box-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            continue
        try:
            if os.fstat(fd).st_uid == os.geteuid():  # anyone else's file could be held to take the uid from under us
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return BoxUid(uid, fd)
        except OSError:  # held by another grader, or by another child of ours
            pass
        os.close(fd)
    raise IsolationUnavailable(f"every box uid ({BOX_UID_BASE} to {BOX_UID_BASE + BOX_UIDS - 1}) is in use, owned by an account or its lock file is not root's")


def scrub_secret(env_var: str, secret: str) -> None:
    """Remove a secret from what other processes can read of this one: the environment variable
    `env_var` and any command-line argument holding `secret` (`--seed S`, `--seed=S`).
    /proc/<pid>/environ and /proc/<pid>/cmdline show the strings the kernel placed at the top of the
    stack when the process started, which os.environ.pop() and unsetenv() leave in place, so the
    bytes are overwritten there, in this process's own memory. Call it before any child starts."""
    os.environ.pop(env_var, None)  # also unsetenv(): children no longer inherit it
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])  # fields 48 to 51 of proc(5)
    except (OSError, ValueError):  # not Linux, or a kernel older than 3.5: nothing there to scrub
        return
    secret_bytes = os.fsencode(secret)
    for start, end, holds_secret in (
        (env_start, env_end, lambda entry: entry.startswith(os.fsencode(env_var) + b"=")),
        (arg_start, arg_end, lambda entry: entry == secret_bytes or (entry.startswith(b"--") and entry.endswith(b"=" + secret_bytes))),
    ):
        offset = 0
        for entry in ctypes.string_at(start, end - start).split(b"\0"):
            if entry and holds_secret(entry):
                ctypes.memset(start + offset, 0, len(entry))
            offset += len(entry) + 1


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


# Refused with EPERM under bubblewrap: calls a computation never makes, each a way out of the
# sandbox or into the kernel's least-travelled code. None is made by importing torch or grading.
DENIED_CALLS = (
    # other processes' memory and descriptors
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
    # namespaces, mounts and the root (and clone with a namespace flag, and clone3: seccomp_program)
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "mount_setattr",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "open_by_handle_at", "name_to_handle_at",
    # kernel keyrings, BPF, perf, userfaultfd, io_uring (each with a history of privilege escalations)
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # the machine itself
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm",
)  # fmt: skip


# What the pool's server needs beyond a single child: it makes a user namespace for itself, and its
# children build their own namespaces and mounts (grader/child/walls.py) before they take a single
# child's filter, which refuses them again.
POOL_SERVER_ALLOWED = ("unshare", "mount")
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)  # CLONE_NEW*


@functools.cache
def seccomp_program(kind: str = "child") -> bytes | None:
    """A BPF program allowing sockets of the AF_UNIX family only (socket and socketpair of any other
    family: EACCES) and refusing DENIED_CALLS (EPERM), or None without pyseccomp/libseccomp.
    Syscalls of another architecture (32-bit calls on x86_64) kill the process: libseccomp's default.
    kind "child": a child's, single (bwrap --seccomp) or of the pool (loaded on top of the server's
    once it is walled in); it also refuses clone with any namespace flag (EPERM) and clone3, whose
    flags a filter cannot read (ENOSYS: the C library falls back to clone), so that no route makes
    a namespace, a user namespace least: where the grader is root, the child's uid is unprivileged
    on the host but would hold every capability in a user namespace of its own.
    "pool_server": the pool's server may also unshare and mount (POOL_SERVER_ALLOWED)."""
    try:
        import pyseccomp as seccomp

        rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        for call in ("socket", "socketpair"):  # "not AF_UNIX" rather than a list of families: new ones stay closed
            rules.add_rule(seccomp.ERRNO(errno.EACCES), call, seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
        for call in DENIED_CALLS:
            if kind == "pool_server" and call in POOL_SERVER_ALLOWED:
                continue
            try:
                rules.add_rule(seccomp.ERRNO(errno.EPERM), call)
            except OSError:  # a call this libseccomp or architecture does not know
                pass
        if kind == "child":
            for flag in NAMESPACE_FLAGS:
                rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
            rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        with tempfile.TemporaryFile() as program:
            rules.export_bpf(program)
            program.seek(0)
            return program.read()
    except (ImportError, OSError, RuntimeError):
        return None


def seccomp_fd(kind: str = "child") -> int | None:
    """A descriptor holding the seccomp program, for bwrap --seccomp (the caller closes it)."""
    program = seccomp_program(kind)
    if program is None:
        return None
    fd = os.memfd_create("mlm-grader-seccomp")
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _parent_dirs(paths: list[str]) -> list[str]:
    """--dir for every missing parent folder of `paths`, made 0755 before anything is mounted below
    it: bwrap makes the parents it needs 0700 (root's), which a box uid could not pass through."""
    args: list[str] = []
    made: set[Path] = set()
    for path in paths:
        for parent in reversed(Path(path).parents[:-1]):  # from the top down, / left out
            if parent not in made:
                made.add(parent)
                args += ["--perms", "0755", "--dir", str(parent)]
    return args


def setpriv_command(uid: int, command: list[str]) -> list[str]:
    """`command` as the host uid and gid `uid`, with no supplementary group, every capability set
    and the bounding set emptied, and no_new_privs: setpriv needs SETPRIV_CAPABILITIES for it."""
    drop = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *drop, "--", *command]


def bubblewrap_command(command: list[str], kit: Path, submission_dir: Path | None, seccomp: int | None = None, uid: int | None = None) -> list[str]:
    """`command` inside the sandbox; it finds the kit and the submission at SANDBOX_KIT and SANDBOX_SUBMISSION.
    Writable there: /tmp (TMPFS_MIB) and /dev/shm (SHM_MIB), nothing else; /proc is read-only.
    uid: the box uid the command runs as (take_box_uid), for a grader that is root, which must give
    one: bwrap then runs as root without a user namespace and the command is setpriv_command(uid).
    None: the grader's own uid (it must not be root), through an unprivileged user namespace, with
    bwrap --disable-userns.
    submission_dir None: the pool's server (grader/pool.py). Nothing at all is writable there (/tmp,
    /dev/shm and SANDBOX_SUBMISSION are empty read-only folders, on which each child mounts its
    own), /proc stays writable (each child writes its own user namespace's id maps, then makes its
    /proc read-only), and user namespaces are allowed: the server makes one for itself where the
    grader is root, each child makes its own, then seccomp (seccomp_program("child")) refuses any
    further one."""
    if uid is None and os.geteuid() == 0:
        raise ValueError("the grader is root: the sandboxed command must run as a box uid (take_box_uid), never as root")
    filters = ["--seccomp", str(seccomp)] if seccomp is not None else []
    server = submission_dir is None
    if uid is not None:
        user = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
        user += [word for capability in SETPRIV_CAPABILITIES for word in ("--cap-add", capability)]
        command = setpriv_command(uid, command)
    else:
        user = ["--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--uid", str(UNPRIVILEGED_ID), "--gid", str(UNPRIVILEGED_ID)]
        user += [] if server else ["--disable-userns"]  # no nested user namespace, where the child would hold every capability
    private = ["--dir", "/tmp"] if server else ["--perms", "1777", "--size", str(TMPFS_MIB * MIB), "--tmpfs", "/tmp"]
    shm = ["--dir", "/dev/shm"] if server else ["--perms", "1777", "--size", str(SHM_MIB * MIB), "--tmpfs", "/dev/shm"]
    binds = [*_system_binds(), *_python_binds(), "--ro-bind", str(kit), SANDBOX_KIT]
    binds += ["--dir", SANDBOX_SUBMISSION] if server else ["--ro-bind", str(submission_dir), SANDBOX_SUBMISSION]
    destinations = [binds[i + 2] for i, word in enumerate(binds) if word == "--ro-bind"] + [SANDBOX_SUBMISSION]
    wrapper = [
        "bwrap",
        *user,
        "--die-with-parent",
        "--new-session",
        # Mounts apply in order: the private /tmp first, so that binds below /tmp (a checkout
        # and its .venv there) are laid on top of it instead of being hidden by it.
        *private,
        "--proc", "/proc",
        "--dev", "/dev",
        "--chmod", "0000", "/dev/pts/ptmx",  # no new pseudo-terminal: a computation has no use for one
        *shm,
        *_parent_dirs(destinations),
        *binds,
        # Last, once every mount point exists: the tmpfs that bwrap builds the root from, and the
        # one under /dev, have no size; read-only, they hold nothing. /tmp and /dev/shm stay writable.
        "--remount-ro", "/dev",
        "--remount-ro", "/dev/pts",
        *([] if server else ["--remount-ro", "/proc"]),  # /proc/sys, /proc/pressure, other processes' attr files...
        "--remount-ro", "/",
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


def give_pipes(fds: list[int], uid: int) -> None:
    """Make the pipes among `fds` (a child's ends of its channel and output) the box uid's, as
    they would be a child's that made them: a child may reopen its own ends through /proc/self/fd
    (open("/dev/stdout", "w") does), which only a pipe's owner may."""
    for fd in fds:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.fchown(fd, uid, uid)


def apply_limits_in_child(limits: Limits, cgroup_files: list[str], max_processes: int | None, owner: int | None = None) -> None:
    """Runs in the forked child before exec (subprocess preexec_fn): join the cgroup, set rlimits,
    and give the stdout and stderr pipes to the box uid `owner` (give_pipes). Only system calls
    here: no imports, no threads, no allocation-heavy work."""
    if owner is not None:
        give_pipes([1, 2], owner)
    for path in cgroup_files:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    walls.apply_limits(limits.cpu_seconds, limits.memory_mib, limits.file_size_mib, limits.open_files)
    if max_processes:  # counts per user: meaningful only for a uid of the child's own (the runner user, a box uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))


def choose_backend(requested: str, secret_seed: bool = False) -> str:
    """'auto' picks the strongest backend that works here; 'strict' refuses the plain process
    backend; a backend's name insists on it. With a secret seed, 'auto' refuses rather than fall
    back to the process backend, which cannot keep the seed from the submission."""
    probes = {"bubblewrap": bubblewrap_works, "uid": uid_separation_works}  # strongest first
    if requested in ("auto", "strict"):
        for name, works in probes.items():
            if works():  # later probes are not run once one works
                return name
        walls = f"bubblewrap 0.8 or newer with permission to create namespaces (apt-get install bubblewrap), or the uid backend ({uid_problem()})"
        if requested == "strict":
            raise IsolationUnavailable(f"--isolation strict needs {walls}; neither works here")
        if secret_seed:
            raise IsolationUnavailable(
                f"a secret seed is set, and no isolation that keeps it from the submission works here: it needs {walls}. "
                "Install bubblewrap, grade in the grader's container (see README.md), or use --isolation docker; "
                "--isolation process grades anyway, without protecting the seed"
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
    if requested == "bubblewrap":
        raise IsolationUnavailable(
            "the bubblewrap backend does not work here: it needs bwrap 0.8 or newer with permission to create namespaces "
            f"(and, for a root grader, setpriv and a Python that any user may read and run: the child is a box uid, {BOX_UID_BASE} or above)"
        )
    if requested == "uid":
        raise IsolationUnavailable(f"the uid backend does not work here: {uid_problem()}")
    raise IsolationUnavailable(f"unknown isolation level {requested!r}")


def describe(backend: str, cgroup: "Cgroup | None", limits: Limits, uid: int | None = None) -> str:
    """One line for every report: what the child was walled in by. uid: the box uid of a bubblewrap
    child (the grader is root); None: the grader's own."""
    if backend == "bubblewrap":
        if uid is not None:
            refused = "no user namespace" if seccomp_program() is not None else "user namespaces not refused (no libseccomp)"
            who = f"host uid {uid} of its own, unprivileged; pid, net, ipc, uts, mount namespaces, {refused}"
        else:
            who = f"the grader's uid {os.getuid()} through a user namespace; pid, net, ipc, uts, mount namespaces, no nested user namespace"
        walls = (
            f"bubblewrap ({who}; no capabilities; read-only root, runtime and /proc; writable only a private {TMPFS_MIB} MiB /tmp and {SHM_MIB} MiB /dev/shm)"
        )
        if seccomp_program() is not None:
            walls += (
                "; seccomp (sockets of the AF_UNIX family only; no ptrace or other processes' memory, no namespaces or mounts, "
                "no keyrings, bpf, perf events, userfaultfd, io_uring or kernel modules)"
            )
    elif backend == "uid":
        network = "network namespace" if unshare_net_works() else "the container's network"
        walls = f"uid (the dedicated user {RUNNER_USER}, uid {runner_ids()[0]}, no capabilities; {network}; the container is the outer wall)"
    elif backend == PLAIN:
        return (
            f"plain process on {sys.platform} (no bubblewrap, seccomp, cgroup or namespaces, which are Linux's; your own user; "
            f"the limits of CPU time, memory, file size and open files that the system accepts, and the wall-time limits): "
            "enough for the kit, which holds no secret; the grader walls your file in on Linux"
        )
    else:
        network = "network namespace" if unshare_net_works() else "shared network"
        walls = f"process ({network}; same user; no file-system isolation: not a security boundary, a secret seed is not protected)"
    groups = f"cgroup memory {limits.memory_mib} MiB, pids {PIDS_MAX}" if cgroup else "no cgroup"
    return f"{walls}; {groups}; rlimits"
