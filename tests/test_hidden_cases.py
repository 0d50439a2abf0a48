"""Hidden cases leak nothing: a failing hidden case tells its family, dtype, which check failed and
the error relative to the tolerance; never an index, a value, a mismatch count or max|expected|,
which repeated submissions against a fixed secret seed could read the hidden data back from.
Public cases keep the full torch.testing-style detail; a spec key allows it for practice runs."""

import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest
import torch

from grader.cases import make_cases
from grader.compare import HIDDEN_ERROR
from grader.expected import expected_for
from grader.formats.json import to_json
from grader.formats.junit import render_junit
from grader.formats.text import render_text
from grader.judge import judge_reply
from grader.results import CaseResult, Report, Verdict
from grader.spec import load_spec
from tests.grading import SUBMISSIONS, grade_json

SPEC = load_spec()
CASES = make_cases(SPEC, "hidden-cases-test-seed")
HIDDEN_SHOWN = r"error (\d+(\.\d)?x|more than 1000x) the tolerance"


def judged(case, spec=SPEC, output_scale=1.0, grad_scale=1.0) -> CaseResult:
    """The result of a reply whose output and gradients are the expected ones, scaled."""
    expected = expected_for(case)
    header, inputs = case.request()
    dtype = getattr(torch, case.dtype)
    m, v = expected.output.shape
    tensors = {"output": (expected.output * output_scale).to(dtype)}
    tensors |= {f"after_{name}": inputs[name].clone() for name, kind in header["call"] if kind == "tensor"}
    tensors |= {f"grad_{name}": (expected.grads[name] * grad_scale).to(dtype) for name in header["differentiable"]}
    reply = {"kind": "result", "name": case.name, "output": {"type": "torch.Tensor", "shape": [m, v], "dtype": case.dtype, "device": "cpu"}}
    reply["differentiable"] = True
    result = CaseResult(case.name, case.family, case.dtype, case.public, case.shape_text())
    judge_reply(case, expected, reply, tensors, spec, result)
    return result


def a_case(public: bool, dtype: str = "float32"):
    return next(c for c in CASES if c.public == public and c.dtype == dtype and c.grad_output.shape[0] > 0)


def test_a_hidden_case_shows_the_candidate_no_size_of_its_error_and_staff_its_size_relative_to_the_tolerance():
    # The size is the submission's to choose (the right answer plus any multiple of the tolerance),
    # so it could carry the hidden inputs (reference/mlm_forward_tied/submissions/wrong_answer/hostile_error_ratio_carries_hidden_inputs.py).
    case = a_case(public=False)
    tolerance = SPEC.tolerance(case.family, case.dtype)
    result = judged(case, output_scale=1.0 + 30 * tolerance)  # the largest entry is off by 30 tolerances
    assert result.status == Verdict.WRONG_ANSWER and result.check == "values"
    assert result.message == f"the values of the logits are not close to the expected ones\n{HIDDEN_ERROR}"
    assert result.staff_message == "the values of the logits are not close to the expected ones\nerror 30x the tolerance"
    assert result.max_abs is None and result.max_rel is None


def test_a_hidden_gradient_failure_shows_only_its_error_relative_to_the_tolerance():
    case = a_case(public=False)
    result = judged(case, grad_scale=2.0)
    assert result.check == "gradient"
    assert result.message == f"the gradient reaching w_emb is wrong\n{HIDDEN_ERROR}"
    assert re.fullmatch(r"the gradient reaching w_emb is wrong\n" + HIDDEN_SHOWN, result.staff_message), result.staff_message


def test_a_passing_hidden_case_reports_no_error_values():
    result = judged(a_case(public=False))
    assert result.passed and result.max_abs is None and result.max_rel is None


def test_a_public_case_keeps_the_full_detail():
    case = a_case(public=True)
    result = judged(case, output_scale=1.01)
    assert "Mismatched elements:" in result.message and "at index" in result.message and "At index" in result.message
    assert result.max_abs is not None and result.max_rel is not None


def test_the_spec_may_show_hidden_cases_in_full_for_practice():
    practice = dataclasses.replace(SPEC, hidden_case_details=True)
    result = judged(a_case(public=False), spec=practice, output_scale=1.01)
    assert "Mismatched elements:" in result.message and "max|expected|" in result.message
    assert "At index" not in result.message  # values at an index: public cases only, always
    assert result.max_abs is not None


def test_the_text_report_of_a_hidden_case_shows_no_error_numbers():
    result = judged(a_case(public=False), output_scale=1.01)
    report = Report(Verdict.WRONG_ANSWER, f"case {result.name} failed: {result.message}", "x.py", "id", "test", cases=[result])
    row = next(line for line in render_text(report, SPEC).splitlines() if line.startswith(result.name))
    assert row.split()[-3] == "-"  # the error column; the tolerance beside it is public


def test_a_hidden_cases_time_is_shown_to_staff_only_in_every_format():
    # How long a case takes is the submission's to choose: it could spell out the hidden inputs
    # (reference/mlm_forward_tied/submissions/accepted/hostile_hidden_case_timing_channel.py).
    hidden, public = judged(a_case(public=False)), judged(a_case(public=True))
    hidden.seconds, public.seconds = 1.25, 0.5432
    report = Report(Verdict.ACCEPTED, "all 2 cases passed", "x.py", "id", "test", cases=[hidden, public])
    for staff in (False, True):
        shown = {c["name"]: c["seconds"] for c in to_json(report, staff)["cases"]}
        assert shown == {hidden.name: 1.25 if staff else None, public.name: 0.5432}
        junit = {c.get("name"): c.get("time") for c in ET.fromstring(render_junit(report, staff)).iter("testcase")}
        assert junit == {hidden.name: "1.250" if staff else "0.000", public.name: "0.543"}
        text = render_text(report, SPEC, staff=staff)
        assert ("1250ms" in text) == staff and "543ms" in text


@pytest.mark.sandbox
def test_a_wrong_file_learns_nothing_from_hidden_cases_but_everything_from_public_ones():
    report, _ = grade_json(str(SUBMISSIONS / "wrong_answer" / "causal_mask.py"))
    hidden = [c for c in report["cases"] if c["visibility"] == "hidden" and c["check"] in ("values", "gradient")]
    public = [c for c in report["cases"] if c["visibility"] == "visible" and c["check"] in ("values", "gradient")]
    assert hidden and public
    for case in hidden:
        headline = r"(the values of the logits are not close to the expected ones|the gradient reaching \w+ is wrong)\n"
        assert re.fullmatch(headline + re.escape(HIDDEN_ERROR), case["output"]), case
        assert case["max_abs_error"] is None and case["max_rel_error"] is None and case["seconds"] is None
    for case in public:
        assert "Mismatched elements:" in case["output"] and case["max_abs_error"] is not None
    assert re.fullmatch(r"case \w+ failed \(\d+ of \d+ cases passed\): .*", report["message"], re.DOTALL)
