"""Runtime guard: watches what the submission executes and refuses forbidden functionality.

Two layers, active around each call of the submission (and the backward through its result):
- a TorchFunctionMode sees every torch-level function and Tensor method by name
  (torch.rms_norm, F.softmax, x.softmax, ...), even ones that decompose into elementary
  operators and would be invisible below;
- a TorchDispatchMode sees every ATen operator that really runs (aten._softmax,
  aten.native_layer_norm, ...), whichever Python route reached it (torch.ops.aten, torch._C._nn,
  names built from strings).
A forbidden use is recorded, then refused with an exception; the record is what the grader is
told, so catching the exception does not hide it.
"""

import fnmatch
import os
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode


class ForbiddenAPIError(RuntimeError):
    pass


class Guard:
    def __init__(self, functions: list[str], operators: list[str], submission: str) -> None:
        self.submission = submission  # its frames say where a forbidden use came from
        self.functions = frozenset(functions)
        self.operator_patterns = tuple(operators)  # glob patterns over ATen operator names
        self.found: list[str] = []

    def refuse(self, what: str) -> None:
        lines = [f.lineno for f in traceback.extract_stack() if f.filename == self.submission]
        if lines:
            what += f" (line {lines[-1]} of {os.path.basename(self.submission)})"
        if what not in self.found:
            self.found.append(what)
        raise ForbiddenAPIError(f"{what} is forbidden in this challenge")

    def operator_forbidden(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.operator_patterns)

    @contextmanager
    def watching(self) -> Iterator[None]:
        with _FunctionWatch(self), _OperatorWatch(self):
            yield


class _FunctionWatch(TorchFunctionMode):
    def __init__(self, guard: Guard) -> None:
        super().__init__()
        self.guard = guard

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = getattr(func, "__name__", "")
        if name in self.guard.functions:
            owner = getattr(func, "__module__", None) or "torch"
            self.guard.refuse(f"the function {owner}.{name}" if "Tensor" not in getattr(func, "__qualname__", "") else f"the Tensor method .{name}")
        return func(*args, **(kwargs or {}))


class _OperatorWatch(TorchDispatchMode):
    def __init__(self, guard: Guard) -> None:
        super().__init__()
        self.guard = guard

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = func.overloadpacket.__name__
        if self.guard.operator_forbidden(name):
            self.guard.refuse(f"the operator aten.{name}")
        return func(*args, **(kwargs or {}))
