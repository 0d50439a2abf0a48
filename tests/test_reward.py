"""The reward (grader/reward.py): the spec's scoring as a float in [0, 1], the same for a report of the
Python API and for the service's JSON object, and no reward at all for a grader_error, whatever the
cases say: an infrastructure failure is never scored as a wrong answer."""

import pytest

from grader.graded import Report
from grader.results import PASSED, CaseResult, Check, Verdict
from grader.results import Report as PlainReport
from grader.reward import NoVerdict, reward, reward_of
from grader.spec import Scoring


def judged(verdict: Verdict, passed: list[bool], families: list[str] | None = None) -> PlainReport:
    families = families or ["plain"] * len(passed)
    cases = []
    for number, (ok, family) in enumerate(zip(passed, families, strict=True)):
        case = CaseResult(f"c{number}", family, "float32", False, "(2, 3)")
        if ok:
            case.status = PASSED
        else:
            case.fail(Verdict.WRONG_ANSWER, Check.VALUES, "not close")
        cases.append(case)
    return PlainReport(verdict, "", "<source>", "", "", cases=cases)


def test_all_or_nothing_rewards_only_an_accepted_submission():
    scoring = Scoring("all_or_nothing")
    assert reward_of(judged(Verdict.ACCEPTED, [True, True, True]), scoring) == 1.0
    assert reward_of(judged(Verdict.WRONG_ANSWER, [True, True, False]), scoring) == 0.0  # its score is 2/3: the reward is not
    assert reward_of(PlainReport(Verdict.COMPILE_ERROR, "syntax error", "", "", ""), scoring) == 0.0


def test_per_case_rewards_the_weights_of_the_cases_passed():
    scoring = Scoring("per_case", {"edge": 3.0})
    report = judged(Verdict.WRONG_ANSWER, [True, False, True], ["plain", "plain", "edge"])
    assert reward_of(report, scoring) == pytest.approx((1 + 3) / (1 + 1 + 3))
    assert reward_of(PlainReport(Verdict.FORBIDDEN_API, "torch.softmax", "", "", ""), scoring) == 0.0  # rejected as a whole


@pytest.mark.parametrize("scoring", [Scoring("all_or_nothing"), Scoring("per_case")])
def test_a_grader_error_has_no_reward_even_when_cases_passed(scoring):
    report = judged(Verdict.GRADER_ERROR, [True, True])
    assert reward_of(report, scoring) is None
    with pytest.raises(NoVerdict, match="no verdict"):
        reward(Report.of(report, "x", scoring))


def test_reward_reads_a_report_object_and_the_services_json_object_alike():
    report = Report.of(judged(Verdict.ACCEPTED, [True]), "a", Scoring())
    response = {"verdict": "accepted", "reward": 1.0, "retryable": False, "message": ""}
    assert reward(report) == reward(response) == 1.0
    assert reward({"verdict": "wrong_answer", "reward": 0.0, "retryable": False}) == 0.0
    with pytest.raises(NoVerdict, match="the service could not be reached"):
        reward({"verdict": "grader_error", "reward": None, "retryable": True, "message": "the service could not be reached"})


def test_a_report_says_retryable_exactly_when_it_is_a_grader_error():
    assert Report.of(judged(Verdict.GRADER_ERROR, []), "", None).retryable
    assert not Report.of(judged(Verdict.WRONG_ANSWER, [False]), "", Scoring()).retryable
    response = Report.of(judged(Verdict.GRADER_ERROR, []), "k", None).to_response()
    assert (response["id"], response["reward"], response["retryable"], response["verdict"]) == ("k", None, True, "grader_error")
