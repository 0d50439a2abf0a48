"""Box uids: a root grader gives each child (and each zygote server) a host uid of its own, which
no account owns and one grader holds at a time (as isolate gives each box its own uid), so that a
child is never host root and never shares a uid with another child."""

import fcntl
import grp
import os
import pwd
import stat
from pathlib import Path

from grader.sandbox import IsolationUnavailable

# A root grader's children run as box uids: BOX_UID_BASE + a slot, each held by one grader for one
# child (or one pool server) at a time (take_box_uid). 60000-60999, as isolate's boxes: above the
# ranges accounts are made in, below systemd's dynamic users (61184-65519); a uid an account or a
# group owns, or a running process has, is skipped.
BOX_UID_BASE = 60000
BOX_UIDS = 1000
BOX_LOCK_DIR = Path("/tmp")  # where graders meet to hold box uids (one lock file per uid)


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


def give_pipes(fds: list[int], uid: int) -> None:
    """Make the pipes among `fds` (a child's ends of its channel and output) the box uid's, as
    they would be a child's that made them: a child may reopen its own ends through /proc/self/fd
    (open("/dev/stdout", "w") does), which only a pipe's owner may."""
    for fd in fds:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.fchown(fd, uid, uid)
