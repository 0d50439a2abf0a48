"""What a grading run produces: a verdict, a score and one result per case."""

from dataclasses import dataclass, field
from enum import StrEnum


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    FORBIDDEN_API = "forbidden_api"
    COMPILE_ERROR = "compile_error"
    INVALID_SUBMISSION = "invalid_submission"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    MEMORY_LIMIT_EXCEEDED = "memory_limit_exceeded"
    GRADER_ERROR = "grader_error"


PASSED = "passed"
NOT_RUN = "not_run"


@dataclass
class CaseResult:
    name: str
    family: str
    dtype: str
    public: bool
    shape: str
    status: str = NOT_RUN  # PASSED, NOT_RUN, or the Verdict value this case earned
    check: str = ""  # which check failed: type, shape, dtype, device, values, inputs, gradient, ...
    message: str = ""
    # The error of the logits (of the gradient, when the gradient check failed): greatest |got - expected|,
    # and that over max|expected|, the quantity the tolerance bounds. None for a hidden case.
    max_abs: float | None = None
    max_rel: float | None = None
    seconds: float | None = None

    @property
    def passed(self) -> bool:
        return self.status == PASSED


@dataclass
class Report:
    verdict: Verdict
    message: str
    submission: str
    seed_id: str
    isolation: str
    cases: list[CaseResult] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    diagnosis: list[str] = field(default_factory=list)  # for a wrong answer: what is most likely wrong, first
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)  # about the run itself (e.g. a reproducible seed), for graders
    public_only: bool = False  # only the public cases were run (--public): accepted means "the public cases passed"

    @property
    def score(self) -> float:
        if not self.cases:
            return 0.0
        return sum(case.passed for case in self.cases) / len(self.cases)
