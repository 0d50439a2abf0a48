"""Test cases, drawn deterministically from a seed: the same seed always gives the same cases.

Public cases come from the spec's public seed; hidden cases from the grader's secret seed. Each
case has its own random stream (problem id + seed + case name), so adding a case never changes the
others and two problems never share data. The values are the package's generator's to draw.
"""

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from grader.spec import CaseTemplate, SetupError, Spec, hidden_module

DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class Drawn:
    """One case's arguments, as a problem package's generator draws them (README.md, "A challenge package")."""

    args: dict[str, Any]  # every parameter by name, in any order: torch tensors and Python scalars
    shape: dict[str, int]  # what a report shows of the case's size ("N=2 T=4")
    upstream: tuple[Tensor, ...] = ()  # the gradient check's upstream gradient, one per output
    output_shapes: tuple[tuple[int, ...], ...] = ()  # each output's shape; needed only without upstream gradients (theirs are the outputs' shapes)


@dataclass
class Case:
    name: str
    family: str
    public: bool
    dtype: str  # "float32" or "float64"
    args: dict[str, Any]  # the call's arguments in parameter order: tensors and Python scalars
    upstream: tuple[Tensor, ...]  # the gradient check's upstream gradient, one per output (none without a gradient check)
    shape: dict[str, int]  # what a report shows of the case's size
    differentiable: tuple[str, ...] = ()  # the tensor arguments whose gradient is checked
    output_shapes: tuple[tuple[int, ...], ...] = ()  # the shape each output must have
    returns: str = "tensor"  # the spec's: one tensor, or a "tuple" of len(output_shapes)

    @property
    def inputs(self) -> dict[str, Tensor]:
        """The tensor arguments, in call order."""
        return {name: value for name, value in self.args.items() if isinstance(value, Tensor)}

    @property
    def scalars(self) -> dict[str, Any]:
        return {name: value for name, value in self.args.items() if not isinstance(value, Tensor)}

    @property
    def grad_output(self) -> Tensor:
        """The upstream gradient of a one-output problem."""
        return self.upstream[0]

    def request(self) -> tuple[dict[str, Any], dict[str, Tensor]]:
        """The frame the child answers: the arguments in call order (tensors by name, scalars by
        value), which get gradients, and the upstream gradients (upstream_<i>)."""
        header = {
            "kind": "case",
            "name": self.name,
            "call": [[name, "tensor" if isinstance(value, Tensor) else value] for name, value in self.args.items()],
            "differentiable": list(self.differentiable),
            "returns": self.returns,
            "outputs": len(self.output_shapes),
        }
        return header, self.inputs | {f"upstream_{i}": tensor for i, tensor in enumerate(self.upstream)}

    def shape_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.shape.items())


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
    random stream: the problem's id, the seed and the case's name."""
    rng = _rng(f"{spec.id}/{seed}", template.name)
    settings = {key: _draw(rng, value) for key, value in sorted(template.settings.items())}
    drawn = generator(spec)(settings, rng)
    if missing := [name for name in spec.parameter_names if name not in drawn.args]:
        raise SetupError(f"the generator of {spec.id} gave case {template.name} no value for {missing[0]}")
    if spec.gradient_wrt and len(drawn.upstream) != len(spec.outputs):
        raise SetupError(f"the generator of {spec.id} gave case {template.name} {len(drawn.upstream)} upstream gradients for {len(spec.outputs)} outputs")
    shapes = tuple(tuple(u.shape) for u in drawn.upstream) if spec.gradient_wrt else tuple(tuple(s) for s in drawn.output_shapes)
    if len(shapes) != len(spec.outputs):
        raise SetupError(f"the generator of {spec.id} gave case {template.name} {len(shapes)} output shapes for {len(spec.outputs)} outputs")
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
    )


def generator(spec: Spec) -> Callable[[dict[str, Any], np.random.Generator], Drawn]:
    """The package's draw(settings, rng) (hidden: only the grader's own process has it)."""
    return hidden_module(f"{spec.module}.generate").draw


def make_cases(spec: Spec, hidden_seed: str, public_only: bool = False) -> list[Case]:
    """Public cases first (from the public seed), then hidden ones (from hidden_seed)."""
    cases = []
    for template in spec.templates:
        public = template.settings["visibility"] == "public"
        if public or not public_only:
            seed = spec.public_seed if public else hidden_seed
            cases.append(make_case(template, seed, spec))
    cases.sort(key=lambda case: not case.public)
    return cases
