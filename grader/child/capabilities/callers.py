"""Who called the file's special method: the interpreter, or the C code of a library.

numpy's and torch's C code walks the file's lists through a pointer to their item storage while it
calls the items' special methods: numpy's shape discovery calls `__len__`, its conversions
`__float__`, `__index__`, `__bool__` and `__str__`, `torch.tensor` calls `__float__`, torch's
argument parser `__index__`. A method of the file's that empties the list frees that storage under
them, and the walk goes on reading memory the file can fill with addresses of its choosing. CPython's
own C code re-reads a list's size after every call it makes, so it is not exposed the same way.

So a special method of the file's classes (and the body of a generator of the file's, resumed) runs
only when the code that called it, down to the file's own code, is Python code or CPython's C code:
the interpreter, its library (libpython) and the standard library's extension modules. Found on the
native stack: glibc's backtrace() gives the return addresses, dladdr() the shared object each lies
in, and the interpreter's own frames mark where each run of C code starts and ends. CPython 3.11
starts one native `_PyEval_EvalFrameDefault` per Python frame it enters from C (the frame's
`is_entry` flag), so the Python frames and the runs of C code between them line up: the walk checks
the C code between the special method and the nearest frame of the file's code below it, and that
only. An interpreter frame not recognised on the native stack makes the runs longer, never shorter:
more is checked, never less.

The layouts read (PyFrameObject, _PyInterpreterFrame, CPython 3.11) are checked against a frame
before anything is read, and the whole walk is tried once at installation on a probe: the
interpreter calling a special method must pass, numpy's C code calling one must not.
"""

import ctypes
import sys
import sysconfig
from collections.abc import Callable
from types import CodeType, FrameType, FunctionType
from typing import Any

import numpy
import torch

_DEPTH = 512  # native return addresses read at most: a run of C code deeper than that is refused


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


_FRAME_F_FRAME = 3 * ctypes.sizeof(ctypes.c_void_p)  # PyFrameObject: ob_refcnt, ob_type, f_back, then f_frame
_INTERPRETER_F_CODE, _INTERPRETER_FRAME_OBJ, _INTERPRETER_IS_ENTRY = 32, 40, 68  # _PyInterpreterFrame, CPython 3.11

INTERPRETER, EVAL, LIBRARY = 0, 1, 2  # what a native return address lies in


class Callers:
    """The native stack read on behalf of the capability layer, once set up in a process."""

    def __init__(self) -> None:
        if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
            raise RuntimeError(f"the callers of the file's special methods cannot be told on {sys.implementation.name} {sys.version}: CPython 3.11 only")
        libc = ctypes.CDLL(None)
        self._backtrace = libc.backtrace
        self._backtrace.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
        self._backtrace.restype = ctypes.c_int
        self._dladdr = libc.dladdr
        self._dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        self._dladdr.restype = ctypes.c_int
        self._buffer = (ctypes.c_void_p * _DEPTH)()
        self._info = _DlInfo()
        self._kinds: dict[int, tuple[int, str]] = {}  # return address -> (kind, the object's file name)
        eval_address = ctypes.cast(ctypes.pythonapi._PyEval_EvalFrameDefault, ctypes.c_void_p).value
        self._eval = eval_address
        self._interpreter = {self._object_of(eval_address), self._object_of(ctypes.cast(ctypes.pythonapi.PyObject_Size, ctypes.c_void_p).value)}
        self._standard_library = str(sysconfig.get_config_var("DESTSHARED") or "\0") + "/"
        self._forward_apply = vars(torch.autograd.function.Function)["apply"].__func__.__code__
        self._backward_apply = torch.autograd.function.BackwardCFunction.apply.__code__
        self._check_layout(sys._getframe())

    def _object_of(self, address: int) -> str:
        if not self._dladdr(address, ctypes.byref(self._info)) or not self._info.dli_fname:
            raise RuntimeError("dladdr cannot name the interpreter's own code: the callers of the file's special methods cannot be told")
        return self._info.dli_fname.decode(errors="replace")

    def _check_layout(self, frame: FrameType) -> None:
        interpreter = ctypes.c_void_p.from_address(id(frame) + _FRAME_F_FRAME).value
        if not interpreter or ctypes.c_void_p.from_address(interpreter + _INTERPRETER_F_CODE).value != id(frame.f_code):
            raise RuntimeError("CPython's frames are not laid out as expected: the callers of the file's special methods cannot be told")
        if ctypes.c_void_p.from_address(interpreter + _INTERPRETER_FRAME_OBJ).value != id(frame):
            raise RuntimeError("CPython's frames are not laid out as expected: the callers of the file's special methods cannot be told")

    def _is_entry(self, frame: FrameType) -> bool:
        """Whether the interpreter entered this frame from C (a native _PyEval_EvalFrameDefault of its own)."""
        interpreter = ctypes.c_void_p.from_address(id(frame) + _FRAME_F_FRAME).value
        return bool(ctypes.c_bool.from_address(interpreter + _INTERPRETER_IS_ENTRY).value)

    def _kind(self, address: int) -> tuple[int, str]:
        found = self._kinds.get(address)
        if found is None:
            if not self._dladdr(address, ctypes.byref(self._info)) or not self._info.dli_fname:
                found = (LIBRARY, "code no shared object holds")
            else:
                name = self._info.dli_fname.decode(errors="replace")
                if self._info.dli_saddr == self._eval:
                    found = (EVAL, name)
                elif name in self._interpreter or name.startswith(self._standard_library):
                    found = (INTERPRETER, name)
                else:
                    found = (LIBRARY, name)
            self._kinds[address] = found
        return found

    def library_between(self, frame: FrameType, is_files: Callable[[FrameType], bool]) -> str | None:
        """The shared object of the first library C code found between `frame` (the file's code,
        running now) and the nearest frame below it of the file's code whose entry was checked
        (`is_files`: a function's, never a generator's, which C code can resume unchecked), or None when
        only Python code and CPython's own C code lie between, or torch's autograd running the
        file's torch.autograd.Function (`Function.apply` calling its forward and setup_context,
        the backward engine calling `BackwardCFunction.apply`, which calls its backward)."""
        runs: list[bool] = []  # for each run of C code below `frame`, down to the file's code: whether it is torch's autograd's
        current: FrameType | None = frame
        first = True
        while current is not None:
            group_entry: FrameType | None = None
            while current is not None:  # the Python frames one interpreter frame runs: down to the one it entered from C
                if not first and is_files(current):
                    return self._library_in(runs)
                first = False
                if self._is_entry(current):
                    group_entry = current
                    current = current.f_back
                    break
                current = current.f_back
            if current is None:
                return self._library_in(runs)  # the process's first frame: nothing of the file's below
            engine = group_entry is not None and group_entry.f_code is self._backward_apply
            apply = current.f_code is self._forward_apply and group_entry is not None and group_entry.f_code in _own_steps(current)
            runs.append(engine or apply)
        return self._library_in(runs)

    def _library_in(self, runs: list[bool]) -> str | None:
        """The first library C code in the runs of C code below the running frame (the first
        len(runs) of them), skipping those of torch's autograd; None if there is none."""
        if all(runs):
            return None  # (no run at all: the file's code called this one from Python)
        count = self._backtrace(self._buffer, _DEPTH)
        kinds = [self._kind(self._buffer[i]) for i in range(count)]
        evals = [i for i, (kind, _) in enumerate(kinds) if kind == EVAL]
        for run, autograd in enumerate(runs):
            if run + 1 >= len(evals):
                return "C code too deep to read"  # (unread: refused, never passed)
            if autograd:
                continue
            for kind, name in kinds[evals[run] + 1 : evals[run + 1]]:
                if kind == LIBRARY:
                    return name
        return None


def _own_steps(apply: FrameType) -> tuple[CodeType, ...]:
    """The code of the `forward` and `setup_context` of the Function class whose `apply` runs in this
    frame, where each is a plain function (the only code its C code calls there): not a partial or
    any other callable, through which torch's C code would reach other C code."""
    klass = apply.f_locals.get("cls")
    found = []
    for name in ("forward", "setup_context"):
        for holder in getattr(klass, "__mro__", ()):
            if name in vars(holder):
                step = vars(holder)[name]
                step = step.__func__ if type(step) in (staticmethod, classmethod) else step
                if type(step) is FunctionType:
                    found.append(step.__code__)
                break
    return tuple(found)


def probe(callers: Callers) -> None:
    """The walk tried once: the interpreter calling a special method passes, numpy's C code
    calling one is found. Raises RuntimeError where either is not so (the child does not start)."""
    here = sys._getframe().f_code.co_filename
    found: list[str | None] = []

    def is_here(frame: FrameType) -> bool:
        return frame.f_code.co_filename == here and frame.f_code.co_name == "probe"

    class Probe:
        def __len__(self) -> int:
            found.append(callers.library_between(sys._getframe(), is_here))
            return 0

        def __getitem__(self, index: Any) -> Any:
            raise IndexError(index)

    len(Probe())
    numpy.array([Probe()], dtype=numpy.float64)
    if len(found) < 2 or found[0] is not None or found[1] is None:
        raise RuntimeError(f"the callers of the file's special methods are not told apart on this build (found {found}): the child cannot run a file")
