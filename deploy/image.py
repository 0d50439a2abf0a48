"""Build the production image (the Dockerfile's `grader` target) with whichever engine is here.

    python deploy/image.py [--offline] [--target grader|runner] [--tag NAME]     (make image [OFFLINE=1])

The engine is docker when its daemon answers, else podman (with deploy/containers.conf). The
Dockerfile starts from python:3.11-slim-bookworm; where no registry can be reached that pull fails,
and --offline builds the base locally instead: a Debian bookworm root file system made by
debootstrap from the machine's apt mirror (Python 3.11, like the slim image), imported as
localhost/mlm-grader-base:bookworm. Torch then comes from the machine's wheel folder (pip's
find-links) when it has one, and the host's CA bundle is mounted for pip where package traffic goes
through an intercepting proxy.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTAINERS_CONF = ROOT / "deploy" / "containers.conf"
OFFLINE_BASE = "localhost/mlm-grader-base:bookworm"
DEFAULT_TAG = "mlm-grader:latest"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


class BuildError(Exception):
    """The image cannot be built here; the message says why and what to do."""


def run(*command: str, **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def engine() -> str:
    """docker when a daemon answers, else podman; BuildError when neither can build."""
    if shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        return "docker"
    if shutil.which("podman"):
        os.environ.setdefault("CONTAINERS_CONF", str(CONTAINERS_CONF))
        return "podman"
    raise BuildError("no container engine: install podman (apt-get install podman runc) or start a Docker daemon")


def image_exists(tool: str, name: str) -> bool:
    probe = [tool, "image", "exists", name] if tool == "podman" else [tool, "image", "inspect", name]
    return subprocess.run(probe, capture_output=True).returncode == 0


def debian_mirror() -> str:
    """The machine's own apt mirror (the only one that may be reachable)."""
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if path.is_file():
            for line in path.read_text().splitlines():
                words = line.split()
                if words[:1] == ["deb"] and len(words) > 2:
                    return words[1] if "://" in words[1] else words[2]
                if words[:1] == ["URIs:"]:
                    return words[1]
    return "http://deb.debian.org/debian"


def build_offline_base(tool: str) -> str:
    """A python:3.11-slim-bookworm stand-in made from Debian packages; built once, then reused."""
    if image_exists(tool, OFFLINE_BASE):
        return OFFLINE_BASE
    if shutil.which("debootstrap") is None:
        raise BuildError("--offline needs debootstrap (apt-get install debootstrap) and root")
    with tempfile.TemporaryDirectory(prefix="mlm-grader-rootfs-") as rootfs:
        run("debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates", "bookworm", rootfs, debian_mirror())
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        run(tool, "import", "-", OFFLINE_BASE, stdin=tar.stdout)
        tar.wait()
    return OFFLINE_BASE


def wheel_folder() -> str | None:
    """The machine's local wheel folder (pip's find-links), where the CPU torch wheel lies."""
    result = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    for line in result.stdout.splitlines():
        if line.split("=")[0].endswith(".find-links"):
            return line.split("=", 1)[1].strip().strip("'")
    return None


def build(target: str = "grader", tag: str = DEFAULT_TAG, offline: bool = False) -> str:
    """Build `target` of the Dockerfile as `tag`; returns the engine used."""
    tool = engine()
    args = ["--target", target, "-t", tag]
    if offline:
        args += ["--build-arg", f"BASE_IMAGE={build_offline_base(tool)}"]
        if wheels := wheel_folder():
            args += ["-v", f"{wheels}:/wheels:ro", "--build-arg", "PIP_FIND_LINKS=/wheels", "--build-arg", "TORCH_INDEX_URL="]
        if Path(CA_BUNDLE).exists():
            args += ["-v", f"{CA_BUNDLE}:{CA_BUNDLE}:ro"]
    try:
        run(tool, "build", *args, str(ROOT))
    except subprocess.CalledProcessError:
        hint = "" if offline else " If the base image could not be pulled (no registry reachable), build it locally: make image OFFLINE=1."
        raise BuildError(f"{tool} build failed (see its output above).{hint}") from None
    return tool


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offline", action="store_true", help="build the Debian base locally with debootstrap (no registry needed)")
    parser.add_argument("--target", default="grader", choices=["grader", "runner"])
    parser.add_argument("--tag", default=None, help=f"image name (default {DEFAULT_TAG}, or mlm-grader-runner:latest for the runner)")
    args = parser.parse_args(argv)
    tag = args.tag or (DEFAULT_TAG if args.target == "grader" else "mlm-grader-runner:latest")
    try:
        tool = build(args.target, tag, args.offline)
    except BuildError as error:
        print(f"image: {error}", file=sys.stderr)
        return 2
    conf = f"CONTAINERS_CONF={CONTAINERS_CONF.relative_to(ROOT)} " if tool == "podman" else ""
    print(
        f"built {tag} with {tool}. Grade a file with it:\n  {conf}{tool} run --rm --network none --read-only --tmpfs /tmp "
        f'-e MLM_GRADER_SEED="$SECRET" -v "$PWD/solution.py:/submission/solution.py:ro" {tag}'
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
