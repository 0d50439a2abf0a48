"""What a grading run produces: a verdict, a score and one result per case.

The vocabulary every module decides and reports with: Verdict, Check (which check a case failed),
the sets of checks that mean one thing, and the verdicts' precedence.
"""

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal


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


# Which failing case decides a judged run (judge.overall): the first case with the first of these
# verdicts that any case has, wherever it comes; when no case has one of them, the first failing case.
PRECEDENCE = (Verdict.FORBIDDEN_API,)


class Check(StrEnum):
    """Which check a case failed (CaseResult.check): those of a reply in the order the judge makes
    them, then the ways a child stops answering."""

    RUNTIME_GUARD = "runtime guard"  # a forbidden operation, during the call or at the guard's last check
    EXCEPTION = "exception"
    TYPE = "type"
    SHAPE = "shape"
    DTYPE = "dtype"
    DEVICE = "device"
    VALUES = "values"
    INPUTS = "inputs"  # an input changed in place
    GRADIENT = "gradient"
    TIME = "time"
    PROCESS = "process"  # the child ended, or sent malformed data


WRONG_LOGITS = frozenset({Check.VALUES, Check.SHAPE})  # the logits are wrong
WRONG_NUMBERS = WRONG_LOGITS | {Check.GRADIENT}  # the logits or their gradients are wrong: a fault in the computation
NOT_NUMBERS = (Check.TYPE, Check.DTYPE, Check.DEVICE, Check.INPUTS)  # what was returned is wrong, not its numbers

PASSED = "passed"
NOT_RUN = "not_run"

# A hidden case's message may tell the candidate only what the grader decided. These checks fail with
# a message that holds what the submission chose (its exception's text and traceback, the description
# of what it returned, the runtime guard's finding, which names the submission's functions and
# lines, how its process ended or what it wrote on the channel): for a hidden case the candidate
# reads these words instead, and staff the whole message. Any of it could spell out the case's inputs.
HIDDEN_FAILURES = {
    Check.EXCEPTION: "raised an exception",
    Check.TYPE: "returned an object that is not a plain torch.Tensor",
    Check.SHAPE: "returned a tensor of the wrong shape",
    Check.DTYPE: "returned a tensor of the wrong dtype",
    Check.DEVICE: "returned a tensor on the wrong device",
    Check.RUNTIME_GUARD: "used forbidden functionality",
    Check.PROCESS: "the process ended",  # only for runtime_error: a limit's message is the grader's own
}
WITHHELD = "the message of a hidden case is not shown"


@dataclass
class CaseResult:
    name: str
    family: str
    dtype: str
    public: bool
    shape: str
    status: str = NOT_RUN  # PASSED, NOT_RUN, or the Verdict value this case earned
    check: Check | Literal[""] = ""  # the check that failed; "" while none has
    message: str = ""  # what the candidate reads: for a hidden case, only what the grader decided (withhold())
    staff_message: str = ""  # a hidden case's whole message, when withhold() kept it from the candidate; for staff
    # The error of the logits (of the gradient, when the gradient check failed): greatest |got - expected|,
    # and that over max|expected|, the quantity the tolerance bounds. None for a hidden case.
    max_abs: float | None = None
    max_rel: float | None = None
    seconds: float | None = None
    # The greatest error of any output or gradient checked, over what its tolerance allows (1 = at the
    # limit); kept only where max_rel is (python -m grader verify prints it as each example's margin).
    ratio: float | None = None
    tolerance: float | None = None  # the tolerance max_rel is held to (the failing output's or gradient's); kept where max_rel is

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def shown_seconds(self, staff: bool) -> float | None:
        """The case's time as a report shows it: a hidden case's only to staff (the submission
        chooses how long it takes, so its time could spell out the case's inputs)."""
        return self.seconds if self.public or staff else None

    def fail(self, status: Verdict, check: Check, message: str) -> None:
        self.status, self.check, self.message = status, check, message

    def withhold(self) -> None:
        """For a hidden case whose message holds what the submission chose: keep that message for
        staff (staff_message) and leave the candidate the grader's words. Idempotent."""
        if self.public or self.check not in HIDDEN_FAILURES or (self.check == Check.PROCESS and self.status != Verdict.RUNTIME_ERROR):
            return
        what = "ran out of memory" if self.status == Verdict.MEMORY_LIMIT_EXCEEDED else HIDDEN_FAILURES[self.check]
        shown = f"{what} ({WITHHELD})"
        if self.message != shown:
            self.staff_message, self.message = self.message, shown


def deciding_case(results: list[CaseResult]) -> CaseResult | None:
    """The case whose failure gives a judged run its verdict, by PRECEDENCE (a forbidden operator
    anywhere, else the first failing case; cases never run do not count); None when none failed."""
    failed = [r for r in results if not r.passed and r.status != NOT_RUN]
    for verdict in PRECEDENCE:
        first = next((r for r in failed if r.status == verdict), None)
        if first is not None:
            return first
    return failed[0] if failed else None


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
    # What the submission printed before the first hidden case began (what it printed later may depend on
    # hidden data: a note says it is not shown), for the candidate; everything captured, for staff, when
    # some of it was withheld (else None: stdout and stderr are all of it).
    stdout: str = ""
    stderr: str = ""
    staff_stdout: str | None = None
    staff_stderr: str | None = None
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)  # about the run itself (e.g. a reproducible seed), for graders
    public_only: bool = False  # only the public cases were run (--public): accepted means "the public cases passed"
    diagnosis_keys: list[str] = field(default_factory=list)  # what the diagnosis found, by name (grader/diagnosis.py Finding.keys)
    problem: str = ""  # the challenge's id (problem/<id>/)
    problem_digest: str = ""  # a hash of its whole package (grader/spec.py package_digest)
    # How the submission was read, for the candidate: a notebook's code cells and what of them was not
    # run (grader/notebook.py), the file chosen among several a student handed in (grader/batch/lms.py).
    notes: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        if not self.cases:
            return 0.0
        return sum(case.passed for case in self.cases) / len(self.cases)
