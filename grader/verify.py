"""`python -m grader verify ID`: a problem author's gate, one line per finding with what to fix.

It checks that the package is well formed (its data parses, the stub's signature is the declared
one, the statement's table of limits and tolerances holds the data's numbers), that the reference
agrees with the package's independent oracle in float64, that every example submission
(reference/<module>/submissions/<verdict>/) gets its folder's verdict through the real grader on
several seeds (correct ones within a tenth of the tolerance, wrong ones at least ten times past it),
that the hidden cases reject every mutant of the reference whose float64 results differ from the
reference's (mutation adequacy), and that the kit builds without leaking anything hidden.

The reference, the oracle, the generator and the mutants are the author's code and run here, in the
grader's own process, by design; the example submissions run as any submission does, in the sandbox.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import math
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from grader.spec import ROOT, SetupError, Spec, UnknownProblem, hidden_module, load_spec, problem_spec

SEEDS = ("verify-1", "verify-2", "verify-3")
CORRECT_MARGIN = 0.1  # a correct example's worst error, as a fraction of what the tolerance allows
WRONG_MARGIN = 10.0  # a wrong example's worst error on some case, in the same unit
ORACLE_AGREEMENT = 0.01  # the reference and the oracle, in float64: within this fraction of the float64 tolerance
SAME_OUTPUT = 1e-12  # a mutant whose float64 results are this close to the reference's (relative to their scale) is not told apart
MUTANT_SECONDS = 20  # one mutant's run over every case


@dataclasses.dataclass
class Findings:
    """What verify found: each line printed as it comes, and whether anything failed."""

    out: TextIO
    failed: int = 0

    def ok(self, check: str, text: str) -> None:
        print(f"ok    {check}: {text}", file=self.out, flush=True)

    def fail(self, check: str, text: str) -> None:
        self.failed += 1
        print(f"FAIL  {check}: {text}", file=self.out, flush=True)

    def note(self, check: str, text: str) -> None:
        print(f"      {check}: {text}", file=self.out, flush=True)


def _shown(path: Path) -> str:
    """A path as a finding writes it: from the checkout's root where it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@contextmanager
def _check(findings: Findings, name: str) -> Iterator[None]:
    """A check whose code (the author's generator, reference, oracle) raises is a finding, never a traceback."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 - the author's code may fail in any way: say where
        import traceback

        last = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        where = f" (at {_shown(Path(last.filename))}:{last.lineno})" if last else ""
        findings.fail(name, f"the check could not run: {type(error).__name__}: {error}{where}")


# -- 1. well formed ------------------------------------------------------------------------------


def check_form(spec: Spec, findings: Findings) -> None:
    folder = spec.folder
    for name in ("README.md", "stub.py"):
        if not (folder / name).is_file():
            findings.fail("form", f"{_shown(folder)}/{name} is missing: the kit hands it to candidates")
    hidden = spec.hidden_folder
    for name in ("reference.py", "oracle.py", "generate.py"):
        if not (hidden / name).is_file():
            findings.fail("form", f'{_shown(hidden)}/{name} is missing (the README\'s section "A challenge package" says what it holds)')
    check_stub(spec, folder / "stub.py", findings)
    check_statement(spec, folder / "README.md", findings)


def check_stub(spec: Spec, stub: Path, findings: Findings) -> None:
    if not stub.is_file():
        return
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == spec.entry_point]
    if not found:
        return findings.fail("form", f"stub.py defines no function {spec.entry_point}, the entry point problem.toml declares")
    names = [a.arg for a in found[0].args.posonlyargs + found[0].args.args]
    if names != list(spec.parameter_names):
        return findings.fail("form", f"stub.py's {spec.entry_point}({', '.join(names)}) is not the declared signature ({', '.join(spec.parameter_names)})")
    findings.ok("form", f"problem.toml parses; stub.py declares {spec.entry_point}({', '.join(names)})")


# A row of the statement's table of limits and tolerances: | what | value | `spec.key` |
TABLE_ROW = re.compile(r"^\| [^|]+ \| ([^|]+) \| `([a-z_0-9.]+)` \|$", re.MULTILINE)


def check_statement(spec: Spec, readme: Path, findings: Findings) -> None:
    """The statement's table of limits and tolerances names every one the data has, with its number."""
    if not readme.is_file():
        return
    data = _data(spec)
    wanted = {f"limits.{key}": value for key, value in data["limits"].items()}
    wanted |= {f"tolerance.{key}": value for key, value in data["tolerance"].items() if not isinstance(value, dict)}
    if spec.gradient_wrt:
        wanted |= {f"tolerance.gradient.{key}": value for key, value in data["tolerance"].get("gradient", {}).items()}
    for family in data["families"]:
        for kind in ("tolerance", "gradient_tolerance"):
            wanted |= {f"families.{family['name']}.{kind}.{dtype}": value for dtype, value in family.get(kind, {}).items()}
    for output in data["outputs"]:
        wanted |= {f"outputs.{output['name']}.tolerance.{dtype}": value for dtype, value in output.get("tolerance", {}).items()}
        if "scale_floor" in output:
            wanted[f"outputs.{output['name']}.scale_floor"] = output["scale_floor"]
    stated = {key: cell for cell, key in TABLE_ROW.findall(readme.read_text(encoding="utf-8"))}
    problems = [f"no row for {key} (add `| ... | {value} | \\`{key}\\` |`)" for key, value in wanted.items() if key not in stated]
    for key, cell in stated.items():
        number = re.match(r"[0-9.e+-]+", cell.strip())
        if key in wanted and (number is None or not math.isclose(float(number.group()), float(wanted[key]))):
            problems.append(f"the row for {key} says {cell.strip()!r}; problem.toml says {wanted[key]}")
        elif key not in wanted:
            problems.append(f"a row names {key}, which problem.toml does not have")
    if problems:
        for problem in problems:
            findings.fail("statement", f"README.md's table of limits and tolerances: {problem}")
    else:
        findings.ok("statement", f"README.md states each of the {len(wanted)} limits and tolerances as problem.toml has them")


def _data(spec: Spec) -> dict[str, Any]:
    import tomllib

    return tomllib.loads((spec.folder / "problem.toml").read_text(encoding="utf-8"))


# -- 2. the reference against the oracle --------------------------------------------------------


def check_oracle(spec: Spec, seeds: tuple[str, ...], findings: Findings) -> None:
    import torch

    from grader.cases import make_cases
    from grader.expected import as_outputs, float64_args, reference_function

    try:
        oracle = hidden_module(f"{spec.module}.oracle").oracle
    except (ImportError, AttributeError) as error:
        return findings.fail("oracle", f"{spec.module}.oracle has no oracle() ({error}): write an independent implementation there")
    reference = reference_function(spec)
    worst: dict[str, float] = {}
    float32_cases, redrawn = 0, []
    for seed in seeds:
        for case in make_cases(spec, seed):
            float32_cases += case.dtype != "float64"
            if case.unfair_draws:
                redrawn.append(f"{case.name} on {seed} ({case.unfair_draws} unfair draw{'s' * (case.unfair_draws != 1)})")
            args = float64_args(case)
            with torch.no_grad():
                ours = as_outputs(reference(*args.values()), spec)
                theirs = as_outputs(oracle(*float64_args(case).values()), spec)
            for declared, a, b in zip(spec.outputs, ours, theirs, strict=True):
                b = torch.as_tensor(b, dtype=torch.float64)
                if tuple(a.shape) != tuple(b.shape):
                    shapes = f"{tuple(a.shape)} by the reference, {tuple(b.shape)} by the oracle"
                    return findings.fail("oracle", f"case {case.name} ({seed}): {declared.name} has shape {shapes}")
                scale = max(a.abs().max().item() if a.numel() else 0.0, declared.scale_floor)
                error = (a - b).abs().max().item() / scale if a.numel() and scale > 0 else 0.0
                worst[case.family] = max(worst.get(case.family, 0.0), error)
    _fairness(float32_cases, redrawn, seeds, findings)
    allowed = ORACLE_AGREEMENT * spec.tolerances["float64"]
    bad = {family: error for family, error in worst.items() if not error <= allowed}
    shown = ", ".join(f"{family} {error:.1e}" for family, error in sorted(worst.items()))
    if bad:
        findings.fail("oracle", f"the reference and the oracle disagree beyond {allowed:.0e} of the scale in float64: {shown}")
    else:
        findings.ok("oracle", f"the reference agrees with the oracle in float64 on every case of {_seeds(seeds)} (worst relative error by family: {shown})")


def _fairness(float32_cases: int, redrawn: list[str], seeds: tuple[str, ...], findings: Findings) -> None:
    """How many float32 cases were drawn again because even the reference, in float32, erred near
    the tolerance (grader/cases.py): the author's measure of a family's conditioning."""
    if not redrawn:
        return findings.ok("fairness", f"all {float32_cases} float32 cases of {_seeds(seeds)} fair at the first draw")
    text = f"{len(redrawn)} of {float32_cases} float32 cases of {_seeds(seeds)} drawn again (unfair draws replaced): {', '.join(redrawn)}"
    if len(redrawn) * 10 > float32_cases:
        return findings.fail("fairness", f"{text}; so many say the family's data is ill-conditioned: change its settings or widen its tolerance")
    findings.ok("fairness", text)


# -- 3. the example submissions -----------------------------------------------------------------


def examples(spec: Spec) -> dict[Path, str]:
    folder = spec.hidden_folder / "submissions"
    return {path: path.parent.name for path in sorted(folder.glob("*/*.py"))}


def check_examples(spec: Spec, seeds: tuple[str, ...], findings: Findings) -> dict[Path, Any]:
    """Each example on every seed; returns its report on the first seed (for the diagnosis check)."""
    from grader.batch.schedule import Workers, default_jobs
    from grader.results import Verdict
    from grader.sandbox.backends import backend_named, choose_backend

    files = examples(spec)
    if not files:
        findings.fail("examples", f"no example submissions in {_shown(spec.hidden_folder)}/submissions/<verdict>/")
        return {}
    known = {v.value for v in Verdict}
    if unknown := sorted({verdict for verdict in files.values() if verdict not in known}):
        findings.fail("examples", f"folders that are not verdicts: {', '.join(unknown)} (verdicts: {', '.join(sorted(known))})")
    detailed = dataclasses.replace(spec, hidden_case_details=True)  # each case's error relative to its tolerance, for the margins
    backend = choose_backend("auto", secret_seed=True)
    # A hostile_* example attacks the walls behind the static check: its folder's verdict is the one it
    # gets with that check skipped (as the tests grade them), which only a strong sandbox may do.
    strong = backend_named(backend).strong
    if not strong and any(path.stem.startswith("hostile_") for path in files):
        findings.note("examples", f"the hostile_* examples need a strong sandbox to be graded behind the static check; {backend} is not: left out")
        files = {path: verdict for path, verdict in files.items() if not path.stem.startswith("hostile_")}
    margins: dict[Path, list[float]] = {path: [] for path in files}
    first: dict[Path, Any] = {}
    wrong: dict[Path, list[str]] = {path: [] for path in files}
    for seed in seeds:
        started = time.monotonic()
        for walls, chosen in _gradings(files, known, first_seed=seed == seeds[0]).items():
            workers = Workers(detailed, seed, jobs=default_jobs(), backend=backend, static_check=walls == "every", restricted=walls != "guard")
            for (path, expected), report in workers.map(((path, expected), path) for path, expected in chosen):
                if report.verdict != expected:
                    wrong[path].append(f"{seed}{'' if walls == 'every' else f' ({WALLS[walls]})'}: {report.verdict} ({report.message.splitlines()[0][:160]})")
                if walls != "every" or not path.stem.startswith("hostile_"):
                    margins[path].append(_margin(report))
                    first.setdefault(path, report)
        findings.note("examples", f"seed {seed}: {len(files)} files graded in {time.monotonic() - started:.0f} s ({workers.jobs} at a time, {backend})")
    for path, verdict in files.items():
        if verdict in known:
            _example_finding(f"{verdict}/{path.name}", verdict, wrong[path], margins[path], len(seeds), findings)
    return first


DECLARED = re.compile(r"^# diagnosis: (.+)$", re.MULTILINE)  # what an example's diagnosis must find (its keys)


def check_diagnosis(spec: Spec, reports: dict[Path, Any], findings: Findings) -> None:
    """For a package whose probe cases localise a wrong answer: each wrong example that declares
    `# diagnosis: KEY...` gets a diagnosis that finds exactly those keys: the parts the probes point
    at (grader/diagnosis.py CONCLUSIONS), a known mistake (a twin's name in the package's
    mistakes.py), "precision", the checks not about numbers (type, dtype, device, inputs)."""
    if not spec.diagnosis:
        return findings.note("diagnosis", "the package has no diagnosis ([diagnosis] probes = false): not checked")

    checked = failed = 0
    for path, report in sorted(reports.items()):
        if path.parent.name != "wrong_answer":
            continue
        declared = DECLARED.findall(path.read_text(encoding="utf-8", errors="replace"))
        if not declared:
            continue
        checked += 1
        wanted = set(declared[0].split())
        found = set(report.diagnosis_keys)
        if not spec.known_mistakes:  # an exam's diagnosis names no known mistake
            wanted -= {twin.name for twin in getattr(_mistakes(spec), "MISTAKES", [])}
        if found != wanted:
            failed += 1
            said = "; ".join(report.diagnosis) or "no diagnosis at all"
            told = " ".join(sorted(found)) or "nothing"
            findings.fail("diagnosis", f"wrong_answer/{path.name} declares {' '.join(sorted(wanted))}; told {told} ({said[:160]})")
    if not failed:
        findings.ok("diagnosis", f"each of the {checked} wrong examples that declare a diagnosis is told exactly that (first seed)")


def _mistakes(spec: Spec) -> Any:
    try:
        return hidden_module(f"{spec.module}.mistakes")
    except ImportError:
        return None


# How a hostile_* example's folder verdict is proven (as tests/test_hostile.py proves it): a forbidden
# use behind the static check, any other attack as plain Python behind the guard's operator checks,
# the protocol and the sandbox; with every wall on it is refused (or gets its `# every wall:` line's verdict).
WALLS = {"every": "every wall", "capabilities": "behind the static check", "guard": "as plain Python"}
EVERY_WALL = re.compile(r"^# every wall: (\w+)$", re.MULTILINE)


def _gradings(files: dict[Path, str], known: set[str], first_seed: bool) -> dict[str, list[tuple[Path, str]]]:
    """(file, the verdict it must get) for each way of grading: every wall for the ordinary
    examples (and, on the first seed, for the hostile ones), and the walls a hostile one attacks."""
    found: dict[str, list[tuple[Path, str]]] = {"every": [], "capabilities": [], "guard": []}
    for path, verdict in files.items():
        if verdict not in known:
            continue
        if not path.stem.startswith("hostile_"):
            found["every"].append((path, verdict))
            continue
        found["capabilities" if verdict == "forbidden_api" else "guard"].append((path, verdict))
        if first_seed:
            line = EVERY_WALL.search(path.read_text(encoding="utf-8", errors="replace"))
            found["every"].append((path, line.group(1) if line else "forbidden_api"))
    return found


def _example_finding(name: str, verdict: str, wrong: list[str], margins: list[float], seeds: int, findings: Findings) -> None:
    if wrong:
        return findings.fail("examples", f"{name} expected {verdict}, got {'; '.join(wrong)}")
    worst, least = max(margins, default=math.nan), min(margins, default=math.nan)
    if verdict == "accepted" and not worst <= CORRECT_MARGIN:
        return findings.fail(
            "examples", f"{name}: accepted, but its worst error is {worst:.2g}x the tolerance; a correct file should stay within {CORRECT_MARGIN}x (loosen it?)"
        )
    if verdict == "wrong_answer" and not least >= WRONG_MARGIN:
        return findings.fail(
            "examples",
            f"{name}: rejected, but only {least:.2g}x past the tolerance; a wrong file should fail by {WRONG_MARGIN}x (tighten it, or add a case?)",
        )
    if verdict == "accepted":
        margin = f" (worst case {worst:.2g}x the tolerance)"
    elif verdict == "wrong_answer":
        margin = " (by a shape, type or exception on every seed)" if math.isinf(least) else f" (at least {least:.2g}x the tolerance on every seed)"
    else:
        margin = ""
    findings.ok("examples", f"{name}: {verdict} on {seeds} seed{'s' * (seeds != 1)}{margin}")


def _seeds(seeds: tuple[str, ...]) -> str:
    return f"{len(seeds)} seed{'s' * (len(seeds) != 1)}"


def _margin(report: Any) -> float:
    """The worst error of a graded file over what the tolerance allows: inf where a case failed
    by something other than its numbers (a shape, a type, an input changed, an exception), nan
    where no case was judged."""
    from grader.results import WRONG_NUMBERS

    if any(not c.passed and (c.ratio is None or c.check not in WRONG_NUMBERS) for c in report.cases):
        return math.inf
    return max((c.ratio for c in report.cases if c.ratio is not None), default=math.nan)


# -- 4. mutation adequacy -----------------------------------------------------------------------


@contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check_mutants(spec: Spec, seed: str, findings: Findings) -> None:
    """Mutants of reference.py and of the hidden modules it imports from another package (the
    untied challenge's encoder is the tied one's): each run through the package's entry point."""
    import torch

    from grader import mutation
    from grader.cases import make_cases
    from grader.expected import expected_for

    hidden = spec.hidden_folder
    own = f"{spec.module}.reference"
    try:
        equivalent = mutation.load_equivalent(hidden / "mutants.toml")
    except ValueError as error:
        return findings.fail("mutants", str(error))
    torch.set_num_threads(1)
    cases = make_cases(spec, seed)
    expected = [expected_for(case, spec) for case in cases]
    started = time.monotonic()
    outcomes: dict[str, str] = {}
    every: list[Any] = []
    sources = {own: hidden / "reference.py"} | imported_hidden_modules(hidden / "reference.py", spec.module)
    for name, path in sources.items():
        prefix = "" if name == own else f"{name.removeprefix('reference.')}/"
        for mutant in mutation.mutants(path.read_text(encoding="utf-8")):
            mutant = dataclasses.replace(mutant, id=prefix + mutant.id, description=(f"{_shown(path)} " if prefix else "") + mutant.description)
            every.append(mutant)
            try:
                function = _mutated_entry_point(mutant, name, own, sources[own], spec)
                with _time_limit(MUTANT_SECONDS):
                    outcomes[mutant.id] = _mutant_outcome(function, cases, expected, spec)
            except Exception:  # noqa: BLE001 - a mutant that does not even load or run is told apart by any case
                outcomes[mutant.id] = "broken"
    result = mutation.score(outcomes, equivalent)
    lines = mutation.score_lines(result, every, _shown(hidden / "mutants.toml"))
    for line in lines[:-1]:
        (findings.fail if line.startswith(("survived", "stale", "marked")) else findings.note)("mutants", line)
    described = {mutant.id: mutant.description for mutant in every}
    for mutant_id in result.same:  # not counted, but a case where they differ may be missing
        findings.note("mutants", f"same output on every case: {mutant_id} {described[mutant_id]} (equivalent, or no case tells it apart)")
    where = " and ".join(_shown(path) for path in sources.values())
    summary = f"{lines[-1]} ({len(every)} mutants of {where}, {time.monotonic() - started:.0f} s)"
    (findings.ok if result.adequate else findings.fail)("mutants", summary)


def imported_hidden_modules(path: Path, package: str) -> dict[str, Path]:
    """The modules of another challenge's hidden side that reference.py imports (reference.<other>.<module>)."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
        names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            file = ROOT / (name.replace(".", "/") + ".py")
            if name.startswith("reference.") and not name.startswith(package + ".") and file.is_file():
                found[name] = file
    return found


def _mutated_entry_point(mutant: Any, name: str, own: str, own_path: Path, spec: Spec) -> Callable:
    """The entry point with the mutant in place: the mutated reference itself, or the reference
    loaded afresh while the mutated module stands in for the one it imports."""
    from grader import mutation

    module = mutation.load_mutant(mutant, name)
    if name == own:
        return getattr(module, spec.entry_point)
    original = sys.modules.get(name)
    sys.modules[name] = module
    try:
        fresh = mutation.load_mutant(mutation.Mutant("", "", 0, "", own_path.read_text(encoding="utf-8")), own)
    finally:
        if original is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = original
    return getattr(fresh, spec.entry_point)


def _mutant_outcome(function: Callable, cases: list, expected: list, spec: Spec) -> str:
    """ "same" when its float64 results are the reference's on every case (no test can tell it
    apart), "broken" when it raises or gives non-finite values there, else "killed" when some
    hidden case rejects it as the grader would, "survived" when none does."""
    import torch

    from grader.expected import as_outputs, float64_args
    from grader.judge import judge_reply
    from grader.results import CaseResult

    same = True
    for case, want in zip(cases, expected, strict=True):
        args = float64_args(case)
        for name in case.differentiable:
            args[name].requires_grad_(True)
        outputs = as_outputs(function(*args.values()), spec)
        if not all(isinstance(o, torch.Tensor) and torch.isfinite(o).all() for o in outputs):
            return "broken"
        if not _close(outputs, want.outputs):
            same = False
            break
        if case.differentiable:
            from grader.child.vjp import vector_jacobian

            got = vector_jacobian(outputs, [args[n] for n in case.differentiable], tuple(u.to(torch.float64) for u in case.upstream))
            grads = tuple(torch.zeros_like(args[n]) if g is None else g for n, g in zip(case.differentiable, got, strict=True))
            if not _close(grads, tuple(want.grads[n] for n in case.differentiable)):
                same = False
                break
    if same:
        return "same"
    for case, want in zip(cases, expected, strict=True):
        result = CaseResult(case.name, case.family, case.dtype, case.public, case.shape_text())
        reply, tensors = _answer(function, case, spec)
        judge_reply(case, want, reply, tensors, spec, result)
        if not result.passed:
            return "killed"
    return "survived"


def _close(got: tuple, want: tuple) -> bool:
    import torch

    for a, b in zip(got, want, strict=True):
        if tuple(a.shape) != tuple(b.shape):
            return False
        if a.numel() == 0:
            continue
        a, b = a.detach().to(torch.float64), b.to(torch.float64)
        scale = b.abs().max().item()
        if (a - b).abs().max().item() > SAME_OUTPUT * max(scale, 1e-300):
            return False
    return True


def _answer(function: Callable, case: Any, spec: Spec) -> tuple[dict, dict]:
    """What the child would send for this case (its own code, grader/child/runner.py), and the
    tensors the grader would keep of it (grader/protocol.py)."""
    from grader import protocol
    from grader.child.runner import run_case

    reply, tensors = run_case(function, *case.request(), "mutant.py")
    return reply, protocol.kept(tensors, protocol.expect_result(case, spec))


# -- 5. the kit --------------------------------------------------------------------------------


def check_kit(spec: Spec, findings: Findings, installed: bool = True) -> None:
    build = ROOT / "deploy" / "kit" / "build.py"
    if not installed:
        return findings.note("kit", "a problem.toml outside problem/ has no kit: not checked")
    if not build.is_file():
        return findings.note("kit", "deploy/kit/build.py is not here (an image without the deploy folder): not checked")
    with tempfile.TemporaryDirectory(prefix="mlm-verify-kit-") as folder:
        out = Path(folder) / "kit.zip"
        done = subprocess.run([sys.executable, str(build), "--problem", spec.id, "--out", str(out)], capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or not out.is_file():
            said = (done.stderr or done.stdout).strip().splitlines()
            return findings.fail("kit", f"the kit does not build: {said[-1] if said else f'exit status {done.returncode}'}")
        findings.ok("kit", f"the kit builds ({out.stat().st_size // 1024} KiB) and holds no reference, hidden case or hidden seed")


# -- the command --------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader verify",
        description="Check a challenge's package: form, reference against oracle, example submissions on several seeds, "
        "mutation adequacy of the hidden cases, the kit. One line per finding; exit status 0 when every check passes, 1 otherwise, 2 on a usage error.",
    )
    parser.add_argument("problem", metavar="ID", nargs="?", help="the challenge (python -m grader problems lists them)")
    parser.add_argument("--spec", type=Path, help="a problem.toml outside problem/ (for testing the harness), instead of ID")
    parser.add_argument(
        "--seeds", type=int, default=len(SEEDS), choices=range(1, len(SEEDS) + 1), help=f"seeds for the oracle and the examples (default {len(SEEDS)})"
    )
    parser.add_argument("--skip", action="append", default=[], choices=("oracle", "examples", "mutants", "kit"), help="leave a check out (repeatable)")
    return parser.parse_args(argv)


def main(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout  # read at the call: a caller may have replaced sys.stdout since the import
    args = parse_args(argv)
    if (args.problem is None) == (args.spec is None):
        print("grader verify: give the challenge's ID (python -m grader problems lists them), or --spec FILE", file=sys.stderr)
        return 2
    try:
        spec = load_spec(args.spec.resolve()) if args.spec else problem_spec(args.problem)
    except UnknownProblem as error:
        print(f"grader verify: {error}", file=sys.stderr)
        return 2
    except SetupError as error:
        print(f"FAIL  form: {error}", file=out)
        return 1
    findings = Findings(out)
    seeds = SEEDS[: args.seeds]
    print(f"verifying {spec.id} ({spec.title}), package {spec.digest[:12]}", file=out, flush=True)
    with _check(findings, "form"):
        check_form(spec, findings)
    if "oracle" not in args.skip:
        with _check(findings, "oracle"):
            check_oracle(spec, seeds, findings)
    if "examples" not in args.skip:
        reports: dict[Path, Any] = {}
        with _check(findings, "examples"):
            reports = check_examples(spec, seeds, findings)
        with _check(findings, "diagnosis"):
            check_diagnosis(spec, reports, findings)
    if "mutants" not in args.skip:
        with _check(findings, "mutants"):
            check_mutants(spec, seeds[0], findings)
    if "kit" not in args.skip:
        with _check(findings, "kit"):
            check_kit(spec, findings, installed=args.spec is None)
    print(f"{spec.id}: {'every check passed' if not findings.failed else f'{findings.failed} findings to fix'}", file=out)
    return 1 if findings.failed else 0
