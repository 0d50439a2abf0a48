"""Helpers for tests that grade files through the real command line."""

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "reference" / "mlm_forward_tied" / "submissions"  # the default challenge's examples, by verdict
HOSTILE_MARKER = "mlm-hostile-marker"  # the name hostile files give what they try to write
ATTACKS = Path(__file__).resolve().parent / "submissions" / "pool_attacks"  # attacks on the warm pool, appended to an honest file


SKIPPED = {".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".git"}  # not the checkout's own files


def checkout_files(skipped: set[str] = SKIPPED) -> list[Path]:
    """Every file of the checkout but those in the skipped folders, which are pruned rather than
    walked (.venv alone holds tens of thousands of files)."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = sorted(d for d in subfolders if d not in skipped)
        found += [Path(folder, f) for f in sorted(files)]
    return found


def checkout_digest() -> str:
    digest = hashlib.sha256()
    for path in checkout_files():
        if path.is_file():
            digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


def hostile_markers() -> list[Path]:
    """Marker files where hostile code tries to write: the top of /tmp and $HOME (other tests'
    temporary folders come and go below them), and anywhere in the checkout."""
    found = [p for place in (Path("/tmp"), Path.home(), Path.cwd()) for p in place.glob(f"{HOSTILE_MARKER}*")]
    return found + [p for p in checkout_files({".venv"}) if p.name.startswith(HOSTILE_MARKER)]


PORTS = range(47600, 47620)  # the ports hostile_loopback_connect tries


@contextlib.contextmanager
def listening_on_loopback() -> Iterator[list[bytes]]:
    """A TCP service on the host's loopback (the first free port of PORTS) that records every
    connection it receives, while the block runs."""
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
    try:
        yield received
    finally:
        stop.set()
        thread.join()
        server.close()


def ordinary_files(folder: str) -> list[Path]:
    """The files of a verdict folder that are safe to load into this process: hostile_* files
    attack whatever runs them, so they run only inside the sandbox (tests/test_hostile.py)."""
    return sorted(p for p in (SUBMISSIONS / folder).glob("*.py") if not p.stem.startswith("hostile_"))


def fast_spec(tmp_dir: Path) -> Path:
    """The real spec with short wall-clock limits, so that time-limit tests finish quickly."""
    text = (ROOT / "problem" / "mlm-forward-tied" / "problem.toml").read_text()
    text = text.replace("startup_seconds = 60", "startup_seconds = 8").replace("case_seconds = 10", "case_seconds = 3")
    assert "startup_seconds = 8" in text and "case_seconds = 3" in text
    path = tmp_dir / "spec.toml"
    path.write_text(text)
    return path


def uid_backend_problem() -> str:
    """Why the uid backend cannot run here ("" when it can), asked of another process: the probe
    holds the runner user for the life of the process that runs it, and a test process holding it
    would make every grader it starts wait for it forever."""
    probe = "from grader.sandbox.uid import uid_problem; print(uid_problem() or '', end='')"
    return subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout


def run_grader(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def grade_json(*args: str, env: dict | None = None) -> tuple[dict, int]:
    result = run_grader(*args, "--json", env=env)
    assert result.stdout, result.stderr
    return json.loads(result.stdout), result.returncode


def shared_once(factory: pytest.TempPathFactory, name: str, compute: Callable[[], dict]) -> dict:
    """compute() once for the whole test run, by whichever test worker gets here first (it grades
    with the machine to itself: two at a time); the others wait under a file lock and read its JSON."""
    shared = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder all workers' temporary folders are in
    results = shared / f"{name}.json"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not results.exists():
            partial = results.with_suffix(".partial")
            partial.write_text(json.dumps(compute()))
            partial.rename(results)
    return json.loads(results.read_text())
