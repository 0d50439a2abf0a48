"""Every file under reference/mlm_forward_tied/submissions/<verdict>/ gets that verdict.

The folder is the specification (as in ICPC problem packages): add a file to a folder and this
test asserts its verdict. Forbidden routes must also be named in the message. The files are graded
as one batch (grader/batch/schedule.py: through the warm pool where it keeps every wall), once for all test
workers; tests/test_batch.py proves that a batch gives the verdicts of the single-file command,
and tests/test_hostile.py grades the hostile files through the command line.
"""

from pathlib import Path

import pytest

from grader.batch.schedule import Workers
from grader.formats.json import to_json
from grader.results import Verdict
from grader.spec import load_spec
from tests.grading import SUBMISSIONS, fast_spec, shared_once

VERDICTS = [v.value for v in Verdict if v != Verdict.GRADER_ERROR]
FILES = sorted(p for v in VERDICTS for p in (SUBMISSIONS / v).glob("*.py") if not p.stem.startswith("hostile_"))  # hostile: test_hostile.py

# What the message must name for each forbidden route (the construct, or the operator at run time).
FORBIDDEN_NAMES = {
    "aliased_from_import": "torch.softmax",
    "batch_norm_standin": "torch.batch_norm",
    "container_alias_attention": "the attribute nn, a module outside the allowed list",
    "container_alias_layer_norm": "the attribute nn, a module outside the allowed list",
    "dataclasses_builtins_route": "dataclasses.builtins is a module outside the allowed list",
    "decomp_softmax": "torch._decomp is a private part of torch",
    "dunder_import": "__import__",
    "exec_encoded": "exec",
    "exp_of_log_softmax": "torch.log_softmax",
    "functional_alias": "torch.nn",
    "getattr_computed": "the function torch.softmax",
    "getattr_literal": "torch.layer_norm",
    "group_norm_standin": "torch.group_norm",
    "importlib_module": "importlib",
    "match_class_pattern": ".softmax is forbidden (built-in softmax)",
    "module_dict_lookup": "torch.__dict__",
    "operator_methodcaller": "operator.methodcaller",
    "plain_torch_softmax": "torch.softmax",
    "rms_norm_of_centred": "torch.rms_norm",
    "rms_norm_overload": "torch.ops is forbidden",
    "storage_from_file": "torch.UntypedStorage is forbidden",
    "tensor_method": ".softmax",
    "torch_c_nn": "torch._C",
    "torch_ops_aten": "torch.ops",
    "transformer_encoder_layer": "torch.nn.TransformerEncoderLayer",
    "type_three_args": "type() with more than one argument",
    "typing_sys_route": "typing.sys is a module outside the allowed list",
}


def test_the_corpus_is_complete():
    counts = {folder.name: len(list(folder.glob("*.py"))) for folder in SUBMISSIONS.iterdir() if folder.is_dir()}
    assert counts["accepted"] >= 6 and counts["wrong_answer"] >= 20 and counts["forbidden_api"] >= 15
    assert set(FORBIDDEN_NAMES) == {p.stem for p in (SUBMISSIONS / "forbidden_api").glob("*.py") if not p.stem.startswith("hostile_")}


def name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def grade_corpus(spec_folder: Path) -> dict[str, dict]:
    """The JSON report of every file, graded two at a time; the time-limit files under short limits."""
    spec = load_spec()
    slow = [p for p in FILES if p.parent.name == "time_limit_exceeded"]
    graded = Workers(spec, spec.default_hidden_seed, jobs=2).map((name(p), p) for p in FILES if p not in slow)
    quick_spec = load_spec(fast_spec(spec_folder))
    graded_quickly = Workers(quick_spec, quick_spec.default_hidden_seed, jobs=2).map((name(p), p) for p in slow)
    return {key: to_json(report) for batch in (graded, graded_quickly) for key, report in batch}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Graded once for the whole run (tests/grading.py shared_once)."""
    return shared_once(tmp_path_factory, "submission-corpus", lambda: grade_corpus(tmp_path_factory.mktemp("spec")))


@pytest.mark.parametrize("path", FILES, ids=name)
def test_file_gets_its_folders_verdict(path: Path, reports: dict[str, dict]):
    expected = path.parent.name
    report = reports[name(path)]
    assert report["verdict"] == expected, report["message"]
    if expected == "accepted":  # nothing to explain (tests/test_diagnosis.py: what a wrong one is told)
        assert report["diagnosis"] == [] and report["hints"] == [], report
    if expected == "forbidden_api":
        assert FORBIDDEN_NAMES[path.stem] in report["message"] or any(FORBIDDEN_NAMES[path.stem] in case["output"] for case in report["cases"]), report[
            "message"
        ]
    if expected == "accepted":
        assert report["score"] == 1.0 and all(case["status"] == "passed" for case in report["cases"])
    if expected == "wrong_answer":
        assert 0 <= report["score"] < 1 and report["message"].startswith("case ")
