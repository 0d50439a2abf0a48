"""The grader signals only what it started: never a pid, a process group or a pidfd's number that
another process has taken since. Pids are reused (pid_max is 32768 on many machines), and a grader
that sent SIGKILL to a reaped child's group killed whatever group had its number next: another
submission's child, on a busy machine.

Each test stands a victim (a process that leads a group of its own, as every child's process does)
where the reused number would point, and checks it survives the grader's kill."""

import os
import subprocess
import time
from types import SimpleNamespace

import pytest

from grader.sandbox.process import ProcessChild
from grader.sandbox.zygote import Zygote, ZygoteChild

pytestmark = pytest.mark.sandbox  # starts processes


@pytest.fixture
def victim():
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)  # a group of its own, as a child's runner leads
    yield process
    process.kill()
    process.wait()


def alive(process: subprocess.Popen) -> bool:
    time.sleep(0.1)
    return process.poll() is None


def test_a_reaped_childs_kill_never_reaches_the_group_that_took_its_number(victim):
    child = object.__new__(ProcessChild)  # as exit() left it: reaped, its pid since taken by the victim's group
    child.process = SimpleNamespace(pid=victim.pid, returncode=-9)
    child.killed_by_grader = False
    child.kill()
    assert alive(victim) and not child.killed_by_grader


def test_a_reaped_pool_server_is_not_killed_again_by_its_old_number(victim):
    pool = object.__new__(Zygote)  # a server that died, reaped by alive(), its pid since taken by the victim's group
    pool.control, pool.server, pool.server_box = SimpleNamespace(close=lambda: None), SimpleNamespace(pid=victim.pid, returncode=-9, wait=lambda: -9), None
    pool._stop_server()
    assert alive(victim)


def test_a_closed_pool_child_never_signals_a_later_descriptor_of_the_same_number(victim):
    child = object.__new__(ZygoteChild)
    read, write = os.pipe()
    child.returncode, child.killed_by_grader, child.server_lost = 0, False, False
    child.request_fd, child._pidfds = write, [os.pidfd_open(os.getpid()), os.pidfd_open(os.getpid())]
    child.pool, child.spawn_id, child.cgroup, child.box, child._threads = SimpleNamespace(forget=lambda spawn_id: None), "x", None, None, []
    child._kill_pids = lambda: None  # the close's own kill: here there is nothing of its own to end
    numbers = set(child._pidfds)
    child.close()
    del child._kill_pids  # from now on, the real kill
    reused = [os.pidfd_open(victim.pid) for _ in range(3)]  # the lowest free numbers: those the child held among them
    try:
        assert numbers <= set(reused)  # (else this test tests nothing)
        child.kill()
        assert alive(victim)
    finally:
        for fd in [*reused, read]:
            os.close(fd)
