"""How a child that ended early maps to a verdict: from what really happened, never guessed."""

import signal

import pytest

from grader.child.wire import EXIT_REFUSED_UNTOLD
from grader.judge import classify_exit
from grader.results import Verdict
from grader.sandbox.child import Exit
from grader.spec import load_spec

LIMITS = load_spec().limits


def ended(returncode=0, by_grader=False, cpu=1.0, oom=0, pids=0, limit="") -> Exit:
    return Exit(returncode, by_grader, cpu, oom, pids, limit)


@pytest.mark.parametrize(
    "exit, verdict, words",
    [
        (ended(-signal.SIGKILL, oom=1), Verdict.MEMORY_LIMIT_EXCEEDED, "MiB of memory"),
        (ended(-signal.SIGXCPU, cpu=LIMITS.cpu_seconds), Verdict.TIME_LIMIT_EXCEEDED, "CPU time"),
        # 152 = 128 + SIGXCPU: behind bubblewrap os._exit(152) reads as the signal; the CPU counted decides
        (ended(-signal.SIGXCPU, cpu=1.0), Verdict.RUNTIME_ERROR, "below the limit of"),
        (ended(-signal.SIGKILL, cpu=LIMITS.cpu_seconds + 0.5), Verdict.TIME_LIMIT_EXCEEDED, "CPU time"),
        (ended(-signal.SIGKILL, cpu=1.0), Verdict.RUNTIME_ERROR, "killed by SIGKILL"),
        (ended(-signal.SIGSEGV), Verdict.RUNTIME_ERROR, "killed by SIGSEGV"),
        (ended(-signal.SIGXFSZ), Verdict.RUNTIME_ERROR, "the signal of the file-size limit"),
        (ended(0), Verdict.RUNTIME_ERROR, "exited with status 0"),
        (ended(3), Verdict.RUNTIME_ERROR, "exited with status 3"),
        # the runner's status for a refusal that could not be recorded (a stack at its limit): no submission code can exit so
        (ended(EXIT_REFUSED_UNTOLD), Verdict.FORBIDDEN_API, "at the limit of the call stack"),
        (ended(-signal.SIGSEGV, pids=2), Verdict.RUNTIME_ERROR, "after reaching the limit of 64 processes"),
        (ended(-signal.SIGKILL, by_grader=True, limit="cpu"), Verdict.TIME_LIMIT_EXCEEDED, "CPU time, all processes together,"),
        (ended(-signal.SIGKILL, by_grader=True, limit="total"), Verdict.TIME_LIMIT_EXCEEDED, "total limit of 180 s of wall time"),
    ],
)
def test_each_ending_gets_its_verdict(exit, verdict, words):
    got, message = classify_exit(exit, LIMITS, "during case x")
    assert got == verdict
    assert words in message
    assert "during case x" in message
