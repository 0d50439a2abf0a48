"""The walls themselves: what bubblewrap exposes, the cgroup's life, how a backend is chosen."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import isolation
from grader.spec import ROOT, load_spec

LIMITS = load_spec().limits


def bind_sources(command: list[str]) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command) if word in ("--ro-bind", "--bind")]


def test_bubblewrap_never_exposes_the_repository_the_reference_or_the_grader(tmp_path):
    command = isolation.bubblewrap_command(["python"], tmp_path / "kit", tmp_path / "submission")
    sources = [Path(s).resolve() for s in bind_sources(command)]
    for secret in (ROOT, ROOT / "reference", ROOT / "grader", ROOT / "problem", ROOT / "tests"):
        assert not any(s == secret or secret.is_relative_to(s) for s in sources), secret
    assert "--bind" not in command  # nothing of the host is writable inside
    assert {"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop"} <= set(command)
    first_bind = command.index("--ro-bind")
    assert command.index("--tmpfs") < first_bind  # else a venv under /tmp would be hidden by the tmpfs
    assert [str(tmp_path / "kit"), isolation.SANDBOX_KIT] == command[command.index(str(tmp_path / "kit")) :][:2]


def cgroups_available() -> bool:
    probe = isolation.Cgroup.create(LIMITS, "probe")
    if probe:
        probe.remove()
    return probe is not None


@pytest.mark.skipif(not cgroups_available(), reason="needs root and a writable cgroup tree (CI has both)")
def test_cgroup_is_created_with_its_limits_and_removed():
    cgroup = isolation.Cgroup.create(LIMITS, "lifecycle-test")
    assert cgroup is not None and all(d.exists() for d in cgroup.dirs)
    limit_file = cgroup.memory / ("memory.max" if cgroup.v2 else "memory.limit_in_bytes")
    assert int(limit_file.read_text()) == LIMITS.memory_mib * isolation.MIB
    assert int((cgroup.pids / "pids.max").read_text()) == isolation.PIDS_MAX
    cgroup.remove()
    assert not any(d.exists() for d in cgroup.dirs)


def test_backend_choice():
    with pytest.raises(isolation.IsolationUnavailable):
        isolation.choose_backend("no-such-level")
    assert isolation.choose_backend("process") == "process"
    if isolation.bubblewrap_works():
        assert isolation.choose_backend("auto") == isolation.choose_backend("strict") == "bubblewrap"


@pytest.mark.skipif(not isolation.bubblewrap_works() or isolation.seccomp_program() is None, reason="needs bubblewrap and libseccomp")
def test_seccomp_refuses_internet_sockets_and_ptrace_inside_the_sandbox(tmp_path):
    probe = (
        "import socket, errno, ctypes\n"
        "try:\n    socket.socket(socket.AF_INET); print('inet allowed')\n"
        "except OSError as e:\n    print('inet', errno.errorcode[e.errno])\n"
        "socket.socket(socket.AF_UNIX).close(); print('unix allowed')\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('ptrace', libc.ptrace(0, 0, 0, 0), errno.errorcode[ctypes.get_errno()])\n"
    )
    (tmp_path / "kit").mkdir()
    (tmp_path / "submission").mkdir()
    fd = isolation.seccomp_fd()
    try:
        command = isolation.bubblewrap_command([sys.executable, "-I", "-S", "-c", probe], tmp_path / "kit", tmp_path / "submission", fd)
        output = subprocess.run(command, capture_output=True, text=True, pass_fds=[fd], timeout=60).stdout
    finally:
        os.close(fd)
    assert output.splitlines() == ["inet EACCES", "unix allowed", "ptrace -1 EPERM"]
