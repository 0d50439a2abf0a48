"""Build both images from the shipped Dockerfile with podman and grade with each of them.

No Docker engine and no registry are reachable here, so both are built as `make image OFFLINE=1`
builds them (deploy/image.py: a debootstrap base, torch from the machine's wheel folder). Then:
- the grader image: every submission below is graded in a container run the way the README says
  (--network none, --read-only, --tmpfs /tmp, the file mounted read-only), its verdict asserted;
- the runner image: the grader on this host grades them with --isolation docker through the
  Docker Engine API, served by `podman system service`; no container may be left afterwards.

    .venv/bin/python tests/container/check_container.py     (make container-test)
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from deploy import image  # noqa: E402 - the same build as `make image OFFLINE=1`

BUILD = ROOT / "build"
IMAGE = image.DEFAULT_TAG
RUNNER_IMAGE = "localhost/mlm-grader-runner:test"
SUBMISSIONS = ROOT / "tests" / "submissions"
EXPECTED = {
    "accepted/plain_helpers.py": "accepted",
    "wrong_answer/causal_mask.py": "wrong_answer",
    "forbidden_api/plain_torch_softmax.py": "forbidden_api",
    "wrong_answer/hostile_read_reference_from_disk.py": "wrong_answer",
    "wrong_answer/hostile_read_environment.py": "wrong_answer",
    "runtime_error/hostile_kill_parent.py": "runtime_error",
    "memory_limit_exceeded/hostile_memory_bomb.py": "memory_limit_exceeded",
    "wrong_answer/hostile_write_outside.py": "wrong_answer",
    "wrong_answer/hostile_fork_many.py": "wrong_answer",
}
SECRET = "container-secret-31415"


def walls_alone(relative: str) -> list[str]:
    """Hostile files are graded with the static check skipped, so the container's walls face them
    (the static check alone would refuse them all: see tests/test_hostile.py)."""
    return ["--no-static-check"] if Path(relative).name.startswith("hostile_") else []


def grade_in_container(relative: str) -> dict:
    command = [
        "podman", "run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp",
        "--memory", "6g", "--pids-limit", "256",
        "-e", f"MLM_GRADER_SEED={SECRET}",
        "-v", f"{SUBMISSIONS / relative}:/submission/solution.py:ro",
        IMAGE, "--json", *walls_alone(relative),
    ]  # fmt: skip
    return report_of(relative, subprocess.run(command, capture_output=True, text=True, timeout=300))


def grade_with_docker_backend(relative: str, socket_path: Path) -> dict:
    env = {**os.environ, "DOCKER_HOST": f"unix://{socket_path}", "MLM_GRADER_RUNNER_IMAGE": RUNNER_IMAGE, "MLM_GRADER_SEED": SECRET}
    command = [sys.executable, "-m", "grader", str(SUBMISSIONS / relative), "--isolation", "docker", "--json", *walls_alone(relative)]
    return report_of(relative, subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env))


def report_of(relative: str, result: subprocess.CompletedProcess) -> dict:
    if not result.stdout.strip():
        raise AssertionError(f"{relative}: no report (exit {result.returncode}): {result.stderr[-2000:]}")
    return json.loads(result.stdout)


def check(relative: str, verdict: str, report: dict, isolation: str, failures: list[str]) -> None:
    ok = report["verdict"] == verdict and report["isolation"].startswith(isolation) and SECRET not in json.dumps(report)
    print(f"{'ok  ' if ok else 'FAIL'} {relative}: {report['verdict']} (isolation: {report['isolation']})", flush=True)
    if not ok:
        failures.append(f"{relative}: expected {verdict} under {isolation}, got {report['verdict']}: {report['message'][:500]}")


def leftover_children() -> list[str]:
    listed = subprocess.run(["podman", "ps", "-a", "-q", "--filter", "label=mlm-grader-child"], capture_output=True, text=True)
    return listed.stdout.split()


def main() -> int:
    started = time.monotonic()
    if image.engine() != "podman":
        raise SystemExit("the container test drives podman (the docker backend is served by `podman system service`)")
    image.build("grader", IMAGE, offline=True)
    image.build("runner", RUNNER_IMAGE, offline=True)
    print(f"images ready after {time.monotonic() - started:.0f}s", flush=True)
    failures: list[str] = []
    for relative, verdict in EXPECTED.items():
        check(relative, verdict, grade_in_container(relative), "uid", failures)

    BUILD.mkdir(exist_ok=True)
    socket_path = BUILD / "podman-api.sock"
    socket_path.unlink(missing_ok=True)
    service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{socket_path}"])
    try:
        for _ in range(100):
            if socket_path.exists():
                break
            time.sleep(0.1)
        else:
            raise AssertionError("podman system service did not create its API socket")
        for relative, verdict in EXPECTED.items():
            check(relative, verdict, grade_with_docker_backend(relative, socket_path), "docker", failures)
    finally:
        service.terminate()
        service.wait()
    if leftover := leftover_children():
        failures.append(f"containers left behind by --isolation docker: {leftover}")
    print(f"container test took {time.monotonic() - started:.0f}s")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
