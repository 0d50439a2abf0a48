"""What the grader accepts from the child: every frame is checked against a schema before any use.

The child runs untrusted code, which can write anything on the channel (its descriptor number is in
the child's own command line). A frame is accepted only when its header is an object of a kind the
grader is waiting for (and, for a case, names that case), every field is one the grader knows and
has its type (strings are strings, numbers finite numbers, flags booleans), texts are capped, and
every tensor is one the case has. Checking happens on the header, before any tensor byte is read.
The grader then keeps only tensors of the dtype and shape the case expects, so what it holds of a
frame is bounded by the case: an output or an input after the call of another dtype or shape (a
wrong answer, not a broken channel) is read past, and the output's description, which must agree
with the tensor sent, decides. The checked header is rebuilt from the validated fields only, so
nothing unchecked reaches the judge. Anything else is a ProtocolError: the grader ends the child
and reports runtime_error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from grader.child import wire

if TYPE_CHECKING:  # torch is imported where a tensor is built (see grader/child/wire.py)
    from torch import Tensor

    from grader.case import Case
    from grader.spec import Spec

MAX_TEXT = 16_000  # characters kept of an error text; the rest is cut with a note


class ProtocolError(Exception):
    """The child sent a frame the grader does not accept."""


@dataclass(frozen=True)
class TensorSpec:
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return wire.tensor_bytes(self.dtype, self.shape)


@dataclass(frozen=True)
class Expectation:
    """The frames that may answer one request."""

    kinds: tuple[str, ...]
    case: str | None = None  # the case's name, which a result must repeat
    dtype: str = ""  # the case's float dtype
    tensors: dict[str, TensorSpec] = field(default_factory=dict)  # the tensors a result may carry

    @property
    def max_tensor_bytes(self) -> int:
        """The most tensor data a well-formed answer carries: the bound on what the grader reads."""
        return sum(spec.nbytes for spec in self.tensors.values())


# The child's first frame, "hello", is the runner's, sent once torch is imported and the guard armed and
# before the submission is read: a child that ends or stalls before it never ran the submission (a
# fault of the grader, never the candidate's). Then the answer to the start frame.
LOADED = Expectation(kinds=("ready", "import_failed", "invalid", "forbidden"))
STARTUP = Expectation(kinds=("hello", *LOADED.kinds))  # what the reader accepts from a child's start
FINISH = Expectation(kinds=("finished",))  # after the last case: the guard's last, full check


def expect_result(case: Case, spec: Spec) -> Expectation:
    """A case's result may carry each returned output (output, or output_<i> for a tuple) with its
    shape and dtype, each tensor argument as it was after the call (its own dtype and shape; after
    each step of a class's case, the constructor's and that step's), and each gradient (the input's
    shape, the case's dtype)."""
    outputs = [TensorSpec(declared.dtype_for(case.dtype), shape) for declared, shape in zip(spec.returned, case.output_shapes, strict=True)]
    tensors = {"output": outputs[0]} if spec.returns == "tensor" else {f"output_{i}": out for i, out in enumerate(outputs)}
    if case.method:
        for step in range(1, len(case.steps) + 1):
            for name, tensor in (case.inputs | case.step_inputs(step)).items():
                tensors[wire.after_name(name, step)] = TensorSpec(_dtype_name(tensor), tuple(tensor.shape))
    else:
        for name, tensor in case.inputs.items():
            tensors[wire.after_name(name)] = TensorSpec(_dtype_name(tensor), tuple(tensor.shape))
    inputs = case.inputs
    for name in case.differentiable:
        tensors[f"grad_{name}"] = TensorSpec(case.dtype, tuple(inputs[name].shape))
    return Expectation(kinds=("result",), case=case.name, dtype=case.dtype, tensors=tensors)


def _dtype_name(tensor: Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _kind(value: Any) -> str:
    """How a JSON value is called in a message (never the value itself: it may be huge)."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    names = {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ProtocolError(f"{where} must be a string, not {_kind(value)}")
    if len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + f"\n[... {len(value) - MAX_TEXT} more characters not shown]"
    return value


def _short_text(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) > 200:
        raise ProtocolError(f"{where} must be a string of at most 200 characters")
    return value


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ProtocolError(f"{where} must be true or false, not {_kind(value)}")
    return value


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ProtocolError(f"{where} must be a finite number of seconds")
    return float(value)


def _phase(value: Any, where: str) -> str:
    if value not in ("forward", "gradient"):
        raise ProtocolError(f'{where} must be "forward" or "gradient"')
    return value


def _shape(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or len(value) > 64 or not all(type(n) is int and 0 <= n < 1 << 62 for n in value):
        raise ProtocolError(f"{where} must be a list of non-negative integers")
    return value


def _fields(data: Any, where: str, schema: dict[str, Callable[[Any, str], Any]], required: tuple[str, ...]) -> dict[str, Any]:
    """data as an object of exactly the schema's fields (those in `required` present), each checked."""
    if not isinstance(data, dict):
        raise ProtocolError(f"{where} must be an object, not {_kind(data)}")
    unknown = [key for key in data if key not in schema]
    if unknown:
        raise ProtocolError(f"{where} has a field the grader does not know: {unknown[0][:40]!r}")
    missing = [key for key in required if key not in data]
    if missing:
        raise ProtocolError(f"{where} lacks the field {missing[0]!r}")
    return {key: schema[key](value, f"{where}.{key}") for key, value in data.items()}


def _one_line(value: Any, where: str) -> str:
    """A short text with no control character: it is shown in reports (the type of what was returned)."""
    text = _short_text(value, where)
    if not text.isprintable():
        raise ProtocolError(f"{where} must be printable text on one line")
    return text


def _name(pattern: str) -> Callable[[Any, str], str]:
    """A field that names one of torch's own things (a dtype, a layout, a device type), which the
    diagnosis may repeat: only such a name, never text of the child's choosing."""
    compiled = re.compile(pattern)

    def check(value: Any, where: str) -> str:
        if not isinstance(value, str) or not compiled.fullmatch(value):
            raise ProtocolError(f"{where} must be the name of a torch {where.rpartition('.')[2]}")
        return value

    return check


def _output(value: Any, where: str) -> dict[str, Any]:
    schema = {
        "type": _one_line,
        "plain": _flag,
        "length": _count,
        "layout": _name(r"(torch\.)?[a-z_]{1,32}"),
        "shape": _shape,
        "dtype": _name(r"[a-z][a-z0-9_]{0,31}"),
        "device": _name(r"[a-z][a-z0-9_]{0,15}"),
    }
    return _fields(value, where, schema, required=("type",))


def _count(value: Any, where: str) -> int:
    if type(value) is not int or not 0 <= value < 1 << 62:
        raise ProtocolError(f"{where} must be a non-negative integer")
    return value


def _parts(value: Any, where: str) -> list[dict[str, Any]]:
    """The description of each element of a returned tuple (a tuple-returning problem's)."""
    if not isinstance(value, list) or len(value) > MAX_PARTS:
        raise ProtocolError(f"{where} must be a list of at most {MAX_PARTS} descriptions")
    return [_output(part, f"{where}[{i}]") for i, part in enumerate(value)]


MAX_PARTS = 64  # elements of a returned tuple the child describes (more is a wrong answer: the length says so)

RESULT_FIELDS: dict[str, Callable[[Any, str], Any]] = {
    "kind": _short_text,
    "name": _short_text,
    "seconds": _seconds,
    "output": _output,
    "parts": _parts,
    "differentiable": _flag,
    "phase": _phase,
    "error": _text,
    "memory": _flag,
    "forbidden": _text,
}
STARTUP_FIELDS: dict[str, tuple[dict[str, Callable[[Any, str], Any]], tuple[str, ...]]] = {
    "hello": ({"kind": _short_text}, ()),
    "ready": ({"kind": _short_text}, ()),
    "import_failed": ({"kind": _short_text, "error": _text, "memory": _flag}, ("error",)),
    "invalid": ({"kind": _short_text, "message": _text}, ("message",)),
    "forbidden": ({"kind": _short_text, "forbidden": _text}, ("forbidden",)),  # the runtime guard's finding at import
    "finished": ({"kind": _short_text, "forbidden": _text}, ()),
}


Described = list[tuple[str, str, tuple[int, ...]]]  # a frame's tensors as its header lists them: name, dtype, shape


def _may_differ(name: str) -> bool:
    """An output or an input after the call of another dtype or shape is a wrong answer, judged
    from its description, not a protocol error; a gradient always has its input's shape."""
    return _is_output(name) or name.startswith("after_")


def _is_output(name: str) -> bool:
    return name == "output" or name.startswith("output_")


def _description(reply: dict[str, Any], name: str) -> dict[str, Any]:
    """What the result says of the output tensor `name`: "output" is described in reply["output"],
    "output_<i>" in reply["parts"][i]."""
    if name == "output":
        return reply.get("output", {})
    index = name.removeprefix("output_")
    parts = reply.get("parts", [])
    return parts[int(index)] if index.isdigit() and int(index) < len(parts) else {}


def check(header: dict[str, Any], described: Described, expect: Expectation) -> dict[str, Any]:
    """The header rebuilt from its validated fields, when the frame answers `expect`; else
    ProtocolError. Called with the header and its tensor descriptions, before any tensor byte is read."""
    kind = header.get("kind")
    if kind not in expect.kinds:
        raise ProtocolError(f"a frame of kind {str(kind)[:40]!r} where {' or '.join(map(repr, expect.kinds))} was expected")
    if kind != "result":
        schema, required = STARTUP_FIELDS[kind]
        if described:
            raise ProtocolError(f"a {kind!r} frame carries tensors")
        return _fields(header, "the header", schema, required)

    reply = _fields(header, "the result", RESULT_FIELDS, required=("kind", "name"))
    if reply["name"] != expect.case:
        raise ProtocolError(f"a result for case {reply['name'][:60]!r} while case {expect.case!r} was running")
    for name, dtype, shape in described:
        spec = expect.tensors.get(name)
        if spec is None:
            raise ProtocolError(f"a tensor named {name[:40]!r}, which the case does not have")
        if TensorSpec(dtype, shape) != spec and not _may_differ(name):
            raise ProtocolError(f"tensor {name} is {dtype} of shape {shape}; it must be {spec.dtype} of shape {spec.shape}")
        described_as = _description(reply, name) if _is_output(name) else None
        if described_as is not None and (described_as.get("shape") != list(shape) or described_as.get("dtype") != dtype):
            raise ProtocolError(f"the result describes its {name} with another shape or dtype than the {name} tensor it sent")
    return reply


def read_tensors(stream: BinaryIO, described: Described, expect: Expectation) -> dict[str, Tensor]:
    """The tensors of a checked frame. Each one the case expects, with its dtype and shape, is read;
    one that may differ and does is read past, keeping at most 1 MiB at a time: an output of another
    shape or dtype is left out (its description decides), an input that came back changed is kept
    as an empty tensor of its dtype, which differs from the input as what came back did. So the
    grader keeps at most expect.max_tensor_bytes of any frame."""
    tensors = {}
    for name, dtype, shape in described:
        if TensorSpec(dtype, shape) == expect.tensors[name]:
            tensors[name] = wire.read_tensor(stream, dtype, shape)
            continue
        wire.skip(stream, wire.tensor_bytes(dtype, shape))
        if not _is_output(name):
            import torch

            tensors[name] = torch.empty(0, dtype=getattr(torch, dtype))
    return tensors


def kept(tensors: dict[str, Tensor], expect: Expectation) -> dict[str, Tensor]:
    """Of a reply's tensors held in memory (a child's code run in the grader's own process: verify's
    mutants, the tests), those read_tensors would keep: each of the dtype and shape `expect` names."""
    return {name: t for name, t in tensors.items() if expect.tensors.get(name) == TensorSpec(_dtype_name(t), tuple(t.shape))}


def need(tensors: dict[str, Tensor], name: str) -> Tensor:
    """A tensor the judge needs for the next check; a result that passed every earlier check
    always carries it, so its absence is the child's protocol error, not a wrong answer."""
    if name not in tensors:
        raise ProtocolError(f"the result lacks the tensor {name}")
    return tensors[name]
