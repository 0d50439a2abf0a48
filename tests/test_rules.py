"""The allow-lists (grader/rules.toml): small, every name resolves, and the walls keep exactly them:
a torch or numpy callable off the lists is refused with its name, every one on them is handed out,
and every allowed torch function runs under the armed runtime guard without a finding."""

import collections
import json
import subprocess
import sys

import numpy
import pytest
import torch

from grader.child.capabilities.allowed import resolve
from grader.child.capabilities.checks import DATA, Capabilities
from grader.rules import base_rules
from grader.spec import ROOT, problem_ids, problem_spec
from tests.grading import run_grader

RULES = base_rules()


class Refused(RuntimeError):
    pass


def refuse(what: str) -> None:
    raise Refused(what)


def capabilities() -> Capabilities:
    caps = Capabilities({"rules": RULES.child_config(), "submission": "rules_test.py"}, refuse)
    caps.namespace("candidate_submission")
    return caps


def test_every_name_on_the_lists_resolves_to_an_object_of_this_torch_and_numpy():
    assert resolve(RULES.child_config()).missing == []


def test_no_name_is_listed_twice():
    for listed in (RULES.functions, RULES.attributes, RULES.operators, RULES.backward, RULES.builtins, RULES.define):
        assert [name for name, count in collections.Counter(listed).items() if count > 1] == []


def test_the_lists_are_small_beside_what_torch_and_numpy_offer():
    offered = {name for name in dir(torch) if not name.startswith("_") and callable(getattr(torch, name))}
    offered |= {f"Tensor.{name}" for name in dir(torch.Tensor) if not name.startswith("_")}
    offered |= {f"numpy.{name}" for name in dir(numpy) if not name.startswith("_")}
    listed = [name for name in RULES.functions if name.startswith(("torch.", "numpy."))]
    operators = {name.partition(".")[0] for name in torch._C._dispatch_get_all_op_names()}
    assert len(listed) < len(offered) / 2, (len(listed), len(offered))
    assert len(RULES.operators) + len(RULES.backward) < len(operators) / 3, (len(RULES.operators), len(operators))


def library_callables() -> list[tuple[object, str, str]]:
    """(owner, name, qualified name) of every public callable of torch, numpy and their tensor and
    array classes, read as a file would read them."""
    found = []
    for owner, path in ((torch, "torch"), (torch.Tensor, "torch.Tensor"), (numpy, "numpy"), (numpy.ndarray, "numpy.ndarray")):
        for name in sorted(dir(owner)):
            if name.startswith("_"):
                continue
            try:
                value = getattr(owner, name)
            except Exception:  # noqa: BLE001 - a deprecated name that raises when read
                continue
            if callable(value) and not isinstance(value, DATA):
                found.append((owner, name, f"{path}.{name}"))
    return found


def test_a_library_callable_off_the_lists_is_refused_by_name_and_one_on_them_is_handed_out():
    caps = capabilities()
    named = resolve(RULES.child_config()).named
    listed = set(RULES.functions) | {qualified for owner, name, qualified in library_callables() if any(getattr(owner, name) is named[n] for n in named)}
    wrong = []
    for owner, name, qualified in library_callables():  # (an alias of a listed object, numpy.acos of numpy.arccos, is listed)
        try:
            caps.getattr(owner, name)
            refused = ""
        except Refused as error:
            refused = str(error)
        if qualified in listed and refused:
            wrong.append(f"listed but refused: {qualified}: {refused}")
        elif qualified not in listed and not refused and not isinstance(getattr(owner, name), type | torch.dtype):
            wrong.append(f"not listed but handed out: {qualified}")
        elif refused and qualified.rpartition(".")[2] not in refused:
            wrong.append(f"refused without its name: {qualified}: {refused}")
    assert wrong == [], "\n".join(wrong[:40])


def test_every_listed_name_of_the_pure_python_modules_is_handed_out():
    caps = capabilities()
    allowed = resolve(RULES.child_config())
    modules = {path: allowed.modules[ident] for ident, path in allowed.module_names.items()}
    for name in RULES.functions:
        if name.startswith(("torch.", "numpy.")):
            continue
        parts = name.split(".")
        cut = max(i for i in range(1, len(parts)) if ".".join(parts[:i]) in modules)
        value = modules[".".join(parts[:cut])]
        for part in parts[cut:]:  # each step read as the file reads it: refused, it raises
            value = caps.getattr(value, part)


@pytest.mark.sandbox  # a process of its own: the command as a user runs it
@pytest.mark.parametrize("problem", problem_ids())
def test_the_rules_command_prints_each_problems_lists(problem):
    done = run_grader("rules", "--problem", problem, "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    rules = problem_spec(problem).rules
    assert listing["functions"] == list(rules.functions) and listing["operators"] == list(rules.operators)
    assert set(listing) >= {"modules", "functions", "operators", "builtins", "special_methods"}


CALL_EVERY_FUNCTION = """
import json, sys
sys.path.insert(0, {kit!r})
sys.path.insert(0, {root!r})
import torch
from child import runner, wire
from grader.child.capabilities.allowed import resolve
from tests import exercise

rules = json.loads({rules!r})
torch.set_num_threads(1)
guard = runner.prepared_guard(rules, "/nonexistent/submission.py")
guard.arm(protect=[runner, wire])
allowed = resolve(rules)
results = {{}}
for name in exercise.torch_functions(rules["functions"]):
    t = exercise.tensors()
    try:
        why, result = exercise.call(name, allowed.named.get(name), t)
        if not why:
            exercise.backward(result, t)
        results[name] = why
    except Exception as error:
        results[name] = type(error).__name__ + ": " + str(error).splitlines()[0][:200] if str(error) else type(error).__name__
exercise.syntax(exercise.tensors())
print(json.dumps({{"results": results, "found": guard.findings()}}))
"""


@pytest.mark.sandbox
@pytest.mark.slow
def test_every_allowed_torch_function_runs_under_the_armed_guard_forward_and_backward():
    script = CALL_EVERY_FUNCTION.format(kit=str(ROOT / "grader"), root=str(ROOT), rules=json.dumps(RULES.child_config()))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["found"] == []
    refused = {name: why for name, why in outcome["results"].items() if "forbidden" in why.lower()}
    assert refused == {}
