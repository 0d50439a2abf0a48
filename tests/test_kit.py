"""The candidate's kit (`make kit`), unzipped outside the repository as a candidate would: it holds
only what a candidate may have (no reference, no hidden case, no secret), nothing in it computes the
answer, and its check.py judges the public cases exactly as the grader does."""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from grader.batch.schedule import Workers
from grader.cases import make_cases
from grader.expected import expected_for
from grader.formats.json import to_json
from grader.spec import load_spec
from tests.grading import ROOT, SUBMISSIONS

SPEC = load_spec()
PUBLIC = [t.name for t in SPEC.templates if t.settings["visibility"] == "public"]
HIDDEN = [t.name for t in SPEC.templates if t.settings["visibility"] != "public"]
TOP = "mlm-tied-head-kit"
GRADER_MODULES = [
    *(f"grader/{name}.py" for name in ("__init__", "case", "cases", "compare", "diagnosis", "expected", "judge", "policy", "protocol")),
    *(f"grader/{name}.py" for name in ("allowlist", "report", "results", "rules", "spec", "package_format")),
    "grader/rules.toml",  # the harness's allow-lists, which spec.py narrows by the package's [rules]
    # the sandbox the kit runs: bubblewrap, else a plain process; not the uid or docker backends nor the zygote
    *(f"grader/sandbox/{name}.py" for name in ("__init__", "backends", "boxes", "bubblewrap", "child", "limits", "output", "process", "seccomp", "workdir")),
    *(f"grader/child/{name}.py" for name in ("__init__", "guard", "runner", "vjp", "walls", "wire")),
    *(
        f"grader/child/capabilities/{name}.py"
        for name in ("__init__", "allowed", "arrays", "builtins", "callers", "checks", "classes", "relays", "rewrite", "slots", "standins")
    ),
    "grader/formats/__init__.py",
    "grader/formats/text.py",
    "grader/formats/points.py",
    "grader/formats/safe.py",
]
WRITTEN_FOR_THE_KIT = {"grader/__init__.py", "grader/formats/__init__.py"}  # the rest is copied
ALLOWED = {"README.md", "solution.py", "check.py", "spec.json", *(f"cases/{name}.pt" for name in PUBLIC), *GRADER_MODULES}
CLOSING = re.compile(r"\nall (\d+) public cases passed; the hidden cases are run by the grader\n\Z")
# A candidate's environment: no PYTHONPATH, no seed, nothing of the repository's.
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLM_GRADER_SEED")}
# Public-case verdicts of the grader that check.py must reproduce: a sample of every kind of rejection
# (at most ~15 runs of check.py: each grades in a sandbox and CPU is scarce).
# One file of each path through check.py's report (prints_without_flush.py goes through the kit in
# test_the_kit_runs_as_on_macos_with_a_plain_process_and_says_so; detached_head.py's hint, in tests/test_cli.py).
ACCEPTED = ["plain_helpers.py", "byte_order_mark.py"]
REJECTED = [
    "wrong_answer/no_score_scaling.py",
    "wrong_answer/modifies_input.py",
    "wrong_answer/several_causal_mask_relu.py",
    "runtime_error/raises_in_call.py",
    "runtime_error/exit_at_import.py",
    "forbidden_api/plain_torch_softmax.py",
    "forbidden_api/getattr_computed.py",
    "compile_error/syntax_error.py",
    "invalid_submission/no_entry_point.py",
]


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The kit built into a temporary folder and unzipped into another, both outside the repository."""
    out = tmp_path_factory.mktemp("built") / "kit.zip"
    build = subprocess.run([sys.executable, str(ROOT / "deploy" / "kit" / "build.py"), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    unzipped = tmp_path_factory.mktemp("candidate")
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
        assert all(name.startswith(f"{TOP}/") for name in names), names
        archive.extractall(unzipped)
    return unzipped / TOP


def kit_files(kit: Path) -> dict[str, Path]:
    return {path.relative_to(kit).as_posix(): path for path in kit.rglob("*") if path.is_file()}


def check(kit: Path, *args: str) -> subprocess.CompletedProcess:
    """python check.py ARGS as a candidate runs it: from the kit's folder, PYTHONPATH unset."""
    return subprocess.run([sys.executable, "check.py", *args], cwd=kit, env=ENV, capture_output=True, text=True, timeout=300)


@pytest.mark.sandbox
def test_the_kit_stays_small(kit: Path) -> None:
    """Every public case is shipped in full; they must stay cheap to download."""
    size = sum(path.stat().st_size for path in kit.rglob("*") if path.is_file())
    assert size < 2 * 1024 * 1024, size


@pytest.mark.sandbox
def test_the_kit_holds_only_allowed_files(kit: Path) -> None:
    files = kit_files(kit)
    assert set(files) <= ALLOWED, f"not allowed in the kit: {sorted(set(files) - ALLOWED)}"
    assert {"README.md", "solution.py", "check.py", "spec.json", *(f"cases/{name}.pt" for name in PUBLIC)} <= set(files)
    assert not any(name.startswith("reference") for name in files)


@pytest.mark.sandbox
def test_no_file_mentions_the_hidden_seed_or_a_hidden_case(kit: Path) -> None:
    secrets = [SPEC.default_hidden_seed, *HIDDEN]
    assert "edge_no_blocks" in HIDDEN and "large_magnitude_1" in HIDDEN  # the list is the real one
    for name, path in kit_files(kit).items():
        content = path.read_bytes()
        found = [word for word in secrets if word.encode() in content]
        assert not found, f"{name} mentions {found}"
    spec = json.loads((kit / "spec.json").read_text())
    assert [case["name"] for case in spec["cases"]] == PUBLIC
    assert spec["seeds"]["default_hidden"] == spec["seeds"]["public"] == SPEC.public_seed


@pytest.mark.sandbox
def test_the_grader_modules_are_the_graders_own(kit: Path) -> None:
    """Copied byte for byte, so the kit's policy, guard, comparison and messages cannot drift."""
    for name in GRADER_MODULES:
        if name not in WRITTEN_FOR_THE_KIT:
            assert (kit / name).read_bytes() == (ROOT / name).read_bytes(), name
    assert (kit / "solution.py").read_bytes() == (ROOT / "problem" / "mlm-forward-tied" / "stub.py").read_bytes()
    assert (kit / "README.md").read_bytes() == (ROOT / "problem" / "mlm-forward-tied" / "README.md").read_bytes()


@pytest.mark.sandbox
def test_the_public_cases_are_the_graders_in_full(kit: Path) -> None:
    """Inputs, upstream gradient, expected logits and gradients, loadable without running code."""
    for case in make_cases(SPEC, SPEC.public_seed, public_only=True):
        saved = torch.load(kit / "cases" / f"{case.name}.pt", weights_only=True)
        expected = expected_for(case, SPEC)
        assert saved["num_heads"] == case.args["num_heads"]
        assert saved["shape"] == case.shape
        for name in SPEC.tensor_parameters:
            assert torch.equal(saved[name], case.inputs[name]) and saved[name].dtype == case.inputs[name].dtype, (case.name, name)
        assert torch.equal(saved["grad_output"], case.grad_output)
        assert torch.equal(saved["expected_logits"], expected.output)
        for name in SPEC.gradient_wrt:
            assert torch.equal(saved[f"expected_grad_{name}"], expected.grads[name]), (case.name, name)


# Imports every Python file of the kit (cwd = the kit, PYTHONPATH unset) and calls every callable they
# define (functions, classes, methods) that accepts the six arguments on a public case: none may
# return the expected logits. Prints what it tried and what worked, as JSON.
FORWARD_PROBE = r"""
import importlib, importlib.util, inspect, json, pathlib, sys
import torch

sys.path.insert(0, ".")
saved = torch.load("cases/public_multi_head.pt", weights_only=True)
args = [saved[name] for name in ("input_ids", "w_emb", "pos_embed", "blocks_weights", "mask_indicator")] + [int(saved["num_heads"])]
want = saved["expected_logits"]
modules = {}
for path in sorted(pathlib.Path(".").rglob("*.py")):
    if path.parts[0] == "grader":
        modules[str(path)] = importlib.import_module(".".join(path.with_suffix("").parts).removesuffix(".__init__"))
    else:
        spec = importlib.util.spec_from_file_location("kit_" + path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[str(path)] = module
tried, working = [], []
for path, module in modules.items():
    found = [(name, obj) for name, obj in vars(module).items() if callable(obj) and getattr(obj, "__module__", None) == module.__name__]
    found += [(f"{name}.{attr}", member) for name, obj in found if inspect.isclass(obj) for attr, member in vars(obj).items() if callable(member)]
    for name, obj in found:
        try:
            inspect.signature(obj).bind(*args)
        except (TypeError, ValueError):
            continue
        tried.append(f"{path}:{name}")
        try:
            out = obj(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        except BaseException:
            continue
        if isinstance(out, torch.Tensor) and out.shape == want.shape and torch.allclose(out.detach().double(), want, rtol=1e-3, atol=1e-3):
            working.append(f"{path}:{name}")
print(json.dumps({"modules": sorted(modules), "tried": tried, "working": working, "reference": importlib.util.find_spec("reference") is not None}))
"""


def probe_forward(folder: Path) -> dict:
    run = subprocess.run([sys.executable, "-c", FORWARD_PROBE], cwd=folder, env=ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.sandbox
def test_no_module_in_the_kit_computes_the_answer(kit: Path, tmp_path: Path) -> None:
    planted = tmp_path / TOP  # the same probe must find a forward pass where there is one
    shutil.copytree(kit, planted)
    shutil.copy(SUBMISSIONS / "accepted" / "plain_helpers.py", planted / "planted.py")
    with ThreadPoolExecutor(2) as pool:
        found, control = pool.map(probe_forward, [kit, planted])
    assert set(found["modules"]) == {name for name in kit_files(kit) if name.endswith(".py")}
    assert "solution.py:mlm_forward_tied" in found["tried"]
    assert found["working"] == [], found["working"]
    assert not found["reference"], "the reference can be imported from the kit's folder"
    assert control["working"] == ["planted.py:mlm_forward_tied"]


@pytest.mark.sandbox
def test_usage_errors_exit_2(kit: Path, tmp_path: Path) -> None:
    for args in ([], [str(tmp_path / "missing.py")], [str(tmp_path)], ["a.py", "b.py"]):
        run = check(kit, *args)
        assert run.returncode == 2, (args, run.stdout, run.stderr)
        assert run.stderr and "Traceback" not in run.stderr
    damaged = tmp_path / TOP
    shutil.copytree(kit, damaged)
    (damaged / "cases" / f"{PUBLIC[0]}.pt").unlink()
    run = check(damaged, "solution.py")
    assert run.returncode == 2 and "unzip the kit again" in run.stderr and "Traceback" not in run.stderr, run.stderr


@pytest.mark.sandbox
def test_the_statement_speaks_to_a_kit_holder(kit: Path) -> None:
    statement = " ".join((kit / "README.md").read_text().split())  # lines wrapped anywhere
    assert "python check.py solution.py" in statement
    assert "all N public cases passed; the hidden cases are run by the grader" in statement
    assert f"the grader runs torch {torch.__version__.split('+')[0]}" in statement
    assert "make grade" not in statement and ".venv/bin/python -m grader" not in statement  # the candidate has no repository
    assert "bench/" not in statement and "tests/" not in statement, "the statement cites a file of the repository"


def rows(text: str) -> dict[str, str]:
    """The table's rows of the report, by case name."""
    return {line.split()[0]: line for line in text.splitlines() if line.split()[:1] and line.split()[0] in PUBLIC}


@pytest.mark.sandbox
def test_check_agrees_with_the_grader_on_the_public_cases(kit: Path, tmp_path: Path) -> None:
    """check.py accepts correct files (exit 0, the closing line, never 'accepted') and gives the
    grader's `--public` verdict, per-case results, messages and hints for wrong ones."""
    outside = tmp_path / "elsewhere"  # the candidate's file lives anywhere; check.py runs from the kit's folder
    outside.mkdir()
    accepted = [shutil.copy(SUBMISSIONS / "accepted" / name, outside / name) for name in ACCEPTED]
    rejected = [SUBMISSIONS / name for name in REJECTED]
    with ThreadPoolExecutor(2) as threads:
        checks = list(threads.map(lambda path: check(kit, str(path)), [*accepted, *rejected]))
    # The grader's --public reports, graded as a batch (tests/test_batch.py: a batch's reports are
    # those of the single-file command).
    graded = dict(Workers(SPEC, SPEC.default_hidden_seed, jobs=2, public_only=True).map((path, path) for path in rejected))

    for path, run in zip(accepted, checks[: len(accepted)], strict=True):
        assert run.returncode == 0, (path.name, run.stdout, run.stderr)
        closing = CLOSING.search(run.stdout)
        assert closing and int(closing.group(1)) == len(PUBLIC), (path.name, run.stdout)
        assert "accepted" not in run.stdout.lower(), run.stdout
        assert len(rows(run.stdout)) == len(PUBLIC) and all(" ok " in line for line in rows(run.stdout).values()), run.stdout
        assert "isolation: " in run.stdout and "plain process" not in run.stdout  # on Linux, Linux's walls

    for path, run in zip(rejected, checks[len(accepted) :], strict=True):
        report = to_json(graded[path])
        where = f"{path.parent.name}/{path.name}:\n{run.stdout}\n{run.stderr}"
        assert report["verdict"] == path.parent.name and report["public_only"], where
        assert run.returncode == 1, where
        assert f"Verdict:    {report['verdict'].upper()} (public cases only)\n" in run.stdout, where
        assert report["message"] in run.stdout, where
        for hint in report["hints"]:
            assert f"Hint: {hint}" in run.stdout, where
        # The part the probes name, as the grader names it; never a known mistake (its twins are the reference in disguise).
        said = " ".join(run.stdout.split())
        parts = [sentence for sentence in report["diagnosis"] if not sentence.startswith(("Your logits", "Your results"))]
        assert all(" ".join(sentence.split()) in said for sentence in parts), where
        assert "Your logits match" not in run.stdout, where
        if path.stem in ("no_score_scaling", "several_causal_mask_relu"):
            assert parts and "Diagnosis:" in run.stdout, where
        table = rows(run.stdout)
        if report["cases"] and not any(case["status"] == "passed" or case["check"] for case in report["cases"]):  # failed before the first case: one line
            assert f"Cases:      none run ({len(report['cases'])} cases)" in run.stdout and not table, where
            continue
        if report["verdict"] == "forbidden_api" and report["cases"]:  # a forbidden use during a case decides the whole run: one line
            assert f"Cases:      not listed ({len(report['cases'])} cases)" in run.stdout and not table, where
            continue
        assert len(table) == len(report["cases"]), where
        for case in report["cases"]:
            result = "ok" if case["status"] == "passed" else case["status"].replace("_", " ") + (f" ({case['check']})" if case["check"] else "")
            assert f" {result} " in table[case["name"]] + " ", (case["name"], result, where)
            assert case["output"] in run.stdout, where
        assert "public cases passed; fix what is reported above" in run.stdout.splitlines()[-1], where
        assert "accepted" not in run.stdout.lower() and "Traceback (most recent call last)" not in run.stderr, where


# --- The kit where candidates are: macOS has none of Linux's walls ------------------------------

# Runs check.py as on macOS: sys.platform is "darwin"; the C library has no prctl, unshare, mount,
# capset or setns; os has no waitid or memfd_create; bwrap, unshare and setpriv are not found; and
# (under bwrap, below) /proc and the cgroup tree are empty. A kit module that still needs one of them
# fails here. (The child itself runs this machine's Python: its guard's seccomp layer already gives
# way where prctl or the architecture is missing, grader/child/guard.py refuse_new_processes.)
PRETEND_MACOS = r"""
import ctypes, os, runpy, shutil, sys
import numpy, torch  # as they are on this machine: the standard library's own darwin branches (urllib's _scproxy) are not the kit's

sys.platform = "darwin"
for name in ("waitid", "memfd_create", "pidfd_open"):
    if hasattr(os, name):
        delattr(os, name)
LINUX_ONLY = {"prctl", "unshare", "mount", "capset", "setns"}


class CDLL(ctypes.CDLL):
    def __getattr__(self, name):
        if name in LINUX_ONLY:
            raise AttributeError(f"dlsym({name}): symbol not found")
        return super().__getattr__(name)


ctypes.CDLL = CDLL
which = shutil.which
shutil.which = lambda command, *rest, **named: None if command in ("bwrap", "unshare", "setpriv") else which(command, *rest, **named)
print("pretending macOS; /proc readable:", os.path.exists("/proc/self/stat"), file=sys.stderr)
sys.argv = ["check.py", *sys.argv[1:]]
runpy.run_path("check.py", run_name="__main__")
"""


def check_as_on_macos(kit: Path, submission: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", PRETEND_MACOS, str(submission)]
    if shutil.which("bwrap"):  # the same machine with its /proc and cgroups out of sight
        command = ["bwrap", "--dev-bind", "/", "/", "--tmpfs", "/proc", "--tmpfs", "/sys/fs/cgroup", "--chdir", str(kit), *command]
    return subprocess.run(command, cwd=kit, env=ENV, capture_output=True, text=True, timeout=300)


@pytest.mark.sandbox
def test_the_kit_runs_as_on_macos_with_a_plain_process_and_says_so(kit: Path) -> None:
    files = [SUBMISSIONS / "accepted" / "prints_without_flush.py", SUBMISSIONS / "runtime_error" / "raises_in_call.py"]
    with ThreadPoolExecutor(2) as threads:
        passed, raised = threads.map(lambda path: check_as_on_macos(kit, path), files)
    for run in (passed, raised):
        assert "pretending macOS" in run.stderr and "Traceback (most recent call last)" not in run.stderr, run.stdout + run.stderr
        if shutil.which("bwrap"):
            assert "/proc readable: False" in run.stderr
        walls = next(line for line in run.stdout.splitlines() if "isolation: " in line)
        assert "isolation: plain process on darwin (no bubblewrap, seccomp, cgroup or namespaces" in walls, walls
        assert "enough for the kit, which holds no secret" in walls
    assert passed.returncode == 0 and CLOSING.search(passed.stdout), passed.stdout + passed.stderr
    tiny = next(case for case in make_cases(SPEC, SPEC.public_seed, public_only=True) if case.name == "public_tiny")
    selected = int((tiny.args["mask_indicator"] > 0.5).sum())  # what the file prints: the case's masked positions
    assert f"[case public_tiny, gradient call]\nselected {selected} positions" in passed.stdout  # the output labelled, as on Linux
    assert raised.returncode == 1 and "Verdict:    RUNTIME_ERROR (public cases only)" in raised.stdout, raised.stdout + raised.stderr
    assert raised.stdout.count("IndexError: tensors used as indices") == 1, raised.stdout


@pytest.mark.parametrize(
    ("name", "verdict", "said"),
    [
        ("time_limit_exceeded/prints_then_spins.py", "time_limit_exceeded", "did not finish within 3 s"),
        ("runtime_error/raises_in_call.py", "runtime_error", "IndexError"),
    ],
)
@pytest.mark.sandbox
def test_the_plain_child_is_timed_out_and_its_exit_read_without_linux(name: str, verdict: str, said: str, tmp_path: Path) -> None:
    """The plain backend's own ending (os.wait4, not waitid; no /proc, no cgroup), on this machine."""
    from grader import judge
    from tests.grading import fast_spec

    spec = load_spec(fast_spec(tmp_path))
    report = judge.grade(SUBMISSIONS / name, spec, spec.default_hidden_seed, public_only=True, backend="plain")
    assert report.verdict == verdict and said in report.message, report.message
    assert report.isolation.startswith("plain process on ")


@pytest.mark.sandbox
def test_a_plain_child_that_ends_is_reaped_with_its_status_and_cpu_time(tmp_path: Path) -> None:
    import signal
    import time

    from grader.sandbox.backends import backend_named
    from grader.sandbox.process import ProcessChild

    with ProcessChild(tmp_path, b"", "s.py", SPEC, backend_named("plain")) as child:
        time.sleep(0.5)  # the child starts importing torch: CPU time to count
        child.kill()
        ended = child.exit()
    assert ended.returncode == -signal.SIGKILL and ended.killed_by_grader and ended.cpu_seconds > 0, ended
    assert (ended.oom_kills, ended.pids_limit_hits, child.cgroup, child.cpu_seconds()) == (0, 0, None, None)


def test_the_plain_child_takes_each_limit_the_system_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS refuses or lacks some rlimits: the others are still set, and the child still starts."""
    import resource

    from grader.child import walls

    taken = []

    def setrlimit(kind: int, limit: tuple[int, int]) -> None:
        if kind == resource.RLIMIT_FSIZE:
            raise ValueError("not allowed to raise maximum limit")
        taken.append(kind)

    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    monkeypatch.delattr(resource, "RLIMIT_AS")  # a system that does not define it
    walls.apply_limits_where_possible(120, 4096, 64, 64)
    assert taken == [resource.RLIMIT_CPU, resource.RLIMIT_NOFILE, resource.RLIMIT_CORE]


def test_the_grader_never_takes_the_kits_plain_process() -> None:
    from grader import judge
    from grader.sandbox import IsolationUnavailable
    from grader.sandbox.backends import ISOLATION_LEVELS, choose_backend
    from grader.sandbox.process import PLAIN

    assert PLAIN not in ISOLATION_LEVELS  # what --isolation accepts
    with pytest.raises(IsolationUnavailable, match="unknown isolation level"):
        choose_backend(PLAIN)
    with pytest.raises(ValueError, match="may be skipped only under"):
        judge.grade(SUBMISSIONS / "accepted" / "plain_helpers.py", SPEC, SPEC.default_hidden_seed, backend=PLAIN, static_check=False)
