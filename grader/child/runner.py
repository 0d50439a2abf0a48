"""Runs inside the child process: loads the submission, then answers one request per case.

The grader sends frames on one descriptor and reads ours on another (see wire.py); the
submission's own prints go to stdout/stderr, which the grader drains separately. Nothing here
decides a verdict: we only report what happened and return raw tensors.
"""

import gc
import hashlib
import importlib
import inspect
import io
import json
import os
import socket
import sys
import time
import traceback
from collections.abc import Callable
from types import CodeType, ModuleType, TracebackType
from typing import Any, NamedTuple, NoReturn

import torch

from . import vjp, wire
from .capabilities import allowed, arrays, builtins, callers, checks, classes, relays, rewrite, slots, standins
from .guard import TAMPERED, Guard
from .vjp import vector_jacobian

wire.load_tensor_modules()  # now, while sys.modules holds the real numpy and torch

# What torch imports on the first use of some allowed functions (a decomposition's dynamo guard:
# torch.addr under torch.vmap; torch.broadcast_shapes): 1.5 s quiet and hundreds of modules, which
# on a loaded machine took a first case past its time limit. The pool's
# server imports them before it forks (they start no thread); a single child, which grades one
# file, does not pay for them unless its file calls for them.
LAZY_TORCH_MODULES = ("torch._dynamo", "torch.fx.experimental.symbolic_shapes")
TORCH_CACHE_VARIABLE = "TORCHINDUCTOR_CACHE_DIR"

# An allocation failure, told apart from a message that merely says so: the memory flag of a reply
# (grader/judge.py reads it as memory_limit_exceeded) is set only for a MemoryError or a RuntimeError
# in the exact format of torch's CPU allocator, and only when the submission did not raise it itself
# (see _allocation_failed). Bound here, when the child starts, before any submission code runs.
import dis as _dis  # noqa: E402 - kept beside the one function that uses them
import re as _re  # noqa: E402

# c10/core/impl/alloc_cpu.cpp, as torch 2.13 words it (posix_memalign refused; or malloc returned null).
TORCH_ALLOCATOR_FAILURE = _re.compile(
    r"\[enforce fail at alloc_cpu\.cpp:\d+\] (?:err == 0|data)\. DefaultCPUAllocator: "
    r"(?:can't allocate memory: you tried to allocate \d+ bytes\. Error code \d+ \([^()\n]*\)|not enough memory: you tried to allocate \d+ bytes\.)"
)
_RAISING = frozenset(_dis.opmap[name] for name in ("RAISE_VARARGS", "RERAISE") if name in _dis.opmap)
# Where an exception thrown into a generator or coroutine (gen.throw(), coro.throw()) appears to arise.
_RESUMING = frozenset(_dis.opmap[name] for name in ("YIELD_VALUE", "RESUME", "RETURN_GENERATOR", "SEND", "CLEANUP_THROW", "END_SEND") if name in _dis.opmap)
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _allocation_failed(error: BaseException) -> bool:
    """Whether error is an allocation failure that the interpreter or torch raised: a MemoryError, or
    torch's allocator RuntimeError word for word, whose traceback passes through no `raise` or
    re-raise and no point where an exception is thrown into a generator or coroutine: each frame it
    left was at an operation (a call, an operator). A submission that raises RuntimeError("... out
    of memory") or MemoryError() itself, or throws one into a generator, or raises one given the
    traceback of another exception (with_traceback), gets runtime_error."""
    kind = type(error)  # never error.__class__ nor isinstance(): no code of the submission's runs here
    if not (issubclass(kind, MemoryError) or (kind is RuntimeError and TORCH_ALLOCATOR_FAILURE.fullmatch(RuntimeError.__str__(error)))):
        return False
    tb = error.__traceback__
    if tb is None:
        return False
    while tb is not None:
        code = tb.tb_frame.f_code
        if not 0 <= tb.tb_lasti < len(code.co_code):
            return False
        operation = code.co_code[tb.tb_lasti]
        if operation in _RAISING or (code.co_flags & _GENERATOR_FLAGS and operation in _RESUMING):
            return False
        tb = tb.tb_next
    return True


REPEATS_SHOWN = 3  # as Python prints a traceback: a line repeated more often is shown 3 times, then counted


def submission_traceback(tb: TracebackType | None, submission: str) -> str:
    """The traceback's frames in the submission's own file, as Python prints them, a line repeated
    more than 3 times in a row counted instead of shown. Only the frames shown are looked up: a
    recursion 1,000 frames deep costs 3."""
    runs: list[list[Any]] = []  # [code, line, the traceback entries kept, how many in all]
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename == submission:
            if runs and runs[-1][0] is frame.f_code and runs[-1][1] == tb.tb_lineno:
                runs[-1][3] += 1
            else:
                runs.append([frame.f_code, tb.tb_lineno, [], 1])
            if len(runs[-1][2]) < REPEATS_SHOWN:
                runs[-1][2].append(tb)
        tb = tb.tb_next
    kept = None  # a traceback of the entries shown, innermost last
    for entry in reversed([entry for run in runs for entry in run[2]]):
        kept = TracebackType(kept, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    shown = iter(traceback.format_list(traceback.extract_tb(kept)))
    text = []
    for run in runs:
        text += [next(shown) for _ in run[2]]
        if run[3] > REPEATS_SHOWN:
            more = run[3] - REPEATS_SHOWN
            text.append(f"  [Previous line repeated {more} more time{'s' if more > 1 else ''}]\n")
    return "".join(text)


def _error_report(error: BaseException, submission: str) -> dict[str, Any]:
    """The exception, with traceback frames limited to the submission's own file."""
    text = submission_traceback(error.__traceback__, submission) + "".join(traceback.format_exception_only(error))
    memory = _allocation_failed(error)
    if isinstance(error, SystemExit):
        text = f"the submission called exit({error.code!r})\n" + text
    return {"error": text.replace(submission, os.path.basename(submission)), "memory": memory}


MODULE_NAME = "candidate_submission"


class Compiled(NamedTuple):
    """A file read and compiled ahead of its run: its bytes' hash ("" when they could not be read),
    and the code, or why there is none (raised when the run asks for the code)."""

    sha256: str
    code: CodeType | None
    error: BaseException | None


def compile_ahead(path: str) -> Compiled:
    """The file compiled with the capability layer's rewrite (capabilities/rewrite.py), in the child
    before the guard is armed. Nothing of the file runs here; load_submission runs the code only once the start
    frame says the grader checked these very bytes, and raises what went wrong here then."""
    sha256 = ""
    try:
        with open(path, "rb") as f:
            source = f.read()
        sha256 = hashlib.sha256(source).hexdigest()
        return Compiled(sha256, rewrite.compile_submission(source.decode("utf-8-sig"), path), None)
    except BaseException as error:  # noqa: BLE001 - a file that cannot be read or compiled is told once the run starts
        return Compiled(sha256, None, error)


def load_submission(path: str, sha256: str, capabilities: checks.Capabilities | None, compiled: Compiled | None = None) -> ModuleType:
    """Run the file as a fresh module, compiled from the very bytes the grader checked (their hash
    is in the start frame) as Python decodes them, after the capability layer's rewrite, with the
    restricted built-ins (compiled: the same, done ahead by compile_ahead). Its folder is not put on
    sys.path, and no import machinery reads it. capabilities None (the grader's own tests of the
    other walls): as plain Python."""
    module = ModuleType(MODULE_NAME)
    if capabilities is None:
        with open(path, "rb") as f:
            source = f.read()
        _check_hash(hashlib.sha256(source).hexdigest(), sha256)
        code = compile(source.decode("utf-8-sig"), path, "exec", dont_inherit=True)
        vars(module)["__file__"] = path
    else:
        compiled = compiled or compile_ahead(path)
        if compiled.sha256:  # (else the file could not be read: compiled.error says why)
            _check_hash(compiled.sha256, sha256)
        if compiled.error is not None:
            raise compiled.error
        code = compiled.code
        capabilities.trust(code)
        vars(module).update(capabilities.namespace(MODULE_NAME))
    sys.modules[MODULE_NAME] = module  # dataclasses and enum look the module up by name
    exec(code, vars(module))  # noqa: S102 - the submission, rewritten, with restricted built-ins
    return module


def _check_hash(found: str, checked: str) -> None:
    if found != checked:
        raise RuntimeError("the grader's copy of the submission is not the text it checked (a fault of the grader)")


def signature_problem(fn: Callable, expected: list[str], keywords: Any = ()) -> str | None:
    """Why fn cannot be called as fn(<expected parameters, positionally, those in keywords by name>),
    or None if it can. A catch-all *args (a decorator without functools.wraps) accepts the
    positional ones, a **kwargs the keyword ones: the call decides."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except Exception:  # noqa: BLE001 - a builtin, a C callable or an odd object: let the call decide
        return None
    wanted = [name for name in expected if name not in keywords]
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    found = [p.name for p in positional]
    catch_all = any(p.kind == p.VAR_POSITIONAL for p in parameters)
    named = wanted[: len(found)] if catch_all else wanted
    shown = ", ".join(name if name not in keywords else f"{name}=..." for name in expected)
    if found[: len(wanted)] != named:
        return f"the parameters must be ({shown}), in this order; found ({', '.join(found)})"
    by_name = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if (missing := [name for name in keywords if name not in by_name]) and not any(p.kind == p.VAR_KEYWORD for p in parameters):
        return f"the parameters must be ({shown}): {', '.join(missing)} must be accepted by name; found ({', '.join(p.name for p in parameters)})"
    extra = [p.name for p in positional[len(wanted) :] if p.default is p.empty and p.name not in keywords]
    extra += [p.name for p in parameters if p.kind == p.KEYWORD_ONLY and p.default is p.empty and p.name not in keywords]
    if extra:
        return f"extra parameters without a default value: {', '.join(extra)}"
    return None


def entry_point_problem(fn: Any, config: dict[str, Any]) -> str | None:
    """Why the module's entry point cannot be called as the problem calls it, or None: a function
    with the declared parameters, or (config "method") a class whose constructor takes them and
    which has that method."""
    name, method = config["entry_point"], config.get("method")
    if method is None:
        if fn is None:
            return f"the file defines no function named {name}"
        if not callable(fn):
            return f"{name} is not a function (it is of type {type(fn).__name__})"
        return signature_problem(fn, config["parameters"], config.get("keywords", ()))
    if fn is None:
        return f"the file defines no class named {name}"
    if not isinstance(fn, type):
        return f"{name} is not a class (it is of type {type(fn).__name__}): define class {name} with a method {method}"
    if not callable(inspect.getattr_static(fn, method, None)):
        return f"the class {name} has no method {method}"
    problem = signature_problem(fn, config["parameters"], config.get("keywords", ()))
    return f"{name}(...): {problem}" if problem else None


def _class_name(kind: type) -> str:
    """module.qualname of a class, read from the type's own slots (no code of the class runs)."""
    module = type.__dict__["__module__"].__get__(kind)
    qualname = type.__dict__["__qualname__"].__get__(kind)
    return f"{module}.{qualname}" if isinstance(module, str) else qualname


def describe_output(out: object) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """What the grader needs to judge the returned object, and a copy of its values when it is a
    plain strided dense tensor of a dtype the wire carries. Nothing here trusts what the object
    says about itself: "plain" is type(out) is torch.Tensor, and a subclass gives no more than its
    name. "type" reads "torch.Tensor" only for a plain strided dense tensor."""
    kind = type(out)
    if kind is not torch.Tensor:
        if issubclass(kind, torch.Tensor):
            return {"type": f"subclass of torch.Tensor (a class that calls itself {_class_name(kind)})", "plain": False}, {}
        return {"type": f"non-tensor object of class {_class_name(kind)}", "plain": False}, {}
    layout, nested, quantized = str(out.layout), out.is_nested, out.is_quantized
    info: dict[str, Any] = {
        "type": "torch.Tensor",
        "plain": True,
        "layout": layout,
        "shape": None if nested else list(out.shape),  # a nested tensor has no single shape
        "dtype": str(out.dtype).removeprefix("torch."),
        "device": out.device.type,
    }
    if out.layout != torch.strided or nested or quantized:
        info["type"] = f"{'nested ' if nested else 'quantized ' if quantized else ''}torch.Tensor with layout {layout}"
        return info, {}
    if info["dtype"] not in wire.ITEM_BYTES or info["device"] != "cpu":
        return info, {}
    return info, {"output": out.detach().clone()}


def explain_forbidden(found: list[str], _tampered: str = TAMPERED) -> str:
    """The reply's "forbidden" text: the uses found (each names its route and line), then any
    tampering with the guard."""
    uses = [f for f in found if not f.startswith(_tampered)]
    text = f"used {'; '.join(uses)}; see the Rules in the statement for what may be used" if uses else ""
    return "; ".join([text] * bool(uses) + [f for f in found if f not in uses]) or "the runtime guard found a forbidden use"


_write = os.write  # bound before any submission code runs


def label_output(what: str) -> None:
    """Tell the grader that what the submission prints from now on belongs to `what` ("import", or
    "<case> forward" or "<case> gradient"): one label line on stdout and on stderr, between
    what it printed before and what it prints next (grader/sandbox/output.py CappedBuffer)."""
    line = wire.OUTPUT_LABEL + what.encode() + b"\n"
    for fd in (1, 2):
        try:
            _write(fd, line)
        except OSError:  # the submission closed the stream: nothing it prints there arrives anyway
            pass


Labeller = Callable[[str], None]


def _no_label(what: str) -> None:
    """In the grader's own process (tests, benchmarks): nothing to tell apart."""


def run_case(fn: Callable, header: dict[str, Any], tensors: dict[str, torch.Tensor], submission: str, label: Labeller = _no_label) -> tuple[dict, dict]:
    """The calls of one case, and what they returned (the guard's findings are added by main): a
    function's plain call and gradient call, or a class constructed and its method called step by
    step. label(what) is called before each call (label_output in the child)."""
    try:
        if "method" in header:
            return _run_steps(fn, header, tensors, submission, label)
        return _run_calls(fn, header, tensors, submission, label)
    except BaseException as error:  # noqa: BLE001 - reading what the submission returned failed
        return {"kind": "result", "name": header["name"], "phase": "forward"} | _error_report(error, submission), {}


def _arguments(call: list[list[Any]], tensor: Callable[[str], torch.Tensor], keywords: Any = (), step: int | None = None) -> tuple[list[Any], dict[str, Any]]:
    """A call's positional and keyword arguments from its entries (grader/case.py): [name, "tensor"],
    [name, "tensors", count] (a list of tensors), or [name, value] (a list value is a tuple of
    floats); tensor(wire name) gives each tensor."""
    positional: list[Any] = []
    named: dict[str, Any] = {}
    for entry in call:
        name, kind = entry[0], entry[1]
        if kind == "tensor":
            value: Any = tensor(wire.tensor_name(name, step=step))
        elif kind == "tensors":
            value = [tensor(wire.tensor_name(name, index, step)) for index in range(entry[2])]
        else:
            value = tuple(kind) if isinstance(kind, list) else kind
        if name in keywords:
            named[name] = value
        else:
            positional.append(value)
    return positional, named


def _wire_names(call: list[list[Any]], step: int | None = None) -> list[str]:
    """The wire names of a call's tensor arguments, in call order."""
    names = []
    for entry in call:
        if entry[1] == "tensor":
            names.append(wire.tensor_name(entry[0], step=step))
        elif entry[1] == "tensors":
            names += [wire.tensor_name(entry[0], index, step) for index in range(entry[2])]
    return names


def _run_calls(fn: Callable, header: dict[str, Any], tensors: dict[str, torch.Tensor], submission: str, label: Labeller = _no_label) -> tuple[dict, dict]:
    call, differentiable = header["call"], header["differentiable"]  # [name, "tensor" or a scalar's value] in call order; gradient inputs
    returns, count = header["returns"], header["outputs"]  # "tensor", "tuple" or "none"; how many outputs
    keywords = header.get("keywords", ())
    upstream = [tensors[f"upstream_{i}"] for i in range(count)] if differentiable else []
    reply: dict[str, Any] = {"kind": "result", "name": header["name"]}
    sent: dict[str, torch.Tensor] = {}
    names = _wire_names(call)

    # 1. The plain call, on copies; they are copied again as soon as it returns, so that a change
    # is seen even if the gradient call puts them back.
    args = {name: tensors[name].clone() for name in names}
    label(f"{header['name']} forward")
    start = time.perf_counter()
    try:
        positional, named = _arguments(call, args.__getitem__, keywords)
        out = fn(*positional, **named)
    except BaseException as error:  # noqa: BLE001 - every failure of the submission is reported
        return reply | {"phase": "forward"} | _error_report(error, submission), {}
    reply["seconds"] = time.perf_counter() - start
    after = {wire.after_name(name): tensor.clone() for name, tensor in args.items()}
    if returns == "tensor":
        reply["output"], sent = describe_output(out)
    elif returns == "tuple":
        reply["output"], reply["parts"], sent = describe_tuple(out, count)
    sent |= after

    # 2. The gradient call: fresh leaves, the grader's upstream gradients.
    outputs = ["output"] if returns == "tensor" else [f"output_{i}" for i in range(count)]
    if not differentiable or any(name not in sent or tuple(sent[name].shape) != tuple(u.shape) for name, u in zip(outputs, upstream, strict=True)):
        return reply, sent
    leaves = {name: tensors[name].clone().requires_grad_(name in differentiable) for name in names}
    label(f"{header['name']} gradient")
    try:
        positional, named = _arguments(call, leaves.__getitem__, keywords)
        out = fn(*positional, **named)
        outs = (out,) if returns == "tensor" else tuple(tuple.__getitem__(out, i) for i in range(tuple.__len__(out))) if isinstance(out, tuple) else ()
        if len(outs) == count and all(isinstance(o, torch.Tensor) for o in outs) and any(o.requires_grad for o in outs):
            wrt = [leaves[name] for name in differentiable]
            grads = vector_jacobian(outs, wrt, tuple(upstream))
            reply["differentiable"] = True
        else:
            grads = [None] * len(differentiable)
            reply["differentiable"] = False
    except BaseException as error:  # noqa: BLE001
        return reply | {"phase": "gradient"} | _error_report(error, submission), sent
    for name, grad in zip(differentiable, grads, strict=True):
        sent[f"grad_{name}"] = torch.zeros_like(tensors[name]) if grad is None else grad.detach().clone()
    return reply, sent


def _run_steps(cls: Callable, header: dict[str, Any], tensors: dict[str, torch.Tensor], submission: str, label: Labeller = _no_label) -> tuple[dict, dict]:
    """A class's case: constructed once with the case's arguments (copies), then its method called
    once per step with that step's arguments (copies); after each step, a copy of every tensor
    argument, the constructor's and the step's, as the step left it (after_<name>@<step>): the
    parameters it updates by contract are judged by them, the others must be unchanged."""
    reply: dict[str, Any] = {"kind": "result", "name": header["name"]}
    sent: dict[str, torch.Tensor] = {}
    args = {name: tensors[name].clone() for name in _wire_names(header["call"])}
    label(f"{header['name']} forward")
    start = time.perf_counter()
    try:
        positional, named = _arguments(header["call"], args.__getitem__, header.get("keywords", ()))
        instance = cls(*positional, **named)
        for step, call in enumerate(header["steps"], 1):
            own = {name: tensors[name].clone() for name in _wire_names(call, step)}
            positional, named = _arguments(call, own.__getitem__, (), step)
            getattr(instance, header["method"])(*positional, **named)
            sent |= {wire.after_name(name, step): tensor.clone() for name, tensor in (args | own).items()}
    except BaseException as error:  # noqa: BLE001 - every failure of the submission is reported
        return reply | {"phase": "forward"} | _error_report(error, submission), {}
    reply["seconds"] = time.perf_counter() - start
    return reply, sent


def describe_tuple(out: object, count: int) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, torch.Tensor]]:
    """A tuple-returning problem's result: the object's own description (a tuple, a named tuple
    included, and its length), each element's (describe_output), and a copy of each element the wire
    carries, as output_<i>. The elements are read with tuple's own slots, never the object's methods
    (a subclass's __len__ or __getitem__ does not run)."""
    kind = type(out)
    if not issubclass(kind, tuple):
        return {"type": f"object of class {_class_name(kind)}", "plain": False}, [], {}
    length = tuple.__len__(out)
    info = {"type": "tuple", "plain": True, "length": length}
    if length != count:
        return info, [], {}
    parts, sent = [], {}
    for index in range(count):
        part, values = describe_output(tuple.__getitem__(out, index))
        parts.append(part)
        if "output" in values:
            sent[f"output_{index}"] = values["output"]
    return info, parts, sent


def unbuffered_output() -> None:
    """Everything the submission prints reaches the grader at once, so that nothing is lost when
    the process is killed or ends with os._exit (as python -u does)."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        raw = io.FileIO(fd, "w", closefd=False)
        setattr(sys, name, io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", write_through=True))


def warm_up(config: dict[str, Any]) -> None:
    """What the first armed call would otherwise pay for, done once in the pool's server before it
    forks: the lazy imports and torch's one-time set-up, under a guard that is pushed for the
    warm-up only and never armed (the server must stay able to fork). Each forked child arms its
    own guard in serve(), as a single child does."""
    torch.set_num_threads(1)  # before any computation: no OpenMP threads in a process that forks
    # torch._dynamo makes its cache folder at import (under tempfile.gettempdir(), which must be
    # writable): the server can write nothing, so the folder is named /tmp, which exists; nothing is
    # written, and the variable (which torch sets) is as it was after.
    before = os.environ.get(TORCH_CACHE_VARIABLE)
    os.environ[TORCH_CACHE_VARIABLE] = "/tmp"
    try:
        for name in LAZY_TORCH_MODULES:
            importlib.import_module(name)
    finally:
        if before is None:
            os.environ.pop(TORCH_CACHE_VARIABLE, None)
        else:
            os.environ[TORCH_CACHE_VARIABLE] = before
    guard = prepared_guard(config["rules"], "")
    checks.Capabilities(config | {"submission": ""}, guard.refuse)  # the allowed modules imported and the lists resolved, once
    with guard.watching():
        guard.warm_up(config["gradient"])
    guard.override_kernels()  # here, once: each forked child finds them in place
    # Everything made so far moves to a generation no collection visits: a child's first full
    # collection would otherwise walk (and so copy, page by page) the whole heap it shares with
    # the server, a quarter of a second each.
    gc.collect()
    gc.freeze()


_PREPARED: list[tuple[str, Guard]] = []  # the guard this process made, with the rules it was made for


def prepared_guard(rules: dict[str, Any], submission: str) -> Guard:
    """The process's guard for these rules, made once: the warm pool's server makes it and puts its
    kernels in place before it forks, and each child takes it over for its own submission."""
    key = json.dumps(rules, sort_keys=True)
    if not _PREPARED or _PREPARED[0][0] != key:
        _PREPARED[:] = [(key, Guard(rules, submission))]
    guard = _PREPARED[0][1]
    guard.submission = submission
    return guard


def main(argv: list[str]) -> None:
    unbuffered_output()
    config = json.loads(argv[0])
    if "socket" in config:  # in a container: one Unix socket, bind-mounted, carries both directions
        channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        channel.connect(config["socket"])
        requests, results = channel.makefile("rb"), channel.makefile("wb")
    else:  # a pipe pair inherited from the grader
        requests = os.fdopen(config["request_fd"], "rb")
        results = os.fdopen(config["result_fd"], "wb")
    serve(config, requests, results)


def _answer_refused(requests: io.BufferedReader, results: io.BufferedWriter, read_frame: Callable, text_frame: Callable, text: str) -> None:
    """After a refusal during a case: every later request is answered with the same finding, and
    the submission is not called again."""
    while True:
        try:
            header, _ = read_frame(requests)
        except EOFError:
            return
        if header["kind"] == "case":
            results.write(text_frame({"kind": "result", "name": header["name"], "forbidden": text}))
        elif header["kind"] == "finish":
            results.write(text_frame({"kind": "finished", "forbidden": text}))
            return
        else:
            return
        results.flush()


def serve(config: dict[str, Any], requests: io.BufferedReader, results: io.BufferedWriter) -> None:
    """Arm the guard, wait for the start frame, load the submission and answer one request per case."""
    submission = config["submission"]
    guard = prepared_guard(config["rules"], submission)
    at: list[Any] = [None, 0]  # the case being run (None: the import), and the findings told so far

    def refused(what: str) -> NoReturn:
        """A capability refused (capabilities/checks.py): the run ends here, in this call, so that nothing
        the submission's code catches or binds on the way ever runs again. This case's reply, and
        every later one, is the finding; no code of the submission is called again. The process
        ends even when recording or telling fails (a refusal at the stack's limit raises
        RecursionError here, which the submission could catch and go on): the process then ends
        with a status the grader reads as a forbidden use, never goes on."""
        try:
            guard.record(what)
            text = explain(findings(True)[at[1] :])
            if at[0] is None:
                results.write(text_frame({"kind": "forbidden", "forbidden": text}))
            else:
                results.write(text_frame({"kind": "result", "name": at[0], "forbidden": text}))
                results.flush()
                _answer_refused(requests, results, read_frame, text_frame, text)
            results.flush()
        except BaseException:
            _exit(untold)
        _exit(0)

    capabilities = checks.Capabilities(config, refused)
    arrays.refuse_object_arrays(capabilities.refuse_object_array, wire.EXIT_REFUSED_UNTOLD)
    compiled = compile_ahead(submission)  # (nothing of it runs before the start frame)
    sys.argv[:] = [os.path.basename(submission)]  # the channel's descriptors are nobody's business
    torch.set_num_threads(1)
    # Armed for good while the grader checks the policy: the first call finds everything imported.
    protected = [sys.modules[__name__], wire, vjp, allowed, arrays, builtins, callers, checks, classes, relays, rewrite, slots, standins]
    guard.arm(protect=protected, gradient=config["gradient"])
    # What runs after the submission's code is bound now, in this frame, whose names the
    # submission cannot replace; the guard's check shows whether what they use was replaced.
    findings, text_frame, explain, count, _exit, untold = guard.findings, guard.text_frame, explain_forbidden, len, os._exit, wire.EXIT_REFUSED_UNTOLD
    read_frame, write_frame, run, label, told = wire.read_frame, wire.write_frame, run_case, label_output, 0

    # Started: torch imported, the guard armed, nothing of the submission's read. A child that ends or
    # stalls before this frame is the grader's fault (protocol.STARTUP).
    write_frame(results, {"kind": "hello"})
    # Wait for the grader to finish setting our limits before any submission code runs.
    header, _ = read_frame(requests)
    assert header["kind"] == "start"
    failed: BaseException | None = None
    label("import")
    try:
        module = load_submission(submission, header["sha256"], capabilities if header["restricted"] else None, compiled)
    except rewrite.RefusedSyntax as error:
        guard.record(str(error))
    except BaseException as error:  # noqa: BLE001
        failed = error
    # What the import did (or tried to hide) decides before anything else: no case is run after a
    # forbidden use at import, even one whose exception the submission caught. It is told before
    # the exception is described, which runs the exception's own code (its __str__ may raise).
    found = findings(True)
    if found:
        results.write(text_frame({"kind": "forbidden", "forbidden": explain(found)}))
        results.flush()
        return
    if failed is not None:
        write_frame(results, {"kind": "import_failed"} | _error_report(failed, submission))
        return
    fn = getattr(module, config["entry_point"], None)
    problem = entry_point_problem(fn, config)
    if problem:
        write_frame(results, {"kind": "invalid", "message": problem})
        return
    write_frame(results, {"kind": "ready"})

    while True:
        try:
            header, tensors = read_frame(requests)
        except EOFError:
            return
        if header["kind"] == "finish":  # after the last case: the whole guard is checked once more
            found = findings(True)
            if count(found) > told:
                results.write(text_frame({"kind": "finished", "forbidden": explain(found[told:])}))
                results.flush()
            else:
                write_frame(results, {"kind": "finished"})
            return
        if header["kind"] != "case":
            return
        name = at[0] = header["name"]
        reply, sent = run(fn, header, tensors, submission, label)
        found = findings(False)  # a forbidden use (even one whose exception was caught), or tampering
        if count(found) > told:
            results.write(text_frame({"kind": "result", "name": name, "forbidden": explain(found[told:])}))
            results.flush()
            told = at[1] = count(found)
        else:
            write_frame(results, reply, sent)


if __name__ == "__main__":
    main(sys.argv[1:])
