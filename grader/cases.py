"""Test cases, drawn deterministically from a seed: the same seed always gives the same cases.

Public cases come from the spec's public seed; hidden cases from the grader's secret seed. Each
case has its own random stream (problem id + seed + case name), so adding a case never changes the
others and two problems never share data. The values are the package's generator's to draw.

A float32 case must be fair: the reference itself, computing in float32, lands within FAIR_SHARE of
the tolerance from its float64 result. Random data is now and then ill-conditioned (attention
scores in the tens with two nearly equal maxima), and there even the reference fails; such a draw is
replaced by the next one from the case's stream, so every seed gives every case, and the first fair
draw is the one the case always had.
"""

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

from grader.case import Case, Drawn
from grader.expected import expected_for, rounding_ratio
from grader.spec import CaseTemplate, SetupError, Spec, hidden_module

FAIR_SHARE = 0.1  # of the tolerance: as close as correct example submissions must be (grader/verify.py)
MAX_DRAWS = 20  # a family whose draws are this often unfair needs other settings or a wider tolerance


def _rng(seed: str, case_name: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}/{case_name}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


def _draw(rng: np.random.Generator, value: Any) -> Any:
    """A fixed value stays; [low, high] is drawn uniformly (inclusive for integers); a list of
    strings is a choice, and so is { one_of = [...] } of any values."""
    if isinstance(value, dict) and set(value) == {"one_of"}:
        choices = value["one_of"]
        return choices[int(rng.integers(len(choices)))]
    if not isinstance(value, list):
        return value
    if all(isinstance(v, str) for v in value):
        return str(rng.choice(value))
    low, high = value
    if isinstance(low, int) and isinstance(high, int):
        return int(rng.integers(low, high + 1))
    return float(rng.uniform(low, high))


def make_case(template: CaseTemplate, seed: str, spec: Spec) -> Case:
    """One case, drawn by the package's generator (reference/<module>/generate.py) from its own
    random stream (the problem's id, the seed and the case's name): its first fair draw."""
    rng = _rng(f"{spec.id}/{seed}", template.name)
    for unfair in range(MAX_DRAWS):
        case = _drawn_case(template, rng, spec)
        case.unfair_draws = unfair
        if case.dtype == "float64":
            return case
        expected = expected_for(case, spec)
        if rounding_ratio(case, expected, spec) <= FAIR_SHARE:
            case.checked = spec, case.args, expected
            return case
    raise SetupError(
        f"the generator of {spec.id} drew case {template.name} {MAX_DRAWS} times and the reference itself, computing in "
        f"{case.dtype}, landed more than {FAIR_SHARE:g} of the tolerance from its float64 result every time: "
        "make the family's data better conditioned or widen its tolerance"
    )


def _drawn_case(template: CaseTemplate, rng: np.random.Generator, spec: Spec) -> Case:
    settings = {key: _draw(rng, value) for key, value in sorted(template.settings.items())}
    drawn = generator(spec)(settings, rng)
    if missing := [name for name in spec.parameter_names if name not in drawn.args]:
        raise SetupError(f"the generator of {spec.id} gave case {template.name} no value for {missing[0]}")
    steps = tuple(drawn.steps)
    if spec.kind == "class" and not steps:
        raise SetupError(f"the generator of {spec.id} gave case {template.name} no steps (Drawn.steps: the arguments of each call of {spec.method})")
    for index, step in enumerate(steps, 1):
        if missing := [p.name for p in spec.step_parameters if p.name not in step]:
            raise SetupError(f"the generator of {spec.id} gave step {index} of case {template.name} no value for {missing[0]}")
    returned = len(spec.returned)
    if spec.gradient_wrt and len(drawn.upstream) != returned:
        raise SetupError(f"the generator of {spec.id} gave case {template.name} {len(drawn.upstream)} upstream gradients for {returned} outputs")
    shapes = tuple(tuple(u.shape) for u in drawn.upstream) if spec.gradient_wrt else tuple(tuple(s) for s in drawn.output_shapes)
    if len(shapes) != returned:
        raise SetupError(f"the generator of {spec.id} gave case {template.name} {len(shapes)} output shapes for {returned} returned outputs")
    return Case(
        name=template.name,
        family=template.family,
        public=settings["visibility"] == "public",
        dtype=settings["dtype"],
        args={name: drawn.args[name] for name in spec.parameter_names},
        upstream=tuple(drawn.upstream) if spec.gradient_wrt else (),
        shape=dict(drawn.shape),
        differentiable=spec.gradient_wrt,
        output_shapes=shapes,
        returns=spec.returns,
        steps=tuple({p.name: step[p.name] for p in spec.step_parameters} for step in steps),
        method=spec.method,
        keywords=tuple(p.name for p in spec.parameters if p.keyword),
    )


def generator(spec: Spec) -> Callable[[dict[str, Any], np.random.Generator], Drawn]:
    """The package's draw(settings, rng) (hidden: only the grader's own process has it)."""
    return hidden_module(f"{spec.module}.generate").draw


def case_plan(spec: Spec, hidden_seed: str, public_only: bool = False) -> list[tuple[CaseTemplate, str]]:
    """Each case's template and seed, in the order the cases run: public cases first (from the
    public seed), then hidden ones (from hidden_seed)."""
    public = [(template, spec.public_seed) for template in spec.templates if template.settings["visibility"] == "public"]
    hidden = [(template, hidden_seed) for template in spec.templates if template.settings["visibility"] != "public"]
    return public if public_only else public + hidden


def make_cases(spec: Spec, hidden_seed: str, public_only: bool = False) -> list[Case]:
    """Public cases first (from the public seed), then hidden ones (from hidden_seed)."""
    return [make_case(template, seed, spec) for template, seed in case_plan(spec, hidden_seed, public_only)]


class CasesInTurn(Sequence[Case]):
    """The cases of make_cases, each drawn the first time it is asked for: a single grading draws
    its first case as soon as the child can take it, and each later one while the child computes
    the one before (drawing all of them first kept a ready child waiting)."""

    def __init__(self, spec: Spec, hidden_seed: str, public_only: bool = False) -> None:
        self.spec = spec
        self.plan = case_plan(spec, hidden_seed, public_only)
        self.made: list[Case] = []

    def __len__(self) -> int:
        return len(self.plan)

    @overload
    def __getitem__(self, index: int) -> Case: ...
    @overload
    def __getitem__(self, index: slice) -> list[Case]: ...
    def __getitem__(self, index: int | slice) -> Case | list[Case]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        self.draw(index + 1)
        return self.made[index]

    def draw(self, count: int) -> None:
        """Draw the first `count` cases, those not drawn yet."""
        while len(self.made) < min(count, len(self.plan)):
            template, seed = self.plan[len(self.made)]
            self.made.append(make_case(template, seed, self.spec))
