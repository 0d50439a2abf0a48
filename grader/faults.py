"""How a fault of the grader is told: never as the submission's, and with what to fix where the
set-up is broken (grader.spec.setup_fault)."""

import traceback
from pathlib import Path

from grader.spec import setup_fault

SETUP_FAULT = "grader set-up error (not the submission's fault)"
SETUP_FIX = (
    "Fix the grader's installation (the spec file, reference/ beside grader/, the packages of requirements.txt in the grader's Python; "
    "`make grade` sets these up), then grade again"
)


def internal_error(error: BaseException) -> str:
    """What a grader needs to report a fault of the grader: the exception and where it arose, or,
    for a broken set-up (grader.spec.setup_fault), what is broken and what to fix."""
    if setup_fault(error):
        return f"{SETUP_FAULT}: {error}. {SETUP_FIX}."
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"internal error of the grader (not the submission's fault): {type(error).__name__}: {error}{where}"
