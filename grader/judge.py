"""From a submission file to a report: static checks, the child run, per-case judgement, verdict.

Everything that decides a verdict happens here, in the grader's process, from raw tensors the
child returned. The child never sees expected values, the reference or the secret seed.
"""

from __future__ import annotations

import ast
import codecs
import hashlib
import io
import math
import stat
import tempfile
import threading
import time
import tokenize
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from grader import policy, protocol
from grader.child.wire import EXIT_REFUSED_UNTOLD
from grader.notebook import NOTEBOOK_BYTES, NOTEBOOK_SUFFIX, Converted, NotebookError, convert
from grader.protocol import ProtocolError, need
from grader.results import PASSED, CaseResult, Check, Report, Verdict, deciding_case
from grader.sandbox import IsolationUnavailable
from grader.sandbox.backends import backend_named, start_child
from grader.sandbox.child import Child, ChildGone, ChildTimeout, Exit
from grader.sandbox.limits import PIDS_MAX
from grader.spec import FLOAT, Limits, Output, Spec, seed_public_id

# What needs torch (the cases, the expected outputs, the comparison, the diagnosis) is imported
# inside the functions that use it: grade() starts the child first, so that the child's import of
# torch and the grader's run at the same time instead of one after the other.
if TYPE_CHECKING:
    from torch import Tensor

    from grader.case import Case
    from grader.compare import Closeness
    from grader.diagnosis import Received
    from grader.expected import Expected

CPU_LIMIT_REACHED = 0.9  # of the CPU limit, counted by the grader: a SIGXCPU or SIGKILL below it is not the limit's


@dataclass(frozen=True)
class Prepared:
    """The cases and their expected outputs for one seed: computed once, shared (read-only) by
    every submission of a batch."""

    seed_id: str
    public_only: bool
    cases: list[Case]
    expected: list[Expected]


def prepare(spec: Spec, hidden_seed: str, public_only: bool = False) -> Prepared:
    from grader.cases import make_cases
    from grader.expected import expected_for

    cases = make_cases(spec, hidden_seed, public_only)
    return Prepared(seed_public_id(hidden_seed), public_only, cases, [expected_for(case, spec) for case in cases])


class Rejection(Exception):
    """The whole run gets one verdict without per-case results (a static check or start-up failed)."""

    def __init__(self, verdict: Verdict, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message


# Python 3.11's AST constructor keeps one recursion count for the whole interpreter: two threads
# parsing at once (a batch's workers, the API's) can end one with "SystemError: AST constructor
# recursion depth mismatch", a grader_error for a file that did nothing wrong. One parse at a time,
# a .py file's and a notebook's alike (_parse, and convert's parse of each cell).
_PARSING = threading.Lock()


def _read_bytes(path: Path, limit: int, reject: Callable[[str], Rejection]) -> bytes:
    """The file's bytes, or Rejection saying why they cannot be read (not a regular file, over `limit`)."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise reject("not a regular file")
        if info.st_size > limit:
            raise reject(f"the file is {info.st_size} bytes; the limit is {limit} bytes ({limit // 1024} KiB)")
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as error:
        raise reject(f"cannot be read ({error.strerror})") from None
    if len(data) > limit:
        raise reject(f"the file is over the limit of {limit} bytes")
    return data


def _parse(text: str, name: str, reject: Callable[[str], Rejection], where: Callable[[int], str] = lambda line: f"line {line}") -> ast.Module:
    """The syntax tree of the code, or Rejection(compile_error) saying why there is none; where(L)
    names line L for the message (a notebook's cell and line). Parses under _PARSING."""
    try:
        with _PARSING:
            tree = ast.parse(text, filename=name)
            # What only the compiler finds: a misplaced __future__ import, `return` or `yield` outside a function.
            compile(tree, name, "exec", dont_inherit=True)
            return tree
    except SyntaxError as error:
        at = f"{where(error.lineno)}, column {error.offset}" if error.lineno else "unknown position"
        lines = text.splitlines()
        line = error.text or (lines[error.lineno - 1] if error.lineno and error.lineno <= len(lines) else "")  # (the compiler's errors carry no text)
        shown = f"\n    {line.rstrip()}" if line.strip() else ""
        raise reject(f"syntax error at {at}: {error.msg}{shown}") from None
    except ValueError as error:  # e.g. NUL bytes
        raise reject(f"cannot be parsed: {error}") from None
    except (RecursionError, MemoryError):  # the parser's own limits, on pathological nesting
        raise reject("too deeply nested to parse (an expression or block nested thousands of levels deep); split it into smaller statements") from None


def read_source(path: Path, limit: int) -> tuple[bytes, ast.Module]:
    """The file's bytes and syntax tree, or Rejection(compile_error) saying why not."""

    def reject(why: str) -> Rejection:
        return Rejection(Verdict.COMPILE_ERROR, f"{path.name}: {why}")

    source = _read_bytes(path, limit, reject)
    # A UTF-8 byte-order mark (some editors write one) is not part of the code; Python accepts it
    # when it imports the file, so the bytes for the child keep it.
    bom = len(codecs.BOM_UTF8) if source.startswith(codecs.BOM_UTF8) else 0
    try:
        text = source[bom:].decode("utf-8")
    except UnicodeDecodeError as error:
        offset = bom + error.start
        line = source[:offset].count(b"\n") + 1
        raise reject(f"line {line}: the file is not valid UTF-8 (byte {source[offset]:#04x} at offset {offset})") from None
    # Python decodes a file by its coding declaration: the text checked and the text run must be one.
    try:
        declared, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as error:
        raise reject(f"{error.msg}; submissions are UTF-8: remove the coding declaration") from None
    if declared not in ("utf-8", "utf-8-sig"):
        raise reject(f"the file declares the encoding {declared} (a `# coding:` line); submissions are UTF-8: remove that line")
    tree = _parse(text, path.name, reject)
    if not tree.body:
        what = "it is empty" if not text.strip() else "only comments and blank lines"
        raise Rejection(Verdict.INVALID_SUBMISSION, f"{path.name} holds no code ({what}): submit the file with your solution in it")
    return source, tree


def read_notebook(path: Path, limit: int) -> tuple[bytes, ast.Module, Converted]:
    """A notebook's code cells joined as one file (grader/notebook.py): its bytes, its syntax tree
    and where each line came from; or Rejection saying why not (compile_error for a file that is
    not a notebook or whose code does not parse, invalid_submission for a notebook without code).
    `limit` bounds the code, not the notebook, which also holds the cells' outputs."""

    def reject(why: str, verdict: Verdict = Verdict.COMPILE_ERROR) -> Rejection:
        return Rejection(verdict, f"{path.name}: {why}")

    data = _read_bytes(path, NOTEBOOK_BYTES, reject)
    try:
        with _PARSING:  # convert parses each cell to find its IPython lines
            notebook = convert(data, path.name)
    except NotebookError as error:
        raise reject(str(error), Verdict.INVALID_SUBMISSION if error.no_code else Verdict.COMPILE_ERROR) from None
    source = notebook.source.encode()
    if len(source) > limit:
        raise reject(f"its code cells hold {len(source)} bytes of code; the limit is {limit} bytes ({limit // 1024} KiB)")
    # Python reads the joined file as the child will: a coding declaration in a cell is refused as in a .py file.
    try:
        declared, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as error:
        raise reject(f"{error.msg}; remove the coding declaration from the first cell") from None
    if declared not in ("utf-8", "utf-8-sig"):
        raise reject(f"the first code cell declares the encoding {declared} (a `# coding:` line); remove that line")
    return source, _parse(notebook.source, path.name, reject, notebook.where), notebook


def read_submission(path: Path, limit: int) -> tuple[bytes, ast.Module, Converted | None]:
    """A .py file (read_source) or a Jupyter notebook (read_notebook): the code's bytes, its syntax
    tree, and for a notebook where each line came from."""
    if path.suffix == NOTEBOOK_SUFFIX:
        return read_notebook(path, limit)
    return (*read_source(path, limit), None)


def judge_reply(case: Case, expected: Expected, reply: dict[str, Any], tensors: dict[str, Tensor], spec: Spec, result: CaseResult) -> None:
    """Fill in result's status, failed check and message from the child's reply and raw tensors
    (both checked by grader/protocol.py). Raises ProtocolError when a tensor the next check needs
    is missing. A hidden case's result tells only how far off it is, relative to the tolerance:
    no index, value or count that repeated submissions could read the hidden data from."""

    from grader.compare import HIDDEN_ERROR, bitwise_equal, compare_values, error_to_tolerance

    fail = result.fail

    def fail_hidden(check: Check, headline: str, closeness: Closeness) -> None:
        """A hidden case's numbers: the candidate reads the headline, staff the size of the error too."""
        fail(Verdict.WRONG_ANSWER, check, f"{headline}\n{HIDDEN_ERROR}")
        result.staff_message = f"{headline}\n{error_to_tolerance(closeness)}"

    if reply.get("forbidden"):  # first: the guard's refusal may also have raised an exception
        return fail(Verdict.FORBIDDEN_API, Check.RUNTIME_GUARD, reply["forbidden"])
    if "error" in reply:
        status = Verdict.MEMORY_LIMIT_EXCEEDED if reply.get("memory") else Verdict.RUNTIME_ERROR
        during = "the gradient call (backward through your result)" if reply.get("phase") == "gradient" else "the call"
        return fail(status, Check.EXCEPTION, f"raised during {during}:\n{reply['error'].rstrip()}")

    if problem := _result_problem(reply, spec, case):
        return fail(Verdict.WRONG_ANSWER, *problem)

    detailed = case.public or spec.hidden_case_details
    judged = _judge_properties if spec.judge == "properties" else _judge_outputs
    if not judged(case, expected, tensors, spec, result, fail_hidden, detailed):
        return None
    if not _judge_updated(case, expected, tensors, spec, result, fail_hidden, detailed):
        return None

    changed = [name for name, tensor in _unchanged(case, spec) if not bitwise_equal(tensor, need(tensors, name))]
    if changed:
        shown = ", ".join(dict.fromkeys(name.removeprefix("after_").partition("@")[0].rpartition(":")[2].partition(".")[0] for name in changed))
        return fail(Verdict.WRONG_ANSWER, Check.INPUTS, f"modified its input {shown} in place; inputs must be left unchanged")

    gradient_tolerance = spec.tolerance(case.family, case.dtype, gradient=True)
    for name in case.differentiable:
        grad = compare_values(expected.grads[name], need(tensors, f"grad_{name}"), gradient_tolerance, show_values=case.public)
        if detailed:
            result.ratio = max(result.ratio or 0.0, grad.ratio)
        if not grad.passed:
            if detailed:  # the table shows the error of what failed: this gradient, not the outputs
                result.max_abs, result.max_rel, result.tolerance = grad.max_abs, grad.max_rel, gradient_tolerance
            cut = "" if reply.get("differentiable") else " (the result does not require grad: it is cut off from the inputs' autograd graph)"
            headline = f"the gradient reaching {name} is wrong{cut}"
            if not detailed:
                return fail_hidden(Check.GRADIENT, headline, grad)
            return fail(Verdict.WRONG_ANSWER, Check.GRADIENT, f"{headline}\n{grad.message}")
    result.status = PASSED


FailHidden = Callable[[Check, str, "Closeness"], None]


def _judge_outputs(case: Case, expected: Expected, tensors: dict[str, Tensor], spec: Spec, result: CaseResult, fail_hidden: FailHidden, detailed: bool) -> bool:
    """Each returned output against the reference's, within its tolerance: False once one fails."""
    from grader.compare import bitwise_equal, compare_values

    for index, (declared, want) in enumerate(zip(spec.returned, expected.outputs, strict=True)):
        got = need(tensors, "output" if spec.returns == "tensor" else f"output_{index}")
        headline = f"the values of {declared.what} are not close to the expected ones"
        if declared.exact:
            if not bitwise_equal(want.to(got.dtype), got):
                if detailed:  # no tolerance to be within: any difference is infinitely past it
                    result.ratio = math.inf
                result.fail(Verdict.WRONG_ANSWER, Check.VALUES, f"{headline} (compared exactly: {declared.dtype})")
                return False
            continue
        tolerance = spec.tolerance(case.family, case.dtype, declared)
        values = compare_values(want, got, tolerance, show_values=case.public, scale_floor=declared.scale_floor)
        if detailed and (index == 0 or not values.passed):
            result.max_abs, result.max_rel, result.tolerance = values.max_abs, values.max_rel, tolerance
        if detailed:
            result.ratio = max(result.ratio or 0.0, values.ratio)
        if not values.passed:
            _fail_values(result, fail_hidden, detailed, headline, values)
            return False
    return True


def _judge_properties(
    case: Case, expected: Expected, tensors: dict[str, Tensor], spec: Spec, result: CaseResult, fail_hidden: FailHidden, detailed: bool
) -> bool:
    """The returned outputs by the package's property check (problem/<id>/properties.py): False once
    a property does not hold. The table shows the worst property's error, relative to the tolerance."""
    from grader.compare import Closeness
    from grader.expected import check_properties

    count = len(spec.returned)
    outputs = tuple(need(tensors, "output" if spec.returns == "tensor" else f"output_{i}") for i in range(count))
    found = check_properties(case, outputs, spec)
    tolerance = spec.tolerance(case.family, case.dtype)
    worst = max(found, key=lambda p: p.ratio if p.ratio == p.ratio else math.inf)
    if detailed:
        result.max_abs, result.max_rel, result.tolerance = worst.error, worst.ratio * tolerance, tolerance
        result.ratio = max(result.ratio or 0.0, worst.ratio if worst.ratio == worst.ratio else math.inf)
    failing = next((p for p in found if not p.holds), None)
    if failing is None:
        return True
    headline = f"the result does not have the property: {failing.claim}"
    if not detailed:
        fail_hidden(Check.VALUES, headline, Closeness(False, failing.error, failing.error, "", failing.ratio))
    else:
        result.fail(Verdict.WRONG_ANSWER, Check.VALUES, f"{headline} is {failing.error:.3g}, where the tolerance allows {failing.allowed:.3g}")
    return False


def _judge_updated(case: Case, expected: Expected, tensors: dict[str, Tensor], spec: Spec, result: CaseResult, fail_hidden: FailHidden, detailed: bool) -> bool:
    """Each parameter the call updates in place by contract, as the call (each step of a class's case,
    in order) left it, against the reference's: False once one fails."""
    from grader.compare import compare_values
    from grader.expected import updated_output

    for name, want in expected.updated.items():
        got = need(tensors, name)
        declared = updated_output(spec, name)
        wire, _, step = name.removeprefix("after_").partition("@")
        index = wire.partition(".")[2]
        what = f"{declared.what}{f'[{index}]' if index else ''}{f' after step {step}' if step else ''}"
        if got.dtype != want.to(got.dtype).dtype or tuple(got.shape) != tuple(want.shape):
            why = f"{what} changed its shape or dtype in place: update it in place, keeping its shape {tuple(want.shape)}"
            result.fail(Verdict.WRONG_ANSWER, Check.SHAPE, why)
            return False
        tolerance = spec.tolerance(case.family, case.dtype, declared)
        values = compare_values(want, got, tolerance, show_values=case.public, scale_floor=declared.scale_floor)
        if detailed:
            result.ratio = max(result.ratio or 0.0, values.ratio)
            if result.max_rel is None or not values.passed or values.max_rel > result.max_rel:
                result.max_abs, result.max_rel, result.tolerance = values.max_abs, values.max_rel, tolerance
        if not values.passed:
            _fail_values(result, fail_hidden, detailed, f"the values of {what} are not close to the expected ones", values)
            return False
    return True


def _fail_values(result: CaseResult, fail_hidden: FailHidden, detailed: bool, headline: str, values: Any) -> None:
    """A wrong answer by its values: the comparison's message in full where the case's details are
    shown, the hidden case's short form elsewhere."""
    if detailed:
        result.fail(Verdict.WRONG_ANSWER, Check.VALUES, f"{headline}\n{values.message}")
    else:
        fail_hidden(Check.VALUES, headline, values)


def _unchanged(case: Case, spec: Spec) -> list[tuple[str, Tensor]]:
    """(the name the child sends it back under, the tensor as sent) for every tensor argument that
    must come back unchanged: all but the parameters updated by contract, after the call, or after
    each step of a class's case (the constructor's and that step's own)."""
    from grader.child.wire import after_name

    updated = set(spec.updated)
    kept = {name: tensor for name, tensor in case.inputs.items() if name.partition(".")[0] not in updated}
    if not case.method:
        return [(after_name(name), tensor) for name, tensor in kept.items()]
    found = []
    for step in range(1, len(case.steps) + 1):
        found += [(after_name(name, step), tensor) for name, tensor in (kept | case.step_inputs(step)).items()]
    return found


def _result_problem(reply: dict[str, Any], spec: Spec, case: Case) -> tuple[Check, str] | None:
    """Why what the call returned is not of the declared type, shape, dtype or device, or None."""
    out = reply.get("output", {})
    if spec.returns == "none":  # a class's steps, or a function that only updates its parameters: nothing returned is judged
        return None
    if spec.returns == "tensor":
        return _tensor_problem(out, spec.returned[0], case.output_shapes[0], case.dtype, "")
    count = len(spec.returned)
    names = ", ".join(o.name for o in spec.returned)
    if out.get("type") != "tuple":
        return Check.TYPE, f"returned a non-tuple {out.get('type')}; expected a tuple of {count} tensors ({names})"
    if out.get("length") != count:
        length = out.get("length")
        return Check.TYPE, f"returned a tuple of {length} element{'' if length == 1 else 's'}; expected {count} ({names})"
    for index, (declared, shape) in enumerate(zip(spec.returned, case.output_shapes, strict=True)):
        parts = reply.get("parts", [])
        if problem := _tensor_problem(parts[index] if index < len(parts) else {}, declared, shape, case.dtype, f"element {index} ({declared.name}): "):
            return problem
    return None


def _tensor_problem(out: dict[str, Any], declared: Output, shape: tuple[int, ...], case_dtype: str, where: str) -> tuple[Check, str] | None:
    if out.get("type") != "torch.Tensor":
        return Check.TYPE, f"{where}returned a {out.get('type')}; expected a torch.Tensor (exactly, not a subclass)"
    if out.get("shape") != list(shape):
        named = f"{declared.shape} = " if declared.shape else ""
        return Check.SHAPE, f"{where}returned shape {tuple(out.get('shape', ()))}; expected {named}{_shape_text(shape)}"
    dtype = declared.dtype_for(case_dtype)
    if out.get("dtype") != dtype:
        why = ", the dtype of the float inputs" if declared.dtype == FLOAT else ""
        return Check.DTYPE, f"{where}returned dtype {out.get('dtype')}; expected {dtype}{why}"
    if out.get("device") != "cpu":
        return Check.DEVICE, f"{where}returned a tensor on {out.get('device')}; expected it on cpu, where the inputs are"
    return None


def _shape_text(shape: tuple[int, ...]) -> str:
    return f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(map(str, shape))})"


def classify_exit(exit: Exit, limits: Limits, during: str) -> tuple[Verdict, str]:
    """The verdict for a child that ended when it should not have, from how it really ended."""
    name = exit.signal_name
    if exit.oom_kills:
        return Verdict.MEMORY_LIMIT_EXCEEDED, f"used more than {limits.memory_mib} MiB of memory {during} (killed at the limit)"
    if exit.limit == "cpu":
        return Verdict.TIME_LIMIT_EXCEEDED, f"used more than {limits.cpu_seconds} s of CPU time, all processes together, {during}"
    if exit.limit == "total":
        return Verdict.TIME_LIMIT_EXCEEDED, TOTAL_LIMIT.format(limits.total_seconds) + f" {during}"
    # A status of 128 + N reads as signal N behind bubblewrap, whether the kernel sent it or the
    # submission exited with that number: the CPU limit is the verdict only when the CPU counted says so.
    reached = exit.cpu_seconds >= CPU_LIMIT_REACHED * limits.cpu_seconds
    if name in ("SIGXCPU", "SIGKILL") and reached and not exit.killed_by_grader:
        return Verdict.TIME_LIMIT_EXCEEDED, f"used more than {limits.cpu_seconds} s of CPU time {during}"
    if name == "SIGXCPU":
        return Verdict.RUNTIME_ERROR, (
            f"the process ended with the status of SIGXCPU {during}, having used {exit.cpu_seconds:.1f} s of CPU, "
            f"below the limit of {limits.cpu_seconds} s (exit() or os._exit() in the submission?)"
        )
    if name == "SIGXFSZ":
        return Verdict.RUNTIME_ERROR, f"the process ended with the signal of the file-size limit ({limits.file_size_mib} MiB) {during}"
    if name is None and exit.returncode == EXIT_REFUSED_UNTOLD:
        return Verdict.FORBIDDEN_API, (
            f"was refused a forbidden use {during} at the limit of the call stack, where what it was could not be recorded "
            "(use the public API of the allowed modules and your own code: see the Rules in the statement)"
        )
    note = f" after reaching the limit of {PIDS_MAX} processes" if exit.pids_limit_hits else ""
    if name is not None:
        return Verdict.RUNTIME_ERROR, f"the process was killed by {name} {during}{note}"
    return Verdict.RUNTIME_ERROR, f"the process exited with status {exit.returncode} {during}{note} (exit() or os._exit() in the submission?)"


PUBLIC_PASSED = "all {} public cases passed; hidden cases not run"  # never "accepted": the hidden cases decide
TOTAL_LIMIT = "the run reached its total limit of {:g} s of wall time"
MALFORMED = "the submission's process sent malformed data on the grader's channel: "


def _not_started(child: Child, error: Exception, limits: Limits) -> str:
    """Why the sandboxed child never started (it ended, stalled or sent garbage before the runner's
    hello, so before any code of the submission's ran): the grader's installation or its machine."""
    if isinstance(error, ChildTimeout):
        what = f"did not start within {limits.startup_seconds:g} s (is the grader's machine overloaded?)"
    elif isinstance(error, ChildGone):
        what = f"ended before it started ({_how_it_ended(child.exit(), limits)})"
        child.finish_output()  # what it said before it ended, read to the end
    else:
        what = f"sent malformed data before it started ({error})"
    said = child.stderr.text().strip()[-1500:]
    return f"the sandboxed child {what}: a fault of the grader's set-up, not of the submission" + (f"; it said:\n{said}" if said else "")


def _how_it_ended(exit: Exit, limits: Limits) -> str:
    """How a child ended before it started, with what the grader counted: the limit that ended it, if any."""
    how = f"killed by {exit.signal_name}" if exit.signal_name else f"exit status {exit.returncode}"
    if exit.oom_kills:
        how += f", at its memory limit of {limits.memory_mib} MiB"
    if exit.limit:
        how += f", at its {'CPU' if exit.limit == 'cpu' else 'total wall-clock'} limit"
    elif exit.killed_by_grader:
        how += ", by the grader"
    return how + f", after {exit.cpu_seconds:.1f} s of CPU"


class _Starting(NamedTuple):
    """The start frame is on its way: what waiting for the child to be ready needs."""

    deadline: float  # for the runner's hello and the submission's loading, together
    problem: tuple[Verdict, str] | None  # why the frame could not be sent (grader_error), as found then


def _send_start(child: Child, source: bytes, restricted: bool, limits: Limits) -> _Starting:
    """Send the start frame without waiting for the answer: the child loads the submission while
    the grader goes on. It carries the hash of the checked text (the child runs only a file with
    those bytes) and whether the capability layer applies."""
    start = {"kind": "start", "sha256": hashlib.sha256(source).hexdigest(), "restricted": restricted}
    deadline = time.monotonic() + limits.startup_seconds
    try:
        child.send(start, None, deadline)
    except (ChildTimeout, ChildGone) as error:
        return _Starting(deadline, (Verdict.GRADER_ERROR, _not_started(child, error, limits)))
    return _Starting(deadline, None)


def _result_of(case: Case) -> CaseResult:
    return CaseResult(case.name, case.family, case.dtype, case.public, case.shape_text())


def _add_the_rest(cases: Sequence[Case], results: list[CaseResult]) -> None:
    """A result, not run, for each case that has none yet (results follow the cases' order)."""
    results += map(_result_of, cases[len(results) :])


def _wait_ready(child: Child, limits: Limits, starting: _Starting, cases: Sequence[Case], results: list[CaseResult]) -> None:
    """Returns once the child has loaded the submission and found the entry point; else adds every
    case to `results`, not run, and raises Rejection saying why."""
    problem = starting.problem or _startup_problem(child, limits, starting.deadline)
    if problem:
        _add_the_rest(cases, results)
        for result in results:
            result.status, result.message = problem[0], "not run: " + problem[1].splitlines()[0]
        raise Rejection(*problem)


def _startup_problem(child: Child, limits: Limits, deadline: float) -> tuple[Verdict, str] | None:
    """None when the child, sent its start frame, loads the submission and finds the entry point; else why not."""
    try:  # the runner's hello: until it comes, no code of the submission's has run
        hello, _ = child.answer(protocol.STARTUP, deadline)
    except (ChildTimeout, ChildGone, ProtocolError) as error:
        return Verdict.GRADER_ERROR, _not_started(child, error, limits)
    if hello["kind"] != "hello":
        return Verdict.GRADER_ERROR, f"the sandboxed child answered {hello['kind']!r} before it had started (a fault of the grader's child code)"
    try:
        reply, _ = child.answer(protocol.LOADED, deadline)
    except (ChildTimeout, ChildGone, ProtocolError) as error:
        verdict, _, message = _outcome(error, child, limits, LOADING)
        return verdict, message
    if reply["kind"] == "import_failed":
        status = Verdict.MEMORY_LIMIT_EXCEEDED if reply.get("memory") else Verdict.RUNTIME_ERROR
        return status, "importing the submission failed:\n" + reply["error"].rstrip()
    if reply["kind"] == "invalid":
        return Verdict.INVALID_SUBMISSION, reply["message"]
    if reply["kind"] == "forbidden":
        return Verdict.FORBIDDEN_API, "importing the file " + reply["forbidden"]
    return None


LOADING = "while loading the submission"  # when a start-up failure happened, as classify_exit words it
LAST_CHECK = "after the last case, before the runtime guard's last check"


def _outcome(error: ChildTimeout | ChildGone | ProtocolError, child: Child, limits: Limits, during: str) -> tuple[Verdict, Check, str]:
    """What a child earns that did not answer a request as it should, from the exception the request
    raised: the verdict, the check it failed and the message. `during` says when, as classify_exit
    words it (LOADING, LAST_CHECK or during a case)."""
    if isinstance(error, ChildTimeout):
        return Verdict.TIME_LIMIT_EXCEEDED, Check.TIME, _timed_out(error, limits, during)
    if isinstance(error, ChildGone):
        verdict, message = classify_exit(child.exit(), limits, during)
        return verdict, Check.PROCESS, message
    child.kill()  # malformed data (or a reply without a tensor the judge needs): nothing it sends next can be trusted
    return Verdict.RUNTIME_ERROR, Check.PROCESS, MALFORMED + str(error)


def _timed_out(timeout: ChildTimeout, limits: Limits, during: str) -> str:
    """Which limit ran out: the run's total, loading the submission's own, or that of one case (a
    case and the runtime guard's last check)."""
    if timeout.limit == "total":
        return TOTAL_LIMIT.format(limits.total_seconds) + (f" {LOADING}" if during == LOADING else "")
    if during == LOADING:
        return f"loading the submission took longer than {limits.startup_seconds:g} s (work at import time?)"
    if timeout.limit == "write":
        # The grader cannot tell a child that will not read from one too busy to: the case's time ran out.
        return f"did not read the case's input within {limits.case_seconds:g} s (the limit for one case): the process stopped reading the grader's requests"
    return f"did not finish within {limits.case_seconds:g} s (the limit for one case)"


def _cases(spec: Spec, hidden_seed: str, public_only: bool, prepared: Prepared | None) -> tuple[Sequence[Case], Callable[[int], Expected]]:
    """The cases, and what gives case i's expected outputs: a batch's, computed once (prepared), or
    each drawn here when its turn comes and its expected outputs computed while the child runs it."""
    if prepared is not None:
        return prepared.cases, prepared.expected.__getitem__
    from grader.cases import CasesInTurn
    from grader.expected import expected_for

    cases = CasesInTurn(spec, hidden_seed, public_only)
    cases.draw(1)  # while the child loads the file
    return cases, lambda index: expected_for(cases[index], spec)


def _run_cases(child: Child, cases: Sequence[Case], expected_of: Callable[[int], Expected], results: list[CaseResult], spec: Spec) -> Received:
    """Runs the cases in order, then the runtime guard's last check, once the child is ready; returns
    what the child returned for each failing case (for the diagnosis). Each case's result is added to
    `results` when its turn comes, those not run at the end. A case's request goes out while the
    case before is computed, where it fits in the request pipe at once (Child.send_ahead), else as
    soon as the case before is answered, before that answer is judged: the child computes while
    the grader judges (and draws the next case, with CasesInTurn); expected_of(i) gives case i's
    expected outputs, computed while the child computes case i."""
    try:
        return _run_in_turn(child, cases, expected_of, results, spec)
    finally:
        _add_the_rest(cases, results)


def _run_in_turn(child: Child, cases: Sequence[Case], expected_of: Callable[[int], Expected], results: list[CaseResult], spec: Spec) -> Received:
    received: Received = {}
    sent = _send_case(child, cases[0], spec) if cases else None
    for index, case in enumerate(cases):
        started, deadline, failed = sent
        result = _result_of(case)
        results.append(result)
        try:
            if failed is not None:
                raise failed
            upcoming = cases[index + 1] if index + 1 < len(cases) else None  # (drawn now, with CasesInTurn)
            # The next request goes out now, while the child computes this case, where it fits in the
            # pipe; never the first hidden case while a public one runs (what it prints is the candidate's).
            ahead = upcoming is not None and (upcoming.public or not case.public) and _send_ahead(child, upcoming, spec)
            expected = expected_of(index)
            reply, tensors = child.answer(protocol.expect_result(case, spec), deadline)
            result.seconds = child.answered_at - started
            if ahead:  # its time starts when the child could begin it: once this answer was written
                sent = _rest_sent(child, child.answered_at, child.answered_at + spec.limits.case_seconds)
            elif upcoming is not None:
                sent = _send_case(child, upcoming, spec)
            judge_reply(case, expected, reply, tensors, spec, result)
            if not result.passed:
                received[case.name] = reply, tensors
        except (ChildTimeout, ChildGone, ProtocolError) as error:
            result.fail(*_outcome(error, child, spec.limits, f"during case {case.name}"))
            return received
        finally:
            result.withhold()  # a hidden case: what the submission chose, for staff only
    if cases:
        _finish(child, spec.limits, results[-1])
        results[-1].withhold()
    return received


def _send_case(child: Child, case: Case, spec: Spec) -> tuple[float, float, ChildTimeout | ChildGone | None]:
    """Send the case's request: when it was sent, the deadline of its answer, and what went wrong
    sending it (raised when the case's turn comes, so that it is told on this case)."""
    started = time.monotonic()
    _hold_back_if_hidden(child, case)
    try:
        return started, child.submit(*case.request(), protocol.expect_result(case, spec), spec.limits.case_seconds), None
    except (ChildTimeout, ChildGone) as error:
        return started, 0.0, error


def _hold_back_if_hidden(child: Child, case: Case) -> None:
    """Before a hidden case's request goes out (the public cases come first): what the child prints
    from now on may spell out hidden data."""
    if not case.public:
        child.stdout.hold_back()
        child.stderr.hold_back()


def _send_ahead(child: Child, case: Case, spec: Spec) -> bool:
    """Send the case's request while the child computes the case before (Child.send_ahead): True
    if it went out. A failure to send it is told when its turn comes, as _send_case's."""
    _hold_back_if_hidden(child, case)  # (the first hidden case is never sent ahead)
    try:
        return child.send_ahead(*case.request(), protocol.expect_result(case, spec))
    except ChildGone:
        return False


def _rest_sent(child: Child, started: float, deadline: float) -> tuple[float, float, ChildTimeout | ChildGone | None]:
    """A request sent ahead, once its turn has come: what the pipe did not take of it is written
    now, within its own limit (as _send_case returns it)."""
    try:
        child.send_rest(deadline)
    except (ChildTimeout, ChildGone) as error:
        return started, deadline, error
    return started, deadline, None


def _finish(child: Child, limits: Limits, last: CaseResult) -> None:
    """The runtime guard's last check, after the last case (grader/child/guard.py checks the whole
    guard only now and then after a case): what it finds, or a child that does not answer it, is
    told on the last case."""
    try:
        reply, _ = child.request({"kind": "finish"}, None, protocol.FINISH, limits.case_seconds)
    except (ChildTimeout, ChildGone, ProtocolError) as error:
        return last.fail(*_outcome(error, child, limits, LAST_CHECK))
    if reply.get("forbidden"):
        last.fail(Verdict.FORBIDDEN_API, Check.RUNTIME_GUARD, reply["forbidden"])


def overall(results: list[CaseResult], public_only: bool = False) -> tuple[Verdict, str]:
    """The verdict of a judged run: the deciding case's (results.PRECEDENCE: a forbidden operator
    anywhere, else the first failing case), or accepted (with public_only, "the public cases passed")."""
    first = deciding_case(results)
    if first is None:
        return Verdict.ACCEPTED, PUBLIC_PASSED.format(len(results)) if public_only else f"all {len(results)} cases passed"
    passed = sum(r.passed for r in results)
    return Verdict(first.status), f"case {first.name} failed ({passed} of {len(results)} cases passed): {first.message}"


def _check_policy(source: bytes, tree: ast.Module, spec: Spec, static_check: bool) -> None:
    """Rejection(forbidden_api) when the file breaks the policy. The policy reads the installed
    torch's names: its first call imports torch."""
    violations = policy.check(tree, source.decode(), spec.rules) if static_check else []
    if violations:
        raise Rejection(Verdict.FORBIDDEN_API, policy.explain(violations))


def _keep_output(report: Report, child: Child) -> None:
    """What the submission printed: the candidate's, up to the first hidden case (CappedBuffer.hold_back); staff's, all of it."""
    report.stdout, report.stderr = child.stdout.shown(), child.stderr.shown()
    report.staff_stdout, report.staff_stderr = (out.text() if out.held_back else None for out in (child.stdout, child.stderr))


def grade(
    path: Path,
    spec: Spec,
    hidden_seed: str,
    public_only: bool = False,
    backend: str = "",
    static_check: bool = True,
    restricted: bool = True,
    prepared: Prepared | None = None,
    watch: Callable[[Child], AbstractContextManager[object]] | None = None,
    start: Callable[[Path, bytes, str, Spec, str], Child] = start_child,
) -> Report:
    """Grade one submission file, its child walled in by `backend`, a name of
    grader/sandbox/backends.py's registry (the caller's choice: choose_backend). Never raises for anything the submission does.
    static_check=False skips the policy check so tests can prove the other walls alone;
    restricted=False also runs the file as plain Python, without the capability layer
    (grader/child/capabilities/), so that the runtime guard's operator checks, the protocol and the
    sandbox face it alone. Both are refused unless a real sandbox (bubblewrap, uid or docker) holds
    the child.
    prepared: the cases and expected outputs of prepare(spec, hidden_seed, public_only), when a
    batch computed them once; else they are computed here, while the child starts.
    watch(child): entered as soon as the child is started and left just before it is closed, so
    that another thread may end a grading early with child.kill() (a batch that is stopped).
    start(workdir, source, filename, spec, backend): what starts the child (a batch's warm pool
    gives one of its children, grader/sandbox/zygote.py); start_child by default."""
    try:
        strong = backend_named(backend).strong
    except IsolationUnavailable as error:
        raise ValueError(f"{error}: choose the backend with grader.sandbox.backends.choose_backend") from None
    if not (static_check and restricted) and not strong:
        raise ValueError(f"the static check and the capability layer may be skipped only under a strong isolation (bubblewrap, uid or docker), not {backend}")
    static_check = static_check and restricted
    if prepared is not None and (prepared.seed_id, prepared.public_only) != (seed_public_id(hidden_seed), public_only):
        raise ValueError("the prepared cases were made for another seed or another choice of public cases")
    started = time.monotonic()
    report = Report(
        Verdict.GRADER_ERROR, "", str(path), seed_public_id(hidden_seed), backend, public_only=public_only, problem=spec.id, problem_digest=spec.digest
    )
    cases: list[Case] = []
    received: Received = {}  # case name -> what the child returned, failing cases only
    notebook: Converted | None = None
    try:
        source, tree, notebook = read_submission(path, spec.limits.source_bytes)
        if notebook is not None:
            report.notes.append(notebook.summary())
        if prepared is not None:  # a batch has imported torch: the check takes milliseconds, and a refused file costs no child
            _check_policy(source, tree, spec, static_check)
    except Rejection as rejection:
        report.verdict, report.message = rejection.verdict, rejection.message
        report.seconds = time.monotonic() - started
        return _in_cells(report, notebook)

    # ignore_cleanup_errors: under the uid backend the runner user may leave files we cannot remove
    with tempfile.TemporaryDirectory(prefix="mlm-grader-", ignore_cleanup_errors=True) as workdir:
        # The child imports torch while the grader checks the policy (importing torch); it loads the
        # submission while the grader makes the cases; it runs no code of the submission's before the start frame.
        with start(Path(workdir), source, path.name, spec, backend) as child, (watch or nullcontext)(child):
            report.isolation = child.isolation
            try:
                if prepared is None:
                    _check_policy(source, tree, spec, static_check)
                starting = _send_start(child, source, restricted, spec.limits)
                cases, expected_of = _cases(spec, hidden_seed, public_only, prepared)
                _wait_ready(child, spec.limits, starting, cases, report.cases)
                received = _run_cases(child, cases, expected_of, report.cases, spec)
                report.verdict, report.message = overall(report.cases, public_only)
            except Rejection as rejection:
                report.verdict, report.message = rejection.verdict, rejection.message
        _keep_output(report, child)
    if report.verdict == Verdict.WRONG_ANSWER and spec.diagnosis is not None:  # a package with probe cases (grader/diagnosis.py)
        from grader.diagnosis import analyse

        finding = analyse(cases, report.cases, received, spec)
        report.diagnosis, report.diagnosis_keys = finding.sentences, sorted(finding.keys())
    report.seconds = time.monotonic() - started
    return _in_cells(report, notebook)


def _in_cells(report: Report, notebook: Converted | None) -> Report:
    """A notebook's report with each line of the joined file named as its cell and line."""
    if notebook is not None:
        report.message = notebook.relocate(report.message)
        for case in report.cases:
            case.message, case.staff_message = notebook.relocate(case.message), notebook.relocate(case.staff_message)
    return report
