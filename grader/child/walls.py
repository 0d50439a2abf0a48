"""Walls a forked child of the warm pool builds around itself before it runs a submission.

Three processes come of one spawn: the outer one (the child's box uid where the grader is root; new
user, mount, pid, ipc, uts and network namespaces), the namespace's init (private /tmp and /dev/shm,
the read-only submission, a read-only /proc; it reaps and reports the runner's status as bubblewrap
would) and the runner (no capabilities, no_new_privs, non-dumpable, the limits and a single child's
seccomp filter). Why these walls and what they hold against: docs/threat-model.md, "The warm pool".
Only the standard library and system calls through ctypes: a failure here (WallError) means the
submission must not run at all.
"""

import ctypes
import os
import resource
import signal
from collections.abc import Callable, Sequence

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x2, 0x4, 0x8, 0x20, 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 22, 24, 38
SECCOMP_MODE_FILTER = 2
CAPABILITY_VERSION_3 = 0x20080522
CAP_KILL, CAP_SETGID, CAP_SETUID = 5, 6, 7
INNER_ID = 1000  # the child's uid and gid inside its own user namespace: not root there
MIB = 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)
if hasattr(_libc, "prctl"):  # Linux. Elsewhere (the kit on macOS) this module is imported, for apply_limits, and no wall is built
    _libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class WallError(OSError):
    """A wall could not be built: the submission must not run."""


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise WallError(code, f"{what}: {os.strerror(code)}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def drop_capabilities(keep: tuple[int, ...] = ()) -> None:
    """Empty the bounding set (as bwrap --cap-drop ALL does) but for `keep`, then set the effective
    and permitted sets to `keep` alone, the inheritable set (and the ambient set with it) empty;
    no_new_privs keeps them so."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        if cap not in keep:
            _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"dropping capability {cap} from the bounding set")
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    for cap in keep:
        data[cap // 32].effective |= 1 << cap % 32
        data[cap // 32].permitted |= 1 << cap % 32
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    set_no_new_privs()


def unshare_user() -> None:
    """A new user namespace for this process (single-threaded: before torch is imported)."""
    _check(_libc.unshare(CLONE_NEWUSER), "unshare user namespace")


def enter_box_namespace(first: int, count: int, ask_for_map: Callable[[], None]) -> None:
    """The server's first step where the grader is root (it runs as a box uid, with no capability):
    a user namespace of its own, which ask_for_map() has the grader map (the box uids first ..
    first + count - 1 onto themselves, and nothing else), then only CAP_SETUID and CAP_SETGID kept
    in it, with which each child becomes a box uid of its own (become_box_uid), and CAP_KILL, with
    which the server ends a child that could not wall itself in (another uid by then)."""
    unshare_user()
    ask_for_map()
    expected = [str(first), str(first), str(count)]
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/self/{name}") as f:
            if f.read().split() != expected:
                raise WallError(0, f"the server's {name} is not the box uids alone")
    drop_capabilities(keep=(CAP_SETUID, CAP_SETGID, CAP_KILL))


def become_box_uid(uid: int) -> None:
    """In a forked child of the server: its own box uid and gid, no supplementary group. The server's
    CAP_SETUID and CAP_SETGID are left behind with its user namespace when the child makes its own."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid):
        raise WallError(0, f"could not become uid {uid}")


def make_undumpable() -> None:
    _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")


def set_no_new_privs() -> None:
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def install_seccomp(program: bytes) -> None:
    """Load a classic BPF seccomp program (libseccomp's export, as bubblewrap's --seccomp takes it).
    Needs no_new_privs; filters stack, so it adds to the server's and cannot be removed."""
    if not program or len(program) % 8:
        raise WallError(0, "seccomp: no valid filter program was given")
    code = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(code))
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "seccomp")


def _map_ids(outer_uid: int, outer_gid: int) -> None:
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{INNER_ID} {outer_uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{INNER_ID} {outer_gid} 1")


def reported_status(status: int) -> int:
    """A wait status as bubblewrap reports a child's: its exit code, or 128 + the signal that ended it
    (grader/sandbox/child.py returncode_of reads it back)."""
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _status_of(pid: int) -> int:
    """Wait for `pid`; its exit status as bubblewrap reports one: the code, or 128 + the signal."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            return reported_status(status)


def _init(runner: int) -> None:
    """pid 1 of the namespace: reap everything, end with the runner's status (never returns)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(70)
        if pid == runner:
            os._exit(reported_status(status))


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the parent dies. parent 0: it is outside our pid namespace (getppid() says 0);
    it is the outer process, which ends only after us, or with the whole pool."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
    if os.getppid() != parent:  # it died before the line above
        os._exit(70)


def _private_tmpfs(folder: str, mib: int, mode: str = "1777") -> None:
    options = f"size={mib}m,mode={mode},uid={INNER_ID},gid={INNER_ID}".encode()
    _check(_libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), f"private {folder}")


def _bind_read_only(fd: int, folder: str) -> None:
    """The folder `fd` holds, with the mounts below it, bound at `folder`, which is made on a private
    tmpfs; its top read-only (the mounts below are the server's read-only binds). A mount point, it
    cannot be renamed or removed, and nothing can be made in it: the runner, which owns the private
    tmpfs, cannot move the installation's path out of its way."""
    os.mkdir(folder, 0o755)
    _check(_libc.mount(f"/proc/self/fd/{fd}".encode(), folder.encode(), None, MS_BIND | MS_REC, None), f"bind {folder}")
    _check(_libc.mount(None, folder.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None), f"read-only {folder}")
    os.close(fd)


def wall_in(
    tmp_mib: int, shm_mib: int, submission_dir: str, filename: str, source_fd: int, keep_fds: set[int], uid: int | None = None, covered: Sequence[str] = ()
) -> None:
    """Call in a freshly forked child of the server; returns in the runner (see the module's
    docstring) with the submission at submission_dir/filename, read-only, in a private folder,
    and the current directory in its private /tmp. The other two processes never return. Only the
    runner keeps keep_fds; the source descriptor is closed everywhere. uid: the child's box uid,
    where the grader is root; None: the server's uid (the grader's). covered: the folders right below
    /tmp or /dev/shm that hold the Python installation, bound again, read-only, on the private ones."""
    make_undumpable()
    if uid is not None:
        become_box_uid(uid)
        # A non-dumpable process's /proc files are root's, and so closed to it: it could not write
        # its own id maps below. Dumpable for those few lines is safe with a box uid (no other
        # process has it, and the server has no CAP_SYS_PTRACE), not with the server's shared uid.
        _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
    outer_uid, outer_gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET
    _check(_libc.unshare(flags), "unshare")
    _map_ids(outer_uid, outer_gid)
    make_undumpable()
    init = os.fork()  # the new pid namespace holds only the children of this process
    if init:
        _close(keep_fds | {source_fd})
        drop_capabilities()  # it only waits now: nothing left to do in its namespaces
        os._exit(_status_of(init))
    _die_with_parent(0)
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "private mounts")
    held = [os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for folder in covered]  # still reachable once covered
    _private_tmpfs("/tmp", tmp_mib)
    _private_tmpfs("/dev/shm", shm_mib)
    for folder, fd in zip(covered, held, strict=True):
        _bind_read_only(fd, folder)
    _private_tmpfs(submission_dir, 1, "0755")
    path = os.path.join(submission_dir, filename)
    with os.fdopen(source_fd, "rb") as source, open(path, "xb") as target:
        target.write(source.read())
    os.chmod(path, 0o444)
    remount = MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
    _check(_libc.mount(None, submission_dir.encode(), None, remount, None), "read-only submission folder")
    # The server's /proc, read-only from here on (the id maps above were its last writes): sysctls,
    # pressure triggers, other processes' attr files... bubblewrap's proc flags stay (locked).
    read_only_proc = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    _check(_libc.mount(None, b"/proc", None, read_only_proc, None), "read-only /proc")
    runner = os.fork()
    if runner:
        _close(keep_fds)
        drop_capabilities()
        _init(runner)
    _die_with_parent(1)
    os.chdir("/tmp")  # the private one: the server's /tmp must not stay reachable as "."
    os.setsid()
    drop_capabilities()
    make_undumpable()


def _close(fds: set[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def apply_limits(cpu_seconds: int, memory_mib: int, file_size_mib: int, open_files: int, processes: int | None = None) -> None:
    """The rlimits of every child, a single one (grader/sandbox/limits.py apply_limits_in_child) or the
    pool's; CPU time of the whole tree, memory and processes are also held from outside, by the
    child's cgroup. processes: RLIMIT_NPROC, for a child with a uid of its own (a box uid). Only
    system calls: a single child runs this between fork and exec."""
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_AS, (memory_mib * MIB,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_mib * MIB,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_files,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if processes:
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))


def apply_limits_where_possible(cpu_seconds: int, memory_mib: int, file_size_mib: int, open_files: int) -> None:
    """apply_limits for the kit's plain child on a system that is not Linux (macOS): each limit the
    system accepts, the others left as they are (macOS refuses or ignores some, the memory limit
    first). Never for the grader, whose child takes every limit or does not run."""
    wanted = {
        "RLIMIT_CPU": (cpu_seconds, cpu_seconds + 1),
        "RLIMIT_AS": (memory_mib * MIB,) * 2,
        "RLIMIT_FSIZE": (file_size_mib * MIB,) * 2,
        "RLIMIT_NOFILE": (open_files,) * 2,
        "RLIMIT_CORE": (0, 0),
    }
    for name, limit in wanted.items():
        kind = getattr(resource, name, None)  # a system may not define one
        try:
            if kind is not None:
                resource.setrlimit(kind, limit)
        except (OSError, ValueError):
            pass
