"""The child's channel: lossless for tensors, and decoding can never run code."""

import ast
import io
import json
import struct
from pathlib import Path

import pytest
import torch

from grader.child import wire


def roundtrip(message, tensors):
    stream = io.BytesIO(wire.encode(message, tensors))
    return wire.read_frame(stream)


def test_tensors_of_every_supported_dtype_come_back_bit_for_bit():
    tensors = {
        "f32": torch.randn(3, 4),
        "f64": torch.randn(2, 0, 5, dtype=torch.float64),
        "i64": torch.arange(6).reshape(2, 3),
        "b": torch.tensor([True, False]),
        "nan": torch.tensor([float("nan"), -0.0, float("inf")]),
        "strided": torch.randn(4, 4).T,
    }
    header, back = roundtrip({"kind": "result", "x": [1, "two"]}, tensors)
    assert header == {"kind": "result", "x": [1, "two"]}
    for name, tensor in tensors.items():
        assert back[name].dtype == tensor.dtype and back[name].shape == tensor.shape
        assert back[name].contiguous().numpy().tobytes() == tensor.contiguous().numpy().tobytes()


def test_frames_follow_each_other_and_a_clean_end_is_eof():
    stream = io.BytesIO(wire.encode({"kind": "a"}) + wire.encode({"kind": "b"}, {"t": torch.ones(2)}))
    assert wire.read_frame(stream)[0]["kind"] == "a"
    assert wire.read_frame(stream)[0]["kind"] == "b"
    with pytest.raises(EOFError):
        wire.read_frame(stream)


def frame(header: dict, payload: bytes = b"") -> io.BytesIO:
    raw = json.dumps(header).encode()
    return io.BytesIO(struct.pack("<Q", len(raw)) + raw + payload)


@pytest.mark.parametrize(
    "stream",
    [
        frame({"kind": "x", "tensors": [{"name": "t", "dtype": "object", "shape": [1]}]}, b"\x80\x04."),
        frame({"kind": "x", "tensors": [{"name": "t", "dtype": "float32", "shape": [-1]}]}),
        frame({"kind": "x", "tensors": [{"name": "t", "dtype": "float32", "shape": [1 << 40]}]}),
        frame({"kind": "x", "tensors": "not a list"}),
        frame({"kind": "x"}),
        io.BytesIO(struct.pack("<Q", 1 << 40)),
        io.BytesIO(struct.pack("<Q", 5) + b"{not json"),
    ],
    ids=["pickle-dtype", "negative-shape", "oversized", "bad-list", "no-tensors", "huge-header", "bad-json"],
)
def test_malformed_frames_are_refused(stream):
    with pytest.raises(wire.WireError):
        wire.read_frame(stream)


def test_truncated_frame_is_an_error_not_a_hang():
    data = wire.encode({"kind": "x"}, {"t": torch.ones(10)})
    with pytest.raises(EOFError):
        wire.read_frame(io.BytesIO(data[:-3]))


def test_unsupported_dtype_is_refused_when_sending():
    with pytest.raises(wire.WireError):
        wire.encode({"kind": "x"}, {"t": torch.ones(2, dtype=torch.complex64)})


def test_the_channel_code_never_imports_a_code_running_decoder():
    files = [Path(wire.__file__), Path(wire.__file__).parent / "runner.py", *(Path(__file__).parents[1] / "grader" / "sandbox").glob("*.py")]
    for path in files:
        tree = ast.parse(path.read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not imported & {"pickle", "marshal", "multiprocessing", "shelve", "dill"}, path.name
        calls = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        assert "torch.load" not in calls, path.name
