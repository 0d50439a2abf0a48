"""What a report of the tied challenge's example files says beyond its verdict.

That every file under reference/mlm_forward_tied/submissions/<verdict>/ gets its folder's verdict
(as in ICPC problem packages: the folder is the specification) is `python -m grader verify
mlm-forward-tied`'s to prove, on three seeds, with margins (`make verify`, which CI runs; the harness's
own tests use tests/fixture_problem). Here: each forbidden route is named in its message, and a
correct and a wrong file's reports read as they should. The files are graded as one batch
(grader/batch/schedule.py: through the warm pool where it keeps every wall), once for all test
workers; tests/test_batch.py proves that a batch gives the verdicts of the single-file command,
and tests/test_hostile.py grades the hostile files through the command line.
"""

from pathlib import Path

import pytest

from grader.batch.schedule import Workers
from grader.formats.json import to_json
from grader.spec import load_spec
from tests.grading import SUBMISSIONS, shared_once

ACCEPTED = [SUBMISSIONS / "accepted" / name for name in ("plain_helpers.py", "prints_without_flush.py")]
WRONG = [SUBMISSIONS / "wrong_answer" / name for name in ("no_score_scaling.py", "forgets_the_head.py", "modifies_input.py")]
FORBIDDEN = sorted(p for p in (SUBMISSIONS / "forbidden_api").glob("*.py") if not p.stem.startswith("hostile_"))  # hostile: test_hostile.py
FILES = [*ACCEPTED, *WRONG, *FORBIDDEN]

# What the message must name for each forbidden route (the construct, or the operator at run time).
FORBIDDEN_NAMES = {
    "aliased_from_import": "torch.softmax",
    "batch_norm_standin": "torch.batch_norm",
    "container_alias_attention": ".nn is forbidden (anything of torch.nn",
    "container_alias_layer_norm": ".nn is forbidden (anything of torch.nn",
    "dataclasses_builtins_route": "dataclasses.builtins is a module outside the allowed list",
    "decomp_softmax": "torch._decomp is a private part of torch",
    "dunder_import": "__import__",
    "exec_encoded": "exec",
    "exp_of_log_softmax": "torch.log_softmax",
    "functional_alias": "torch.nn",
    "getattr_computed": "used torch.softmax, which is not on this challenge's allow-list (write the softmax with exp",
    "getattr_literal": "torch.layer_norm",
    "group_norm_standin": "torch.group_norm",
    "importlib_module": "importlib",
    "match_class_pattern": ".softmax is forbidden (softmax, log-softmax and softmin",
    "module_dict_lookup": "torch.__dict__",
    "operator_methodcaller": "operator.methodcaller",
    "plain_torch_softmax": "torch.softmax",
    "rms_norm_of_centred": "torch.rms_norm",
    "rms_norm_overload": "torch.ops is a module outside the allowed list",
    "sparse_result": "torch.Tensor.to_sparse",
    "softmax_as_logsumexp_gradient": "torch.autograd.grad is forbidden (calling autograd from your code",
    "storage_from_file": "torch.UntypedStorage is not on this challenge's allow-list",
    "structured_array_with_object_field": "a numpy array of Python objects or pointers (dtype=object, a structured dtype with an object field",
    "tensor_method": ".softmax",
    "torch_c_nn": "torch._C",
    "torch_ops_aten": "torch.ops",
    "transformer_encoder_layer": "`nn.TransformerEncoderLayer`: torch.nn is forbidden",
    "type_three_args": "type() with more than one argument",
    "typing_sys_route": "typing.sys is a module outside the allowed list",
}


def test_the_corpus_is_complete():
    counts = {folder.name: len(list(folder.glob("*.py"))) for folder in SUBMISSIONS.iterdir() if folder.is_dir()}
    assert counts["accepted"] >= 6 and counts["wrong_answer"] >= 20 and counts["forbidden_api"] >= 15
    assert set(FORBIDDEN_NAMES) == {p.stem for p in (SUBMISSIONS / "forbidden_api").glob("*.py") if not p.stem.startswith("hostile_")}


def name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def grade_files() -> dict[str, dict]:
    """The JSON report of every file, graded two at a time."""
    spec = load_spec()
    return {key: to_json(report) for key, report in Workers(spec, spec.default_hidden_seed, jobs=2).map((name(p), p) for p in FILES)}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Graded once for the whole run (tests/grading.py shared_once)."""
    return shared_once(tmp_path_factory, "submission-reports", grade_files)


@pytest.mark.sandbox
@pytest.mark.parametrize("path", FORBIDDEN, ids=name)
def test_a_forbidden_route_is_named_in_the_message(path: Path, reports: dict[str, dict]):
    report = reports[name(path)]
    assert report["verdict"] == "forbidden_api", report["message"]
    named = FORBIDDEN_NAMES[path.stem]
    assert named in report["message"] or any(named in case["output"] for case in report["cases"]), report["message"]


@pytest.mark.sandbox
@pytest.mark.parametrize("path", ACCEPTED, ids=name)
def test_a_correct_file_passes_every_case_with_nothing_to_explain(path: Path, reports: dict[str, dict]):
    report = reports[name(path)]
    assert report["verdict"] == "accepted", report["message"]
    assert report["score"] == 1.0 and report["cases"] and all(case["status"] == "passed" for case in report["cases"])
    assert report["diagnosis"] == [] and report["hints"] == [], report  # tests/test_diagnosis.py: what a wrong one is told


@pytest.mark.sandbox
@pytest.mark.parametrize("path", WRONG, ids=name)
def test_a_wrong_file_is_told_which_case_failed_and_scores_below_one(path: Path, reports: dict[str, dict]):
    report = reports[name(path)]
    assert report["verdict"] == "wrong_answer", report["message"]
    assert 0 <= report["score"] < 1 and report["message"].startswith("case "), report["message"]
    assert any(case["status"] != "passed" for case in report["cases"])
