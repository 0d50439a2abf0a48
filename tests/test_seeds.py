"""The hidden cases separate right from wrong for any secret seed, not just the default one.

Runs the child's calls and the grader's judgement in this process (tests/in_process.py), on several
seeds: every correct file passes every case, every wrong file fails at least one. The command-line
tests cover the process boundary and the runtime guard; this covers the seeds.
"""

import pytest

from grader.spec import load_spec
from tests import in_process
from tests.grading import ordinary_files

SPEC = load_spec()
SEEDS = ["seed-one", "seed-two", "seed-three"]


def failures(path, seed: str) -> list[str]:
    _, results, _ = in_process.judge(in_process.entry_point(path), SPEC, seed)
    return [f"{result.name}: {result.message}" for result in results if not result.passed]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("path", ordinary_files("accepted"), ids=lambda p: p.stem)
def test_correct_files_pass_every_case(path, seed):
    assert failures(path, seed) == []


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("path", ordinary_files("wrong_answer"), ids=lambda p: p.stem)
def test_wrong_files_fail_some_case(path, seed):
    assert failures(path, seed)
