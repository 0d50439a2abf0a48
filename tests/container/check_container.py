"""Build the production image from the shipped Dockerfile with podman and grade inside it.

No Docker engine and no registry are reachable here, so the base image is built locally from
Debian packages (debootstrap) and passed as BASE_IMAGE, and torch comes from the machine's wheel
folder. Then every submission below is graded in a container run the way the README says
(--network none, --read-only, --tmpfs /tmp, the file mounted read-only) and its verdict asserted.

    .venv/bin/python tests/container/check_container.py     (make container-test)
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
BASE_IMAGE = "localhost/mlm-grader-base:bookworm"
IMAGE = "localhost/mlm-grader:test"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
SUBMISSIONS = ROOT / "tests" / "submissions"
EXPECTED = {
    "accepted/plain_helpers.py": "accepted",
    "wrong_answer/causal_mask.py": "wrong_answer",
    "forbidden_api/plain_torch_softmax.py": "forbidden_api",
    "wrong_answer/hostile_read_reference_from_disk.py": "wrong_answer",
    "wrong_answer/hostile_read_environment.py": "wrong_answer",
    "runtime_error/hostile_kill_parent.py": "runtime_error",
    "memory_limit_exceeded/hostile_memory_bomb.py": "memory_limit_exceeded",
}
SECRET = "container-secret-31415"


def run(*command: str, **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def debian_mirror() -> str:
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if path.is_file():
            for line in path.read_text().splitlines():
                words = line.split()
                if words[:1] == ["deb"] and len(words) > 2:
                    return words[1] if "://" in words[1] else words[2]
                if words[:1] == ["URIs:"]:
                    return words[1]
    return "http://deb.debian.org/debian"


def image_exists(name: str) -> bool:
    return subprocess.run(["podman", "image", "exists", name]).returncode == 0


def build_base_image() -> None:
    if image_exists(BASE_IMAGE):
        return
    rootfs = BUILD / "rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    BUILD.mkdir(exist_ok=True)
    run("debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates", "bookworm", str(rootfs), debian_mirror())
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    run("podman", "import", "-", BASE_IMAGE, stdin=tar.stdout)
    tar.wait()
    shutil.rmtree(rootfs)


def wheel_folder() -> str | None:
    """The machine's local wheel folder (pip's find-links), where the CPU torch wheel lies."""
    result = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    for line in result.stdout.splitlines():
        if line.split("=")[0].endswith(".find-links"):
            return line.split("=", 1)[1].strip().strip("'")
    return None


def build_image() -> None:
    volumes = []
    args = []
    if wheels := wheel_folder():
        volumes += ["-v", f"{wheels}:/wheels:ro"]
        args += ["--build-arg", "PIP_FIND_LINKS=/wheels", "--build-arg", "TORCH_INDEX_URL="]  # no other index is reachable
    if Path(CA_BUNDLE).exists():  # package traffic goes through an intercepting proxy here
        volumes += ["-v", f"{CA_BUNDLE}:{CA_BUNDLE}:ro"]
    run("podman", "build", "--quiet", "-t", IMAGE, "--build-arg", f"BASE_IMAGE={BASE_IMAGE}", *args, *volumes, str(ROOT))


def grade(relative: str) -> dict:
    command = [
        "podman", "run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp",
        "--memory", "6g", "--pids-limit", "256",
        "-e", f"MLM_GRADER_SEED={SECRET}",
        "-v", f"{SUBMISSIONS / relative}:/submission/solution.py:ro",
        IMAGE, "--json",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if not result.stdout.strip():
        raise AssertionError(f"{relative}: no report (exit {result.returncode}): {result.stderr[-2000:]}")
    return json.loads(result.stdout)


def main() -> int:
    os.environ.setdefault("CONTAINERS_CONF", str(Path(__file__).with_name("containers.conf")))
    started = time.monotonic()
    build_base_image()
    build_image()
    print(f"images ready after {time.monotonic() - started:.0f}s", flush=True)
    failures = []
    for relative, verdict in EXPECTED.items():
        report = grade(relative)
        ok = report["verdict"] == verdict and report["isolation"].startswith("uid") and SECRET not in json.dumps(report)
        print(f"{'ok  ' if ok else 'FAIL'} {relative}: {report['verdict']} (isolation: {report['isolation']})", flush=True)
        if not ok:
            failures.append(f"{relative}: expected {verdict}, got {report['verdict']}: {report['message'][:500]}")
    print(f"container test took {time.monotonic() - started:.0f}s")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
