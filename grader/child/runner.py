"""Runs inside the child process: loads the submission, then answers one request per case.

The grader sends frames on one descriptor and reads ours on another (see wire.py); the
submission's own prints go to stdout/stderr, which the grader drains separately. Nothing here
decides a verdict: we only report what happened and return raw tensors.
"""

import importlib.util
import inspect
import json
import os
import socket
import sys
import time
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from . import wire
from .guard import Guard

MEMORY_MARKERS = ("can't allocate memory", "not enough memory", "out of memory")


def _error_report(error: BaseException, submission: str) -> dict[str, Any]:
    """The exception, with traceback frames limited to the submission's own file."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == submission]
    text = "".join(traceback.format_list(frames)) + "".join(traceback.format_exception_only(error))
    memory = isinstance(error, MemoryError) or any(m in str(error) for m in MEMORY_MARKERS)
    if isinstance(error, SystemExit):
        text = f"the submission called exit({error.code!r})\n" + text
    return {"error": text.replace(submission, os.path.basename(submission)), "memory": memory}


def load_submission(path: str) -> ModuleType:
    """Import the file under a fresh module name; its folder is not put on sys.path."""
    spec = importlib.util.spec_from_file_location("candidate_submission", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module


def signature_problem(fn: Callable, expected: list[str]) -> str | None:
    """Why fn cannot be called as fn(<expected parameters, positionally>), or None if it can."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None  # a builtin or C callable without a signature: let the call decide
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    found = [p.name for p in positional]
    if found[: len(expected)] != expected:
        return f"the parameters must be ({', '.join(expected)}), in this order; found ({', '.join(found)})"
    extra = [p.name for p in positional[len(expected) :] if p.default is p.empty]
    extra += [p.name for p in parameters if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    if extra:
        return f"extra parameters without a default value: {', '.join(extra)}"
    return None


def describe_output(out: object) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """What the grader needs to judge the returned object, and its values if it is a tensor."""
    kind = type(out)
    info: dict[str, Any] = {"type": f"{kind.__module__}.{kind.__qualname__}"}
    if not isinstance(out, torch.Tensor):
        return info, {}
    info |= {"shape": list(out.shape), "dtype": str(out.dtype).removeprefix("torch."), "device": out.device.type}
    if info["dtype"] not in wire.DTYPES:
        return info, {}
    plain = out.detach().as_subclass(torch.Tensor) if kind is not torch.Tensor else out.detach()
    return info, {"output": plain.cpu()}


def run_case(fn: Callable, header: dict[str, Any], tensors: dict[str, torch.Tensor], submission: str, guard: Guard) -> tuple[dict, dict]:
    """Both calls of one case under the guard; a forbidden use found anywhere is reported."""
    guard.found.clear()
    with guard.watching():
        reply, sent = _run_calls(fn, header, tensors, submission)
    if guard.found:
        return reply | {"forbidden": "used " + ", ".join(guard.found) + " (write it yourself from elementary tensor operations)"}, {}
    return reply, sent


def _run_calls(fn: Callable, header: dict[str, Any], tensors: dict[str, torch.Tensor], submission: str) -> tuple[dict, dict]:
    num_heads = header["num_heads"]
    names, differentiable = header["inputs"], header["differentiable"]  # call order; gradient inputs
    grad_output = tensors["grad_output"]
    reply: dict[str, Any] = {"kind": "result", "name": header["name"]}
    sent: dict[str, torch.Tensor] = {}

    # 1. The plain call, on copies we send back afterwards so the grader can see any change.
    args = {name: tensors[name].clone() for name in names}
    start = time.perf_counter()
    try:
        out = fn(*args.values(), num_heads)
    except BaseException as error:  # noqa: BLE001 - every failure of the submission is reported
        return reply | {"phase": "forward"} | _error_report(error, submission), {}
    reply["seconds"] = time.perf_counter() - start
    reply["output"], sent = describe_output(out)
    sent |= {f"after_{name}": tensor for name, tensor in args.items()}

    # 2. The gradient call: fresh leaves, the grader's upstream gradient.
    if "output" not in sent or tuple(sent["output"].shape) != tuple(grad_output.shape):
        return reply, sent
    leaves = {name: tensors[name].clone().requires_grad_(name in differentiable) for name in names}
    try:
        out = fn(*leaves.values(), num_heads)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            wrt = [leaves[name] for name in differentiable]
            grads = torch.autograd.grad(out, wrt, grad_outputs=grad_output.to(out.dtype), allow_unused=True)
            reply["differentiable"] = True
        else:
            grads = [None] * len(differentiable)
            reply["differentiable"] = False
    except BaseException as error:  # noqa: BLE001
        return reply | {"phase": "gradient"} | _error_report(error, submission), sent
    for name, grad in zip(differentiable, grads, strict=True):
        sent[f"grad_{name}"] = torch.zeros_like(tensors[name]) if grad is None else grad.detach()
    return reply, sent


def main(argv: list[str]) -> None:
    config = json.loads(argv[0])
    if "socket" in config:  # in a container: one Unix socket, bind-mounted, carries both directions
        channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        channel.connect(config["socket"])
        requests, results = channel.makefile("rb"), channel.makefile("wb")
    else:  # a pipe pair inherited from the grader
        requests = os.fdopen(config["request_fd"], "rb")
        results = os.fdopen(config["result_fd"], "wb")
    submission = config["submission"]
    guard = Guard(config["forbidden_functions"], config["forbidden_operators"], submission)
    torch.set_num_threads(1)

    # Wait for the grader to finish setting our limits before any submission code runs.
    header, _ = wire.read_frame(requests)
    assert header["kind"] == "start"
    try:
        module = load_submission(submission)
    except BaseException as error:  # noqa: BLE001
        wire.write_frame(results, {"kind": "import_failed"} | _error_report(error, submission))
        return
    fn = getattr(module, config["entry_point"], None)
    if fn is None:
        problem = f"the file defines no function named {config['entry_point']}"
    elif not callable(fn):
        problem = f"{config['entry_point']} is not a function (it is of type {type(fn).__name__})"
    else:
        problem = signature_problem(fn, config["parameters"])
    if problem:
        wire.write_frame(results, {"kind": "invalid", "message": problem})
        return
    wire.write_frame(results, {"kind": "ready"})

    while True:
        try:
            header, tensors = wire.read_frame(requests)
        except EOFError:
            return
        if header["kind"] != "case":
            return
        reply, sent = run_case(fn, header, tensors, submission, guard)
        wire.write_frame(results, reply, sent)


if __name__ == "__main__":
    main(sys.argv[1:])
