"""A report's reward: the spec's scoring as one float in [0, 1], for a trainer or an evaluation.

    from grader.reward import reward, NoVerdict
    score = reward(report)        # a report of Grader, AsyncGrader, Client or AsyncClient, or the service's JSON object

The reward follows the challenge's [scoring] table, as the platform formats give points:
`all_or_nothing` (every installed challenge): 1.0 when the verdict is accepted, else 0.0;
`per_case`: the weights of the cases passed over the weights of all cases (0.0 when no case was
judged on its own: a compile error, a forbidden API found before the run, a failed start). With
public_only, 1.0 means that the public cases passed, never that the submission is accepted.

A grader_error is no verdict on the submission (the grader, its machine or the service failed), so
it has no reward: reward_of gives None and reward() raises NoVerdict, so that a failure of the
infrastructure is never scored as a wrong answer. Grade the submission again (the report says
`retryable`), or leave it out of the batch's rewards.
"""

from collections.abc import Mapping
from typing import Any

from grader.formats.points import rejected_as_a_whole
from grader.results import Report, Verdict
from grader.spec import Scoring


class NoVerdict(Exception):
    """The report is a grader_error: the submission has no verdict and so no reward. Grade it again;
    never score it 0."""


def reward_of(report: Report, scoring: Scoring) -> float | None:
    """The reward of a report under the spec's scoring, in [0, 1]; None for a grader_error."""
    if report.verdict == Verdict.GRADER_ERROR:
        return None
    if scoring.mode == "all_or_nothing":
        return 1.0 if report.verdict == Verdict.ACCEPTED else 0.0
    if rejected_as_a_whole(report) or not report.cases:
        return 0.0
    weights = [scoring.weight(case.family) for case in report.cases]
    earned = sum(weight for weight, case in zip(weights, report.cases, strict=True) if case.passed)
    return earned / sum(weights)


def reward(report: Any) -> float:
    """What a trainer's reward function returns for a report: its `reward` (a report object's
    attribute, or the key of the service's JSON object). NoVerdict for a grader_error, whose
    message says what failed."""
    if isinstance(report, Mapping):
        verdict, value, message = report.get("verdict"), report.get("reward"), report.get("message", "")
    else:
        verdict, value, message = report.verdict, report.reward, report.message
    if verdict == Verdict.GRADER_ERROR or value is None:
        raise NoVerdict(f"no verdict, so no reward (grade it again): {message}")
    return float(value)
