"""What the harness grades besides one function call compared with a reference: a class stepped
through its method with parameters updated in place (adamw), a property check in place of equality
(symmetric-eigh), outputs that grow and empty inputs (kv-cache-attention). Each case runs through
the child's own code (grader/child/runner.py), its frame's tensors are kept as grader/protocol.py
keeps them, and the judge's own code judges them."""

import io

import pytest
import torch

from grader import protocol
from grader.cases import make_cases
from grader.child import wire
from grader.child.runner import entry_point_problem, run_case
from grader.expected import expected_for, reference_function
from grader.judge import judge_reply
from grader.results import CaseResult, Verdict
from grader.spec import problem_spec

SEED = "kinds-test"


def judged(fn, problem: str, names: tuple[str, ...] | None = None) -> list[CaseResult]:
    spec = problem_spec(problem)
    results = []
    for case in make_cases(spec, SEED):
        if names is not None and case.name not in names:
            continue
        result = CaseResult(case.name, case.family, case.dtype, case.public, case.shape_text())
        reply, tensors = run_case(fn, *case.request(), "submission.py")
        judge_reply(case, expected_for(case, spec), reply, protocol.kept(tensors, protocol.expect_result(case, spec)), spec, result)
        results.append(result)
    return results


def failures(results: list[CaseResult]) -> list[CaseResult]:
    return [r for r in results if not r.passed]


# -- a class, stepped ---------------------------------------------------------------------------------


class NotInPlace:
    """AdamW's numbers, kept in the optimizer's own tensors: the grader's never change."""

    def __init__(self, params, lr, betas, eps, weight_decay):
        self.inner = reference_function(problem_spec("adamw"))([p.clone() for p in params], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    def step(self, grads):
        self.inner.step(grads)


class ScalesItsGradients:
    def __init__(self, params, lr, betas, eps, weight_decay):
        self.inner = reference_function(problem_spec("adamw"))(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    def step(self, grads):
        self.inner.step([g.clone() for g in grads])
        grads[0].mul_(2)


def test_a_class_is_constructed_once_and_judged_after_every_step():
    assert failures(judged(reference_function(problem_spec("adamw")), "adamw")) == []


def test_a_class_that_does_not_update_the_parameters_in_place_fails_at_the_first_step():
    results = failures(judged(NotInPlace, "adamw"))
    assert results and all(r.status == Verdict.WRONG_ANSWER and r.check == "values" for r in results)
    public = next(r for r in results if r.public)
    assert public.message.startswith("the values of params[0] after step 1 are not close to the expected ones"), public.message


def test_the_gradients_a_step_receives_must_come_back_unchanged():
    results = failures(judged(ScalesItsGradients, "adamw"))
    assert results and {r.check for r in results} == {"inputs"}
    assert all(r.message == "modified its input grads in place; inputs must be left unchanged" for r in results)


def test_the_frame_of_a_class_case_may_carry_each_parameter_after_each_step_and_nothing_else():
    spec = problem_spec("adamw")
    case = next(c for c in make_cases(spec, SEED) if len(c.steps) >= 2)
    expect = protocol.expect_result(case, spec)
    wanted = {wire.after_name(name, step) for step in range(1, len(case.steps) + 1) for name in case.inputs | case.step_inputs(step)}
    assert set(expect.tensors) == wanted
    extra = wire.after_name("params.0", len(case.steps) + 1)
    header, described = wire.read_header(io.BytesIO(wire.encode({"kind": "result", "name": case.name}, {extra: torch.zeros(1)})))
    with pytest.raises(protocol.ProtocolError, match="which the case does not have"):
        protocol.check(header, described, expect)


@pytest.mark.parametrize(
    ("entry_point", "said"),
    [
        (None, "the file defines no class named AdamW"),
        (lambda params, lr, betas, eps, weight_decay: None, "AdamW is not a class"),
        (type("AdamW", (), {"__init__": lambda self, params, lr, betas, eps, weight_decay: None}), "the class AdamW has no method step"),
        (type("AdamW", (), {"__init__": lambda self, params, lr: None, "step": lambda self, grads: None}), "betas, eps, weight_decay must be accepted by name"),
    ],
    ids=["missing", "function", "no-method", "keywords"],
)
def test_a_class_entry_point_is_checked_before_any_case(entry_point, said):
    keywords = ["lr", "betas", "eps", "weight_decay"]
    config = {"entry_point": "AdamW", "method": "step", "parameters": ["params", *keywords], "keywords": keywords}
    assert said in (entry_point_problem(entry_point, config) or "")


# -- a property check -----------------------------------------------------------------------------------


def reference_eigh():
    return reference_function(problem_spec("symmetric-eigh"))


def test_any_right_answer_passes_a_property_check():
    def flipped(a):
        values, vectors = reference_eigh()(a)
        return values, vectors * torch.where(torch.arange(a.shape[0]) % 2 == 0, 1.0, -1.0).to(a.dtype)

    assert failures(judged(flipped, "symmetric-eigh")) == []


@pytest.mark.parametrize(
    ("wrong", "claim"),
    [
        (lambda a: (reference_eigh()(a)[0], 2 * reference_eigh()(a)[1]), "the columns of V are orthonormal"),
        (lambda a: (reference_eigh()(a)[0].flip(0), reference_eigh()(a)[1].flip(1)), "the eigenvalues, in ascending order"),
    ],
    ids=["not-unit", "descending"],
)
def test_a_property_that_does_not_hold_is_named_with_its_numbers(wrong, claim):
    results = failures(judged(wrong, "symmetric-eigh"))
    assert results and all(r.status == Verdict.WRONG_ANSWER for r in results)
    public = next(r for r in results if r.public)
    assert public.message.startswith(f"the result does not have the property: {claim}") and "where the tolerance allows" in public.message
    hidden = next(r for r in results if not r.public)
    assert "hidden case" in hidden.message and "x the tolerance" in hidden.staff_message


# -- outputs that grow, inputs that are empty -------------------------------------------------------


def test_the_first_token_has_empty_caches_and_the_outputs_grow_by_one_position():
    spec = problem_spec("kv-cache-attention")
    firsts = [c for c in make_cases(spec, SEED) if c.args["k_cache"].shape[2] == 0]
    assert len(firsts) >= 3
    for case in firsts:
        assert [shape[2] for shape in case.output_shapes[1:]] == [1, 1]
    assert failures(judged(reference_function(spec), "kv-cache-attention", tuple(c.name for c in firsts))) == []
