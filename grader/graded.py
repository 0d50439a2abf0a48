"""What the Python API, the grading service and its clients hand back for one submission: a Report
(grader/results.py) with the id it was given, its reward (grader/reward.py) and to_dict(); and the
service's JSON object for it, which the server writes and the clients read (to_response,
from_response), so that both sides agree on one format."""

import dataclasses
from typing import Any

from grader import results
from grader.formats.json import from_json, to_json
from grader.reward import reward_of
from grader.spec import Scoring

RESPONSE_FIELDS = ("id", "reward", "retryable")  # what the service adds to the --json object


@dataclasses.dataclass
class Report(results.Report):
    """A grading report (verdict, score, message, cases...) with the id it was given, its reward and
    to_dict(). `retryable` is True for a grader_error: no verdict, grade it again.

    to_dict lives here, not on grader.results.Report, so that the deciding layer never imports an
    output format, not even lazily."""

    id: str = ""
    reward: float | None = None  # the spec's scoring in [0, 1]; None for a grader_error (grader/reward.py)
    received: dict[str, Any] | None = dataclasses.field(default=None, repr=False, compare=False)  # the service's --json object, as sent

    @property
    def retryable(self) -> bool:
        """True when the report is no verdict on the submission (a grader_error): grading it again may give one."""
        return self.verdict == results.Verdict.GRADER_ERROR

    def to_dict(self, staff: bool = False) -> dict[str, Any]:
        """Exactly the object `python -m grader FILE --json` prints (with staff=True, `--json --staff`:
        plus `staff_only`, what the candidate's report withholds). A report from the service is the
        candidate's view: its to_dict() is the object the service sent, and staff=True a ValueError."""
        if self.received is None:
            return to_json(self, staff)
        if staff:
            raise ValueError("a report from the grading service holds the candidate's view only (no staff_only)")
        return dict(self.received)

    def to_response(self) -> dict[str, Any]:
        """The service's JSON object: the --json object, plus id, reward and retryable."""
        return {**self.to_dict(), "id": self.id, "reward": self.reward, "retryable": self.retryable}

    @classmethod
    def of(cls, report: results.Report, report_id: str, scoring: Scoring | None) -> "Report":
        """report with its id, and its reward under `scoring` (None: the spec could not be read, a grader_error)."""
        fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(results.Report)}
        reward = reward_of(report, scoring) if scoring is not None else None
        return cls(**fields, id=report_id, reward=reward)

    @classmethod
    def from_response(cls, data: dict[str, Any]) -> "Report":
        """The report of a service's JSON object (to_response's)."""
        received = {key: value for key, value in data.items() if key not in RESPONSE_FIELDS}
        report = cls.of(from_json(received), str(data.get("id", "")), None)
        report.reward = None if data.get("reward") is None else float(data["reward"])
        report.received = received
        return report
