"""The hidden cases separate right from wrong for any secret seed, not just the default one.

Runs the child-side code (runner.run_case, under the runtime guard) and the grader's judgement
in this process, on several seeds: every correct file passes every case, every wrong file fails
at least one. The command-line tests cover the process boundary; this covers the seeds.
"""

import pytest

from grader.cases import make_cases
from grader.child.guard import Guard
from grader.child.runner import load_submission, run_case
from grader.expected import expected_for
from grader.judge import judge_reply
from grader.results import CaseResult
from grader.spec import load_spec
from tests.grading import ordinary_files

SPEC = load_spec()
SEEDS = ["seed-one", "seed-two", "seed-three"]


@pytest.fixture(scope="module", params=SEEDS)
def graded_cases(request):
    cases = make_cases(SPEC, request.param)
    return [(case, expected_for(case)) for case in cases]


def failures(path, graded_cases) -> list[str]:
    fn = load_submission(str(path)).mlm_forward_tied
    guard = Guard(SPEC.policy["forbidden_functions"], SPEC.policy["forbidden_operators"], str(path))
    failed = []
    for case, expected in graded_cases:
        reply, tensors = run_case(fn, *case.request(), str(path), guard)
        result = CaseResult(case.name, case.family, case.dtype, case.public, case.shape_text())
        judge_reply(case, expected, reply, tensors, SPEC, result)
        if not result.passed:
            failed.append(f"{case.name}: {result.message}")
    return failed


@pytest.mark.parametrize("path", ordinary_files("accepted"), ids=lambda p: p.stem)
def test_correct_files_pass_every_case(path, graded_cases):
    assert failures(path, graded_cases) == []


@pytest.mark.parametrize("path", ordinary_files("wrong_answer"), ids=lambda p: p.stem)
def test_wrong_files_fail_some_case(path, graded_cases):
    assert failures(path, graded_cases)
