"""Framed messages of JSON metadata plus raw tensor bytes, decoded without running any code.

A frame is: 8-byte little-endian header length, the UTF-8 JSON header, then the raw bytes of each
tensor the header lists, in order. The header is {"kind": ..., ..., "tensors": [{"name", "dtype",
"shape"}, ...]}. Decoding checks every dtype against a short list and every size against a limit,
and builds arrays with numpy.frombuffer: there is no pickle anywhere on this path.
"""

import json
import math
import struct
from typing import Any, BinaryIO

import numpy as np
import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "bool": torch.bool}
NUMPY_DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_}
MAX_HEADER_BYTES = 1 << 20
MAX_FRAME_BYTES = 1 << 30
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
        if dtype not in DTYPES:
            raise WireError(f"cannot send dtype {dtype}")
        array = tensor.detach().cpu().contiguous().numpy()
        described.append({"name": name, "dtype": dtype, "shape": list(array.shape)})
        payload.append(array.tobytes())
    header = json.dumps({**message, "tensors": described}).encode()
    return _LENGTH.pack(len(header)) + header + b"".join(payload)


def write_frame(stream: BinaryIO, message: dict[str, Any], tensors: dict[str, torch.Tensor] | None = None) -> None:
    stream.write(encode(message, tensors))
    stream.flush()


def read_frame(stream: BinaryIO) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Read one frame; raises EOFError at a clean end of stream and WireError on malformed data."""
    first = stream.read(_LENGTH.size)
    if not first:
        raise EOFError("the stream closed")
    (header_size,) = _LENGTH.unpack(first + _read_exact(stream, _LENGTH.size - len(first)))
    if header_size > MAX_HEADER_BYTES:
        raise WireError(f"header of {header_size} bytes is over the limit")
    try:
        header = json.loads(_read_exact(stream, header_size))
        described = header.pop("tensors")
    except (ValueError, KeyError, AttributeError, TypeError) as error:
        raise WireError(f"malformed header: {error}") from None
    if not isinstance(header, dict) or not isinstance(described, list):
        raise WireError("malformed header")
    tensors, total = {}, 0
    for item in described:
        try:
            name, dtype, shape = str(item["name"]), item["dtype"], [int(n) for n in item["shape"]]
        except (KeyError, TypeError, ValueError):
            raise WireError("malformed tensor description") from None
        if dtype not in DTYPES or any(n < 0 for n in shape) or len(shape) > 8:
            raise WireError(f"unsupported tensor {name}: {dtype} {shape}")
        size = math.prod(shape) * np.dtype(NUMPY_DTYPES[dtype]).itemsize
        total += size
        if total > MAX_FRAME_BYTES:
            raise WireError("frame is over the size limit")
        array = np.frombuffer(_read_exact(stream, size), dtype=NUMPY_DTYPES[dtype]).reshape(shape)
        tensors[name] = torch.from_numpy(array.copy())
    return header, tensors
