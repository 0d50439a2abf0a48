"""Our own submissions judged in this process, the grader's way minus the sandbox and the guard.

For tests and benchmarks of what the grader decides from the returned tensors (diagnosis, hints):
fast enough to run every file of reference/mlm_forward_tied/submissions, or a function such as a wrong twin of the
reference. The child's own code computes the replies, the judge's own code judges them. Never for
hostile_* files (they attack whatever runs them).
"""

import hashlib
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

from torch import Tensor

from grader import protocol
from grader.case import Case
from grader.cases import make_cases
from grader.child.capabilities.checks import Capabilities
from grader.child.runner import _run_calls, load_submission
from grader.diagnosis import Received, analyse
from grader.expected import Expected, expected_for
from grader.judge import PUBLIC_PASSED, judge_reply, overall
from grader.report import hints
from grader.results import CaseResult, Report, Verdict
from grader.spec import Spec, load_spec, seed_public_id

SEED = "in-process"


_DRAWN: dict[tuple[int, str, bool], tuple[Spec, list[tuple[Case, Expected]]]] = {}


def cases_and_expected(spec: Spec, seed: str = SEED, public_only: bool = False) -> list[tuple[Case, Expected]]:
    """The cases and their expected results, drawn once per spec, seed and selection."""
    key = (id(spec), seed, public_only)
    if key not in _DRAWN:  # the spec is kept with its entry, so its id is not reused
        _DRAWN[key] = spec, [(case, expected_for(case, spec)) for case in make_cases(spec, seed, public_only)]
    return _DRAWN[key][1]


def _refuse(what: str) -> None:
    raise RuntimeError(f"{what} is forbidden in this challenge")


def load(path: Path) -> object:
    """The file as the child loads it (the rewrite and the restricted built-ins), without the guard."""
    spec = load_spec()
    capabilities = Capabilities({"rules": spec.rules.child_config(), "submission": str(path)}, _refuse)
    return load_submission(str(path), hashlib.sha256(path.read_bytes()).hexdigest(), capabilities)


@cache
def entry_point(path: Path) -> Callable:
    return load(path).mlm_forward_tied


def kept(case: Case, tensors: dict[str, Tensor], spec: Spec) -> dict[str, Tensor]:
    """The tensors the grader keeps of a reply (grader/protocol.py): those of the dtype and shape the
    case expects; an output or an input after the call of another dtype or shape is read past."""
    return protocol.kept(tensors, protocol.expect_result(case, spec))


def judge(fn: Callable, spec: Spec, seed: str = SEED, public_only: bool = False) -> tuple[list[Case], list[CaseResult], Received]:
    """Every case, as the grader judges it: the cases, their results, and the reply and kept
    tensors of each failing case."""
    cases, results, received = [], [], {}
    for case, expected in cases_and_expected(spec, seed, public_only):
        result = CaseResult(case.name, case.family, case.dtype, case.public, case.shape_text())
        started = time.perf_counter()
        reply, tensors = _run_calls(fn, *case.request(), "submission.py")
        result.seconds = time.perf_counter() - started
        tensors = kept(case, tensors, spec)
        judge_reply(case, expected, reply, tensors, spec, result)
        if not result.passed:
            received[case.name] = reply, tensors
        cases.append(case)
        results.append(result)
    return cases, results, received


def report(fn: Callable, spec: Spec | None = None, seed: str = SEED, public_only: bool = False) -> Report:
    """The report grade() would give (verdict, cases, diagnosis, hints), timings and output aside."""
    spec = spec or load_spec()
    cases, results, received = judge(fn, spec, seed, public_only)
    graded = Report(Verdict.GRADER_ERROR, "", "submission.py", seed_public_id(seed), "in-process", cases=results, public_only=public_only)
    graded.verdict, graded.message = overall(results)
    if public_only and graded.verdict == Verdict.ACCEPTED:
        graded.message = PUBLIC_PASSED.format(len(results))
    if graded.verdict == Verdict.WRONG_ANSWER and spec.diagnosis is not None:  # as grade() does
        finding = analyse(cases, results, received, spec)
        graded.diagnosis, graded.diagnosis_keys = finding.sentences, sorted(finding.keys())
    graded.hints = hints(graded, spec)
    return graded
