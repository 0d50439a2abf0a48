"""The bubblewrap command line: new pid, network, ipc, uts and mount namespaces; the system
libraries, the Python runtime and the child-side code read-only; a private, sized /tmp and
/dev/shm the only writable places; no capabilities; a box uid of its own where the grader is root."""

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.sandbox import IsolationUnavailable
from grader.sandbox.backends import Layout, Walled
from grader.sandbox.boxes import BOX_UID_BASE, take_box_uid
from grader.sandbox.limits import MIB, PIDS_MAX
from grader.sandbox.process import LocalBackend
from grader.sandbox.seccomp import seccomp_fd, seccomp_program

UNPRIVILEGED_ID = 65534  # "nobody" inside the user namespace (bubblewrap maps it to the grader's uid)

SANDBOX_KIT = "/sandbox/kit"
SANDBOX_SUBMISSION = "/sandbox/submission"
TMPFS_MIB = 64  # the private /tmp
SHM_MIB = 16  # the private /dev/shm (POSIX semaphores and shared memory)
# What bwrap keeps for the command when it runs as root: setpriv needs them to become the box uid
# and to empty the bounding set; it drops them all before Python starts.
SETPRIV_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")


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


def python_installations() -> list[str]:
    """The interpreter's installation and the virtual environment (site-packages) where they lie
    outside /usr (which every sandbox binds whole)."""
    prefixes = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    return sorted(prefix for prefix in prefixes if not prefix.startswith("/usr"))


def _python_binds() -> list[str]:
    """python_installations(), read-only."""
    return [word for prefix in python_installations() for word in ("--ro-bind", prefix, prefix)]


def covered_folders() -> list[str]:
    """The folders right below /tmp or /dev/shm that hold the Python installation (a checkout and
    its .venv under /tmp), which a child's private /tmp and /dev/shm would otherwise cover. Each
    child gets them as read-only mount points holding only the installation: it cannot move them,
    make anything in them or put its own files in the installation's place (the runtime guard knows
    torch's code by the path it was loaded from)."""
    found = set()
    for prefix in map(Path, python_installations()):
        for top in (Path("/tmp"), Path("/dev/shm")):
            if prefix.is_relative_to(top) and prefix != top:
                found.add(str(top / prefix.relative_to(top).parts[0]))
    return sorted(found)


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
    submission_dir None: the pool's server (grader/sandbox/zygote.py). Nothing at all is writable there (/tmp,
    /dev/shm and SANDBOX_SUBMISSION are empty read-only folders, on which each child mounts its
    own), /proc stays writable (each child writes its own user namespace's id maps, then makes its
    /proc read-only), and user namespaces are allowed: the server makes one for itself where the
    grader is root, each child makes its own, then seccomp (seccomp_program("child")) refuses any
    further one."""
    if uid is None and os.geteuid() == 0:
        raise ValueError("the grader is root: the sandboxed command must run as a box uid (take_box_uid), never as root")
    filters = ["--seccomp", str(seccomp)] if seccomp is not None else []
    server = submission_dir is None
    covered = [] if server else covered_folders()
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
        # A small tmpfs for each covered folder, made read-only once the installation is bound in it:
        # a mount point, which the child's own /tmp cannot rename or remove. (The server's /tmp is a
        # read-only folder of the root.)
        *[word for folder in covered for word in ("--perms", "0755", "--size", str(MIB), "--tmpfs", folder)],
        *_parent_dirs(destinations),
        *binds,
        # Last, once every mount point exists: the tmpfs that bwrap builds the root from, and the
        # one under /dev, have no size; read-only, they hold nothing. /tmp and /dev/shm stay writable.
        *[word for folder in covered for word in ("--remount-ro", folder)],
        "--remount-ro", "/dev",
        "--remount-ro", "/dev/pts",
        *([] if server else ["--remount-ro", "/proc"]),  # /proc/sys, /proc/pressure, other processes' attr files...
        "--remount-ro", "/",
        "--chdir", "/tmp",
        *filters,
        "--",
    ]  # fmt: skip
    return wrapper + command


class Bubblewrap(LocalBackend):
    name = "bubblewrap"
    strong = keeps_secret = True
    reports_signal_as_status = True

    def problem(self) -> str | None:
        if bubblewrap_works():
            return None
        return (
            "the bubblewrap backend does not work here: it needs bwrap 0.8 or newer with permission to create namespaces "
            f"(and, for a root grader, setpriv and a Python that any user may read and run: the child is a box uid, {BOX_UID_BASE} or above)"
        )

    def layout(self, kit: Path, submission_dir: Path, home: Path) -> Layout:
        return Layout(SANDBOX_KIT, SANDBOX_SUBMISSION, "/tmp")

    def wrap(self, command: list[str], inherited: list[int], kit: Path, submission_dir: Path, workdir: Path, home: Path) -> Walled:
        box = take_box_uid() if os.geteuid() == 0 else None  # a root grader's child is a box uid of its own
        program = seccomp_fd()
        inherited = inherited + ([program] if program is not None else [])
        try:
            command = bubblewrap_command(command, kit, submission_dir, program, box.uid if box else None)
        except BaseException:
            if box is not None:
                box.release()
            raise
        return Walled(command, inherited, box, PIDS_MAX if box else None)  # RLIMIT_NPROC counts per uid: a box uid's are this child's alone

    def walls(self, uid: int | None) -> str:
        filtered = seccomp_program() is not None
        if uid is not None:
            refused = "no user namespace" if filtered else "user namespaces not refused (no libseccomp)"
            who = f"host uid {uid} of its own, unprivileged; pid, net, ipc, uts, mount namespaces, {refused}"
        else:
            who = f"the grader's uid {os.getuid()} through a user namespace; pid, net, ipc, uts, mount namespaces, no nested user namespace"
        writable = f"writable only a private {TMPFS_MIB} MiB /tmp and {SHM_MIB} MiB /dev/shm"
        walls = f"bubblewrap ({who}; no capabilities; read-only root, runtime and /proc; {writable})"
        if filtered:
            walls += (
                "; seccomp (sockets of the AF_UNIX family only; no ptrace or other processes' memory, no namespaces or mounts, "
                "no keyrings, bpf, perf events, userfaultfd, io_uring or kernel modules)"
            )
        return walls


BACKEND = Bubblewrap()
