"""Pool attack: looks at its own walls from inside and tries to get out of them (a new user or
mount namespace, a mount, an unmount of its /tmp, a network socket, a write to /proc); prints what
it found as one JSON line (the test compares the limits with the spec) and fails the grading if any
wall is missing, or if its uid outside its user namespace is root's, or if it can change the
Python installation or the folders above it."""

import ctypes
import json
import os
import resource
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
problems = []
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
    if int(status[field], 16):
        problems.append(f"{field} {status[field].strip()}")
if status["NoNewPrivs"].strip() != "1" or status["Seccomp"].strip() != "2":
    problems.append(f"no_new_privs {status['NoNewPrivs'].strip()}, seccomp {status['Seccomp'].strip()}")
if libc.prctl(3, 0, 0, 0, 0) != 0:  # PR_GET_DUMPABLE
    problems.append("dumpable")
for name, flag in (("user", 0x10000000), ("mount", 0x00020000), ("pid", 0x20000000), ("network", 0x40000000)):
    if libc.unshare(flag) == 0:
        problems.append(f"made a new {name} namespace")
if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None) == 0 or libc.umount2(b"/tmp", 2) == 0:
    problems.append("mounted or unmounted /tmp")
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    problems.append("opened a network socket")
except OSError:
    pass
try:
    open(__file__, "a").close()
    problems.append("could write to its own file")
except OSError:
    pass
# The Python installation and the folders above it, which the child binds again on its private /tmp
# where they lie there: nothing can be made in them, and none can be moved out of the way.
folder = sys.prefix
while folder not in ("/", "/tmp", "/dev/shm", "/dev"):
    try:
        os.close(os.open(os.path.join(folder, "walls-hold-probe"), os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        os.unlink(os.path.join(folder, "walls-hold-probe"))
        problems.append(f"made a file in {folder}")
    except OSError:
        pass
    try:
        os.rename(folder, folder + "-moved")
        os.rename(folder + "-moved", folder)
        problems.append(f"moved {folder}")
    except OSError:
        pass
    folder = os.path.dirname(folder)
with open("/proc/self/uid_map") as f:
    uid_map = [[int(field) for field in line.split()] for line in f]
uid = os.getuid()
outside = [parent + uid - inside for inside, parent, count in uid_map if inside <= uid < inside + count]
if len(outside) != 1 or outside[0] == 0:
    problems.append(f"uid {uid} is {outside} outside its user namespace")
for path in ("/proc/sys/kernel/core_pattern", "/proc/self/comm", "/proc/1/oom_score_adj"):  # /proc is read-only
    try:
        os.close(os.open(path, os.O_WRONLY))
        problems.append(f"opened {path} for writing")
    except OSError:
        pass
if problems:
    raise RuntimeError("walls missing: " + "; ".join(problems))


def size_mib(folder):
    info = os.statvfs(folder)
    return info.f_blocks * info.f_frsize / (1 << 20)


facts = {
    "pid": os.getpid(),
    "cwd": os.getcwd(),
    "uid_map": uid_map,
    "tmp": sorted(os.listdir("/tmp")),
    "below_tmp": {name: sorted(os.listdir(os.path.join("/tmp", name))) for name in os.listdir("/tmp")},
    "tmp_mib": size_mib("/tmp"),
    "shm_mib": size_mib("/dev/shm"),
    "limits": {name: resource.getrlimit(getattr(resource, f"RLIMIT_{name}")) for name in ("CPU", "AS", "FSIZE", "NOFILE", "CORE")},
}
print(json.dumps(facts))
