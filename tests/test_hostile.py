"""Hostile submissions: each is rejected with its precise verdict and leaves no trace.

Each wall is proven alone: every hostile file runs twice, once with the static check skipped
(`--no-static-check`, so the runtime guard, the protocol checks and the sandbox face it alone:
it must get its folder's verdict) and once with it (it must get `forbidden_api`, or the verdict
named by a `# static check: <verdict>` line in the file, for attacks no static rule can see).
After each run the host is checked: no marker file anywhere they tried to write, no process of
theirs, no cgroup left, the checkout unchanged, the loopback service untouched, and the secret
seed nowhere in the output.
"""

import hashlib
import os
import re
import socket
import threading
from pathlib import Path

import pytest

from grader.isolation import bubblewrap_works
from tests.grading import ROOT, SUBMISSIONS, fast_spec, grade_json

HOSTILE = sorted(SUBMISSIONS.glob("*/hostile_*.py"))
MARKER = "mlm-hostile-marker"
SECRET = "hostile-test-secret-2718"
PORTS = range(47600, 47620)  # the ports hostile_loopback_connect tries


def test_ci_grades_behind_bubblewrap():
    # CI installs bubblewrap (.ci/run): there the strong backend must really be in use.
    if os.environ.get("CI"):
        assert bubblewrap_works()


@pytest.fixture(scope="module")
def loopback_service():
    """A TCP service on the host's loopback that records every connection it receives."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    for port in PORTS:
        try:
            server.bind(("127.0.0.1", port))
            break
        except OSError:
            continue
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            with connection:
                received.append(connection.recv(1024) or b"<connected>")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield received
    stop.set()
    thread.join()
    server.close()


def checkout_digest() -> str:
    digest = hashlib.sha256()
    skipped = {".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".git"}
    for path in sorted(ROOT.rglob("*")):
        if path.is_file() and not skipped & set(path.parts):
            digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


def markers() -> list[Path]:
    """Marker files where hostile code tries to write: the top of /tmp and $HOME (other tests'
    temporary folders come and go below them), and anywhere in the checkout."""
    found = [p for place in (Path("/tmp"), Path.home(), Path.cwd()) for p in place.glob(f"{MARKER}*")]
    return found + [p for p in ROOT.rglob(f"{MARKER}*") if ".venv" not in p.parts]


def their_processes(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and name.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def their_cgroups(name: str) -> list[Path]:
    root = Path("/sys/fs/cgroup")
    return [*root.glob(f"*/mlm-grader-{name}-*"), *root.glob(f"mlm-grader-{name}-*")]


def verdict_with_static_check(path: Path) -> str:
    found = re.search(r"^# static check: (\w+)$", path.read_text(), re.MULTILINE)
    return found.group(1) if found else "forbidden_api"


@pytest.mark.skipif(not bubblewrap_works(), reason="--no-static-check needs bubblewrap (CI installs it)")
@pytest.mark.parametrize("static_check", [False, True], ids=["walls-alone", "with-static-check"])
@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_hostile_file_is_rejected_and_leaves_no_trace(path, static_check, tmp_path, loopback_service):
    before = checkout_digest()
    # A copy named for this run, so that the leftover checks below see this run's processes and
    # cgroups only, not those of the same file graded the other way by another test worker.
    run_name = f"{path.stem}_{'static' if static_check else 'walls'}"
    copy = tmp_path / f"{run_name}.py"
    copy.write_bytes(path.read_bytes())
    extra = ["--spec", str(fast_spec(tmp_path))] if path.parent.name == "time_limit_exceeded" else []
    extra += [] if static_check else ["--no-static-check"]
    report, status = grade_json(str(copy), *extra, env={"MLM_GRADER_SEED": SECRET})

    expected = verdict_with_static_check(path) if static_check else path.parent.name
    assert report["verdict"] == expected, report["message"]
    assert status == 1
    assert SECRET not in report["stdout"] + report["stderr"] + report["message"]
    assert markers() == []
    assert their_processes(run_name) == []
    assert their_cgroups(run_name) == []
    assert checkout_digest() == before
    assert loopback_service == []
    if bubblewrap_works():
        assert report["isolation"].startswith("bubblewrap")
    if path.stem == "hostile_flood_output" and not static_check:  # 24 MB were written: what is kept stays capped
        assert len(report["stdout"]) < 70_000 and "more bytes not kept" in report["stdout"]
        assert len(report["stderr"]) < 70_000
