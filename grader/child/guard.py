"""Runtime guard: watches what the submission executes and refuses what the rules do not allow.

Armed once, before the submission is imported, never disarmed: at the dispatcher, a refusing kernel
for every operator that is not on the problem's list of allowed operators (whatever the route that
reaches it: a torch function, a Tensor method, a C function of torch's, autograd, vmap), and for
the backward operators of allowed ones, a kernel that runs them only while autograd does; a
TorchFunctionMode that refuses tensor subclasses with handlers of their own; no new thread or
process; and an audit hook that holds the record and checks the guard's integrity. What each part
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FunctionType, ModuleType
from typing import Any, NoReturn

import torch
from torch.overrides import TorchFunctionMode

from . import walls
from .vjp import vector_jacobian

# The dispatch keys at which an operator off the list gets a refusing kernel, wherever it has one of
# its own: every key a computation on CPU tensors can be dispatched to, autograd's, and vmap's
# (functorch's batching rules and decompositions compute without reaching the backend's kernel).
KERNEL_KEYS = (
    "CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional", "CPU",
    "Autograd", "AutogradCPU", "FuncTorchBatched", "FuncTorchBatchedDecomposition", "FuncTorchVmapMode",
)  # fmt: skip
# The keys of tensors that are not dense CPU tensors: sparse, quantized, MKL-DNN and nested ones. Every
# operator's kernels there refuse, allowed operators' too (their kernels trust indices, packed data and
# sizes that a dense tensor's do not have): a layout or dtype argument is data, and cannot make one.
LAYOUT_KEYS = ("SparseCPU", "SparseCsrCPU", "QuantizedCPU", "MkldnnCPU", "NestedTensorCPU")
# The runtime keys at which a backward operator gets the kernel that runs it while autograd does
# (the kernel the dispatcher would have run there, called through); at its other keys it refuses.
BACKWARD_KEYS = ("CPU", "AutogradCPU")
RECORD_EVENT = "mlm_grader.guard.record"  # audit events between the guard and its audit hook
READ_EVENT = "mlm_grader.guard.read"
TAMPERED = "the runtime guard was tampered with"
RECORD_LIMIT = 10000  # findings kept; anything in the record already decides the verdict
# Characters of one text field of a finding's frame: escaped as \uXXXX (6 bytes each) it stays
# under the grader's limit on a frame's header (wire.MAX_HEADER_BYTES, 1 MiB); the grader shows fewer.
TEXT_LIMIT = 100_000
# Reads of the record after which the whole guard is checked (modules, functions and a window of
# the refusing kernels); every read checks the mode stacks and a few kernels, in turn; the
# runner's last read, after the last case, is full. Reading one operator's dispatch table takes
# about 40 µs, and there are thousands of refusing kernels: each read checks KERNELS_PER_READ of
# them and each full check KERNELS_PER_FULL_CHECK, going round, so that a grading of a problem's
# cases goes through hundreds. A full check of the rest costs about 16 ms: every 16th read keeps
# it to a few per grading.
FULL_CHECK_EVERY = 16
KERNELS_PER_READ = 8
KERNELS_PER_FULL_CHECK = 128
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
    raise _error(f"forbidden in this challenge: {what}")


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


def advice_for(advice: list[list[str]]) -> Callable[[str], str]:
    """What to write instead of a name off the lists, from (pattern, advice) pairs, the problem's
    first: the advice of the first pattern the name matches, or "". The patterns are one regular
    expression, tried in order: thousands of operator names are told apart at arming."""
    if not advice:
        return lambda name: ""
    matcher = re.compile("|".join(f"(?P<a{i}>{fnmatch.translate(pattern)})" for i, (pattern, _) in enumerate(advice)))
    told = {f"a{i}": text for i, (_, text) in enumerate(advice)}

    def advice_of(name: str) -> str:
        found = matcher.match(name)
        return told[found.lastgroup] if found and found.lastgroup else ""

    return advice_of


def refusal_text(what: str, told: str) -> str:
    """How a refusal is told: what was used and, where the rules have it, what to write instead."""
    return f"{what} ({told})" if told else what


class Guard:
    def __init__(self, config: dict[str, Any], submission: str) -> None:
        """config: the child's rules (grader/rules.py Rules.child_config): the allowed operators, the
        backward ones and the advice of each refusal."""
        self.submission = submission  # its frames say where a forbidden use came from
        self.operators = frozenset(config["operators"])
        self.backward = frozenset(config["backward"])
        self.advice = [list(pair) for pair in config["advice"]]
        self.found: list[str] = []  # what was found (once armed, the audit hook's copy is the truth)
        self.function_watch = _FunctionWatch(self)
        self.libraries: list[Any] = []  # hold the kernels (a Library's kernels go with it)
        self.kernels: list[tuple[str, str, Any]] = []  # (qualified operator, key, kernel)
        self.tables: dict[str, tuple[str, ...]] = {}  # each overridden operator -> the lines of its dispatch table as armed
        self.line_starts: dict[str, tuple[str, ...]] = {}  # each overridden operator -> the starts of the lines of its keys
        self.kernel_parts: dict[str, tuple[tuple, tuple]] = {}  # each overridden operator -> (its kernels, their parts as armed)
        self.kernel_ids: frozenset[int] = frozenset()  # the refusing kernels' ids: no part of one may be set
        self.os_refuses_threads = False  # whether the kernel refuses new threads and processes
        self.armed = False

    def record(self, what: str) -> None:
        _record(self, what)

    def refuse(self, what: str) -> NoReturn:
        _refuse(self, what)

    # -- what is refused ---------------------------------------------------------------------

    def allowed(self, qualified: str) -> str:
        """An operator's standing ("aten::add.Tensor", judged by its name without the overload):
        "allowed", "backward" (run only while autograd runs it) or ""."""
        name = qualified.partition(".")[0]
        if name in self.operators:
            return "allowed"
        return "backward" if name in self.backward else ""

    def check_types(self, types: Any) -> None:
        for kind in types:
            if kind is not _Tensor:
                name = own_override(kind)
                if name is not None:
                    self.refuse(
                        f"the class {name}, which has its own __torch_function__ or __torch_dispatch__ "
                        "(tensor subclasses with their own __torch_dispatch__ or __torch_function__ are not allowed)"
                    )

    def refuse_out(self, func: Any) -> NoReturn:
        """out=: torch resizes the tensor given to the result's shape, and a resize that fails (a
        storage too large to allocate, or one that cannot grow) leaves the new size over the old
        storage, which whole-tensor kernels then trust: a read and write past it. Refused where the
        file passes it; torch's own code calls the out= overloads inside allowed functions (mean
        through sum's), so they stay on the operator list."""
        self.refuse(f"out= (in a call of {getattr(func, '__name__', 'a torch function')}): use the tensor the function returns instead")

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
        if not self.kernels:  # a single child; a pool's server did both before it forked
            with self.watching():
                self.warm_up(gradient)  # lazy imports and one-time set-up happen now, not in the first call
            self.override_kernels()
        torch._C._push_on_torch_function_stack(self.function_watch)
        self.sealed_warm_up(gradient)
        self.refuse_threads()
        self.os_refuses_threads = refuse_new_processes()
        self.armed = True  # before the picture of the guard is taken
        watched = [sys.modules[__name__], *protect]
        for module in watched:  # a warning torch gives while this module's code is on the stack (the function watch's
            # frame, for every torch call) is registered in its __warningregistry__: made now, so it is no name added later
            module.__dict__.setdefault("__warningregistry__", {})
        sys.addaudithook(_audit_hook(self, watched))
        self.sealed_warm_up(gradient)  # nothing the grader's own code needs is refused once sealed
        if self.findings():
            raise RuntimeError(f"the runtime guard does not hold after arming: {self.findings()}")

    def warm_up(self, gradient: bool = True) -> None:
        """What a case does, on a tiny tensor, before the kernels refuse anything: the first call
        then finds every lazy import and registration done (functorch registers kernels at the
        first torch.vmap), and a full /tmp cannot fail it. The gradient part runs only where the
        problem takes gradients."""
        x = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64).view(2, 3)
        if gradient:
            x.requires_grad_()
        y = torch.tanh(x @ x.mT).exp() / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-5)
        y = y[x.new_ones(2, dtype=torch.bool)]
        torch.vmap(lambda row: row.sum())(y.detach())
        if gradient:
            vector_jacobian(y, [x], torch.ones_like(y))
        if self.found:
            raise RuntimeError(f"the runtime guard refused its own warm-up: {self.found}")

    def sealed_warm_up(self, gradient: bool = True) -> None:
        """What the grader's own code does with a case, once the kernels refuse: copies and, where
        gradients are checked, the vector-Jacobian product. It runs the operators a package may not
        remove (grader/rules.py GRADER_OPERATORS, GRADIENT_OPERATORS) and nothing else."""
        x = torch.empty(2, 3, dtype=torch.float64).fill_(0.5) if gradient else torch.empty(2, 3, dtype=torch.float64)
        x = x.clone().detach()
        if gradient:
            x.requires_grad_()
            y = x.clone()
            vector_jacobian(y, [x], torch.ones_like(y))
        if self.found:
            raise RuntimeError(f"the runtime guard refused its own warm-up: {self.found}")

    def kernels_to_override(self) -> list[tuple[str, str, str]]:
        """(qualified operator, dispatch key, "refuse", "backward" or "layout") for every kernel of
        an operator off the list, at a key of KERNEL_KEYS where it has one of its own (a backward
        operator of an allowed one runs through at BACKWARD_KEYS instead), and for every kernel of
        any operator at LAYOUT_KEYS. Found once per process and kept: the pool's server finds and
        overrides them before it forks."""
        key = (self.operators, self.backward)
        if key not in _KERNELS_FOUND:
            # Which operators have a kernel of their own at each key: one call per key, where asking
            # each operator at each key would take a few hundred times as long.
            own = {k: frozenset(torch._C._dispatch_get_registrations_for_dispatch_key(k)) for k in (*LAYOUT_KEYS, *KERNEL_KEYS)}
            found = []
            for qualified in torch._C._dispatch_get_all_op_names():
                verdict = self.allowed(qualified)
                found += [(qualified, key, "layout") for key in LAYOUT_KEYS if qualified in own[key]]
                if verdict == "allowed":
                    continue
                if verdict == "backward":
                    computed = torch._C._dispatch_has_computed_kernel_for_dispatch_key
                    found += [(qualified, key, "backward") for key in BACKWARD_KEYS if computed(qualified, key)]
                for dispatch_key in KERNEL_KEYS:
                    through = verdict == "backward" and dispatch_key in BACKWARD_KEYS
                    if not through and qualified in own[dispatch_key]:
                        found.append((qualified, dispatch_key, "refuse"))
            _KERNELS_FOUND[key] = found
        return _KERNELS_FOUND[key]

    def override_kernels(self) -> None:
        """Put the refusing kernels in place (once per process: a forked child finds its server's)."""
        if self.kernels:
            return
        libraries: dict[str, Any] = {}
        texts: dict[str, str] = {}
        advice_of = advice_for(self.advice)
        # A backward operator's own kernels, taken before any of them is overridden
        originals = {(q, key): torch.library.get_kernel(q, key) for q, key, kind in self.kernels_to_override() if kind == "backward"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel" is the point
            for qualified, dispatch_key, kind in self.kernels_to_override():
                namespace, _, op = qualified.partition("::")
                library = libraries.get(namespace)
                if library is None:
                    library = libraries[namespace] = torch.library.Library(namespace, "IMPL")
                name = qualified.partition(".")[0]
                if name not in texts:
                    texts[name] = refusal_text(f"the operator {name}, which is not on this challenge's list of operators", advice_of(name))
                if kind == "layout":
                    kernel = _refusing_kernel(self, f"the operator {name} on a tensor of another layout than a dense CPU tensor's ({dispatch_key})")
                    library.impl(op, kernel, dispatch_key)
                elif kind == "backward":
                    kernel = _backward_kernel(self, texts[name], originals[(qualified, dispatch_key)])
                    library.impl(op, kernel, dispatch_key, with_keyset=True)
                else:
                    kernel = _refusing_kernel(self, texts[name])
                    library.impl(op, kernel, dispatch_key)
                self.kernels.append((qualified, dispatch_key, kernel))
        self.libraries = list(libraries.values())
        keys: dict[str, list[str]] = {}
        for qualified, dispatch_key, _ in self.kernels:
            keys.setdefault(qualified, []).append(dispatch_key)
        self.line_starts = {qualified: _line_starts(found) for qualified, found in keys.items()}
        self.tables = {qualified: _kernel_lines(qualified, starts) for qualified, starts in self.line_starts.items()}
        functions: dict[str, list[Any]] = {}
        for qualified, _, kernel in self.kernels:
            functions.setdefault(qualified, []).append(kernel)
        self.kernel_parts = {qualified: (tuple(kernels), tuple(map(_parts, kernels))) for qualified, kernels in functions.items()}
        self.kernel_ids = frozenset(id(kernel) for _, _, kernel in self.kernels)

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
        full=False (after a case) checks the whole guard only on every FULL_CHECK_EVERY-th read,
        the stacks and a few kernels on every read; the last read, after the last case, is full."""
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


def _line_starts(keys: Any) -> tuple[str, ...]:
    """How the dispatch table's dump starts a line of each key: an alias key (the Composite ones,
    Autograd) is written "Key[alias]:", and a kernel another has overridden "Key (inactive):"."""
    return tuple(f"{key}{alias}{inactive}:" for key in keys for alias in ("", "[alias]") for inactive in ("", " (inactive)"))


def _kernel_lines(qualified: str, keys: tuple[str, ...], dump: Any = torch._C._dispatch_dump) -> tuple:
    """The lines of an operator's dispatch table at the keys where the guard put its kernels (the
    starts of their lines, _line_starts): what replacing one of them changes. torch registers
    kernels at other keys lazily (functorch's batching rules for nll_loss_backward at a first
    torch.vmap, the Autograd kernel of a collective at the first import of torch.distributed),
    which is no tampering; one registered over the guard's is."""
    return tuple(line for line in dump(qualified).splitlines() if line.startswith(keys))


def _refusing_kernel(guard: Guard, what: str) -> Any:
    def refuse_operator(*args: Any, **kwargs: Any) -> NoReturn:
        _refuse(guard, what)

    return refuse_operator


def _backward_kernel(guard: Guard, what: str, original: Any, graph_task: Any = torch._C._current_graph_task_id) -> Any:
    """The kernel of a backward operator of an allowed one: its own kernel, called through, while
    autograd runs a backward pass (a graph task is running); refused otherwise."""

    def while_autograd_runs(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        if graph_task() != -1:
            return original.call_boxed(keyset, *args, **kwargs)
        _refuse(guard, what)

    return while_autograd_runs


def _audit_hook(guard: Guard, modules: list[ModuleType]) -> Any:
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
    protected = frozenset(id(function) for _, function, _ in functions) | guard.kernel_ids
    # The same for the functions: each part of each, side by side (cells: every closure's, in order).
    watched = tuple(function for _, function, _ in functions)
    get_code, get_defaults, get_kwdefaults, get_closure = (operator.attrgetter(f"__{part}__") for part in ("code", "defaults", "kwdefaults", "closure"))
    codes, defaults, kwdefaults, closures = (tuple(map(get, watched)) for get in (get_code, get_defaults, get_kwdefaults, get_closure))
    kwdefaults_copies = tuple(dict(kw) if kw else kw for kw in kwdefaults)
    cells = tuple(cell for closure in closures if closure for cell in closure)
    get_contents, contents = operator.attrgetter("cell_contents"), tuple(cell.cell_contents for cell in cells)
    # Each overridden operator once, with its dispatch table as armed (taken where the kernels were put in place)
    kernel_names, kernel_tables = tuple(guard.tables), tuple(guard.tables.values())
    kernel_keys = tuple(guard.line_starts[qualified] for qualified in kernel_names)
    kernel_functions = tuple(guard.kernel_parts[qualified][0] for qualified in kernel_names)
    kernel_parts = tuple(guard.kernel_parts[qualified][1] for qualified in kernel_names)
    position = [0]  # where the next window of kernels to check starts, going round
    ne = operator.ne
    function_watch = guard.function_watch
    function_stack_len, function_stack_at = torch._C._len_torch_function_stack, torch._C._get_function_stack_at
    dispatch_stack_len = torch._C._len_torch_dispatch_stack
    infra_mode, infra_keys = torch._C._get_dispatch_mode, tuple(torch._C._TorchDispatchModeKey.__members__.values())
    function_handling_on, function_modes_on = torch._C._is_torch_function_enabled, torch._C._is_torch_function_mode_enabled
    kernel_table, parts_of, missing, error, line_of = _kernel_lines, _parts, _MISSING, ForbiddenAPIError, _submission_line
    tuple_ = tuple

    def all_parts_of(kernels: tuple) -> tuple:
        return tuple_(map_(parts_of, kernels))

    count, ident, string, exception, basename, finalizing = len, id, str, Exception, os.path.basename, sys.is_finalizing
    record_event, read_event, tampered, refused_events, limit = RECORD_EVENT, READ_EVENT, TAMPERED, dict(REFUSED_EVENTS), RECORD_LIMIT
    every, per_read, per_full = FULL_CHECK_EVERY, KERNELS_PER_READ, KERNELS_PER_FULL_CHECK
    changes = ("object.__setattr__", "object.__delattr__")  # (setting a function's __defaults__ to None deletes them)

    def kernels_changed(window: int) -> str | None:
        """Which of the next `window` refusing kernels, going round, was changed, or None."""
        total = count(kernel_names) or 1
        start, end = position[0] % total, position[0] % total + window
        wrapped = max(0, end - total)
        names, tables = kernel_names[start:end] + kernel_names[:wrapped], kernel_tables[start:end] + kernel_tables[:wrapped]
        keys = kernel_keys[start:end] + kernel_keys[:wrapped]
        functions, parts = kernel_functions[start:end] + kernel_functions[:wrapped], kernel_parts[start:end] + kernel_parts[:wrapped]
        position[0] = end % total
        if any_(map_(ne, map_(kernel_table, names, keys), tables)) or any_(map_(ne, map_(all_parts_of, functions), parts)):
            for qualified, key_starts, table, kernels, armed in zip_(names, keys, tables, functions, parts):
                if kernel_table(qualified, key_starts) != table or all_parts_of(kernels) != armed:
                    return f"the kernels of {qualified} were changed"
        return None

    handler_code, getframe = _FunctionWatch.__torch_function__.__code__, sys._getframe

    def inside_handler() -> bool:
        """Whether the function mode's own handler is running below: torch takes the mode off the
        stack while its handler runs (a refusal of a special method torch called back finds it so)."""
        frame = getframe(1)
        while frame is not None:
            if frame.f_code is handler_code:
                return True
            frame = frame.f_back
        return False

    def tampering(full: bool) -> str | None:
        """What was changed in the guard, or None. full: the whole picture, with a larger window
        of the kernels."""
        handling = function_stack_len() == 0 and inside_handler()  # (then torch turned modes off for the handler itself)
        if not handling and not (function_stack_len() == 1 and function_stack_at(0) is function_watch):
            return "its function mode is no longer alone on the torch function mode stack"
        if dispatch_stack_len() != 0:
            return "a dispatch mode was pushed on the torch dispatch mode stack"
        for key in infra_keys:
            if infra_mode(key) is not None:
                return "a dispatch mode was set"
        if not handling and not (function_handling_on() and function_modes_on()):
            return "torch function handling was turned off"
        for label, mapping, size in sizes:
            if count(mapping) != size:
                return f"names were added to or removed from {label}"
        if not full:
            return kernels_changed(per_read)
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
        return kernels_changed(per_full)

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
                problem = tampering(last or periodic)
            except exception as failure:  # noqa: BLE001 - a check that cannot run is tampering too
                problem = f"its check failed: {failure!r}"
            if problem:
                add(f"{tampered} ({problem})")
            args[0].extend(log)
            reads[0] += 1
        elif (event in refused_events and not finalizing()) or (event in changes and ident(args[0]) in protected):
            what = refused_events.get(event) or f"{tampered} (the {args[1]} of {args[0].__qualname__} was being replaced)"
            line = line_of(guard)
            add(f"{what} (line {line} of {basename(guard.submission)})" if line else what)
            raise error(f"forbidden in this challenge: {what}")

    return hook


_MISSING = object()
_KERNELS_FOUND: dict[tuple, list[tuple[str, str, str]]] = {}  # Guard.kernels_to_override, by the lists


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
    return tuple(entries), tuple(sizes), tuple((f.__qualname__, f, _parts(f)) for f in functions.values())


class _FunctionWatch(TorchFunctionMode):
    """Runs on every torch function and Tensor method called while the submission runs: refuses
    tensor subclasses with handlers of their own, and out= (on honest work, a few identity tests)."""

    def __init__(self, guard: Guard) -> None:
        super().__init__()
        self.guard = guard

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None, _type: Any = type, _tensor: Any = _Tensor) -> Any:
        guard = self.guard
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
            if kwargs.get("out") is not None:
                guard.refuse_out(func)
            guard.check_arguments((), kwargs)
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
