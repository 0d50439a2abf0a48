"""Pool attack: signals every process it can name: kill(-1), each pid listed in /proc (the pool's
server and its siblings among them), through kill() and through pidfds of /proc entries."""

import os
import signal

try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
me, listed_as = os.getpid(), int(os.readlink("/proc/self"))  # our pid, and our pid as /proc numbers it
seen = [int(name) for name in os.listdir("/proc") if name.isdigit()]
for pid in seen:
    if pid != me:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGKILL)
        except OSError:
            pass
    if pid == listed_as:
        continue
    try:
        fd = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY)
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        finally:
            os.close(fd)
    except OSError:
        pass
if len(seen) < 3:
    raise RuntimeError(f"saw only {seen} in /proc: the attack did not reach the pool")
