"""Framed messages of JSON metadata plus raw tensor bytes, decoded without running any code.

A frame is: 8-byte little-endian header length, the UTF-8 JSON header, then the raw bytes of each
tensor the header lists, in order. The header is {"kind": ..., ..., "tensors": [{"name", "dtype",
"shape"}, ...]}. Decoding checks every dtype against a short list and every size against a limit
before reading the bytes, refuses JSON that is not plain data (NaN, Infinity, absurd nesting), and
builds arrays with numpy.frombuffer: there is no pickle anywhere on this path. What the fields of a
header mean, and which frames the grader accepts, is grader/protocol.py's business.
"""

from __future__ import annotations

import json
import math
import struct
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import torch

ITEM_BYTES = {"float32": 4, "float64": 8, "int64": 8, "bool": 1}  # the dtypes a frame may carry, by name
_np: Any = None  # numpy and torch, once load_tensor_modules() has bound them
_torch: Any = None


def load_tensor_modules() -> None:
    """Bind numpy and torch for building tensors. Not at import: the grader starts its child before
    it imports torch, so that both processes import it at once, and binds them on first use. The
    child binds them when it starts, before any submission code could put fakes in sys.modules."""
    global _np, _torch
    if _torch is None:
        import numpy
        import torch

        _np, _torch = numpy, torch


# The runner writes one line to stdout and to stderr before the import and before each call: this
# prefix, then "import", or "<case> forward" or "<case> gradient", then a newline. The grader's
# CappedBuffer (grader/sandbox/output.py) takes these lines out of the submission's output and labels
# what follows with the case and the call. A submission may print such a line itself: it only
# mislabels its own output, and what is held back from the candidate is decided by offsets alone.
OUTPUT_LABEL = b"\x1e\x1emlm-grader-call "
# The runner's exit status when a refusal could not be recorded nor told (the stack at its limit): a
# forbidden use all the same. No code of a submission's can end the process with a status of its choosing.
EXIT_REFUSED_UNTOLD = 86


def tensor_name(name: str, index: int | None = None, step: int | None = None) -> str:
    """How a case's tensor argument is named in a frame (grader/case.py says it in words): name, or
    name.i for the i-th tensor of a list argument, after "k:" for an argument of a class's step k."""
    return f"{'' if step is None else f'{step}:'}{name}{'' if index is None else f'.{index}'}"


def after_name(wire_name: str, step: int | None = None) -> str:
    """The name of what the child sends back of a tensor argument after the call (after step `step`)."""
    return f"after_{wire_name}{'' if step is None else f'@{step}'}"


MAX_HEADER_BYTES = 1 << 20
MAX_FRAME_BYTES = 1 << 30
MAX_DIMENSIONS = 8
_LENGTH = struct.Struct("<Q")


class WireError(Exception):
    """The peer sent something that is not a well-formed frame."""


def _read_exact(stream: BinaryIO, size: int) -> bytes:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError("the stream closed in the middle of a frame")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def encode(message: dict[str, Any], tensors: dict[str, torch.Tensor] | None = None) -> bytes:
    tensors = tensors or {}
    described, payload = [], []
    for name, tensor in tensors.items():
        dtype = str(tensor.dtype).removeprefix("torch.")
        if dtype not in ITEM_BYTES:
            raise WireError(f"cannot send dtype {dtype}")
        array = tensor.detach().cpu().contiguous().numpy()
        described.append({"name": name, "dtype": dtype, "shape": list(array.shape)})
        payload.append(array.tobytes())
    header = json.dumps({**message, "tensors": described}, allow_nan=False).encode()
    return _LENGTH.pack(len(header)) + header + b"".join(payload)


def write_frame(stream: BinaryIO, message: dict[str, Any], tensors: dict[str, torch.Tensor] | None = None) -> None:
    stream.write(encode(message, tensors))
    stream.flush()


def _refuse_constant(name: str) -> None:
    raise WireError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise WireError(f"the number {text[:40]} is out of range")
    return value


def parse_json(raw: bytes) -> Any:
    """Plain JSON data only: NaN, Infinity and numbers that overflow to them are refused, and so is
    nesting too deep to decode (a RecursionError must not escape to the caller)."""
    try:
        return json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise WireError("the header is nested too deeply") from None
    except (ValueError, TypeError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise WireError(f"the header is not valid JSON: {str(error)[:200]}") from None


def _description(item: Any) -> tuple[str, str, tuple[int, ...]]:
    if not isinstance(item, dict) or set(item) != {"name", "dtype", "shape"}:
        raise WireError("a tensor description must be an object with exactly name, dtype and shape")
    name, dtype, shape = item["name"], item["dtype"], item["shape"]
    if not isinstance(name, str) or len(name) > 100:
        raise WireError("a tensor name must be a short string")
    if not isinstance(dtype, str) or dtype not in ITEM_BYTES:
        raise WireError(f"tensor {name}: unsupported dtype {str(dtype)[:40]}")
    if not isinstance(shape, list) or len(shape) > MAX_DIMENSIONS or not all(type(n) is int and n >= 0 for n in shape):
        raise WireError(f"tensor {name}: the shape must be a list of at most {MAX_DIMENSIONS} non-negative integers")
    return name, dtype, tuple(shape)


def read_header(stream: BinaryIO, max_header_bytes: int = MAX_HEADER_BYTES) -> tuple[dict[str, Any], list[tuple[str, str, tuple[int, ...]]]]:
    """The next frame's header and its tensor descriptions (name, dtype, shape), before any tensor
    bytes are read. Raises EOFError at a clean end of stream and WireError on malformed data."""
    first = stream.read(_LENGTH.size)
    if not first:
        raise EOFError("the stream closed")
    (header_size,) = _LENGTH.unpack(first + _read_exact(stream, _LENGTH.size - len(first)))
    if header_size > max_header_bytes:
        raise WireError(f"a header of {header_size} bytes is over the limit of {max_header_bytes}")
    header = parse_json(_read_exact(stream, header_size))
    if not isinstance(header, dict):
        raise WireError("the header is not a JSON object")
    described = header.pop("tensors", None)
    if not isinstance(described, list):
        raise WireError("the header has no list of tensors")
    tensors = [_description(item) for item in described]
    names = [name for name, _, _ in tensors]
    if len(names) != len(set(names)):
        raise WireError("the header lists a tensor name twice")
    return header, tensors


def tensor_bytes(dtype: str, shape: tuple[int, ...]) -> int:
    return math.prod(shape) * ITEM_BYTES[dtype]


def payload_bytes(described: list[tuple[str, str, tuple[int, ...]]]) -> int:
    """How many bytes of tensor data follow a header with these descriptions."""
    return sum(tensor_bytes(dtype, shape) for _, dtype, shape in described)


def read_tensor(stream: BinaryIO, dtype: str, shape: tuple[int, ...]) -> torch.Tensor:
    if _torch is None:
        load_tensor_modules()
    array = _np.frombuffer(_read_exact(stream, tensor_bytes(dtype, shape)), dtype=_np.dtype(dtype)).reshape(shape)
    return _torch.from_numpy(array.copy())


def skip(stream: BinaryIO, size: int) -> None:
    """Read past `size` bytes, keeping at most 1 MiB of them at a time."""
    while size:
        size -= len(_read_exact(stream, min(size, 1 << 20)))


def read_tensors(stream: BinaryIO, described: list[tuple[str, str, tuple[int, ...]]], max_bytes: int) -> dict[str, torch.Tensor]:
    """The tensors that follow a header, refused before any byte is read when they would be larger
    in all than max_bytes."""
    total = payload_bytes(described)
    if total > max_bytes:
        raise WireError(f"the frame announces {total} bytes of tensors; at most {max_bytes} are expected")
    return {name: read_tensor(stream, dtype, shape) for name, dtype, shape in described}


def read_frame(stream: BinaryIO, max_bytes: int = MAX_FRAME_BYTES) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Read one frame; raises EOFError at a clean end of stream and WireError on malformed data."""
    header, described = read_header(stream)
    return header, read_tensors(stream, described, max_bytes)
