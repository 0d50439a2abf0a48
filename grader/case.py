"""What a case is: the arguments a problem package's generator draws (Drawn), and the case the grader
sends to the child and judges (Case). grader/cases.py draws them; grader/expected.py runs the
reference on them. Property is what a package's property check (properties.py) measures.

How a case's tensors are named on the wire (grader/child/wire.py tensor_name): a tensor argument by
its name, each tensor of a list argument as name.i, an argument of a class's step k as "k:name";
what the child sends back of an argument after the call as after_<that>, and after step k of a
class's case as after_<that>@k.
"""

from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from grader.child.wire import tensor_name


@dataclass(frozen=True)
class Drawn:
    """One case's arguments, as a problem package's generator draws them (docs/challenges.md, "A challenge package")."""

    args: dict[str, Any]  # every parameter by name, in any order: torch tensors and Python scalars
    shape: dict[str, int]  # what a report shows of the case's size ("N=2 T=4")
    upstream: tuple[Tensor, ...] = ()  # the gradient check's upstream gradient, one per output
    output_shapes: tuple[tuple[int, ...], ...] = ()  # each returned output's shape; needed only without upstream gradients (theirs are the outputs' shapes)
    steps: tuple[dict[str, Any], ...] = ()  # a class's case: each step's arguments by name, one dict per call of its method


@dataclass(frozen=True)
class Property:
    """One property a package's property check (problem/<id>/properties.py) measured on a result:
    the case fails when error is above allowed (or not a number)."""

    claim: str  # what must hold, as a message says it: "the eigenvectors are orthonormal: max|V^T V - I|"
    error: float  # how far from holding the result is
    allowed: float  # the most the tolerance allows

    @property
    def ratio(self) -> float:
        """error over allowed (inf where nothing is allowed and something is off)."""
        if self.allowed > 0:
            return self.error / self.allowed
        return 0.0 if self.error == 0 else float("inf")

    @property
    def holds(self) -> bool:
        return self.error <= self.allowed  # False for NaN


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
    returns: str = "tensor"  # the spec's: one tensor, a "tuple" of len(output_shapes), or "none"
    steps: tuple[dict[str, Any], ...] = ()  # a class's case: each step's arguments (the spec's step_parameters) by name
    method: str = ""  # a class's case: the method each step calls
    keywords: tuple[str, ...] = ()  # the arguments passed by name
    # (spec, args, Expected): the reference's float64 results, where drawing the case computed them to
    # check it is fair (grader/cases.py); grader/expected.py hands them out for that same spec and
    # the same arguments (not to a copy made with other arguments by dataclasses.replace).
    checked: tuple[Any, Any, Any] | None = field(default=None, init=False, repr=False, compare=False)
    unfair_draws: int = 0  # draws before this one that grader/cases.py replaced as unfair (python -m grader verify counts them)

    @property
    def inputs(self) -> dict[str, Tensor]:
        """The tensor arguments by their wire names (a list argument's as name.i), in call order."""
        return _tensors(self.args)

    def step_inputs(self, step: int) -> dict[str, Tensor]:
        """The tensor arguments of step `step` (1-based) by their wire names ("step:name")."""
        return _tensors(self.steps[step - 1], step)

    @property
    def scalars(self) -> dict[str, Any]:
        return {name: value for name, value in self.args.items() if not _is_tensor_argument(value)}

    @property
    def grad_output(self) -> Tensor:
        """The upstream gradient of a one-output problem."""
        return self.upstream[0]

    def request(self) -> tuple[dict[str, Any], dict[str, Tensor]]:
        """The frame the child answers: the arguments in call order (tensors by name, a list of
        tensors by name and count, values as they are), which get gradients, and the upstream
        gradients (upstream_<i>); for a class, each step's arguments and the method to call."""
        header = {
            "kind": "case",
            "name": self.name,
            "call": _call(self.args),
            "differentiable": list(self.differentiable),
            "returns": self.returns,
            "outputs": len(self.output_shapes),
        }
        tensors = self.inputs
        if self.keywords:
            header["keywords"] = list(self.keywords)
        if self.method:
            header["method"] = self.method
            header["steps"] = [_call(step) for step in self.steps]
            for index in range(len(self.steps)):
                tensors |= self.step_inputs(index + 1)
        return header, tensors | {f"upstream_{i}": tensor for i, tensor in enumerate(self.upstream)}

    def shape_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.shape.items())


def _is_tensor_argument(value: Any) -> bool:
    return isinstance(value, Tensor) or (isinstance(value, list) and all(isinstance(v, Tensor) for v in value) and bool(value))


def _tensors(args: dict[str, Any], step: int | None = None) -> dict[str, Tensor]:
    found = {}
    for name, value in args.items():
        if isinstance(value, Tensor):
            found[tensor_name(name, step=step)] = value
        elif _is_tensor_argument(value):
            found |= {tensor_name(name, index, step): tensor for index, tensor in enumerate(value)}
    return found


def _call(args: dict[str, Any]) -> list[list[Any]]:
    """The call as the child reads it: [name, "tensor"], [name, "tensors", count], or [name, value]
    (a tuple of floats as a list, which the child makes a tuple again)."""
    entries: list[list[Any]] = []
    for name, value in args.items():
        if isinstance(value, Tensor):
            entries.append([name, "tensor"])
        elif _is_tensor_argument(value):
            entries.append([name, "tensors", len(value)])
        else:
            entries.append([name, list(value) if isinstance(value, tuple) else value])
    return entries
