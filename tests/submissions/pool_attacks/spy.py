"""Pool attack, the spy: graded beside the victim, looks for its secret for a few seconds through
every /proc route to another process (root, cwd, fd, environ, mem, maps, the submission folder);
fails the grading if it finds it, or if it never saw the victim's processes (the pool's server
and init, its own three and the victim's three are listed in /proc while both run)."""

import os
import time

SECRET = b"VICTIM-SECRET-" + b"7183"
me, found, most = os.readlink("/proc/self"), [], 0  # our pid as /proc numbers it


def read(path):
    """What a path holds, without waiting on a pipe or a socket nobody writes to."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        return os.read(fd, 1 << 20)
    except OSError:
        return b""
    finally:
        os.close(fd)


def walk(folder):
    try:
        for entry in os.scandir(folder):
            yield entry.path
    except OSError:
        return


deadline = time.monotonic() + 3
while time.monotonic() < deadline and not found:
    listed = [name for name in os.listdir("/proc") if name.isdigit() and name != me]
    most = max(most, len(listed))
    for name in listed:
        base = f"/proc/{name}"
        paths = [f"{base}/environ", f"{base}/cmdline", f"{base}/maps", f"{base}/root/tmp/victim-secret", f"{base}/cwd/victim-secret"]
        paths += list(walk(f"{base}/root/sandbox/submission")) + list(walk(f"{base}/fd")) + list(walk(f"{base}/map_files"))
        found += [path for path in paths if SECRET in read(path)]
        try:
            fd = os.open(f"{base}/mem", os.O_RDONLY)
            os.close(fd)
            found.append(f"{base}/mem opened")
        except OSError:
            pass
    time.sleep(0.05)
if found:
    raise RuntimeError(f"read another submission's data: {found}")
if most < 7:
    raise RuntimeError(f"saw at most {most} other processes in /proc: the attack did not run beside the victim")
