"""Walls a forked child builds around itself inside the pool's sandbox, before it runs a submission.

The pool's server (server.py) runs inside bubblewrap with torch imported, and forks one child per
submission. A fork shares everything with its siblings and the server unless it walls itself in,
so each child, before any submission code runs:
- enters new user, mount, pid, ipc, uts and network namespaces: it cannot signal the server or
  its siblings (they are outside its pid namespace), nor reach their abstract Unix sockets or
  System V IPC;
- becomes pid 1 of that pid namespace (the fork below), so when it dies every process it started
  dies with it;
- mounts its own size-capped /tmp and /dev/shm over the server's, so nothing one submission
  leaves there is seen by the next;
- drops every capability it held in its new user namespace (so it cannot unmount that /tmp or
  mount anything), sets no_new_privs, and makes itself non-dumpable (its /proc files, memory and
  root are closed to same-uid processes).
The server's own /proc stays mounted (the kernel refuses a fresh one under bubblewrap's masked
/proc), so a child can list the pool's process ids and command lines, which hold nothing secret;
their memory, environment, files and roots stay closed (non-dumpable).

Only the standard library and system calls through ctypes: this runs in the child before any
submission code, and a failure here means the child must not run the submission at all.
"""

import ctypes
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38
CAPABILITY_VERSION_3 = 0x20080522
INNER_ID = 1000  # the child's uid and gid inside its own user namespace: not root there

_libc = ctypes.CDLL(None, use_errno=True)


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


def drop_capabilities() -> None:
    """Clear the effective, permitted and inheritable sets; no_new_privs keeps them cleared."""
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def make_undumpable() -> None:
    _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")


def _map_ids(outer_uid: int, outer_gid: int) -> None:
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{INNER_ID} {outer_uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{INNER_ID} {outer_gid} 1")


def _mirror_exit(pid: int) -> None:
    """In the process left outside the new pid namespace: wait for its init and end as it ended."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        os.kill(os.getpid(), os.WTERMSIG(status))  # SIGKILL and friends: end the same way
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def wall_in(tmp_mib: int) -> None:
    """Call in a freshly forked child; returns in a new process, pid 1 of its own namespaces,
    walled in as described above. The caller's process waits outside and mirrors its exit."""
    outer_uid, outer_gid = os.getuid(), os.getgid()
    make_undumpable()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET
    _check(_libc.unshare(flags), "unshare")
    _map_ids(outer_uid, outer_gid)
    pid = os.fork()  # the new pid namespace holds only the children of this process
    if pid:
        _mirror_exit(pid)
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "private mounts")
    options = f"size={tmp_mib}m,mode=1777".encode()
    for folder in (b"/tmp", b"/dev/shm"):
        if os.path.isdir(folder):
            _check(_libc.mount(b"tmpfs", folder, b"tmpfs", MS_NOSUID | MS_NODEV, options), f"private {folder.decode()}")
    os.setsid()  # its own session: the grader counts CPU time and kills by it
    drop_capabilities()
    make_undumpable()  # the fork above reset nothing, but say it where the submission will run
