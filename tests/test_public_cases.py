"""The public cases catch the common mistakes: a candidate with only the kit sees each of them fail
at least one public case, and the hidden cases hold every kind of public case (their values stay
secret)."""

import pytest

from grader.batch.schedule import Workers
from grader.cases import make_cases
from grader.formats.json import to_json
from grader.results import Verdict
from grader.spec import load_spec
from reference.mlm_forward_tied.mistakes import MISTAKES
from tests import in_process
from tests.grading import SUBMISSIONS, ordinary_files

SPEC = load_spec()

# Bugs written from the statement alone that passed every public case before the public cases aimed
# at them, and the public case that must now catch each (graded with --public, in the sandbox).
COMMON_BUGS = {
    "wrong_answer/naive_softmax.py": "public_large_scores",  # exp overflows without the max shift
    "wrong_answer/softmax_shift_by_mean.py": "public_large_scores",  # an unstable shift
    "runtime_error/crash_on_empty_mask.py": "public_nothing_masked",  # torch.stack of no rows
    "wrong_answer/eps_float32_tensor.py": "public_float64_low_variance",  # float32 eps in float64
    "wrong_answer/mask_cast_to_float32.py": "public_float64_soft_mask",  # float64 neighbours of 0.5 lost
}


def kind(case) -> tuple:
    """What a case is built to expose: its family, dtype, and whether no or one position is selected."""
    shape = case.shape
    return case.family, case.dtype, shape["M"] == 0, shape["T"] == 1


@pytest.mark.sandbox
@pytest.mark.parametrize("name", COMMON_BUGS)
def test_each_common_bug_fails_a_public_case(name: str, public_reports: dict[str, dict]) -> None:
    report = public_reports[name]
    failed = [case["name"] for case in report["cases"] if case["status"] != "passed"]
    assert report["public_only"] and report["verdict"] == name.split("/")[0], report["message"]
    assert COMMON_BUGS[name] in failed, report["message"]


@pytest.fixture(scope="module")
def public_reports() -> dict[str, dict]:
    workers = Workers(SPEC, SPEC.default_hidden_seed, jobs=2, public_only=True)
    return {name: to_json(report) for name, report in workers.map((name, SUBMISSIONS / name) for name in COMMON_BUGS)}


@pytest.mark.slow
def test_every_wrong_file_and_every_known_mistake_fails_a_public_case() -> None:
    """The corpus's wrong answers and the reference's wrong twins, run on the public cases alone."""
    passing = [p.stem for p in ordinary_files("wrong_answer") if in_process.report(in_process.entry_point(p), public_only=True).verdict == Verdict.ACCEPTED]
    passing += [twin.name for twin in MISTAKES if in_process.report(twin, public_only=True).verdict == Verdict.ACCEPTED]
    assert passing == []


def test_the_hidden_cases_hold_every_kind_of_public_case() -> None:
    cases = make_cases(SPEC, "superset-test-seed")
    hidden = {kind(case) for case in cases if not case.public}
    # "basic" cases are the ordinary small ones: every hidden family holds cases like them. The probe
    # cases tell the diagnosis which part is wrong, and are public so that the kit tells it as the grader does.
    missing = [case.name for case in cases if case.public and case.family not in ("basic", "probes") and kind(case) not in hidden]
    assert missing == []
    assert {"large_magnitude", "edge_shapes", "low_variance", "soft_mask", "float64"} <= {case.family for case in cases if case.public}


def test_a_public_case_of_each_kind_exercises_what_its_family_promises() -> None:
    public = {case.name: case for case in make_cases(SPEC, SPEC.default_hidden_seed, public_only=True)}
    assert public["public_nothing_masked"].shape["M"] == 0
    assert public["public_one_position"].shape["T"] == 1 and public["public_one_position"].shape["M"] == 1
    assert public["public_float64_low_variance"].dtype == public["public_float64_soft_mask"].dtype == "float64"
    soft = public["public_float64_soft_mask"].inputs["mask_indicator"]
    assert (soft == 0.5).any() and ((soft > 0.5) & (soft.float() == 0.5)).any()  # a float64 neighbour of 0.5 that float32 loses
