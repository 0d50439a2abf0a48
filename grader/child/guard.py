"""Runtime guard: watches what the submission executes and refuses forbidden functionality.

Armed once, before the submission is imported, never disarmed: refusing kernels for the forbidden
ATen operators, a TorchFunctionMode for torch functions, Tensor methods and tensor subclasses, a
profile function for torch's Python implementations of forbidden functions, no new thread or
process, and an audit hook that holds the record and checks the guard's integrity. What each part
sees, and what the guard assumes of the capability layer and the sandbox: docs/threat-model.md.
"""

import _thread
import builtins
import errno
import fnmatch
import itertools
import json
import operator
import os
import platform
import re
import struct
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import FunctionType, ModuleType
from typing import Any, NoReturn

import torch
from torch._ops import OpOverload, OpOverloadPacket
from torch.overrides import TorchFunctionMode

from . import walls
from .vjp import vector_jacobian

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# Where forbidden operators get refusing kernels: every key a CPU computation can be dispatched to.
# Whatever the problem: a tensor set on a storage (x.set_(storage)), which can then be resized under
# it, reads and writes past its end. Torch function modes do not see these calls.
STORAGE_OVERLOADS = frozenset({"set_.source_Storage", "set_.source_Storage_storage_offset", "set.source_Storage", "set.source_Storage_storage_offset"})
# Whatever the problem, with why: operators that reach memory through pointers or indices they never
# check. fbgemm's packing operators return a uint8 tensor whose bytes are a C++ pointer (torch's
# cpp_custom_type_hack): written and then freed, it decrements any word in memory.
UNCHECKED_OPERATORS = {
    "fbgemm_*": "its result holds a raw C++ pointer",
    "*segment_reduce*": "it reads and writes at offsets it does not check",
    "*ctc_loss*": "it reads and writes at target labels it does not check",
    # Backward kernels that trust the indices their forward saved: rewritten through an alias
    # autograd does not see, they write anywhere. Refused with their forward operators.
    "max_pool*_with_indices*": "its backward writes at the saved indices unchecked",
    "adaptive_max_pool*": "its backward writes at the saved indices unchecked",
    "fractional_max_pool*": "its backward writes at the saved indices unchecked",
    "max_unpool*": "it writes at indices it is given",
    "*embedding_bag*": "its backward writes at the saved indices unchecked",
    "embedding*": "its backward writes at the saved indices unchecked (scale_grad_by_freq)",
    "_gather_sparse_backward": "its result holds the saved indices unchecked",
    "*nll_loss*": "its backward writes at the saved targets unchecked",
    "multi*margin_loss*": "its backward writes at the saved targets unchecked",
    # Internal kernels exposed at the top of torch that trust sizes and axes they are given
    # (mkldnn_rnn_layer's hidden_size, fused_moving_avg_obs_fake_quant's ch_axis).
    "mkldnn_*": "it trusts sizes it does not check",
    "*fake_quant*": "it trusts axes it does not check",
    "quantized_*": "it trusts packed weights and sizes it does not check",
    # Views whose version counter is not their base's: writes through them pass autograd by.
    "unsafe_*": "its views' writes pass autograd's version counter by",
}
_UNCHECKED = re.compile("|".join(map(fnmatch.translate, UNCHECKED_OPERATORS)))  # one match per operator name
KERNEL_KEYS = (
    "CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor", "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional", "CPU", "SparseCPU", "SparseCsrCPU", "QuantizedCPU",
    "NestedTensorCPU", "MkldnnCPU",
)  # fmt: skip
RECORD_EVENT = "mlm_grader.guard.record"  # audit events between the guard and its audit hook
READ_EVENT = "mlm_grader.guard.read"
TAMPERED = "the runtime guard was tampered with"
RECORD_LIMIT = 10000  # findings kept; anything in the record already decides the verdict
# Characters of one text field of a finding's frame: escaped as \uXXXX (6 bytes each) it stays
# under the grader's limit on a frame's header (wire.MAX_HEADER_BYTES, 1 MiB); the grader shows fewer.
TEXT_LIMIT = 100_000
# Reads of the record after which the whole guard is checked (modules, functions and one of
# KERNEL_SLICES parts of the refusing kernels, in turn: reading every kernel's dispatch table takes
# about 5 ms, most of a full check); every read checks the mode stacks and the profile function, and
# the runner's last read, after the last case, is always full, every kernel included. A change that
# is still there at the last read shows; one that lasts FULL_CHECK_EVERY * KERNEL_SLICES reads (32:
# fewer than a problem's cases) shows at the periodic read of its slice.
FULL_CHECK_EVERY = 8
KERNEL_SLICES = 4
# Refused once armed: gc introspection would find the hook's record, trace and profile functions
# run code where the modes do not watch.
REFUSED_EVENTS = {
    "gc.get_objects": "gc.get_objects (searching the process's objects)",
    "gc.get_referrers": "gc.get_referrers (searching the process's objects)",
    "gc.get_referents": "gc.get_referents (searching the process's objects)",
    "sys.settrace": "sys.settrace (trace functions run code where the runtime guard does not watch)",
    "sys.setprofile": "sys.setprofile (profile functions run code where the runtime guard does not watch)",
    # (refused, the hook is not added) Python runs audit hooks with profiling paused, and each sees the record's reads.
    "sys.addaudithook": "sys.addaudithook (audit hooks run code where the runtime guard does not watch)",
}

# Read through the type's own slots, so that a metaclass of the submission's cannot answer instead.
_mro_of = type.__dict__["__mro__"].__get__
_dict_of = type.__dict__["__dict__"].__get__
_qualname_of = type.__dict__["__qualname__"].__get__
_getframe = sys._getframe
_audit = sys.audit
_Tensor = torch.Tensor
_TensorBase = torch._C.TensorBase
_DISABLED_FUNCTION = torch._C._disabled_torch_function_impl
_DISABLED_DISPATCH = torch._C._disabled_torch_dispatch_impl
_pack_length = struct.Struct("<Q").pack  # the frame's header length, as in wire.py


class ForbiddenAPIError(RuntimeError):
    pass


def _submission_line(guard: "Guard", _getframe: Any = _getframe) -> int | None:
    frame = _getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == guard.submission:
            return frame.f_lineno
        frame = frame.f_back
    return None


def _record(guard: "Guard", what: str, _line: Any = _submission_line, _basename: Any = os.path.basename, _audit: Any = _audit) -> None:
    """Record a finding where the submission cannot take it back (the audit hook, once armed)."""
    line = _line(guard)
    if line:
        what += f" (line {line} of {_basename(guard.submission)})"
    if what not in guard.found:
        guard.found.append(what)
    _audit(RECORD_EVENT, what)


def _refuse(guard: "Guard", what: str, _record: Any = _record, _error: Any = ForbiddenAPIError) -> NoReturn:
    _record(guard, what)
    raise _error(f"{what} is forbidden in this challenge")


def base_name(func: Any) -> str:
    """'rms_norm' for torch.rms_norm, torch.ops.aten.rms_norm and torch.ops.aten.rms_norm.default."""
    name = getattr(func, "__name__", "")
    return name.partition(".")[0] if isinstance(name, str) else ""


def own_override(kind: type) -> str | None:
    """The name of a class that brings its own __torch_function__ or __torch_dispatch__, or None
    for torch.Tensor and its plain subclasses (torch's "disabled" handlers, as nn.Parameter has,
    only opt out of subclass handling and run no code)."""
    for klass in _mro_of(kind):
        if klass is _Tensor or klass is _TensorBase:
            return None
        namespace = _dict_of(klass)
        for name, harmless in (("__torch_function__", _DISABLED_FUNCTION), ("__torch_dispatch__", _DISABLED_DISPATCH)):
            if name in namespace and namespace[name] is not harmless:
                return _qualname_of(kind)
    return _qualname_of(kind)  # not a tensor at all, yet torch found an override on it


def judge_code(code: Any, functions: frozenset[str]) -> str:
    """Why an operation run under this code is refused ("" if it is not): torch's own Python
    implementation of a forbidden function, judged by its name and by the file the code was
    compiled from, which the submission cannot change on torch's own functions. Which of torch's
    modules an allowed function passes through does not matter (torch.broadcast_shapes and
    torch.vmap run through torch._refs and torch._functorch)."""
    filename = code.co_filename
    if not isinstance(filename, str) or not filename.startswith(TORCH_DIR) or code.co_name not in functions:
        return ""
    module = "torch." + filename[len(TORCH_DIR) :].removesuffix(".py").removesuffix(f"{os.sep}__init__").replace(os.sep, ".")
    return f"the function {module}.{code.co_name}"


def _refused_code(code: Any, names: frozenset[str], torch_dir: str = TORCH_DIR, starts: Any = str.startswith, _type: Any = type) -> bool:
    """Whether judge_code refuses running under this code, without its work, for the profile function:
    only exact str names are read, with str's own methods (a subclass's methods would run there,
    where Python pauses profiling)."""
    filename = code.co_filename
    return _type(filename) is str and starts(filename, torch_dir) and _type(code.co_name) is str and code.co_name in names


class Guard:
    def __init__(self, functions: list[str], operators: list[str], submission: str) -> None:
        self.submission = submission  # its frames say where a forbidden use came from
        self.functions = frozenset(functions)
        self.operators = re.compile("|".join(fnmatch.translate(p) for p in operators) or "(?!)")
        self.found: list[str] = []  # what was found (once armed, the audit hook's copy is the truth)
        self.inside = [0, ""]  # torch's Python code being run that is refused, and its verdict (kept by the profile function)
        self.function_watch = _FunctionWatch(self)
        self.library: Any = None  # holds the refusing kernels
        self.kernels: list[Any] = []
        self.os_refuses_threads = False  # whether the kernel refuses new threads and processes
        self.armed = False

    def record(self, what: str) -> None:
        _record(self, what)

    def refuse(self, what: str) -> NoReturn:
        _refuse(self, what)

    # -- what is refused ---------------------------------------------------------------------

    def operator_forbidden(self, name: str) -> bool:
        return self.operators.match(name) is not None

    def check_types(self, types: Any) -> None:
        for kind in types:
            if kind is not _Tensor:
                name = own_override(kind)
                if name is not None:
                    self.refuse(
                        f"the class {name}, which has its own __torch_function__ or __torch_dispatch__ "
                        "(tensor subclasses with their own __torch_dispatch__ or __torch_function__ are not allowed)"
                    )

    def check_arguments(self, args: tuple, kwargs: dict | None, _type: Any = type, _tensor: Any = _Tensor) -> None:
        """Refuse a tensor subclass with its own __torch_dispatch__ among the arguments (one level
        into lists and tuples, as torch.cat takes them): torch leaves it out of `types` when its
        __torch_function__ is torch's own, and its handler would run with this mode off."""
        values = [*args, *kwargs.values()] if kwargs else args
        for value in values:
            kind = _type(value)
            if kind is _tensor:
                continue
            if kind is list or kind is tuple:  # (identity: no __eq__ of a metaclass runs)
                self.check_arguments(value, None)
            elif isinstance(value, _TensorBase):
                self.check_types((kind,))

    def check_function(self, func: Any) -> None:
        name = base_name(func)
        if name not in self.functions:
            return
        if isinstance(func, OpOverload | OpOverloadPacket):
            self.refuse(f"the operator {getattr(func, 'overloadpacket', func)}")
        if "Tensor" in str(getattr(func, "__qualname__", "")):
            self.refuse(f"the Tensor method .{name}")
        owner = getattr(func, "__module__", None)
        self.refuse(f"the function {owner if isinstance(owner, str) else 'torch'}.{name}")

    # -- arming ------------------------------------------------------------------------------

    @contextmanager
    def watching(self) -> Iterator[None]:
        """The function mode for the length of a block (arm() pushes it for good)."""
        with self.function_watch:
            yield

    def arm(self, protect: list[ModuleType], gradient: bool = True) -> None:
        """Arm every layer for the rest of the process. `protect`: the modules whose code runs
        after each call (the runner's), checked with the guard's own; gradient: whether the
        problem's cases take a gradient (the warm-up then takes one too)."""
        self.override_kernels()
        torch._C._push_on_torch_function_stack(self.function_watch)
        self.warm_up(gradient)  # lazy imports and one-time set-up happen now, not in the first call
        self.refuse_threads()
        self.os_refuses_threads = refuse_new_processes()
        self.armed = True  # before the picture of the guard is taken
        profile = _profile_function(self)
        watched = [sys.modules[__name__], *protect]
        for module in watched:  # a warning torch gives while this module's code is on the stack (the function watch's
            # frame, for every torch call) is registered in its __warningregistry__: made now, so it is no name added later
            module.__dict__.setdefault("__warningregistry__", {})
        hook = _audit_hook(self, watched, profile)  # the picture, taken before profiling slows Python down
        sys.setprofile(profile)
        sys.addaudithook(hook)
        self.warm_up(gradient)  # nothing it needs is refused once sealed
        if self.findings():
            raise RuntimeError(f"the runtime guard does not hold after arming: {self.findings()}")

    def warm_up(self, gradient: bool = True) -> None:
        """What a case does, on a tiny tensor: the first call then finds every lazy import done,
        and a full /tmp cannot fail it. It runs before any code of the submission's, so the names a
        problem forbids the submission (requires_grad_, var, ...) do not apply to it: a problem may
        forbid what the grader's own work uses. The gradient part runs only where the problem
        takes gradients."""
        functions, self.functions = self.functions, frozenset()
        try:
            x = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64).view(2, 3)
            if gradient:
                x.requires_grad_()
            y = torch.tanh(x @ x.mT).exp() / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
            y = y[x.new_ones(2, dtype=torch.bool)]
            if gradient:
                vector_jacobian(y, [x], torch.ones_like(y))
        finally:
            self.functions = functions
        if self.found:
            raise RuntimeError(f"the runtime guard refused its own warm-up: {self.found}")

    def kernels_to_override(self) -> list[tuple[str, str, str, str]]:
        """(qualified name, overload, base name, dispatch key) of every kernel a forbidden ATen
        operator has at a key a CPU computation reaches. Found once per process and kept: the pool's
        server finds them before it forks, and each child overrides them at once."""
        key = self.operators.pattern
        if key not in _KERNELS_FOUND:
            found = []
            for qualified in torch._C._dispatch_get_all_op_names():
                namespace, _, op = qualified.partition("::")
                name = op.partition(".")[0]
                if namespace == "aten" and (self.operator_forbidden(name) or op in STORAGE_OVERLOADS or _whatever_the_problem(op, name)):
                    found += [(qualified, op, name, k) for k in KERNEL_KEYS if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, k)]
            _KERNELS_FOUND[key] = found
        return _KERNELS_FOUND[key]

    def override_kernels(self) -> None:
        library = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel" is the point
            for qualified, op, name, key in self.kernels_to_override():
                kernel = _refusing_kernel(self, f"the operator aten.{name}{_whatever_the_problem(op, name)}")
                library.impl(op, kernel, key)
                self.kernels.append((qualified, kernel))
        self.library = library

    def refuse_threads(self) -> None:
        def start_new_thread(*args: Any, **kwargs: Any) -> NoReturn:
            _refuse(self, "a thread (the submission must run on the grader's thread, where the runtime guard watches)")

        def one_thread(*args: Any, **kwargs: Any) -> None:
            """torch computes on this one thread: more would need threads the kernel refuses (and
            OpenMP ends the process when it cannot start them)."""

        _thread.start_new_thread = _thread.start_new = threading._start_new_thread = start_new_thread
        torch.set_num_threads = torch._C.set_num_threads = one_thread
        torch.set_num_interop_threads = torch._C.set_num_interop_threads = one_thread

    # -- reading the record ------------------------------------------------------------------

    def findings(self, full: bool = True, _audit: Any = _audit, _list: Any = list) -> list[str]:
        """Everything found so far, in order, with any tampering found by checking the guard now.
        full=False (after a case) checks the whole guard only on every FULL_CHECK_EVERY-th read (and
        a slice of the kernels, in turn), the stacks and the profile function on every read; the last
        read, after the last case, is full."""
        if not self.armed:
            return _list(self.found)
        found: list[str] = []
        _audit(READ_EVENT, found, full)
        return found

    def text_frame(
        self, fields: dict[str, str], _quote: Any = json.encoder.encode_basestring_ascii, _pack: Any = _pack_length, _len: Any = len, _limit: int = TEXT_LIMIT
    ) -> bytes:
        """A frame of text fields and no tensors, encoded without any code the submission could
        have replaced: how a finding is told when the guard itself was tampered with. Each text is
        cut to TEXT_LIMIT characters, so that the frame stays within what the grader reads."""
        body = ", ".join(_quote(key) + ": " + _quote(value if _len(value) <= _limit else value[:_limit] + " [cut]") for key, value in fields.items())
        header = ("{" + body + ', "tensors": []}').encode("ascii")
        return _pack(len(header)) + header


def _whatever_the_problem(op: str, name: str) -> str:
    """Why an operator the base rules refuse is refused, '' for one the problem forbids."""
    if op in STORAGE_OVERLOADS:
        return " onto a storage"
    if not _UNCHECKED.match(name):
        return ""
    for pattern, why in UNCHECKED_OPERATORS.items():
        if fnmatch.fnmatchcase(name, pattern):
            return f" ({why})"
    return ""


# How the dispatch table's dump starts a line of each key: an alias key (the Composite ones) is
# written "Key[alias]:", and a kernel another has overridden "Key (inactive):".
_KERNEL_LINE_STARTS = tuple(f"{key}{alias}{inactive}:" for key in KERNEL_KEYS for alias in ("", "[alias]") for inactive in ("", " (inactive)"))


def _kernel_lines(qualified: str, dump: Any = torch._C._dispatch_dump, keys: tuple = _KERNEL_LINE_STARTS) -> tuple:
    """The lines of an operator's dispatch table at the keys where the guard puts its refusing
    kernels: what replacing one of them changes. torch registers kernels at other keys lazily
    (functorch's batching rules for nll_loss_backward at the first torch.vmap), which is no tampering."""
    return tuple(line for line in dump(qualified).splitlines() if line.startswith(keys))


def _refusing_kernel(guard: Guard, what: str) -> Any:
    def refuse_operator(*args: Any, **kwargs: Any) -> NoReturn:
        _refuse(guard, what)

    return refuse_operator


def _profile_function(guard: Guard) -> Any:
    """A profile function that records every entry into torch's Python implementations of
    forbidden functions, whatever the state of the mode (a submission
    could take it off the stack for a while and put it back). It only records: an exception
    raised here would remove it. It also keeps guard.inside (how many such frames are running, and
    what the outermost is), so that the function mode refuses the first torch function they call:
    the use then ends at once, instead of running to its end (a decomposition's first use can take
    seconds).
    Python calls it on every call and return, of Python and C functions alike, so the common case
    is a few operations in its own body: a code object whose name is not a forbidden function's
    ends there. Only such a name leads to _entered or _left, which judge the code fully.
    It keeps no cache and no closure: what it uses is bound as default values (immutable but
    guard.inside, which only hastens a refusal; their replacement the audit hook refuses). A
    verdict cache or a closure cell could be changed by the submission (its function mode leads to
    the guard, sys.getprofile() to this function) and put back before the next read. Names are
    looked up only once their type is str itself: a str subclass's __hash__ or __eq__ would run
    here, where Python pauses profiling."""

    def profile(
        frame: Any, event: str, arg: Any, names: frozenset = guard.functions, inside: list = guard.inside, _type: Any = type,
        entered: Any = _entered, left: Any = _left, guard: Guard = guard,
    ) -> None:  # fmt: skip
        if event == "call":
            code = frame.f_code
            name = code.co_name
            if _type(name) is str and name in names:
                entered(guard, frame, code, names, inside)
        elif event == "return" and inside[0]:  # (on an exception too)
            code = frame.f_code
            name = code.co_name
            if _type(name) is str and name in names:
                left(code, names, inside)

    return profile


def _entered(
    guard: Guard, frame: Any, code: Any, names: frozenset, inside: list, refused: Any = _refused_code, judge: Any = judge_code, audit: Any = _audit,
    line_of: Any = _submission_line, basename: Any = os.path.basename, record_event: str = RECORD_EVENT, finalizing: Any = sys.is_finalizing,
) -> None:  # fmt: skip
    """For the profile function: a call of code named like a forbidden function. Recorded, with the
    line of the submission that led there, when it is torch's own and its caller is not such code."""
    if not refused(code, names) or finalizing():  # (at exit, modules are being torn down)
        return
    back = frame.f_back  # where the submission's code called in, unless it is such code too
    caller = back.f_code if back is not None else None
    if caller is None or not refused(caller, names):
        verdict = judge(code, names)
        line = line_of(guard)
        verdict = f"{verdict} (line {line} of {basename(guard.submission)})" if line else verdict
        audit(record_event, verdict)
        inside[1] = verdict
    inside[0] += 1


def _left(code: Any, names: frozenset, inside: list, refused: Any = _refused_code) -> None:
    """For the profile function: a return from code named like a forbidden function."""
    if refused(code, names):
        inside[0] -= 1


def _audit_hook(guard: Guard, modules: list[ModuleType], profile: Any) -> Any:
    """The hook that keeps the record and the picture of the guard as armed. Everything it uses is
    bound here, in its closure: once it is installed nothing else refers to it."""
    log: list[str] = []
    entries, sizes, functions = _picture(guard, modules)
    # Each mapping's names and values side by side, so that a read compares them in C (the reads
    # are once a case); the names are looked for one by one only to say which was replaced.
    grouped: dict[int, tuple[str, Any, list, list]] = {}
    for label, mapping, key, value in entries:
        group = grouped.setdefault(id(mapping), (label, mapping, [], []))
        group[2].append(key)
        group[3].append(value)
    pictured = tuple((label, mapping, tuple(keys), tuple(values)) for label, mapping, keys, values in grouped.values())
    any_, map_, is_not, repeat, zip_ = any, map, operator.is_not, itertools.repeat, zip
    protected = frozenset([*(id(function) for _, function, _ in functions), id(profile)])  # (its defaults hold its state)
    # The same for the functions: each part of each, side by side (cells: every closure's, in order).
    watched = tuple(function for _, function, _ in functions)
    get_code, get_defaults, get_kwdefaults, get_closure = (operator.attrgetter(f"__{part}__") for part in ("code", "defaults", "kwdefaults", "closure"))
    codes, defaults, kwdefaults, closures = (tuple(map(get, watched)) for get in (get_code, get_defaults, get_kwdefaults, get_closure))
    kwdefaults_copies = tuple(dict(kw) if kw else kw for kw in kwdefaults)
    cells = tuple(cell for closure in closures if closure for cell in closure)
    get_contents, contents = operator.attrgetter("cell_contents"), tuple(cell.cell_contents for cell in cells)
    kernel_names = tuple(dict(guard.kernels))
    kernel_tables = tuple(map(_kernel_lines, kernel_names))
    # (names, tables) of every kernel (a last read), then of each slice, checked in turn on the periodic full checks
    kernel_parts = ((kernel_names, kernel_tables), *((kernel_names[i::KERNEL_SLICES], kernel_tables[i::KERNEL_SLICES]) for i in range(KERNEL_SLICES)))
    ne = operator.ne
    function_watch = guard.function_watch
    function_stack_len, function_stack_at = torch._C._len_torch_function_stack, torch._C._get_function_stack_at
    dispatch_stack_len = torch._C._len_torch_dispatch_stack
    infra_mode, infra_keys = torch._C._get_dispatch_mode, tuple(torch._C._TorchDispatchModeKey.__members__.values())
    function_handling_on, function_modes_on = torch._C._is_torch_function_enabled, torch._C._is_torch_function_mode_enabled
    kernel_table, parts_of, missing, error, line_of = _kernel_lines, _parts, _MISSING, ForbiddenAPIError, _submission_line
    current_profile, profile_parts = sys.getprofile, _parts(profile)
    count, ident, string, exception, basename, finalizing = len, id, str, Exception, os.path.basename, sys.is_finalizing
    record_event, read_event, tampered, refused_events, limit = RECORD_EVENT, READ_EVENT, TAMPERED, dict(REFUSED_EVENTS), RECORD_LIMIT
    every, slices = FULL_CHECK_EVERY, KERNEL_SLICES
    changes = ("object.__setattr__", "object.__delattr__")  # (setting a function's __defaults__ to None deletes them)

    def tampering(full: bool, kernels: int = 0) -> str | None:
        """What was changed in the guard, or None. full: the whole picture, with the kernels of
        kernel_parts[kernels] (0: every kernel)."""
        if not (function_stack_len() == 1 and function_stack_at(0) is function_watch):
            return "its function mode is no longer alone on the torch function mode stack"
        if dispatch_stack_len() != 0:
            return "a dispatch mode was pushed on the torch dispatch mode stack"
        for key in infra_keys:
            if infra_mode(key) is not None:
                return "a dispatch mode was set"
        if current_profile() is not profile or parts_of(profile) != profile_parts:
            return "its profile function was removed or changed"
        if not (function_handling_on() and function_modes_on()):
            return "torch function handling was turned off"
        for label, mapping, size in sizes:
            if count(mapping) != size:
                return f"names were added to or removed from {label}"
        if not full:
            return None
        for label, mapping, keys, values in pictured:
            if any_(map_(is_not, map_(mapping.get, keys, repeat(missing)), values)):
                for key, value in zip_(keys, values):
                    if mapping.get(key, missing) is not value:
                        return f"{label}.{key} was replaced"
                return f"{label} was changed"
        if (
            any_(map_(is_not, map_(get_code, watched), codes))
            or any_(map_(is_not, map_(get_defaults, watched), defaults))
            or any_(map_(is_not, map_(get_kwdefaults, watched), kwdefaults))
            or any_(map_(ne, map_(get_kwdefaults, watched), kwdefaults_copies))
            or any_(map_(is_not, map_(get_closure, watched), closures))
            or any_(map_(is_not, map_(get_contents, cells), contents))
        ):
            for label, function, parts in functions:
                if parts_of(function) != parts:
                    return f"the function {label} was changed"
            return "one of its functions was changed"
        names, tables = kernel_parts[kernels]
        if any_(map_(ne, map_(kernel_table, names), tables)):
            for qualified, table in zip_(names, tables):
                if kernel_table(qualified) != table:
                    return f"the kernels of {qualified} were changed"
        return None

    # The record: each finding once per read (a case), in order, up to a bound. Reading copies it
    # and never empties it, so whoever else reads it takes nothing away from the grader.
    seen: set[tuple[str, int]] = set()
    reads = [0]

    def add(what: str) -> None:
        key = (what, reads[0])
        if key not in seen and count(log) < limit:
            seen.add(key)
            log.append(what)

    def hook(event: str, args: tuple) -> None:
        if event == record_event:
            add(string(args[0]))
        elif event == read_event:
            try:
                last = count(args) < 2 or args[1] is not False  # a full read: at import, after the last case
                periodic = reads[0] % every == 0
                problem = tampering(last or periodic, 0 if last else 1 + (reads[0] // every - 1) % slices)  # reads 8, 16, ...: slices 0, 1, ...
            except exception as failure:  # noqa: BLE001 - a check that cannot run is tampering too
                problem = f"its check failed: {failure!r}"
            if problem:
                add(f"{tampered} ({problem})")
            args[0].extend(log)
            reads[0] += 1
        elif (event in refused_events and not finalizing()) or (event in changes and ident(args[0]) in protected):
            # (at exit the interpreter itself removes the profile function)
            what = refused_events.get(event) or f"{tampered} (the {args[1]} of {args[0].__qualname__} was being replaced)"
            line = line_of(guard)
            add(f"{what} (line {line} of {basename(guard.submission)})" if line else what)
            raise error(f"{what} is forbidden in this challenge")

    return hook


_MISSING = object()
_KERNELS_FOUND: dict[str, list[tuple[str, str, str, str]]] = {}  # Guard.kernels_to_override, by the operators' pattern


def _parts(function: Any) -> tuple:
    """What makes a function behave as it does: its code, defaults and closure contents."""
    cells = tuple(cell.cell_contents for cell in function.__closure__ or ())
    return (function.__code__, function.__defaults__, function.__kwdefaults__, cells)


def _picture(guard: Guard, modules: list[ModuleType]) -> tuple[tuple, tuple, tuple]:
    """Every name, class member, instance attribute and function of the guard and of `modules`,
    as (label, mapping, key, value) entries, (label, mapping, size) sizes and (label, function,
    parts) functions. What grows lazily (json, torch.Tensor's dict, sys.modules) gives entries only."""
    entries, sizes, functions, seen = [], [], {}, set()
    names = {module.__name__ for module in modules}

    def namespace(label: str, mapping: Any, fixed_size: bool = True) -> None:
        if fixed_size:
            sizes.append((label, mapping, len(mapping)))
        for key, value in list(mapping.items()):
            entries.append((label, mapping, key, value))
            inner = value.__func__ if isinstance(value, classmethod | staticmethod) else value
            if isinstance(inner, FunctionType):
                functions[id(inner)] = inner
            elif isinstance(value, type) and value.__module__ in names and id(value) not in seen:
                seen.add(id(value))
                namespace(value.__qualname__, _dict_of(value))

    for module in modules:
        namespace(module.__name__, vars(module))
    for module in (builtins, _thread, threading):
        namespace(module.__name__, vars(module))
    for label, instance in (("the guard", guard), ("its function mode", guard.function_watch)):
        namespace(label, vars(instance))
    for module in (json, json.encoder, json.decoder, struct):
        namespace(module.__name__, vars(module), fixed_size=False)
    entries += [("sys.modules", sys.modules, name, module) for name, module in list(sys.modules.items())]  # no fakes planted
    namespace("torch.Tensor", _dict_of(_Tensor), fixed_size=False)
    namespace("torch._C.TensorBase", _dict_of(_TensorBase), fixed_size=False)
    for _, kernel in guard.kernels:
        functions[id(kernel)] = kernel
    return tuple(entries), tuple(sizes), tuple((f.__qualname__, f, _parts(f)) for f in functions.values())


class _FunctionWatch(TorchFunctionMode):
    """Runs on every torch function and Tensor method the submission calls: on honest work it does
    a few identity tests and one getattr (the profile function counts every call made here)."""

    def __init__(self, guard: Guard) -> None:
        super().__init__()
        self.guard = guard

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None, _type: Any = type, _tensor: Any = _Tensor) -> Any:
        guard = self.guard
        if guard.inside[0]:  # called by torch's Python code that the profile function recorded
            raise ForbiddenAPIError(f"{guard.inside[1]} is forbidden in this challenge")
        for kind in types:
            if kind is not _tensor:
                guard.check_types(types)
                break
        for value in args:  # anything but a plain tensor or number is looked at closely
            kind = _type(value)
            if not (kind is _tensor or kind is int or kind is float or kind is bool or value is None):
                guard.check_arguments(args, None)
                break
        if kwargs:
            guard.check_arguments((), kwargs)
        try:  # as base_name(func), without its calls: a call of a C function costs the profile function two events
            name = func.__name__
        except AttributeError:
            name = ""
        if _type(name) is str and (name in guard.functions or ("." in name and base_name(func) in guard.functions)):
            guard.check_function(func)
        return func(*args, **kwargs) if kwargs else func(*args)


# -- the kernel's wall: no new thread or process ---------------------------------------------

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_SYSCALLS = {  # the system calls that make a thread or a process
    "x86_64": {"clone": 56, "fork": 57, "vfork": 58, "clone3": 435},
    "aarch64": {"clone": 220, "clone3": 435},
}


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def refuse_new_processes() -> bool:
    """Install a seccomp filter (it cannot be removed, and children inherit it) under which the
    kernel answers EAGAIN to every new thread or process, as at a process limit. clone3 answers
    ENOSYS, so that the C library falls back to clone. False where this machine does not allow it."""
    machine = platform.machine()
    if machine not in _SYSCALLS:
        return False
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    allow, error = 0x7FFF0000, 0x00050000  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO
    calls = _SYSCALLS[machine]
    # Another architecture's system calls (int 0x80 on x86_64) are refused outright.
    program = [_bpf(load, 4), _bpf(jeq, _AUDIT_ARCH[machine], jt=1), _bpf(ret, error | errno.ENOSYS), _bpf(load, 0)]
    if machine == "x86_64":  # the x32 system calls of the same process
        program += [_bpf(jge, 0x40000000, jf=1), _bpf(ret, error | errno.ENOSYS)]
    program += [_bpf(jeq, calls["clone3"], jf=1), _bpf(ret, error | errno.ENOSYS)]
    for name in ("clone", "fork", "vfork"):
        if name in calls:
            program += [_bpf(jeq, calls[name], jf=1), _bpf(ret, error | errno.EAGAIN)]
    program.append(_bpf(ret, allow))
    try:
        walls.set_no_new_privs()
        walls.install_seccomp(b"".join(program))
    except (OSError, AttributeError):  # WallError included; AttributeError: a C library without prctl
        return False
    return True
