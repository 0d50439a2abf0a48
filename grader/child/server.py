"""The pool's server: a warm process that forks one walled-in child per submission.

It runs inside the same sandbox as a single child (bubblewrap: namespaces, read-only runtime,
seccomp), imports torch and warms the runtime guard once, then waits on its control socket. For
each "spawn" request it receives the child's descriptors (requests, results, stdout, stderr and a
sealed memfd holding the submission) and forks; the child walls itself in (walls.py: its own
namespaces, /tmp, no capabilities, non-dumpable), applies the limits, writes the submission into
its private /tmp and answers the grader on its own pipes exactly as a single child does. The
server reports each child's pid when it starts and its wait status when it ends; it never reads
what a child sends, and a child cannot reach it (another pid namespace, non-dumpable).

Control messages are JSON in SOCK_SEQPACKET datagrams (one message each, descriptors attached).
"""

import array
import json
import os
import resource
import select
import socket
import sys
import traceback
from typing import Any

from . import runner, walls

MAX_CONTROL_BYTES = 1 << 16
SPAWN_FDS = ("requests", "results", "stdout", "stderr", "source")
EXIT_WALLS_FAILED = 71  # the child could not wall itself in: it ran nothing of the submission


def send(control: socket.socket, message: dict[str, Any]) -> None:
    control.send(json.dumps(message).encode())


def receive(control: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """The next control message and its descriptors; (None, []) when the grader has gone."""
    fds = array.array("i")
    data, ancillary, _, _ = control.recvmsg(MAX_CONTROL_BYTES, socket.CMSG_LEN(len(SPAWN_FDS) * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if not data:
        return None, list(fds)
    return json.loads(data), list(fds)


def apply_limits(limits: dict[str, int]) -> None:
    """The same rlimits a single child gets (CPU is also counted for the whole tree, outside)."""
    mib = 1 << 20
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mib"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size_mib"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _keep_only(fds: dict[str, int]) -> dict[str, int]:
    """Put stdio in place and close every other descriptor the server held (its control socket
    above all), so the child holds nothing of the server's or of its siblings'."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fds["stdout"], 1)
    os.dup2(fds["stderr"], 2)
    keep = {0, 1, 2, fds["requests"], fds["results"], fds["source"]}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    return {name: fds[name] for name in ("requests", "results", "source")}


def _child(message: dict[str, Any], fds: dict[str, int]) -> None:
    """In the forked child: wall in, then serve the grader; never returns."""
    try:
        kept = _keep_only(fds)
        walls.wall_in(message["tmp_mib"])
        folder = "/tmp/.submission"
        os.mkdir(folder, 0o700)
        path = f"{folder}/{message['filename']}"
        with os.fdopen(kept["source"], "rb") as source, open(path, "wb") as target:
            target.write(source.read())
        os.chmod(path, 0o444)
        apply_limits(message["limits"])
    except BaseException:  # noqa: BLE001 - nothing of the submission has run: say why and stop
        traceback.print_exc()
        os._exit(EXIT_WALLS_FAILED)
    config = dict(message["runner"], submission=path, request_fd=kept["requests"], result_fd=kept["results"])
    try:
        runner.serve(config)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def _spawn(control: socket.socket, message: dict[str, Any], received: list[int], children: dict[int, int]) -> None:
    if len(received) != len(SPAWN_FDS):
        for fd in received:
            os.close(fd)
        send(control, {"kind": "refused", "id": message.get("id"), "why": f"expected {len(SPAWN_FDS)} descriptors, got {len(received)}"})
        return
    fds = dict(zip(SPAWN_FDS, received, strict=True))
    pid = os.fork()
    if pid == 0:
        _child(message, fds)
    for fd in received:  # the child has its copies
        os.close(fd)
    children[pid] = message["id"]
    send(control, {"kind": "spawned", "id": message["id"], "pid": pid})


def _reap(control: socket.socket, children: dict[int, int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in children:
            send(control, {"kind": "exited", "id": children.pop(pid), "returncode": os.waitstatus_to_exitcode(status)})


def main(argv: list[str]) -> None:
    config = json.loads(argv[0])
    control = socket.socket(fileno=config["control_fd"])
    walls.make_undumpable()  # no child may read the server's memory through /proc
    runner.warm_up(config["runner"])
    send(control, {"kind": "ready"})
    children: dict[int, int] = {}
    while True:
        readable, _, _ = select.select([control], [], [], 0.02)
        _reap(control, children)
        if not readable:
            continue
        message, received = receive(control)
        if message is None:  # the grader has gone: so do we (bubblewrap's --die-with-parent does the rest)
            return
        if message.get("kind") == "spawn":
            _spawn(control, message, received, children)
