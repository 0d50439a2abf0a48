"""The Kubernetes manifests: valid against the Kubernetes schemas (offline), tight, and their shard
commands, run here for every index and merged with `python -m grader merge`, grade each submission
exactly once with the verdicts and scores of a single batch. The grading service's Deployment runs
`serve` from the Job's image with the Job's walls, its secrets from Secrets, probed on /readyz and
/healthz, and its Service, autoscaler and disruption budget all reach its pods."""

import json
import shutil
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from tests.grading import ROOT, SUBMISSIONS, run_grader

MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
KUBERNETES_VERSION = "1.33.0"  # backoffLimitPerIndex is stable from 1.33 on


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def the_one(kind: str) -> dict:
    [found] = [doc for path in MANIFESTS for doc in documents(path) if doc["kind"] == kind]
    return found


def the_job() -> dict:
    return the_one("Job")


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_every_manifest_validates_strictly_against_the_kubernetes_schemas(path):
    assert documents(path)
    for document in documents(path):
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_a_broken_manifest_is_caught():
    job = the_job()
    job["spec"]["completionMode"] = 4  # a number where the schema wants a string
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES_VERSION, strict=True)


def shard_arguments(job: dict) -> tuple[int, list[str]]:
    container = job["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    index, count = args[args.index("--shard") + 1].split("/")
    assert index == "$(JOB_COMPLETION_INDEX)"
    return int(count), args


def test_the_job_is_indexed_one_pod_per_shard_and_walled_in():
    job = the_job()
    spec = job["spec"]
    count, args = shard_arguments(job)
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == count
    assert spec["backoffLimitPerIndex"] >= 1 and spec["ttlSecondsAfterFinished"] > 0
    assert args[0] == "batch" and "$(JOB_COMPLETION_INDEX)" in args[args.index("--out") + 1]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["automountServiceAccountToken"] is False
    container = pod["containers"][0]
    security = container["securityContext"]
    assert security["capabilities"] == {"drop": ["ALL"], "add": ["SETUID", "SETGID", "KILL"]}
    assert security["readOnlyRootFilesystem"] and not security["allowPrivilegeEscalation"]
    assert security["seccompProfile"]["type"] == "RuntimeDefault"
    seed = next(env for env in container["env"] if env["name"] == "MLM_GRADER_SEED")
    assert "secretKeyRef" in seed["valueFrom"]  # never the seed itself in the manifest
    limits = container["resources"]["limits"]
    assert limits["memory"] and limits["cpu"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/submissions"]["readOnly"] and "/results" in mounts and "/tmp" in mounts


def graded(path: Path) -> list[tuple[str, str, float]]:
    return [(line["id"], line["verdict"], line["score"]) for line in map(json.loads, path.read_text().splitlines())]


@pytest.mark.sandbox
def test_the_shard_commands_merged_grade_every_submission_once_like_one_batch(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    for relative in ("accepted/plain_helpers.py", "wrong_answer/causal_mask.py", "forbidden_api/plain_torch_softmax.py", "runtime_error/raises_in_call.py"):
        shutil.copy(SUBMISSIONS / relative, folder / f"{Path(relative).parent.name}_{Path(relative).name}")
    count, args = shard_arguments(the_job())
    env = {"MLM_GRADER_SEED": "kubernetes-test-seed"}
    for index in range(count):
        pod_args = [a.replace("$(JOB_COMPLETION_INDEX)", str(index)).replace("/submissions", str(folder)).replace("/results", str(tmp_path)) for a in args]
        result = run_grader(*pod_args, env=env)
        assert result.returncode == 0, result.stderr
    shards = [str(tmp_path / f"shard-{index}.jsonl") for index in range(count)]
    merged = run_grader("merge", *shards, "--out", str(tmp_path / "merged.jsonl"))
    assert merged.returncode == 0, merged.stderr  # a submission in two shards would be refused
    assert "4 submissions:" in merged.stdout
    single = run_grader("batch", str(folder), "--out", str(tmp_path / "single.jsonl"), env=env)
    assert single.returncode == 0, single.stderr
    assert graded(tmp_path / "merged.jsonl") == sorted(graded(tmp_path / "single.jsonl"))
    assert len(graded(tmp_path / "merged.jsonl")) == 4


def test_the_service_runs_serve_from_the_jobs_image_with_the_jobs_walls_and_secrets_from_secrets():
    from grader.service.command import parse_args

    deployment, job = the_one("Deployment"), the_job()
    pod, job_pod = deployment["spec"]["template"]["spec"], job["spec"]["template"]["spec"]
    [container], [job_container] = pod["containers"], job_pod["containers"]
    assert container["image"] == job_container["image"] and container["securityContext"] == job_container["securityContext"]
    assert pod["automountServiceAccountToken"] is False and container["volumeMounts"] == [m for m in job_container["volumeMounts"] if m["mountPath"] == "/tmp"]
    args = container["args"]
    assert args[0] == "serve"
    options = parse_args(args[1:])  # the command's own parser takes them
    assert options.host == "0.0.0.0" and options.jobs == 1  # one grading at a time under the container's uid isolation
    env = {e["name"]: e for e in container["env"]}
    for name in ("MLM_GRADER_SEED", "MLM_GRADER_TOKEN"):  # beyond loopback the service refuses to start without the token
        assert "secretKeyRef" in env[name]["valueFrom"] and "value" not in env[name]
    [port] = container["ports"]
    assert port["containerPort"] == options.port
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    assert pod["terminationGracePeriodSeconds"] > options.deadline  # SIGTERM answers every request accepted, each within its deadline
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_services_service_autoscaler_and_disruption_budget_reach_its_pods():
    deployment = the_one("Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert not the_job()["spec"]["template"]["metadata"]["labels"].items() >= labels.items()  # the Job's pods are not its
    service, autoscaler, budget = the_one("Service"), the_one("HorizontalPodAutoscaler"), the_one("PodDisruptionBudget")
    assert service["spec"]["selector"].items() <= labels.items()
    [port] = service["spec"]["ports"]
    assert port["targetPort"] == deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"]
    target = autoscaler["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert 2 <= autoscaler["spec"]["minReplicas"] <= autoscaler["spec"]["maxReplicas"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items() and budget["spec"]["maxUnavailable"] == 1
