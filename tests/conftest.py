import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

# Test workers run side by side on few cores; multi-threaded kernels on tiny tensors would spin
# against each other (the grader and its child run single-threaded for the same reason).
DEFAULT_THREADS = torch.get_num_threads()  # a new interpreter's (tests/grading.py gives it back to a forked grader)
torch.set_num_threads(1)


# -- markers: `make test-fast` runs the pure layers (no child process, no sandbox) --------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-processes",
        action="store_true",
        help="fail any test that starts a process (make test-fast): such a test must be marked sandbox",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _processes_refused(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _processes_refused(item):
        yield


@contextlib.contextmanager
def _processes_refused(item: pytest.Item) -> Iterator[None]:
    """Under --no-processes, starting a process fails the test with what to do, so that a test that
    needs the sandbox cannot hide among the pure ones (its marker would be missing)."""
    if not item.config.getoption("--no-processes") or item.get_closest_marker("sandbox"):
        yield
        return

    def refused(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError(f"{item.nodeid} starts a process: mark it @pytest.mark.sandbox (make test-fast runs only the pure layers)")

    saved = {(os, name): getattr(os, name) for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system")}
    saved[(subprocess.Popen, "_execute_child")] = subprocess.Popen._execute_child
    try:
        for owner, name in saved:
            setattr(owner, name, refused)
        yield
    finally:
        for (owner, name), value in saved.items():
            setattr(owner, name, value)
