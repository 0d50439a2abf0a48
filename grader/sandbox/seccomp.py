"""The system calls a sandboxed child may not make, as a seccomp program (libseccomp's, through
pyseccomp): bubblewrap loads it for a single child, the zygote's children load it once walled in.
(The runtime guard's own filter, which refuses new threads, is built inside the child: grader/child/guard.py.)"""

import errno
import functools
import os
import socket
import tempfile

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
