"""Every file under tests/submissions/<verdict>/ gets that verdict from the command line.

The folder is the specification (as in ICPC problem packages): add a file to a folder and this
test asserts its verdict. Forbidden routes must also be named in the message.
"""

from pathlib import Path

import pytest

from tests.grading import SUBMISSIONS, fast_spec, grade_json

FILES = sorted(p for p in SUBMISSIONS.glob("*/*.py") if not p.stem.startswith("hostile_"))  # see test_hostile.py

# What the message must name for each forbidden route (the construct, or the operator at run time).
FORBIDDEN_NAMES = {
    "aliased_from_import": "torch.softmax",
    "batch_norm_standin": "torch.batch_norm",
    "container_alias_attention": "nn is a module (torch.nn)",
    "container_alias_layer_norm": "nn is a module (torch.nn)",
    "dataclasses_builtins_route": "dataclasses.builtins is a module outside the allowed list",
    "decomp_softmax": "torch._decomp is a private part of torch",
    "dunder_import": "__import__",
    "exec_encoded": "exec",
    "exp_of_log_softmax": "torch.log_softmax",
    "functional_alias": "torch.nn",
    "getattr_computed": "getattr with a computed attribute name",
    "getattr_literal": "torch.layer_norm",
    "group_norm_standin": "torch.group_norm",
    "importlib_module": "importlib",
    "match_class_pattern": ".softmax is forbidden (built-in softmax)",
    "module_dict_lookup": "torch.__dict__",
    "operator_methodcaller": "operator.methodcaller",
    "plain_torch_softmax": "torch.softmax",
    "rms_norm_of_centred": "torch.rms_norm",
    "rms_norm_overload": "torch.ops is forbidden",
    "storage_from_file": "torch.UntypedStorage.from_file is forbidden",
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


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_file_gets_its_folders_verdict(path: Path, tmp_path: Path):
    expected = path.parent.name
    extra = ["--spec", str(fast_spec(tmp_path))] if expected == "time_limit_exceeded" else []
    report, status = grade_json(str(path), *extra)
    assert report["verdict"] == expected, report["message"]
    assert status == (0 if expected == "accepted" else 1)
    if expected == "forbidden_api":
        assert FORBIDDEN_NAMES[path.stem] in report["message"] or any(FORBIDDEN_NAMES[path.stem] in case["output"] for case in report["cases"]), report[
            "message"
        ]
    if expected == "accepted":
        assert report["score"] == 1.0 and all(case["status"] == "passed" for case in report["cases"])
    if expected == "wrong_answer":
        assert 0 <= report["score"] < 1 and report["message"].startswith("case ")
