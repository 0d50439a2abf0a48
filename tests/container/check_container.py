"""Build the production image from the shipped Dockerfile with podman and run it as docs/deployment.md says.

No Docker engine and no registry are reachable here, so the images are built as `make image
OFFLINE=1` builds them (deploy/image.py: a debootstrap base, torch from the machine's wheel folder).
Then, each a check that --only can pick:
- grader: every submission below is graded in a container run the way docs/deployment.md says
  (--network none, --read-only, --tmpfs /tmp, the file mounted read-only), its verdict asserted;
- docker: the runner image: the grader on this host grades them with --isolation docker through the
  Docker Engine API, served by `podman system service`; no container may be left afterwards;
- gradescope: the autograder zip (deploy/gradescope/build.py, as `make gradescope` runs it) unpacked
  into a fake /autograder tree and its run_autograder run in the image, for a correct and a wrong
  submission; each results.json validated by the schema of tests/test_formats.py, its score checked;
- prairielearn: deploy/prairielearn/run as the image's entrypoint on a fake /grade tree, the same way;
- shards: the Kubernetes Job's pod command (deploy/kubernetes/grade-class.yaml) for every index in
  the image, with the manifest's capabilities, the shard files merged by `python -m grader merge`
  and compared with one local batch;
- service: the grading service's pod (deploy/kubernetes/grading-service.yaml: its arguments, the
  Job's walls, the seed and the token in its environment) in the image, its port published on
  127.0.0.1: ready, a correct and a wrong file graded through grader.client under uid isolation,
  no secret in an answer, a request without the token refused, and SIGTERM ending it.
The platform and shard checks run the documentation's own command lines (they must appear in
docs/platforms.md or docs/deployment.md word for word), with their variables (SOLUTION, ZIP,
AUTOGRADER, GRADE, CLASS) set to test folders.

    .venv/bin/python tests/container/check_container.py [--only gradescope,shards] [--skip-build]     (make container-test)
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from deploy import image  # noqa: E402 - the same build as `make image OFFLINE=1`
from grader.client import Client  # noqa: E402 - the service's client, as a pipeline uses it
from tests.test_formats import GRADESCOPE_SCHEMA, PRAIRIELEARN_SCHEMA  # noqa: E402 - the schemas the format tests use

BUILD = ROOT / "build"
IMAGE = image.DEFAULT_TAG
RUNNER_IMAGE = "localhost/mlm-grader-runner:test"
SUBMISSIONS = ROOT / "reference" / "mlm_forward_tied" / "submissions"
DOCS = (ROOT / "docs" / "platforms.md", ROOT / "docs" / "deployment.md")  # the pages that show the command lines
JOB = ROOT / "deploy" / "kubernetes" / "grade-class.yaml"
DEPLOYMENT = ROOT / "deploy" / "kubernetes" / "grading-service.yaml"
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
TOKEN = "container-token-27182"
CHECKS = ("grader", "docker", "gradescope", "prairielearn", "shards", "batch", "service")
CORRECT, WRONG = "accepted/plain_helpers.py", "wrong_answer/causal_mask.py"
CLASS = [CORRECT, "accepted/einsum_everywhere.py", "accepted/loops_over_heads.py", WRONG, "wrong_answer/detached_head.py", "wrong_answer/eps_wrong_value.py"]
POINTS = 10  # GRADER_OPTIONS='--points 10', as docs/platforms.md shows

# The documentation's command lines, run as they are written (from the checkout, with its variables set).
# The walls are the Kubernetes Job's: every capability dropped but the three the grader needs, no
# privilege escalation, a read-only root, no network.
WALLS = "--network none --read-only --tmpfs /tmp --cap-drop ALL --cap-add SETUID,SETGID,KILL --security-opt no-new-privileges"
GRADESCOPE_LINES = [
    'mkdir -p "$AUTOGRADER/submission" "$AUTOGRADER/results"',
    'unzip -q -o "$ZIP" -d "$AUTOGRADER/source" && cp "$AUTOGRADER/source/run_autograder" "$AUTOGRADER/"',
    'cp "$SOLUTION" "$AUTOGRADER/submission/solution.py"',
    f'podman run --rm {WALLS} -v "$AUTOGRADER:/autograder" --entrypoint /autograder/run_autograder {IMAGE}',
]
PRAIRIELEARN_LINES = [
    'mkdir -p "$GRADE/student" "$GRADE/results" && cp "$SOLUTION" "$GRADE/student/solution.py"',
    f'podman run --rm {WALLS} -e MLM_GRADER_SEED -v "$GRADE:/grade" --entrypoint /app/deploy/prairielearn/run {IMAGE}',
]
# The results folder given to the image's user by a one-off chown container (rootful or rootless alike).
OWNER_LINE = f'mkdir -p "$CLASS/results" && podman run --rm --user root --entrypoint chown -v "$CLASS/results:/results" {IMAGE} mlm-grader:mlm-grader /results'
BATCH_LINE = (
    f'podman run --rm {WALLS} --memory 6g --cpus 2 -e MLM_GRADER_SEED -v "$CLASS/submissions:/submissions:ro" -v "$CLASS/results:/results" {IMAGE} '
    "batch /submissions --out /results/results.jsonl --csv /results/grades.csv --feedback /results/feedback"
)
MERGE_LINE = '.venv/bin/python -m grader merge "$CLASS"/results/shard-*.jsonl --out "$CLASS/results.jsonl" --csv "$CLASS/grades.csv"'


def shard_lines() -> list[str]:
    """The pods of deploy/kubernetes/grade-class.yaml, one after the other: the manifest's arguments
    and resource limits, $(JOB_COMPLETION_INDEX) from the loop."""
    job = next(doc for doc in yaml.safe_load_all(JOB.read_text()) if doc and doc["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == IMAGE, f"the Job runs {container['image']}, the test builds {IMAGE}"
    limits = container["resources"]["limits"]
    memory = limits["memory"].replace("Gi", "g").replace("Mi", "m")
    args = " ".join(a.replace("$(JOB_COMPLETION_INDEX)", "$i") for a in container["args"])
    pods = (
        f"for i in $(seq 0 {job['spec']['completions'] - 1}); do podman run --rm {WALLS} --memory {memory} --cpus {limits['cpu']} "
        f'-e JOB_COMPLETION_INDEX=$i -e MLM_GRADER_SEED -v "$CLASS/submissions:/submissions:ro" -v "$CLASS/results:/results" {IMAGE} {args}; done'
    )
    return [OWNER_LINE, pods, MERGE_LINE]


def documented() -> str:
    """The text of the pages that show the container command lines, in their order."""
    return "\n".join(page.read_text() for page in DOCS)


def run_lines(lines: list[str], variables: dict[str, str], failures: list[str], timeout: int = 900) -> bool:
    """Run each line with bash from the checkout, as a reader of the docs would; each must be in them."""
    shown = documented()
    env = {k: v for k, v in os.environ.items() if k != "MLM_GRADER_SEED"} | {"MLM_GRADER_SEED": SECRET} | variables
    for line in lines:
        if line not in shown:
            failures.append(f"docs/platforms.md and docs/deployment.md do not show the command the container test runs: {line}")
        result = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            failures.append(f"{line}\n  exited with {result.returncode}: {(result.stdout + result.stderr)[-2000:]}")
            return False
    return True


def fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def results_of(path: Path, schema: dict, label: str, failures: list[str]) -> dict | None:
    try:
        results = json.loads(path.read_text())
        jsonschema.validate(results, schema)
    except (OSError, ValueError, jsonschema.ValidationError) as error:
        failures.append(f"{label}: no valid results.json: {str(error)[:1000]}")
        return None
    if SECRET in json.dumps(results):
        failures.append(f"{label}: the secret seed is in the results")
    return results


def verdict_line(label: str, ok: bool, what: str, failures: list[str]) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {label}: {what}", flush=True)
    if not ok:
        failures.append(f"{label}: {what}")


def check_gradescope(work: Path, failures: list[str]) -> None:
    (work / "seed.txt").write_text(SECRET + "\n")
    archive = work / "gradescope-autograder.zip"
    build = [sys.executable, str(ROOT / "deploy" / "gradescope" / "build.py"), f"--seed-file={work / 'seed.txt'}", f"--grader-options=--points {POINTS}"]
    subprocess.run([*build, "--out", str(archive)], check=True, capture_output=True, timeout=120)  # what `make gradescope` runs
    for relative, verdict, score in ((CORRECT, "accepted", POINTS), (WRONG, "wrong_answer", 0)):
        tree = fresh(work / Path(relative).parent.name) / "autograder"
        label = f"gradescope {relative}"
        if run_lines(GRADESCOPE_LINES, {"AUTOGRADER": str(tree), "ZIP": str(archive), "SOLUTION": str(SUBMISSIONS / relative)}, failures):
            if results := results_of(tree / "results" / "results.json", GRADESCOPE_SCHEMA, label, failures):
                extra = results["extra_data"]
                ok = results["score"] == score and extra["verdict"] == verdict and extra["isolation"].startswith("uid") and not extra["warnings"]
                verdict_line(label, ok, f"{extra['verdict']}, score {results['score']} of {POINTS} (isolation: {extra['isolation']})", failures)


def check_prairielearn(work: Path, failures: list[str]) -> None:
    for relative, verdict, score in ((CORRECT, "accepted", 1.0), (WRONG, "wrong_answer", 0.0)):
        tree = fresh(work / Path(relative).parent.name) / "grade"
        label = f"prairielearn {relative}"
        if run_lines(PRAIRIELEARN_LINES, {"GRADE": str(tree), "SOLUTION": str(SUBMISSIONS / relative)}, failures):
            if results := results_of(tree / "results" / "results.json", PRAIRIELEARN_SCHEMA, label, failures):
                ok = results["gradable"] is True and results["score"] == score and results["verdict"] == verdict and not results["warnings"]
                verdict_line(label, ok, f"{results['verdict']}, gradable {results['gradable']}, score {results['score']}", failures)


def graded(path: Path) -> list[tuple[str, str, float]]:
    return [(line["id"], line["verdict"], line["score"]) for line in map(json.loads, path.read_text().splitlines())]


def check_batch(work: Path, failures: list[str]) -> None:
    """docs/deployment.md's class batch in the container, results folder and all: one row and one feedback
    file per student, the verdicts those of one local batch."""
    folder = fresh(work) / "submissions"
    folder.mkdir()
    for number, relative in enumerate(CLASS):
        shutil.copy(SUBMISSIONS / relative, folder / f"student{number}_{Path(relative).parent.name}_{Path(relative).name}")
    if not run_lines([OWNER_LINE, BATCH_LINE], {"CLASS": str(work)}, failures):
        return
    results = work / "results"
    in_container = sorted(graded(results / "results.jsonl"))
    rows = (results / "grades.csv").read_text().splitlines()
    feedback = sorted(path.name for path in (results / "feedback").iterdir())
    ok = len(in_container) == len(CLASS) and len(rows) == len(CLASS) + 1 and len(feedback) == len(CLASS)
    ok = ok and {verdict for _, verdict, _ in in_container} == {"accepted", "wrong_answer"}
    verdict_line("class batch in the container", ok, f"{len(in_container)} results, {len(rows) - 1} gradebook rows, {len(feedback)} feedback files", failures)


def check_shards(work: Path, failures: list[str]) -> None:
    folder = fresh(work) / "submissions"
    folder.mkdir()
    for number, relative in enumerate(CLASS):  # these names put at least one submission in each of the 4 shards
        shutil.copy(SUBMISSIONS / relative, folder / f"student{number}_{Path(relative).parent.name}_{Path(relative).name}")
    if not run_lines(shard_lines(), {"CLASS": str(work)}, failures):
        return
    env = {k: v for k, v in os.environ.items() if k != "MLM_GRADER_SEED"} | {"MLM_GRADER_SEED": SECRET}
    batch = [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(work / "single.jsonl")]
    single = subprocess.run(batch, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if single.returncode != 0:
        failures.append(f"the local batch failed ({single.returncode}): {single.stderr[-2000:]}")
        return
    merged, alone = graded(work / "results.jsonl"), sorted(graded(work / "single.jsonl"))
    isolations = {line["isolation"].split()[0] for line in map(json.loads, (work / "results.jsonl").read_text().splitlines())}
    sizes = [len(graded(path)) for path in sorted((work / "results").glob("shard-*.jsonl"))]
    ok = merged == alone and len(merged) == len(CLASS) and isolations == {"uid"} and len(sizes) > 1 and all(sizes)
    what = f"{len(merged)} submissions from {len(sizes)} pods ({'+'.join(map(str, sizes))}, isolation {', '.join(sorted(isolations))}) "
    what += "match" if merged == alone else "differ from"
    verdict_line("kubernetes shards merged", ok, f"{what} one local batch: {merged if merged != alone else ''}".rstrip(": "), failures)


def check_service(work: Path, failures: list[str]) -> None:
    deployment = next(doc for doc in yaml.safe_load_all(DEPLOYMENT.read_text()) if doc and doc["kind"] == "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGE, f"the Deployment runs {container['image']}, the test builds {IMAGE}"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    name = f"mlm-grader-service-test-{os.getpid()}"
    walls = WALLS.replace("--network none ", "").split()  # the pod's walls, its port published on loopback only
    env = {**os.environ, "MLM_GRADER_SEED": SECRET, "MLM_GRADER_TOKEN": TOKEN}
    command = ["podman", "run", "-d", "--name", name, *walls, "--memory", "6g", "-e", "MLM_GRADER_SEED", "-e", "MLM_GRADER_TOKEN"]
    command += ["-p", f"127.0.0.1:{port}:{container['ports'][0]['containerPort']}", IMAGE, *container["args"]]
    started = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    if started.returncode != 0:
        failures.append(f"the service's container did not start: {started.stderr[-2000:]}")
        return
    url = f"http://127.0.0.1:{port}"
    try:
        with Client(url, token=TOKEN) as client:
            deadline = time.monotonic() + 300
            while not client.ready() and time.monotonic() < deadline:
                time.sleep(1)
            reports = [client.grade((SUBMISSIONS / relative).read_text()) for relative in (CORRECT, WRONG)]
        without_token = httpx.post(f"{url}/v1/grade", json={"source": "x = 1"}).status_code
        texts = json.dumps([r.to_response() for r in reports])
        ok = [r.verdict for r in reports] == ["accepted", "wrong_answer"] and all(r.isolation.startswith("uid") for r in reports)
        ok = ok and without_token == 401 and SECRET not in texts and TOKEN not in texts
        what = f"{[str(r.verdict) for r in reports]} under {reports[0].isolation.split(' ')[0]}, 401 without the token"
    except Exception as error:  # noqa: BLE001 - told as this check's failure, with the container's log
        ok, what = False, f"{type(error).__name__}: {error}"
    finally:  # SIGTERM, as Kubernetes stops a pod; then what it logged, and the container removed
        stopped = subprocess.run(["podman", "stop", "-t", "60", name], capture_output=True, text=True, timeout=120)
        logs = subprocess.run(["podman", "logs", name], capture_output=True, text=True).stderr
        subprocess.run(["podman", "rm", "-f", name], capture_output=True, text=True, timeout=120)
    ok = ok and stopped.returncode == 0 and SECRET not in logs and TOKEN not in logs and "every request accepted was answered" in logs
    verdict_line("the grading service's pod", ok, what + ("" if ok else f"\n{logs[-3000:]}"), failures)


def walls_alone(relative: str) -> list[str]:
    """Hostile files are graded as plain Python (--unrestricted: no static check, no capability
    layer), so the container's walls face them (the static check alone would refuse them all: see
    tests/test_hostile.py)."""
    return ["--unrestricted"] if Path(relative).name.startswith("hostile_") else []


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the images and grade in them (make container-test).")
    parser.add_argument("--only", default=",".join(CHECKS), help=f"comma-separated checks to run (default all: {','.join(CHECKS)})")
    parser.add_argument("--skip-build", action="store_true", help="use the images already built (tagged as this test tags them)")
    args = parser.parse_args(argv)
    checks = [c for c in args.only.split(",") if c]
    if unknown := set(checks) - set(CHECKS):
        parser.error(f"unknown checks {sorted(unknown)}; choose among {', '.join(CHECKS)}")
    started = time.monotonic()
    if image.engine() != "podman":
        raise SystemExit("the container test drives podman (the docker backend is served by `podman system service`)")
    wanted = [("grader", IMAGE)] + ([("runner", RUNNER_IMAGE)] if "docker" in checks else [])
    for target, tag in wanted:
        if not args.skip_build:
            try:
                image.build(target, tag, offline=True)
            except image.BuildError as error:  # a tool missing: one line saying which (.ci/run installs them)
                raise SystemExit(f"container test: the {target} image cannot be built: {error}") from None
            except subprocess.CalledProcessError as error:  # the tool said why, above
                command = " ".join(map(str, error.cmd))
                why = f"`{command}` exited with status {error.returncode} (its message is above)"
                raise SystemExit(f"container test: building the {target} image failed: {why}") from None
        elif not image.image_exists("podman", tag):
            raise SystemExit(f"--skip-build: no image {tag}; run without --skip-build once")
    print(f"images ready after {time.monotonic() - started:.0f}s", flush=True)
    failures: list[str] = []
    if "grader" in checks:
        for relative, verdict in EXPECTED.items():
            check(relative, verdict, grade_in_container(relative), "uid", failures)
    if "docker" in checks:
        check_docker_backend(failures)
    work = BUILD / "container-test"
    checks_of = (("gradescope", check_gradescope), ("prairielearn", check_prairielearn), ("shards", check_shards), ("batch", check_batch))
    for name, run in (*checks_of, ("service", check_service)):
        if name in checks:
            run(fresh(work / name), failures)
    print(f"container test ({', '.join(checks)}) took {time.monotonic() - started:.0f}s")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


def check_docker_backend(failures: list[str]) -> None:
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


if __name__ == "__main__":
    sys.exit(main())
