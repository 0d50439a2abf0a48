"""What a case is: the arguments a problem package's generator draws (Drawn), and the case the grader
sends to the child and judges (Case). grader/cases.py draws them; grader/expected.py runs the
reference on them.
"""

from dataclasses import dataclass, field
from typing import Any

from torch import Tensor


@dataclass(frozen=True)
class Drawn:
    """One case's arguments, as a problem package's generator draws them (docs/challenges.md, "A challenge package")."""

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
    # (spec, args, Expected): the reference's float64 results, where drawing the case computed them to
    # check it is fair (grader/cases.py); grader/expected.py hands them out for that same spec and
    # the same arguments (not to a copy made with other arguments by dataclasses.replace).
    checked: tuple[Any, Any, Any] | None = field(default=None, init=False, repr=False, compare=False)
    unfair_draws: int = 0  # draws before this one that grader/cases.py replaced as unfair (python -m grader verify counts them)

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
