"""Which operators a piece of trusted code runs: the author's side of the runtime guard's list.

torch's profiler sees every call the dispatcher makes, composite operators included (aten::matmul
before the aten::mm it runs); an operator run while autograd runs a backward pass is told apart
from one run in a forward pass. `python -m grader verify ID` profiles the package's accepted
examples with it, and tools/operators.py the functions of the lists. Never for a submission: it
runs the code in this process.
"""

import importlib.util
import sys
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import torch

BACKWARD_EVENT = "autograd::engine::evaluate_function"


@cache
def operator_names() -> frozenset[str]:
    """Every operator the dispatcher knows, by its name without the overload (aten::add)."""
    return frozenset(name.partition(".")[0] for name in torch._C._dispatch_get_all_op_names())


def profiled(job: Callable[[], Any]) -> tuple[set[str], set[str]]:
    """(operators run in a forward pass, operators run while autograd ran a backward pass) by job()."""
    known = operator_names()
    with warnings.catch_warnings(), torch.autograd.profiler.profile(use_kineto=False) as profile:
        warnings.simplefilter("ignore")
        job()
    forward, backward = set(), set()
    for event in profile.function_events:
        if event.name not in known:
            continue
        parent, inside = event.cpu_parent, False
        while parent is not None and not inside:  # (the profiler nests each event in the ranges it ran in)
            inside = parent.name.startswith(BACKWARD_EVENT)
            parent = parent.cpu_parent
        (backward if inside else forward).add(event.name)
    return forward, backward


def example_module(path: Path) -> Any:
    """An example submission imported as plain Python, in this process (the author's own files)."""
    loaded = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(loaded)
    sys.modules[module.__name__] = module  # dataclasses looks its module up by name
    try:
        loaded.loader.exec_module(module)
    finally:
        sys.modules.pop(module.__name__, None)
    return module
