"""Pool attack (also run as a single child by tests/test_sandbox.py): walks /proc, /sys and /dev,
and opens for writing every file there that has a write permission bit; where the open succeeds it
writes back exactly the bytes it read (so a success changes nothing: kernel.core_pattern written
with its own value stays what it was). Prints one JSON line: every path it could open for writing
but the harmless ones it must be able to write (its own /proc/<pid> files, the null, zero, full,
random and tty devices, its private /tmp and /dev/shm), its real, effective and saved uids and its
/proc/self/uid_map, from which the tests tell its uid outside (host_uids in tests/test_sandbox.py):
they assert that the list is empty and that the uids outside are not root."""

import json
import os
import stat

HARMLESS_DEVICES = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
me = os.readlink("/proc/self")  # our pid, as /proc numbers it
HARMLESS_PREFIXES = ("/proc/self/", "/proc/thread-self/", f"/proc/{me}/", "/tmp/", "/dev/shm/")


def harmless(path):
    return path in HARMLESS_DEVICES or path.startswith(HARMLESS_PREFIXES)


def contents(path):
    """What the file holds (at most 1 MiB), or None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        data = b""
        while len(data) < 1 << 20 and (chunk := os.read(fd, 1 << 16)):
            data += chunk
        return data
    except OSError:
        return None
    finally:
        os.close(fd)


def try_writing(path):
    """None when the path cannot be opened for writing; else what writing its own bytes back did."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        data = contents(path)
        if not data:
            return "opened (nothing read to write back)"
        os.write(fd, data)
        return "opened and wrote back"
    except OSError as error:
        return f"opened (writing back: {error.strerror})"
    finally:
        os.close(fd)


found = {}
for top in ("/proc", "/sys", "/dev"):
    for folder, _, files in os.walk(top, onerror=lambda error: None):  # symbolic links are not followed
        for name in files:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:  # gone meanwhile (a process of /proc ended)
                continue
            if stat.S_ISLNK(mode) or not mode & 0o222 or harmless(path):
                continue
            if (outcome := try_writing(path)) is not None:
                found[path] = outcome
with open("/proc/self/uid_map") as f:
    uid_map = [[int(field) for field in line.split()] for line in f]
print(json.dumps({"writable": found, "uids": os.getresuid(), "uid_map": uid_map}))
