"""The grader's side of the channel holds whatever the child sends or does: every frame is checked
against a schema before use, the reader thread cannot die, the queue and every frame are bounded,
writes have deadlines, and a watchdog ends the child at the total wall-clock and CPU limits.

Unit tests play the child's side of the pipes themselves; the hostile files at the end run for
real, behind bubblewrap, with the static check skipped.
"""

import dataclasses
import io
import json
import os
import re
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from grader import protocol
from grader.cases import make_cases
from grader.child import wire
from grader.protocol import ProtocolError
from grader.sandbox.bubblewrap import bubblewrap_works
from grader.sandbox.child import QUEUED_FRAMES, Child, ChildGone, ChildTimeout
from grader.spec import load_spec
from tests.grading import ROOT, SUBMISSIONS, grade_json

SPEC = load_spec()
CASE = make_cases(SPEC, SPEC.default_hidden_seed, public_only=True)[0]
EXPECT = protocol.expect_result(CASE, SPEC)
(M, V) = CASE.output_shapes[0]  # the logits' shape the case expects (M, the masked positions, is drawn)


def honest_result(case=CASE) -> tuple[dict, dict]:
    """A result as the runner sends it for `case`: the header and every tensor, right dtypes and shapes."""
    header, inputs = case.request()
    m, v = case.grad_output.shape[0], case.inputs["w_emb"].shape[0]
    dtype = getattr(torch, case.dtype)
    tensors = {"output": torch.zeros(m, v, dtype=dtype)}
    tensors |= {f"after_{name}": inputs[name].clone() for name, kind in header["call"] if kind == "tensor"}
    tensors |= {f"grad_{name}": torch.zeros_like(inputs[name]) for name in header["differentiable"]}
    output = {"type": "torch.Tensor", "plain": True, "layout": "strided", "shape": [m, v], "dtype": case.dtype, "device": "cpu"}
    return {"kind": "result", "name": case.name, "seconds": 0.01, "output": output, "differentiable": True}, tensors


def described(tensors: dict) -> protocol.Described:
    """The tensors as a frame's header lists them."""
    return [(name, str(t.dtype).removeprefix("torch."), tuple(t.shape)) for name, t in tensors.items()]


def raw_frame(header: bytes, payload: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header + payload


# --- the schema -------------------------------------------------------------------------------


def test_an_honest_result_is_accepted_and_rebuilt_from_known_fields_only():
    header, tensors = honest_result()
    assert protocol.check(header, described(tensors), EXPECT) == header


def test_the_bound_on_reading_is_exactly_what_an_honest_result_carries():
    header, tensors = honest_result()
    frame = io.BytesIO(wire.encode(header, tensors))
    _, described = wire.read_header(frame)
    assert wire.payload_bytes(described) == EXPECT.max_tensor_bytes
    assert protocol.STARTUP.max_tensor_bytes == 0


def with_changes(**changes) -> dict:
    header, _ = honest_result()
    for key, value in changes.items():
        if value is None:
            header.pop(key)
        else:
            header[key] = value
    return header


@pytest.mark.parametrize(
    "header, words",
    [
        (with_changes(kind="ready"), "a frame of kind 'ready' where 'result' was expected"),
        (with_changes(kind=["result"]), "where 'result' was expected"),
        (with_changes(name="public_multi_head"), "a result for case 'public_multi_head' while case 'public_tiny' was running"),
        (with_changes(name=None), "lacks the field 'name'"),
        (with_changes(output="torch.Tensor"), "the result.output must be an object, not a string"),
        (with_changes(output=[1, 2]), "the result.output must be an object, not a list"),
        (with_changes(output={"shape": [1, 7]}), "the result.output lacks the field 'type'"),
        (with_changes(output={"type": "torch.Tensor", "shape": [True, 7]}), "the result.output.shape must be a list of non-negative integers"),
        (with_changes(output={"type": "torch.Tensor", "dtype": {"a": 1}}), "the result.output.dtype must be the name of a torch dtype"),
        # text the diagnosis repeats is a name of torch's, never the child's words (hidden inputs, Markdown)
        (with_changes(output={"type": "torch.Tensor", "dtype": "ids=1,0,2;w=0.12"}), "the result.output.dtype must be the name of a torch dtype"),
        (with_changes(output={"type": "torch.Tensor", "dtype": "float32\n# Accepted"}), "the result.output.dtype must be the name of a torch dtype"),
        (with_changes(output={"type": "torch.Tensor\n# Accepted"}), "the result.output.type must be printable text on one line"),
        (with_changes(output={"type": "torch.Tensor", "extra": 1}), "the result.output has a field the grader does not know: 'extra'"),
        (with_changes(error=["Traceback", "..."]), "the result.error must be a string, not a list"),
        (with_changes(forbidden={"used": "softmax"}), "the result.forbidden must be a string, not an object"),
        (with_changes(memory="yes"), "the result.memory must be true or false, not a string"),
        (with_changes(seconds="0.1"), "the result.seconds must be a finite number of seconds"),
        (with_changes(seconds=-1), "the result.seconds must be a finite number of seconds"),
        (with_changes(phase="backward"), 'the result.phase must be "forward" or "gradient"'),
        (with_changes(verdict="accepted"), "the result has a field the grader does not know: 'verdict'"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_a_header_off_the_schema_is_a_protocol_error(header, words):
    _, tensors = honest_result()
    with pytest.raises(ProtocolError) as error:
        protocol.check(header, described(tensors), EXPECT)
    assert str(error.value) == words or words in str(error.value)


def replaced_tensor(name, tensor) -> dict:
    _, tensors = honest_result()
    tensors[name] = tensor
    return tensors


@pytest.mark.parametrize(
    "tensors, words",
    [
        (replaced_tensor("grad_w_emb", torch.zeros(7, 4, dtype=torch.int64)), "tensor grad_w_emb is int64 of shape (7, 4); it must be float32 of shape (7, 4)"),
        (replaced_tensor("grad_w_emb", torch.zeros(8, 4)), "tensor grad_w_emb is float32 of shape (8, 4); it must be float32 of shape (7, 4)"),
        (replaced_tensor("grad_input_ids", torch.zeros(1, 3)), "a tensor named 'grad_input_ids', which the case does not have"),
        (replaced_tensor("expected", torch.zeros(1)), "a tensor named 'expected', which the case does not have"),
        (replaced_tensor("output", torch.zeros(M + 1, V)), "the result describes its output with another shape or dtype than the output tensor it sent"),
        (replaced_tensor("output", torch.zeros(M, V, dtype=torch.float64)), "the result describes its output with another shape or dtype"),
    ],
    ids=["grad-dtype", "grad-shape", "no-such-grad", "unknown-name", "output-shape-unlike-description", "output-dtype-unlike-description"],
)
def test_a_tensor_the_case_does_not_expect_is_a_protocol_error(tensors, words):
    header, _ = honest_result()
    with pytest.raises(ProtocolError, match=re.escape(words)):
        protocol.check(header, described(tensors), EXPECT)


def test_a_wrong_output_or_a_changed_input_is_read_past_and_never_kept():
    # A wrong answer, not a protocol error: the output's description decides, a changed input is changed.
    header, tensors = honest_result()
    tensors["output"] = torch.ones(300, 700, dtype=torch.float64)
    header["output"] |= {"shape": [300, 700], "dtype": "float64"}
    tensors["after_w_emb"] = torch.ones(7000, 4)
    tensors["after_mask_indicator"] = tensors["after_mask_indicator"].double()
    stream = io.BytesIO(wire.encode(header, tensors))
    got_header, got_described = wire.read_header(stream)
    assert protocol.check(got_header, got_described, EXPECT)["output"]["shape"] == [300, 700]
    kept = protocol.read_tensors(stream, got_described, EXPECT)
    assert stream.read() == b""  # the frame was read to its end, so the next one starts in step
    assert "output" not in kept
    assert kept["after_w_emb"].numel() == 0 and kept["after_mask_indicator"].numel() == 0
    assert kept["after_mask_indicator"].dtype == torch.float64
    assert torch.equal(kept["after_pos_embed"], tensors["after_pos_embed"]) and torch.equal(kept["grad_w_emb"], tensors["grad_w_emb"])
    assert sum(t.numel() * t.element_size() for t in kept.values()) <= EXPECT.max_tensor_bytes


def test_an_output_described_unlike_the_tensor_sent_is_a_protocol_error():
    header, tensors = honest_result()
    header["output"]["shape"] = [M + 1, V]
    with pytest.raises(ProtocolError, match="describes its output with another shape or dtype"):
        protocol.check(header, described(tensors), EXPECT)


def test_a_missing_tensor_is_a_protocol_error_when_the_judge_needs_it():
    header, tensors = honest_result()
    del tensors["grad_w_emb"]
    protocol.check(header, described(tensors), EXPECT)  # allowed: an error reply carries no gradients
    with pytest.raises(ProtocolError, match="lacks the tensor grad_w_emb"):
        protocol.need(tensors, "grad_w_emb")


def test_long_error_texts_are_cut_not_refused():
    reply = protocol.check({"kind": "result", "name": CASE.name, "error": "x" * 100_000, "memory": False}, [], EXPECT)
    assert len(reply["error"]) < protocol.MAX_TEXT + 100 and reply["error"].endswith("more characters not shown]")


@pytest.mark.parametrize(
    "header, tensors, words",
    [
        ({"kind": "ready"}, {}, None),
        ({"kind": "import_failed", "error": "boom", "memory": False}, {}, None),
        ({"kind": "invalid", "message": "no function"}, {}, None),
        ({"kind": "forbidden", "forbidden": "used the function torch.softmax (line 2 of solution.py)"}, {}, None),
        (
            {"kind": "result", "name": "public_tiny"},
            {},
            "a frame of kind 'result' where 'hello' or 'ready' or 'import_failed' or 'invalid' or 'forbidden' was expected",
        ),
        ({"kind": "forbidden"}, {}, "the header lacks the field 'forbidden'"),
        ({"kind": "import_failed", "error": "boom", "forbidden": "x"}, {}, "a field the grader does not know: 'forbidden'"),
        ({"kind": "import_failed", "error": ["boom"]}, {}, "the header.error must be a string, not a list"),
        ({"kind": "invalid"}, {}, "the header lacks the field 'message'"),
        ({"kind": "ready", "accepted": True}, {}, "a field the grader does not know: 'accepted'"),
        ({"kind": "ready"}, {"output": torch.zeros(1)}, "a 'ready' frame carries tensors"),
    ],
)
def test_start_up_frames(header, tensors, words):
    if words is None:
        assert protocol.check(dict(header), described(tensors), protocol.STARTUP) == header
    else:
        with pytest.raises(ProtocolError, match=re.escape(words)):
            protocol.check(header, described(tensors), protocol.STARTUP)


# --- decoding ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header, words",
    [
        (b'{"kind": "result", "seconds": NaN, "tensors": []}', "NaN is not a number JSON allows"),
        (b'{"kind": "result", "seconds": -Infinity, "tensors": []}', "-Infinity is not a number JSON allows"),
        (b'{"kind": "result", "seconds": 1e999, "tensors": []}', "the number 1e999 is out of range"),
        (b'{"kind": "result", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b', "tensors": []}', "nested too deeply"),
        (b'["kind", "result"]', "not a JSON object"),
        (b'{"kind": "result", "tensors": [{"name": "t", "dtype": ["float32"], "shape": [1]}]}', "unsupported dtype"),
        (b'{"kind": "result", "tensors": [{"name": "t", "dtype": {"a": 1}, "shape": [1]}]}', "unsupported dtype"),
        (b'{"kind": "result", "tensors": [{"name": "t", "dtype": "float32", "shape": [true]}]}', "non-negative integers"),
        (b'{"kind": "result", "tensors": [{"name": "t", "dtype": "float32", "shape": [1.5]}]}', "non-negative integers"),
        (b'{"kind": "result", "tensors": [{"name": ["t"], "dtype": "float32", "shape": [1]}]}', "a tensor name must be a short string"),
        (b'{"kind": "result", "tensors": [{"name": "t", "dtype": "float32", "shape": [1], "offset": 3}]}', "exactly name, dtype and shape"),
        (b'{"kind": "result", "tensors": [{"name": "t", "dtype": "bool", "shape": [1]}, {"name": "t", "dtype": "bool", "shape": []}]}', "twice"),
        (b"\xff\xfe{}", "not valid JSON"),
    ],
    ids=["nan", "infinity", "overflow", "deep", "not-object", "list-dtype", "dict-dtype", "bool-dim", "float-dim", "list-name", "extra-key", "twice", "utf16"],
)
def test_headers_that_are_not_plain_data_are_refused_without_escaping_errors(header, words):
    with pytest.raises(wire.WireError, match=re.escape(words)):
        wire.read_header(io.BytesIO(raw_frame(header)))


class CountingStream(io.RawIOBase):
    """An endless stream of copies of one frame, counting how many frames the reader has started
    and how many payload bytes it has been given."""

    def __init__(self, frame: bytes, header_bytes: int) -> None:
        self.frame, self.header_bytes = frame, header_bytes
        self.position = 0
        self.started = 0
        self.payload_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        offset = self.position % len(self.frame)
        if offset == 0:
            self.started += 1
        n = min(len(buffer), len(self.frame) - offset)
        buffer[:n] = self.frame[offset : offset + n]
        self.payload_read += max(0, offset + n - max(offset, self.header_bytes))
        self.position += n
        return n


def test_a_frame_over_the_bound_is_refused_before_its_payload_is_read():
    header = json.dumps({"kind": "result", "tensors": [{"name": "output", "dtype": "float32", "shape": [16384, 4096]}]}).encode()
    stream = CountingStream(raw_frame(header, bytes(1024)), 8 + len(header))
    _, described = wire.read_header(stream)
    with pytest.raises(wire.WireError, match=r"announces 268435456 bytes of tensors; at most 2048 are expected"):
        wire.read_tensors(stream, described, 2048)
    assert stream.payload_read == 0


# --- the channel, with the test playing the child ---------------------------------------------


class PipeChild(Child):
    """A Child without a process: the test reads its requests and writes its results."""

    def __init__(self, spec=SPEC, cpu=None) -> None:
        super().__init__(spec)
        self.isolation = "test"
        self.request_read, self.request_fd = os.pipe()
        os.set_blocking(self.request_fd, False)
        result_read, self.result_write = os.pipe()
        self.cpu = cpu
        self.kills = 0
        self.start_threads(threading.Thread(target=self._read_frames, args=(os.fdopen(result_read, "rb"),), daemon=True))

    def cpu_seconds(self):
        return self.cpu() if self.cpu else None

    def kill(self) -> None:
        self.kills += 1

    def close(self) -> None:
        for fd in (self.request_read, self.request_fd, self.result_write):
            try:
                os.close(fd)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(timeout=2)


def spec_with(**limits):
    return dataclasses.replace(SPEC, limits=dataclasses.replace(SPEC.limits, **limits))


@pytest.fixture
def thread_errors(monkeypatch):
    """Exceptions that escaped any thread (Python would print their traceback)."""
    escaped = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))
    return escaped


def test_a_request_gets_its_checked_answer():
    header, tensors = honest_result()
    with PipeChild() as child:
        received = []

        def answer():
            received.append(wire.read_frame(os.fdopen(os.dup(child.request_read), "rb")))
            os.write(child.result_write, wire.encode(header, tensors))

        threading.Thread(target=answer, daemon=True).start()
        reply, got = child.request(*CASE.request(), EXPECT, seconds=10)
        assert reply["name"] == CASE.name and set(got) == set(tensors)
        sent, inputs = received[0]
        assert sent["kind"] == "case" and sent["name"] == CASE.name and torch.equal(inputs["w_emb"], CASE.inputs["w_emb"])


def test_an_extra_answer_cannot_answer_the_next_request():
    second = make_cases(SPEC, SPEC.default_hidden_seed, public_only=True)[1]
    header, tensors = honest_result()
    with PipeChild() as child:

        def answer_twice():
            wire.read_frame(os.fdopen(os.dup(child.request_read), "rb"))
            os.write(child.result_write, wire.encode(header, tensors) * 2)

        threading.Thread(target=answer_twice, daemon=True).start()
        child.request(*CASE.request(), EXPECT, seconds=10)
        with pytest.raises(ProtocolError, match=f"a result for case '{CASE.name}' while case '{second.name}' was running"):
            child.request(*second.request(), protocol.expect_result(second, SPEC), seconds=10)


def test_the_reader_queues_nothing_unchecked_and_stops_at_the_first_bad_frame():
    header, tensors = honest_result()
    bad = wire.encode(dict(header, verdict="accepted"), tensors)
    stream = CountingStream(bad, len(bad))
    with PipeChild() as child:
        child._expect = EXPECT
        child._read_frames(io.BufferedReader(stream, buffer_size=1))
        item = child._frames.get(timeout=1)
        assert isinstance(item, ProtocolError) and "'verdict'" in str(item)
        assert child._frames.empty() and stream.started == 1


@pytest.mark.parametrize(
    "data, words",
    [
        (raw_frame(b'{"kind": "result", "tensors": [{"name": "t", "dtype": ["float32"], "shape": [1]}]}'), "unsupported dtype"),
        (raw_frame(b'{"x": ' + b"[" * 50_000 + b"]" * 50_000 + b', "tensors": []}'), "nested too deeply"),
        (raw_frame(b'{"kind": "result", "name": "public_tiny", "seconds": NaN, "tensors": []}'), "NaN"),
        (raw_frame(b'{"kind": "result", "name": "public_tiny", "output": "torch.Tensor", "tensors": []}'), "must be an object"),
        (struct.pack("<Q", 1 << 40), "a header of 1099511627776 bytes is over the limit"),
    ],
    ids=["unhashable-dtype", "deep", "nan", "output-string", "huge-header"],
)
def test_malformed_frames_end_the_case_at_once_and_no_thread_dies(data, words, thread_errors):
    with PipeChild() as child:
        child._expect = EXPECT  # as request() sets it: else the reader may judge the frame against start-up's
        os.write(child.result_write, data)
        started = time.monotonic()
        with pytest.raises(ProtocolError, match=re.escape(words)):
            child.request(*CASE.request(), EXPECT, seconds=30)
        assert time.monotonic() - started < 5 and child.kills >= 1
    assert thread_errors == []


def test_the_reader_turns_any_failure_into_a_protocol_error(thread_errors):
    class Exploding(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buffer):
            raise MemoryError()

    with PipeChild() as child:
        thread = threading.Thread(target=child._read_frames, args=(io.BufferedReader(Exploding()),))
        thread.start()
        thread.join(timeout=5)
        item = child._frames.get(timeout=5)
        assert isinstance(item, ProtocolError) and "MemoryError" in str(item)
    assert thread_errors == []


def test_a_request_sent_ahead_is_answered_against_its_own_expectation():
    # the next case's request goes out while the child computes the one before; each answer is
    # checked (and its tensors read) against its own request's shapes, in the order they were sent
    cases = make_cases(SPEC, SPEC.default_hidden_seed, public_only=True)
    first, second = sorted(cases[:2], key=lambda case: protocol.expect_result(case, SPEC).max_tensor_bytes)
    # (the second answer carries more than the first's bound: read against the first's, it is refused)
    assert protocol.expect_result(first, SPEC).max_tensor_bytes < protocol.expect_result(second, SPEC).max_tensor_bytes
    with PipeChild() as child:
        deadline = child.submit(*first.request(), protocol.expect_result(first, SPEC), seconds=10)
        assert child.send_ahead(*second.request(), protocol.expect_result(second, SPEC))
        requests = os.fdopen(os.dup(child.request_read), "rb")
        assert wire.read_frame(requests)[0]["name"] == first.name and wire.read_frame(requests)[0]["name"] == second.name
        for case in (first, second):
            os.write(child.result_write, wire.encode(*honest_result(case)))
        waited = time.monotonic()
        while child._frames.qsize() < 2 and time.monotonic() - waited < 10:  # both read before either is asked for
            time.sleep(0.01)
        for case in (first, second):
            reply, tensors = child.answer(protocol.expect_result(case, SPEC), deadline)
            assert reply["name"] == case.name and tuple(tensors["output"].shape) == tuple(case.output_shapes[0])
        assert child.kills == 0


def test_a_request_is_sent_ahead_only_when_it_fits_in_the_pipe_at_once():
    # never a wait on a child busy with the case before (no limit may run out there): a request too
    # big for the room left is refused, and sent later with submit()
    big = {"t": torch.zeros(1 << 20)}  # 4 MiB: more than the pipe holds
    with PipeChild() as child:
        started = time.monotonic()
        assert not child.send_ahead({"kind": "case"}, big, EXPECT)
        assert child.send_ahead(*CASE.request(), EXPECT)
        assert time.monotonic() - started < 1 and child.kills == 0


def test_what_the_pipe_did_not_take_of_a_request_sent_ahead_waits_for_its_own_turn():
    # a child can shrink or fill its request pipe: send_ahead never waits, and the rest of the
    # frame is written when the request's turn comes, within that turn's limit
    import fcntl

    frame = ({"kind": "case"}, {"t": torch.arange(2048, dtype=torch.float32)})  # 8 KiB
    for reading in (False, True):
        with PipeChild(spec_with(total_seconds=20)) as child:  # (a send that waited would wait for this)
            assert child.send_ahead({"kind": "case"}, {}, EXPECT)  # (the pipe's size is looked up, and widened)
            wire.read_frame(os.fdopen(os.dup(child.request_read), "rb"))
            fcntl.fcntl(child.request_read, fcntl.F_SETPIPE_SZ, 4096)  # what the child does to its end
            started = time.monotonic()
            assert child.send_ahead(*frame, EXPECT) and time.monotonic() - started < 1  # a part went in, at once
            if not reading:
                with pytest.raises(ChildTimeout) as timeout:
                    child.send_rest(time.monotonic() + 0.5)
                assert timeout.value.limit == "write" and child.kills == 1
                continue
            with ThreadPoolExecutor(max_workers=1) as reader:
                got = reader.submit(wire.read_frame, os.fdopen(os.dup(child.request_read), "rb"))
                child.send_rest(time.monotonic() + 10)
                assert torch.equal(got.result(timeout=10)[1]["t"], frame[1]["t"])


def test_a_request_sent_ahead_to_a_child_gone_is_childgone_even_when_the_reader_took_its_expectation():
    # the child closed its request pipe and sent a frame unasked, read between the expectation's
    # queueing and the failed write: still ChildGone, never an error of the grader's
    with PipeChild() as child:
        os.close(child.request_read)
        write = child._write_some

        def reader_first(data):
            child._expects.popleft()  # (the reader thread, for the unasked frame)
            return write(data)

        child._write_some = reader_first
        with pytest.raises(ChildGone):
            child.send_ahead(*CASE.request(), EXPECT)
        assert not child._expects


def test_a_flooding_child_is_read_no_further_than_the_queue_allows():
    header, tensors = honest_result()
    frame = wire.encode(header, tensors)
    with PipeChild() as child:
        child._expect = EXPECT
        stream = CountingStream(frame, len(frame))
        thread = threading.Thread(target=child._read_frames, args=(io.BufferedReader(stream, buffer_size=1),), daemon=True)
        thread.start()
        time.sleep(1.0)
        # QUEUED_FRAMES wait in the queue and one more in the reader's hand: the child's next write waits.
        assert child._frames.qsize() == QUEUED_FRAMES
        assert stream.started <= QUEUED_FRAMES + 2
        assert stream.position <= (QUEUED_FRAMES + 2) * len(frame)
        child._closed.set()
        thread.join(timeout=2)
        assert not thread.is_alive()


def test_a_child_that_does_not_read_cannot_block_the_grader():
    with PipeChild() as child:
        big = {"t": torch.zeros(1 << 20)}  # 4 MiB: far more than a pipe holds
        started = time.monotonic()
        with pytest.raises(ChildTimeout) as timeout:
            child.send({"kind": "case"}, big, deadline=time.monotonic() + 0.5)
        assert timeout.value.limit == "write"
        assert 0.4 < time.monotonic() - started < 3 and child.kills == 1


def test_a_child_that_reads_slowly_still_gets_the_whole_request():
    with PipeChild() as child:
        big = {"t": torch.arange(1 << 18, dtype=torch.float32)}
        got = {}

        def slow_reader():
            time.sleep(0.3)
            got["frame"] = wire.read_frame(os.fdopen(os.dup(child.request_read), "rb"))

        reader = threading.Thread(target=slow_reader)
        reader.start()
        child.send({"kind": "case"}, big, deadline=time.monotonic() + 10)
        reader.join(timeout=10)
        assert torch.equal(got["frame"][1]["t"], big["t"])


def test_an_answer_that_never_comes_is_a_timeout_of_the_case_or_of_the_run():
    with PipeChild() as child:
        with pytest.raises(ChildTimeout) as timeout:
            child.request(*CASE.request(), EXPECT, seconds=0.3)
        assert timeout.value.limit == "answer" and child.kills == 1
    with PipeChild(spec_with(total_seconds=0.5)) as child:
        with pytest.raises(ChildTimeout) as timeout:
            child.request(*CASE.request(), EXPECT, seconds=30)
        assert timeout.value.limit == "total"


def test_the_watchdog_ends_the_child_at_the_total_wall_time_whatever_the_grader_does():
    with PipeChild(spec_with(total_seconds=0.5)) as child:
        time.sleep(1.0)  # the grader's main thread busy elsewhere
        assert child.limit_reached == "total" and child.kills == 1


def test_the_watchdog_ends_the_child_when_all_its_processes_together_reach_the_cpu_limit():
    started = time.monotonic()
    with PipeChild(spec_with(cpu_seconds=3), cpu=lambda: 10 * (time.monotonic() - started)) as child:
        time.sleep(1.0)
        assert child.limit_reached == "cpu" and child.kills == 1 and child.cpu_used > 3


def test_the_watchdog_leaves_a_child_within_its_limits_alone():
    with PipeChild(spec_with(cpu_seconds=3), cpu=lambda: 1.0) as child:
        time.sleep(0.5)
        assert child.limit_reached == "" and child.kills == 0


def test_a_failing_watchdog_ends_the_child_and_faults_the_grader(thread_errors):
    def broken():
        raise ValueError("no counters")

    with PipeChild(cpu=broken) as child:
        time.sleep(0.5)
        assert child.kills == 1
        with pytest.raises(RuntimeError, match="the grader's watchdog failed: ValueError: no counters"):
            child.receive(time.monotonic() + 1)
    assert thread_errors == []


# --- end to end: hostile files behind bubblewrap ----------------------------------------------

needs_bubblewrap = pytest.mark.skipif(not bubblewrap_works(), reason="--no-static-check needs bubblewrap (CI installs it)")


def spec_file(tmp_path: Path, **limits) -> str:
    text = (ROOT / "problem" / "mlm-forward-tied" / "problem.toml").read_text()
    for key, value in limits.items():
        text, count = re.subn(rf"^{key} = \S+", f"{key} = {value}", text, flags=re.MULTILINE)
        assert count == 1, key
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.sandbox
@needs_bubblewrap
def test_a_child_that_stops_reading_is_ended_at_the_case_limit(tmp_path):
    path = SUBMISSIONS / "time_limit_exceeded" / "hostile_stop_reading_requests.py"
    started = time.monotonic()
    report, status = grade_json(str(path), "--unrestricted", "--spec", spec_file(tmp_path, case_seconds=5))
    assert report["verdict"] == "time_limit_exceeded" and status == 1
    first = report["cases"][0]
    assert first["output"] == "did not read the case's input within 5 s (the limit for one case): the process stopped reading the grader's requests"
    assert time.monotonic() - started < 120


@pytest.mark.sandbox
@needs_bubblewrap
def test_a_case_sent_ahead_has_its_whole_time_from_the_answer_before(tmp_path):
    # the second case's request goes out while the first is computed; its limit (3 s) counts from
    # the first's answer, not from when it was sent: two cases of 1.8 s each both pass
    parameters = ", ".join(load_spec().parameter_names)
    slow = tmp_path / "slow_start.py"
    slow.write_text(
        (SUBMISSIONS / "accepted" / "plain_helpers.py").read_text().replace("def mlm_forward_tied(", "def _forward(", 1)
        + f"\n\nimport time\n_calls = [0]\n\n\ndef mlm_forward_tied({parameters}):\n"
        + "    _calls[0] += 1\n    if _calls[0] <= 4:  # the first two cases: each call 0.9 s\n        time.sleep(0.9)\n"
        + f"    return _forward({parameters})\n"
    )
    report, status = grade_json(str(slow), "--unrestricted", "--public", "--spec", spec_file(tmp_path, case_seconds=3))
    assert report["verdict"] == "accepted" and status == 0, report["message"]
    assert 1.7 < report["cases"][1]["seconds"] < 3


def peak_rss_mib(*args: str) -> tuple[float, dict]:
    """Run the grader and return its own peak resident memory (VmHWM, polled until it ends; its
    children are not counted) and its JSON report."""
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "grader", *args, "--json"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    output = []
    reader = threading.Thread(target=lambda: output.append(process.stdout.read()), daemon=True)
    reader.start()
    while process.poll() is None:
        try:
            status = Path(f"/proc/{process.pid}/status").read_text()
            peak = max(peak, int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE).group(1)))
        except (OSError, AttributeError):
            pass
        time.sleep(0.01)
    reader.join()
    process.stderr.close()
    return peak / 1024, json.loads(output[0])


# The grader's own memory while a child floods its channel stays within this of an ordinary run.
# By design it holds at most QUEUED_FRAMES + 2 checked frames (two queued, one in the reader's hand,
# one being judged), each at most 1 MiB of header and the case's tensors (under 1 MiB for the largest
# case the spec can draw), plus one header being decoded (1 MiB of JSON: at most about 26 MiB of
# Python objects): about 35 MiB in all.
FLOOD_BOUND_MIB = 64


@pytest.mark.sandbox
@needs_bubblewrap
def test_a_flooding_child_leaves_the_graders_memory_bounded():
    baseline, _ = peak_rss_mib(str(SUBMISSIONS / "wrong_answer" / "causal_mask.py"), "--unrestricted", "--public")
    flooded, report = peak_rss_mib(str(SUBMISSIONS / "wrong_answer" / "hostile_flood_channel.py"), "--unrestricted", "--public")
    first, second = report["cases"][:2]
    assert first["output"].startswith("returned shape (16384, 4096); expected (M, vocab_size)")  # judged from its description
    assert second["output"].endswith(f"a result for case '{first['name']}' while case '{second['name']}' was running")
    assert flooded < baseline + FLOOD_BOUND_MIB, (baseline, flooded)
