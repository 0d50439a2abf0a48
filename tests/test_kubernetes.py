"""The Kubernetes manifests: valid against the Kubernetes schemas (offline), tight, and their shard
commands, run here for every index and merged with `python -m grader merge`, grade each submission
exactly once with the verdicts and scores of a single batch."""

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


def the_job() -> dict:
    return next(doc for path in MANIFESTS for doc in documents(path) if doc["kind"] == "Job")


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
