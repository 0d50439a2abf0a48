"""Helpers for tests that grade files through the real command line."""

import contextlib
import fcntl
import hashlib
import io
import json
import locale
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

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


# What a forked grader may be given in its environment: what the grader reads when it runs. Any other
# variable (PATH, say) may have been read once already by this process, so a new interpreter runs.
READ_AT_RUN_TIME = frozenset({"MLM_GRADER_SEED", "MLM_GRADER_PROBLEM", "MLM_GRADER_ISOLATION", "MLM_GRADER_SUBMISSION"})
_FORKING = threading.Lock()  # one fork at a time: no grader inherits another call's pipes


def run_grader(*args: str, env: dict | None = None, timeout: float = 300, fresh: bool = False) -> subprocess.CompletedProcess:
    """`python -m grader ARGS` from the checkout: its exit status, stdout and stderr (text).

    Run in a fork of this test process, which has torch and the grader imported already: the same
    entry point (grader/__main__.py's), arguments, environment, folder and standard streams as a new
    interpreter, torch's default number of threads and Python's default warnings, without the 2 s
    or so that a new interpreter spends importing torch, which most of the suite's command-line tests
    would spend again. A new interpreter runs instead where fresh=True (tests of the process itself:
    its command line, its initial environment), where env sets a variable the grader may have read
    before the fork (READ_AT_RUN_TIME lists the others), and from any thread but the main one."""
    if fresh or set(env or {}) - READ_AT_RUN_TIME or threading.current_thread() is not threading.main_thread():
        return subprocess.run(
            [sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
        )
    return _forked_grader(list(args), {**os.environ, **(env or {})}, timeout)


def _in_the_fork(args: list[str], env: dict[str, str], out_write: int, err_write: int, others: tuple[int, ...]) -> NoReturn:
    """The grader's process: it never returns into pytest."""
    status = 1
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
        for source, target in ((devnull, 0), (out_write, 1), (err_write, 2)):
            os.dup2(source, target)
        for fd in (devnull, out_write, err_write, *others):
            os.close(fd)
        os.chdir(ROOT)
        os.environ.clear()
        os.environ.update(env)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        import torch

        from tests.conftest import DEFAULT_THREADS

        torch.set_num_threads(DEFAULT_THREADS)
        # A new interpreter's warnings: its default filters, printed on stderr (pytest records them).
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(message, category, filename, lineno, line)
        )
        # As a new interpreter's: stdout strict, stderr line-buffered with backslash escapes.
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the process ends with os._exit
        sys.stderr = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.argv = [str(ROOT / "grader" / "__main__.py"), *args]
        from grader import cli

        cli.entry_point()  # ends the process with os._exit
    except SystemExit as stop:  # argparse's usage errors
        status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - as an uncaught exception ends a new interpreter
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _forked_grader(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    from grader import cli  # noqa: F401 - imported before the fork, once per test process

    command = ["python", "-m", "grader", *args]
    with _FORKING:
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            _in_the_fork(args, env, out_write, err_write, (out_read, err_read))
        os.close(out_write)
        os.close(err_write)
    chunks: dict[int, list[bytes]] = {out_read: [], err_read: []}
    reaped = False
    try:
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as reading:
            for fd in chunks:
                reading.register(fd, selectors.EVENT_READ)
            while reading.get_map():
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(command, timeout)
                for key, _ in reading.select(deadline - time.monotonic()):
                    if data := os.read(key.fd, 1 << 16):
                        chunks[key.fd].append(data)
                    else:
                        reading.unregister(key.fd)
        _, wait_status = os.waitpid(pid, 0)
        reaped = True
    finally:
        if not reaped:  # a time-out or an interrupt: as subprocess.run, the process is killed and reaped
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        for fd in chunks:
            os.close(fd)
    # Decoded as subprocess.run(text=True) decodes: the locale's encoding, strict, universal newlines.
    stdout, stderr = (io.TextIOWrapper(io.BytesIO(b"".join(chunks[fd])), encoding=locale.getpreferredencoding(False)).read() for fd in (out_read, err_read))
    return subprocess.CompletedProcess(command, os.waitstatus_to_exitcode(wait_status), stdout, stderr)


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
