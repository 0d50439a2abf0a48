"""Pool attack: searches the memory it inherited from the pool's server (its own, read through
/proc/self/mem, or in place) for the file names of the submissions graded before it (the test names them
pooltest<pid>_earlier<i>_...py); fails the grading if it finds one, or if it could not read its memory."""

import ctypes
import functools
import os
import re

names, read = set(), 0
with open("/proc/self/maps") as maps:
    regions = [line.split()[:2] for line in maps]
try:
    fd = os.open("/proc/self/mem", os.O_RDONLY)
    read_memory = functools.partial(os.pread, fd)
except PermissionError:  # a child of another uid than its /proc files' owner: read it in place
    fd = None
    read_memory = lambda size, start: ctypes.string_at(start, size)  # noqa: E731
try:
    for addresses, permissions in regions:
        if not permissions.startswith("rw"):
            continue
        start, end = (int(a, 16) for a in addresses.split("-"))
        try:
            data = read_memory(end - start, start)
        except OSError:
            continue
        read += len(data)
        names |= {m.group() for m in re.finditer(rb"pooltest[0-9]+_earlier[A-Za-z0-9_]+", data)}  # the test's earlier files
finally:
    if fd is not None:
        os.close(fd)
if read < 1 << 20:
    raise RuntimeError(f"read only {read} bytes of its own memory: the attack did not run")
if names:
    raise RuntimeError(f"found earlier submissions' names in the memory it inherited: {sorted(names)[:5]}")
