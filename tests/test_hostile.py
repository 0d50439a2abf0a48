"""Hostile submissions: each is rejected with its precise verdict and leaves no trace.

With every wall on (the static check, the capability layer, the runtime guard and the sandbox, as
`python -m grader batch` grades), each hostile file is refused as forbidden_api before its attack
runs (or gets the verdict a `# every wall: <verdict>` line names). Then the walls are proven
without the ones in front of them, each graded as `python -m grader FILE` grades it (its child
walled in by bubblewrap, under a secret seed): a forbidden use with the static check skipped
(`--no-static-check`: the capability layer, the guard and the sandbox; the guard alone cannot hold
against plain Python in its own process, see docs/threat-model.md), every other attack as plain
Python (`--unrestricted`: the guard's operator checks, the protocol and the sandbox); each must get
its folder's verdict. After each grading the host is checked: no marker file anywhere
they tried to write, no process of theirs, no cgroup left, the checkout unchanged, the loopback
service untouched, and the secret seed nowhere in the output.

Every hostile file also goes through the warm pool, walls alone, with the same host checks
(tests/test_pool.py). A forbidden use attacks the capability layer and the guard, the same code in
a pool child as in a fresh one; so where the pool runs, only the attacks on the sandbox and the
protocol, whose walls differ between a fresh child and a pool child, are graded here a fresh child
each, and the forbidden uses there. Where it cannot run, every file is graded here.
"""

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from grader import judge
from grader.batch.schedule import Workers
from grader.formats.json import to_json
from grader.sandbox.bubblewrap import bubblewrap_works
from grader.sandbox.zygote import zygote_problem
from grader.spec import load_spec
from grader.verify import EVERY_WALL
from tests.grading import SUBMISSIONS, checkout_digest, fast_spec, hostile_markers, listening_on_loopback, shared_once

HOSTILE = sorted(SUBMISSIONS.glob("*/hostile_*.py"))
# Attacks on what runs the same in a pool child and in a child of its own: the runner, the guard,
# the frames on the channel and how the grader reads and judges them (the same code on both sides),
# not the sandbox, the process or what the child inherits. tests/test_pool.py grades every hostile
# file through the pool with the same host checks; a new file gets a fresh child here until it is
# listed.
SAME_IN_A_POOL_CHILD = {
    "hostile_caller_frames",
    "hostile_deeply_nested_json",
    "hostile_diagnosis_dtype_echo",
    "hostile_diagnosis_markdown_fake_verdict",
    "hostile_error_ratio_carries_hidden_inputs",
    "hostile_fake_tensor_name",
    "hostile_fake_verdict_output",
    "hostile_list_as_text",
    "hostile_memory_error_with_borrowed_traceback",
    "hostile_nan_in_json",
    "hostile_output_not_a_dict",
    "hostile_patch_comparisons",
    "hostile_pure_python_module_routes",
    "hostile_return_nan",
    "hostile_tensor_claims_other_shape",
    "hostile_tensor_subclass_result",
    "hostile_unhashable_dtype",
}
# A fresh child each for the others (the forbidden uses, too, face the same code in both), or for
# every file where the pool cannot run.
FRESH = [p for p in HOSTILE if zygote_problem("bubblewrap") is not None or (p.parent.name != "forbidden_api" and p.stem not in SAME_IN_A_POOL_CHILD)]
SECRET = "hostile-test-secret-2718"


def test_the_files_graded_only_through_the_pool_are_hostile_files():
    assert SAME_IN_A_POOL_CHILD <= {p.stem for p in HOSTILE if p.parent.name != "forbidden_api"}


def test_ci_grades_behind_bubblewrap():
    # CI installs bubblewrap (.ci/run): there the strong backend must really be in use.
    if os.environ.get("CI"):
        assert bubblewrap_works()


@pytest.fixture(scope="module")
def loopback_service():
    with listening_on_loopback() as received:
        yield received


def their_processes(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and name.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def their_cgroups(name: str) -> list[Path]:
    root = Path("/sys/fs/cgroup")
    return [*root.glob(f"*/mlm-grader-{name}-*"), *root.glob(f"mlm-grader-{name}-*")]


def verdict_with_every_wall(path: Path) -> str:
    """forbidden_api, unless the file names another (an attack no in-process rule can see)."""
    found = EVERY_WALL.search(path.read_text())
    return found.group(1) if found else "forbidden_api"


@pytest.fixture(scope="module")
def graded_with_every_wall(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every hostile file graded as `python -m grader batch` grades it: the static check, the
    capability layer, the guard and the sandbox (through the warm pool where it keeps every wall);
    once for the whole run (tests/grading.py shared_once)."""

    def grade_all() -> dict[str, dict]:
        graded = Workers(load_spec(), SECRET, jobs=2).map((f"{p.parent.name}/{p.stem}", p) for p in HOSTILE)
        return {name: to_json(report) for name, report in graded}

    return shared_once(tmp_path_factory, "hostile-every-wall", grade_all)


@pytest.mark.sandbox
@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_with_every_wall_on_a_hostile_file_is_refused_before_its_attack_runs(path, graded_with_every_wall):
    report = graded_with_every_wall[f"{path.parent.name}/{path.stem}"]
    assert report["verdict"] == verdict_with_every_wall(path), report["message"]
    assert SECRET not in report["stdout"] + report["stderr"] + report["message"]


@pytest.fixture(scope="module")
def grade_walls_alone(tmp_path_factory) -> Callable[[Path, bool, bool], dict]:
    """The JSON report of judge.grade (what `python -m grader FILE --no-static-check --json` runs,
    or with --unrestricted unless `restricted`), the secret seed's cases prepared once per test
    worker; quick: the short time limits."""
    specs = {False: load_spec(), True: load_spec(fast_spec(tmp_path_factory.mktemp("spec")))}
    prepared: dict[bool, judge.Prepared] = {}

    def grade(path: Path, quick: bool, restricted: bool) -> dict:
        if quick not in prepared:
            prepared[quick] = judge.prepare(specs[quick], SECRET)
        report = judge.grade(path, specs[quick], SECRET, backend="bubblewrap", static_check=False, restricted=restricted, prepared=prepared[quick])
        return to_json(report)

    return grade


@pytest.mark.sandbox
@pytest.mark.skipif(not bubblewrap_works(), reason="skipping the static check needs bubblewrap (CI installs it)")
@pytest.mark.parametrize("path", FRESH, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_hostile_file_is_rejected_by_the_walls_alone_and_leaves_no_trace(path, tmp_path, loopback_service, grade_walls_alone):
    before = checkout_digest()
    # A copy named for this run, so that the leftover checks below see this run's processes and
    # cgroups only, not those of another test worker.
    run_name = f"{path.stem}_walls"
    copy = tmp_path / f"{run_name}.py"
    copy.write_bytes(path.read_bytes())
    # A forbidden use faces the capability layer, the guard and the sandbox (the guard cannot hold
    # alone against plain Python in its own process); every other attack, as plain Python, faces
    # the guard's operator checks, the protocol and the sandbox.
    report = grade_walls_alone(copy, path.parent.name == "time_limit_exceeded", path.parent.name == "forbidden_api")

    assert report["verdict"] == path.parent.name, report["message"]
    assert SECRET not in report["stdout"] + report["stderr"] + report["message"]
    assert hostile_markers() == []
    assert their_processes(run_name) == []
    assert their_cgroups(run_name) == []
    assert checkout_digest() == before
    assert loopback_service == []
    assert report["isolation"].startswith("bubblewrap")
    if path.stem == "hostile_flood_output":  # 24 MB were written: what is kept stays capped
        assert len(report["stdout"]) < 70_000 and "more bytes not kept" in report["stdout"]
        assert len(report["stderr"]) < 70_000
