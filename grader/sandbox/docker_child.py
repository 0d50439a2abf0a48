"""The docker isolation backend: the trusted grader stays on the host and runs each submission's
child in its own container, started through the Docker Engine API (the `docker` package; podman's
`podman system service` serves the same API).

The container comes from the runner image (the Dockerfile's `runner` target: torch and the
child-side code, no reference, no hidden cases, no secret). It has no network, a read-only root,
a size-capped /tmp, memory, pids and CPU limits, rlimits, no capabilities, no_new_privs, and runs
as the unprivileged mlm-runner user; it is removed afterwards. The channel is a Unix socket in the
grader's private folder, bind-mounted into the container, so the engine must be local.
"""

import json
import os
import socket
import threading
from pathlib import Path

import docker
from docker.errors import DockerException, ImageNotFound, NotFound
from docker.types import Ulimit
from requests.exceptions import RequestException

from grader.sandbox.backends import Backend
from grader.sandbox.bubblewrap import TMPFS_MIB
from grader.sandbox.child import BOOTSTRAP, Child, ChildGone, Exit, returncode_of
from grader.sandbox.limits import MIB, PIDS_MAX
from grader.sandbox.workdir import child_environment, prepare_files
from grader.spec import Spec

RUNNER_IMAGE = os.environ.get("MLM_GRADER_RUNNER_IMAGE", "mlm-grader-runner")
CHANNEL = "/channel/grader.sock"
LABEL = "mlm-grader-child"
NPROC = 4096  # engines default to more than many hosts allow, and then refuse to start


class Docker(Backend):
    name = "docker"
    strong = keeps_secret = True

    def problem(self) -> str | None:
        problem = docker_works()
        return None if problem is None else f"--isolation docker: {problem}"

    def start(self, workdir: Path, source: bytes, filename: str, spec: Spec) -> Child:
        return DockerChild(workdir, source, filename, spec)


def docker_works() -> str | None:
    """None when the engine answers and has the runner image; otherwise why not."""
    try:
        client = docker.from_env(timeout=10)
        client.ping()
        client.images.get(RUNNER_IMAGE)
    except ImageNotFound:
        return f"the runner image {RUNNER_IMAGE} is missing (build it: docker build --target runner -t {RUNNER_IMAGE} .)"
    except DockerException as error:
        return f"no Docker Engine API answers ({error}); set DOCKER_HOST to its socket"
    return None


class DockerChild(Child):
    """A child in a container of its own; the engine counts its memory, the grader its wall time."""

    counts_cpu = False  # its processes are the engine's: the container's RLIMIT_CPU holds alone

    def __init__(self, workdir: Path, source: bytes, filename: str, spec: Spec) -> None:
        super().__init__(spec)
        limits = spec.limits
        _, _, submission_dir = prepare_files(workdir, source, filename)
        submission_dir.chmod(0o755)
        channel_dir = workdir / "channel"
        channel_dir.mkdir()
        channel_dir.chmod(0o755)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(channel_dir / "grader.sock"))
        (channel_dir / "grader.sock").chmod(0o666)  # the runner user connects to it
        self.listener.listen(1)
        self.listener.settimeout(limits.startup_seconds)
        self.connected = threading.Event()

        config = self.child_config(spec, f"/submission/{filename}") | {"socket": CHANNEL}
        self.client = docker.from_env()
        self.container = self.client.containers.create(
            RUNNER_IMAGE,
            command=["/opt/venv/bin/python", "-I", "-c", BOOTSTRAP, "/opt/runner", json.dumps(config)],
            init=True,  # the child must not be PID 1, which ignores signals it has no handler for
            user="mlm-runner",
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"size={TMPFS_MIB}m"},
            working_dir="/tmp",
            environment=child_environment("/tmp"),
            mem_limit=f"{limits.memory_mib}m",
            memswap_limit=f"{limits.memory_mib}m",
            pids_limit=PIDS_MAX,
            nano_cpus=1_000_000_000,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            ulimits=[
                Ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds + 1),
                Ulimit(name="fsize", soft=limits.file_size_mib * MIB, hard=limits.file_size_mib * MIB),
                Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
                Ulimit(name="core", soft=0, hard=0),
                # per user on the host: the pids limit above is the real cap on processes
                Ulimit(name="nproc", soft=NPROC, hard=NPROC),
            ],
            volumes={
                str(channel_dir): {"bind": "/channel", "mode": "rw"},
                str(submission_dir): {"bind": "/submission", "mode": "ro"},
            },
            labels={LABEL: filename},
        )
        try:
            self.container.start()
        except DockerException:
            self.container.remove(force=True)
            raise
        self.isolation = (
            f"docker (container from {RUNNER_IMAGE}: no network, read-only root, user mlm-runner, no capabilities; "
            f"memory {limits.memory_mib} MiB, pids {PIDS_MAX}, 1 CPU; rlimits)"
        )
        self.start_threads(
            threading.Thread(target=self._accept_and_read, daemon=True),
            threading.Thread(target=self._follow_logs, args=(True, self.stdout), daemon=True),
            threading.Thread(target=self._follow_logs, args=(False, self.stderr), daemon=True),
        )

    def _accept_and_read(self) -> None:
        try:
            connection, _ = self.listener.accept()
        except OSError:  # the container never connected: it ended, or start-up timed out
            self._deliver(None)
            self.connected.set()
            return
        self.connection = connection
        self.request_fd = connection.fileno()
        self.connected.set()
        self._read_frames(connection.makefile("rb"))

    def _follow_logs(self, stdout: bool, buffer) -> None:
        try:
            for chunk in self.container.logs(stream=True, follow=True, stdout=stdout, stderr=not stdout):
                buffer.feed(chunk)
        except DockerException:
            pass
        buffer.end()

    def send(self, message, tensors=None, deadline=None) -> None:
        self.connected.wait(self.limits.startup_seconds)
        if not hasattr(self, "connection"):
            raise ChildGone()
        super().send(message, tensors, deadline)

    def _write_some(self, data: memoryview) -> int:
        # The socket also carries the replies, read by a blocking reader: only this send may not block.
        return self.connection.send(data, socket.MSG_DONTWAIT)

    def kill(self) -> None:
        try:
            self.container.reload()
            if self.container.status == "running":
                self.killed_by_grader = True
                self.container.kill()
        except DockerException:
            pass

    def exit(self, wait_seconds: float = 5.0) -> Exit:
        try:
            status = self.container.wait(timeout=wait_seconds)["StatusCode"]
        except (RequestException, DockerException):  # still running after wait_seconds
            self.kill()
            status = self.container.wait()["StatusCode"]
        self.container.reload()
        return self.ended(returncode_of(status), 0.0, oom_kills=1 if self.container.attrs["State"].get("OOMKilled") else 0)

    def close(self) -> None:
        try:
            self.container.remove(force=True)
        except (NotFound, DockerException):
            pass
        for closable in (getattr(self, "connection", None), self.listener):
            if closable is not None:
                closable.close()
        self.release()


BACKEND = Docker()
