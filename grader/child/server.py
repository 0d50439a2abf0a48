"""The warm pool's server: forks one walled-in child per submission.

It runs inside bubblewrap with nothing writable, imports torch and warms the runtime guard once,
then waits on its control socket (JSON in SOCK_SEQPACKET datagrams, descriptors attached). For each
"spawn" it forks a child on the descriptors it was given (requests, results, stdout, stderr, and
sealed memfds with the submission and its name, passed on unread: the server never holds anything
of a submission), answers "spawned" once the child is walled in (walls.py) and "exited" with its
status. The design: docs/isolation.md, "The warm pool"; what it holds against: docs/threat-model.md.
"""

import array
import json
import os
import select
import socket
import sys
import traceback
from typing import Any

from . import runner, walls

MAX_CONTROL_BYTES = 1 << 16
SPAWN_FDS = ("requests", "results", "stdout", "stderr", "source", "name")
MAX_NAME_BYTES = 4096  # a file's name (Linux allows 255 bytes)
READY = b"walled"
WALL_SECONDS = 30  # walling in takes milliseconds; a child that has not said so by then is killed
EXIT_WALLS_FAILED = 71  # the child could not wall itself in: it ran nothing of the submission


def send(control: socket.socket, message: dict[str, Any]) -> None:
    control.send(json.dumps(message).encode())


def receive(control: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """The next control message and its descriptors; (None, []) when the grader has gone."""
    fds = array.array("i")
    data, ancillary, _, _ = control.recvmsg(MAX_CONTROL_BYTES, socket.CMSG_SPACE(len(SPAWN_FDS) * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if not data:
        return None, list(fds)
    return json.loads(data), list(fds)


def _keep_only(fds: dict[str, int], ready: int) -> None:
    """Put stdio in place and close every other descriptor the server held (its control socket
    above all), so the child holds nothing of the server's or of its siblings'."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fds["stdout"], 1)
    os.dup2(fds["stderr"], 2)
    keep = {0, 1, 2, fds["requests"], fds["results"], fds["source"], ready}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _read_name(fd: int) -> str:
    """The submission file's name, from the memfd the grader filled (read here, in the child, only)."""
    raw = os.pread(fd, MAX_NAME_BYTES + 1, 0)
    os.close(fd)
    name = os.fsdecode(raw)
    if not raw or len(raw) > MAX_NAME_BYTES or name != os.path.basename(name) or name in (".", "..") or "\0" in name:
        raise ValueError("the grader sent no usable file name")
    return name


def _child(config: dict[str, Any], fds: dict[str, int], ready: int, uid: int | None) -> None:
    """In the forked child: wall in, then serve the grader; never returns."""
    filename = ""
    try:
        filename = _read_name(fds.pop("name"))
        _keep_only(fds, ready)
        keep = {fds["requests"], fds["results"], ready}
        walls.wall_in(config["tmp_mib"], config["shm_mib"], config["submission_dir"], filename, fds["source"], keep, uid, config["covered"])
        walls.apply_limits(**config["limits"])
        walls.install_seccomp(bytes.fromhex(config["seccomp"]))
        os.write(ready, READY)
        os.close(ready)
    except BaseException:  # noqa: BLE001 - nothing of the submission has run: say why and stop
        try:
            why = traceback.format_exc()
            for shown in {filename, repr(filename)[1:-1]} - {""}:  # the server, which reads this, holds no file's name
                why = why.replace(shown, "<the submission's file>")
            os.write(ready, why.encode(errors="replace")[-4000:])
        finally:
            os._exit(EXIT_WALLS_FAILED)
    try:
        runner.unbuffered_output()
        requests, results = os.fdopen(fds["requests"], "rb"), os.fdopen(fds["results"], "wb")
        child_config = config["runner"] | {"submission": f"{config['submission_dir']}/{filename}", "request_fd": fds["requests"], "result_fd": fds["results"]}
        sys.argv = ["-c", sys.argv[1], json.dumps(child_config)]  # what a single child's sys.argv holds
        runner.serve(child_config, requests, results)
        code = 0
    except SystemExit as end:  # as the interpreter would end a single child
        code = end.code if isinstance(end.code, int) else 1
    except BaseException:  # noqa: BLE001 - as an uncaught exception ends a single child
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _wait_walled(ready: int) -> str:
    """'' once the child says it is walled in; else why not."""
    said = b""
    while True:
        readable, _, _ = select.select([ready], [], [], WALL_SECONDS)
        if not readable:
            return f"the child did not wall itself in within {WALL_SECONDS} s"
        chunk = os.read(ready, 4096)
        if not chunk:
            return said.decode(errors="replace") or "the child ended while walling itself in"
        said += chunk
        if said == READY:
            return ""


def _box_uid_problem(config: dict[str, Any], message: dict[str, Any]) -> str:
    """Why the spawn's uid is not one the child may take, or '' when it is: a box uid where the
    grader is root (the server maps them), none otherwise."""
    uid = message.get("uid")
    if not config["box_uids"]:
        return "" if uid is None else "a box uid was given, but the server has none"
    first, count = config["box_uids"]
    if type(uid) is not int or not first <= uid < first + count or uid == os.getuid():
        return f"a spawn needs a box uid of its own, it came with {uid!r}"
    return ""


def _spawn(config: dict[str, Any], control: socket.socket, message: dict[str, Any], received: list[int], children: dict[int, tuple[int, str]]) -> None:
    why = f"a spawn needs {len(SPAWN_FDS)} descriptors, it came with {len(received)}" if len(received) != len(SPAWN_FDS) else ""
    why = why or ("not a spawn" if message.get("kind") != "spawn" else _box_uid_problem(config, message))
    if why:
        for fd in received:
            os.close(fd)
        send(control, {"kind": "failed", "id": message.get("id"), "why": why})
        return
    fds = dict(zip(SPAWN_FDS, received, strict=True))
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_read)
        _child(config, fds, ready_write, message.get("uid"))
    os.close(ready_write)
    for fd in received:  # the child has its copies
        os.close(fd)
    why = _wait_walled(ready_read)
    os.close(ready_read)
    children[os.pidfd_open(pid)] = (pid, message["id"])
    if why:
        os.kill(pid, 9)
        send(control, {"kind": "failed", "id": message["id"], "why": why})
    else:
        send(control, {"kind": "spawned", "id": message["id"], "pid": pid})


def _reap(control: socket.socket, pidfd: int, children: dict[int, tuple[int, str]]) -> None:
    pid, spawn_id = children.pop(pidfd)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    send(control, {"kind": "exited", "id": spawn_id, "returncode": os.waitstatus_to_exitcode(status)})


def _ask_for_map(control: socket.socket) -> None:
    """Have the grader (root) map this server's new user namespace; it answers "mapped"."""
    send(control, {"kind": "map"})
    message, fds = receive(control)
    for fd in fds:
        os.close(fd)
    if message is None or message.get("kind") != "mapped":
        raise RuntimeError(f"the grader did not map the server's user namespace: {message}")


def main(argv: list[str]) -> None:
    config = json.loads(argv[0])
    control = socket.socket(fileno=config["control_fd"])
    if config["box_uids"]:  # first, while single-threaded (see walls.enter_box_namespace)
        walls.enter_box_namespace(*config["box_uids"], lambda: _ask_for_map(control))
    walls.make_undumpable()  # no child may read the server's memory through /proc
    runner.warm_up(config["runner"])
    send(control, {"kind": "ready"})
    children: dict[int, tuple[int, str]] = {}  # pidfd -> (pid, spawn token)
    while True:
        readable, _, _ = select.select([control, *children], [], [])
        for fd in readable:
            if fd in children:
                _reap(control, fd, children)
        if control not in readable:
            continue
        message, received = receive(control)
        if message is None:  # the grader has gone: so do we (bubblewrap kills the children with us)
            return
        _spawn(config, control, message, received, children)
