"""Limits that hold whatever the child does: rlimits set before it executes, a cgroup (memory,
processes, CPU accounting) where the grader may make one, and the CPU time of a process tree
where it may not."""

import os
import re
import resource
import signal
import time
import uuid
from pathlib import Path

from grader.child import walls
from grader.sandbox.boxes import give_pipes
from grader.spec import Limits

MIB = 1 << 20
PIDS_MAX = 64


class Cgroup:
    """A memory + pids cgroup for one child (cgroup v1 controllers, or the v2 unified tree), with
    the CPU time of all its processes counted (v1 cpuacct where it can be had, v2 cpu.stat)."""

    V1 = Path("/sys/fs/cgroup")

    def __init__(self, limits: Limits, label: str) -> None:
        name = f"mlm-grader-{label}-{uuid.uuid4().hex[:12]}"
        self.dirs: list[Path] = []
        unified = self.V1 / "cgroup.controllers"
        if unified.exists():  # cgroup v2: one directory, both controllers
            self.memory = self.pids = self.V1 / name
            self._make(self.memory)
            (self.V1 / "cgroup.subtree_control").write_text("+memory +pids")
            (self.memory / "memory.max").write_text(str(limits.memory_mib * MIB))
            (self.memory / "memory.swap.max").write_text("0")
            (self.pids / "pids.max").write_text(str(PIDS_MAX))
            self.cpu: Path | None = self.memory
        else:
            self.memory, self.pids = self.V1 / "memory" / name, self.V1 / "pids" / name
            self._make(self.memory)
            self._make(self.pids)
            (self.memory / "memory.limit_in_bytes").write_text(str(limits.memory_mib * MIB))
            (self.pids / "pids.max").write_text(str(PIDS_MAX))
            self.cpu = self.V1 / "cpuacct" / name
            try:
                self._make(self.cpu)
            except OSError:  # no cpuacct hierarchy: the process tree is polled instead
                self.cpu = None
        self.v2 = unified.exists()

    def _make(self, path: Path) -> None:
        path.mkdir()
        self.dirs.append(path)

    @classmethod
    def remove_stale(cls, older_than_seconds: float = 600) -> None:
        """Remove empty cgroups of graders that were killed before they could clean up."""
        now = time.time()
        for d in [*cls.V1.glob("*/mlm-grader-*"), *cls.V1.glob("mlm-grader-*")]:
            try:
                if now - d.stat().st_mtime > older_than_seconds and not (d / "cgroup.procs").read_text().strip():
                    d.rmdir()
            except OSError:
                pass

    @classmethod
    def create(cls, limits: Limits, label: str) -> "Cgroup | None":
        """A new cgroup named after `label` (the submission), or None where this process may not
        create one (not root, read-only cgroup tree)."""
        label = re.sub(r"[^A-Za-z0-9_-]", "_", label)[:40]
        cls.remove_stale()
        try:
            return cls(limits, label)
        except OSError:
            return None

    def join_files(self) -> list[str]:
        """The cgroup.procs files the child writes its own pid into before it executes."""
        return sorted({str(d / "cgroup.procs") for d in self.dirs})

    def _counter(self, path: Path, key: str) -> int:
        try:
            for line in path.read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def oom_kills(self) -> int:
        return self._counter(self.memory / ("memory.events" if self.v2 else "memory.oom_control"), "oom_kill")

    def pids_limit_hits(self) -> int:
        return self._counter(self.pids / "pids.events", "max")

    def cpu_seconds(self) -> float | None:
        """CPU time used by every process that was ever in the cgroup, or None where not counted."""
        if self.cpu is None:
            return None
        try:
            if self.v2:
                return self._counter(self.cpu / "cpu.stat", "usage_usec") / 1e6
            return int((self.cpu / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def processes(self) -> set[int]:
        found = set()
        for d in self.dirs:
            try:
                found |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return found

    def kill_all(self) -> None:
        """SIGKILL everything in the cgroup (double-forked daemons too) until it is empty."""
        deadline = time.monotonic() + 5
        while (pids := self.processes()) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for d in reversed(self.dirs):
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # busy for a moment after its last process died
                    time.sleep(0.01)


def process_tree_cpu_seconds(root: int, seen: dict[tuple[int, int], float]) -> float:
    """CPU time of a process tree, without a cgroup: `root`, its descendants and every process of
    their sessions, polled from /proc. Two lower bounds, the larger returned: the live processes'
    own time plus what they reaped, and the own time of every process ever seen (`seen`, kept by
    the caller between polls, keyed by pid and start time) for those that died between polls."""
    table = {}  # pid -> (ppid, session, start, own ticks, reaped children's ticks)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            table[int(entry.name)] = (int(fields[1]), int(fields[3]), int(fields[19]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
        except (OSError, IndexError, ValueError):  # ended while we looked
            continue
    members = {root} if root in table else set()
    while True:
        sessions = {table[pid][1] for pid in members}
        grown = members | {pid for pid, (ppid, session, *_) in table.items() if ppid in members or session in sessions}
        if grown == members:
            break
        members = grown
    ticks = os.sysconf("SC_CLK_TCK")
    live = 0
    for pid in members:
        _, _, start, own, reaped = table[pid]
        live += own + reaped
        seen[(pid, start)] = max(seen.get((pid, start), 0), own)
    return max(live, sum(seen.values())) / ticks


def cpu_seconds_used(pid: int) -> float:
    """CPU time of a process that has ended but not been reaped (a zombie keeps its counters),
    including the children it waited for (bwrap waits for the submission's process)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def apply_limits_in_child(limits: Limits, cgroup_files: list[str], max_processes: int | None, owner: int | None = None) -> None:
    """Runs in the forked child before exec (subprocess preexec_fn): join the cgroup, set rlimits,
    and give the stdout and stderr pipes to the box uid `owner` (give_pipes). Only system calls
    here: no imports, no threads, no allocation-heavy work."""
    if owner is not None:
        give_pipes([1, 2], owner)
    for path in cgroup_files:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    walls.apply_limits(limits.cpu_seconds, limits.memory_mib, limits.file_size_mib, limits.open_files)
    if max_processes:  # counts per user: meaningful only for a uid of the child's own (the runner user, a box uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))
