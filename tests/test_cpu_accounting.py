"""CPU time is counted for all of the child's processes together, not per process: the cgroup's
own accounting where the grader may create one, else the process tree polled from /proc."""

import os
import subprocess
import sys
import time

import pytest

from grader.sandbox.limits import Cgroup, process_tree_cpu_seconds
from grader.spec import load_spec

# Three processes busy for 0.4 s of CPU each: one that is waited for, one that leaves the session
# (and is waited for), one orphaned grandchild that stays in the session and is reaped by init.
BUSY_TREE = """
import os, time
def busy(seconds):
    while time.process_time() < seconds:
        pass
waited = []
for leave_session in (False, True):
    pid = os.fork()
    if pid == 0:
        if leave_session:
            os.setsid()
        busy(0.4)
        os._exit(0)
    waited.append(pid)
middle = os.fork()
if middle == 0:
    if os.fork() == 0:
        busy(0.4)
        os._exit(0)
    os._exit(0)
os.waitpid(middle, 0)
for pid in waited:
    os.waitpid(pid, 0)
time.sleep(0.3)
"""


def run_polled(measure, **popen) -> tuple[list[float], subprocess.Popen]:
    process = subprocess.Popen([sys.executable, "-c", BUSY_TREE], start_new_session=True, **popen)
    readings = []
    while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        readings.append(measure(process.pid))
        time.sleep(0.02)
    readings.append(measure(process.pid))  # the zombie still holds what it reaped
    process.wait()
    return readings, process


@pytest.mark.sandbox
def test_the_process_tree_counts_children_sessions_and_orphans():
    seen: dict = {}
    readings, _ = run_polled(lambda pid: process_tree_cpu_seconds(pid, seen))
    assert readings[-1] >= 1.1  # 3 x 0.4 s, less what the poll missed of the orphan's last moments
    assert max(readings) == readings[-1]  # never less than before


def test_the_process_tree_of_a_missing_process_is_what_was_seen_before():
    assert process_tree_cpu_seconds(2**22 + 12345, {}) == 0.0


@pytest.mark.sandbox
@pytest.mark.needs_root
def test_the_cgroup_counts_every_process_that_was_in_it():
    cgroup = Cgroup.create(load_spec().limits, "cpu-accounting-test")
    if cgroup is None:
        pytest.skip("this process may not create cgroups (not root, or a read-only cgroup tree)")
    try:
        assert cgroup.cpu_seconds() is not None and cgroup.cpu_seconds() < 0.1

        def join():
            for path in cgroup.join_files():
                with open(path, "w") as f:
                    f.write(str(os.getpid()))

        readings, _ = run_polled(lambda pid: cgroup.cpu_seconds(), preexec_fn=join)
        assert readings[-1] >= 1.2  # nothing escapes the cgroup: not the orphan, not the new session
    finally:
        cgroup.remove()
