"""`python -m grader verify ID`: a problem author's gate, one line per finding with what to fix.

It is made of named parts (PARTS), run in order, each selectable with --part and left out with
--skip: form (the package's data parses, the stub's signature is the declared one, the statement's
table of limits and tolerances holds the data's numbers); oracle (the reference agrees with the
package's independent oracle in float64, and how many float32 cases were drawn again: fairness);
examples (every example submission, reference/<module>/submissions/<verdict>/, gets its folder's
verdict through the real grader on several seeds, correct ones within a tenth of the tolerance,
wrong ones at least ten times past it, each with its margin); diagnosis (the wrong examples that
declare one are told it); operators (every ATen operator the accepted examples run
is on the rules' lists); mutants (the hidden cases reject every mutant of the reference whose
float64 results differ from the reference's: mutation adequacy); degenerate (no hidden case passes
zeros, a constant, the mean of its expected output or an input of its shape); kit (the kit builds
without leaking anything hidden).

The reference, the oracle, the generator, the property check and the mutants are the author's code
and run here, in the grader's own process, by design; the example submissions run as any
submission does, in the sandbox.
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
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from grader.spec import PROBLEMS, ROOT, SetupError, Spec, UnknownProblem, hidden_module, load_spec, problem_spec

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
            findings.fail("form", f'{_shown(hidden)}/{name} is missing (docs/challenges.md, "A challenge package", says what it holds)')
    check_stub(spec, folder / "stub.py", findings)
    check_statement(spec, folder / "README.md", findings)


def check_stub(spec: Spec, stub: Path, findings: Findings) -> None:
    if not stub.is_file():
        return
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    if spec.kind == "class":
        return _check_class_stub(spec, tree, findings)
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == spec.entry_point]
    if not found:
        return findings.fail("form", f"stub.py defines no function {spec.entry_point}, the entry point problem.toml declares")
    names = [a.arg for a in found[0].args.posonlyargs + found[0].args.args]
    if names != list(spec.parameter_names):
        return findings.fail("form", f"stub.py's {spec.entry_point}({', '.join(names)}) is not the declared signature ({', '.join(spec.parameter_names)})")
    findings.ok("form", f"problem.toml parses; stub.py declares {spec.entry_point}({', '.join(names)})")


def _check_class_stub(spec: Spec, tree: ast.Module, findings: Findings) -> None:
    """A class problem's stub: the class, its constructor's parameters and its method's."""
    found = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == spec.entry_point]
    if not found:
        return findings.fail("form", f'stub.py defines no class {spec.entry_point}, the entry point problem.toml declares (kind = "class")')
    methods = {node.name: node for node in found[0].body if isinstance(node, ast.FunctionDef)}
    for method, wanted in (("__init__", spec.parameter_names), (spec.method, tuple(p.name for p in spec.step_parameters))):
        if method not in methods:
            return findings.fail("form", f"stub.py's class {spec.entry_point} has no method {method}")
        names = [a.arg for a in methods[method].args.posonlyargs + methods[method].args.args][1:]
        if names != list(wanted):
            return findings.fail("form", f"stub.py's {spec.entry_point}.{method}(self, {', '.join(names)}) is not the declared (self, {', '.join(wanted)})")
    signature = f"{spec.entry_point}({', '.join(spec.parameter_names)}).{spec.method}({', '.join(p.name for p in spec.step_parameters)})"
    findings.ok("form", f"problem.toml parses; stub.py declares class {signature}")


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
    check_rules_block(spec, readme.read_text(encoding="utf-8"), findings)


RULES_BLOCK = re.compile(r"<!-- rules: [^\n]*-->\n(.*?)\n<!-- end of rules -->", re.DOTALL)


def check_rules_block(spec: Spec, statement: str, findings: Findings) -> None:
    """The statement's Rules section shows the lists themselves: its generated block is what
    `python -m grader rules --markdown` prints for this problem now."""
    found = RULES_BLOCK.search(statement)
    installed = spec.path == PROBLEMS / spec.id / "problem.toml"
    command = f"python -m grader rules --problem {spec.id} --markdown" if installed else f"python -m grader rules --spec {spec.path} --markdown"
    if found is None:
        findings.fail("statement", f"README.md has no rules block: put what `{command}` prints between <!-- rules: ... --> and <!-- end of rules -->")
    elif found.group(1) != spec.rules.markdown():
        findings.fail("statement", f"README.md's rules block is not what the lists allow now: replace it with what `{command}` prints")
    else:
        findings.ok("statement", "README.md's rules block shows the allow-lists as they are")


def _data(spec: Spec) -> dict[str, Any]:
    """The package's data as the grader reads it, with what it extends merged in."""
    from grader.spec import read_package

    return read_package(spec.path or spec.folder / "problem.toml")[0]


# -- 2. the reference against the oracle --------------------------------------------------------


def check_oracle(spec: Spec, seeds: tuple[str, ...], findings: Findings) -> None:
    import torch

    from grader.cases import make_cases
    from grader.expected import check_properties, float64_args, reference_function, run_entry_point

    try:
        oracle = hidden_module(f"{spec.module}.oracle").oracle
    except (ImportError, AttributeError) as error:
        return findings.fail("oracle", f"{spec.module}.oracle has no oracle() ({error}): write an independent implementation there")
    reference = reference_function(spec)
    worst: dict[str, float] = {}
    float32_cases, redrawn = 0, []
    tolerance = spec.tolerances["float64"]
    for seed in seeds:
        for case in make_cases(spec, seed):
            float32_cases += case.dtype != "float64"
            if case.unfair_draws:
                redrawn.append(f"{case.name} on {seed} ({case.unfair_draws} unfair draw{'s' * (case.unfair_draws != 1)})")
            results = []
            for entry_point in (reference, oracle):
                with torch.no_grad():
                    outputs, updated = run_entry_point(entry_point, case, spec, float64_args(case.args), [float64_args(s) for s in case.steps])
                results.append(([torch.as_tensor(o, dtype=torch.float64) for o in outputs], updated))
            if spec.judge == "properties":  # many right answers: each must hold the properties at a hundredth of the float64 tolerance
                error = max(p.ratio * tolerance for outputs, _ in results for p in check_properties(case, tuple(outputs), spec, tolerance))
                worst[case.family] = max(worst.get(case.family, 0.0), error)
                continue
            (ours, ours_updated), (theirs, theirs_updated) = results
            pairs = [(declared.name, declared.scale_floor, a, b) for declared, a, b in zip(spec.returned, ours, theirs, strict=True)]
            if set(ours_updated) != set(theirs_updated):
                return findings.fail("oracle", f"case {case.name} ({seed}): the reference and the oracle update other parameters")
            pairs += [(name, 0.0, ours_updated[name], theirs_updated[name].to(torch.float64)) for name in ours_updated]
            for name, floor, a, b in pairs:
                if tuple(a.shape) != tuple(b.shape):
                    shapes = f"{tuple(a.shape)} by the reference, {tuple(b.shape)} by the oracle"
                    return findings.fail("oracle", f"case {case.name} ({seed}): {name} has shape {shapes}")
                scale = max(a.abs().max().item() if a.numel() else 0.0, floor)
                error = (a - b).abs().max().item() / scale if a.numel() and scale > 0 else 0.0
                worst[case.family] = max(worst.get(case.family, 0.0), error)
    _fairness(float32_cases, redrawn, seeds, findings)
    allowed = ORACLE_AGREEMENT * tolerance
    bad = {family: error for family, error in worst.items() if not error <= allowed}
    shown = ", ".join(f"{family} {error:.1e}" for family, error in sorted(worst.items()))
    measure = "worst property error by family, as a fraction of its scale" if spec.judge == "properties" else "worst relative error by family"
    if bad:
        findings.fail("oracle", f"the reference and the oracle disagree beyond {allowed:.0e} of the scale in float64: {shown}")
    else:
        findings.ok("oracle", f"the reference agrees with the oracle in float64 on every case of {_seeds(seeds)} ({measure}: {shown})")


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
    margins: dict[Path, list[tuple[float, str]]] = {path: [] for path in files}
    first: dict[Path, Any] = {}
    wrong: dict[Path, list[str]] = {path: [] for path in files}
    details: dict[Path, list[str]] = {path: [] for path in files}
    for seed in seeds:
        started = time.monotonic()
        for walls, chosen in _gradings(files, known, first_seed=seed == seeds[0]).items():
            workers = Workers(detailed, seed, jobs=default_jobs(), backend=backend, static_check=walls == "every", restricted=walls != "guard")
            for (path, expected), report in workers.map(((path, expected), path) for path, expected in chosen):
                if report.verdict != expected:
                    wrong[path].append(f"{seed}{'' if walls == 'every' else f' ({WALLS[walls]})'}: {report.verdict} ({report.message.splitlines()[0][:160]})")
                    if not details[path]:
                        details[path] = _case_details(report, seed)
                if walls != "every" or not path.stem.startswith("hostile_"):
                    margins[path].append((_margin(report), f"{seed}: {_worst_case(report)}"))
                    first.setdefault(path, report)
        findings.note("examples", f"seed {seed}: {len(files)} files graded in {time.monotonic() - started:.0f} s ({workers.jobs} at a time, {backend})")
    for path, verdict in files.items():
        if verdict in known:
            _example_finding(f"{verdict}/{path.name}", verdict, wrong[path], margins[path], len(seeds), findings)
            for line in details[path]:
                findings.note("examples", f"  {line}")
    return first


def _case_details(report: Any, seed: str) -> list[str]:
    """For an example that got another verdict than its folder's: the case that decided it, its
    check and its numbers (the whole message: verify grades with every case's details)."""
    from grader.results import deciding_case

    case = deciding_case(report.cases)
    if case is None:
        return [f"{seed}: {line}" for line in report.message.splitlines()[:8]]
    message = (case.staff_message or case.message).splitlines()
    numbers = f", error {case.max_rel:.3g} of max|expected| against a tolerance of {case.tolerance:g}" if case.max_rel is not None and case.tolerance else ""
    return [f"{seed}: case {case.name} ({case.family}, {case.dtype}, {case.shape}): {case.status} ({case.check}){numbers}", *message[:8]]


def _worst_case(report: Any) -> str:
    """The case with the largest error relative to its tolerance, and its numbers."""
    judged = [c for c in report.cases if c.ratio is not None]
    if not judged:
        return "no case judged by its numbers"
    case = max(judged, key=lambda c: c.ratio)
    # The table's error is the first output's (or the failing check's); shown only when it is the worst one.
    shown = case.max_rel is not None and case.tolerance and math.isclose(case.max_rel / case.tolerance, case.ratio, rel_tol=1e-6)
    numbers = f": error {case.max_rel:.3g} of the scale, tolerance {case.tolerance:g}" if shown else ""
    return f"case {case.name} ({case.family}, {case.dtype}){numbers}, {case.ratio:.2g}x the tolerance"


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


def _example_finding(name: str, verdict: str, wrong: list[str], margins: list[tuple[float, str]], seeds: int, findings: Findings) -> None:
    if wrong:
        return findings.fail("examples", f"{name} expected {verdict}, got {'; '.join(wrong)}")
    ratios = [ratio for ratio, _ in margins]
    worst, least = max(ratios, default=math.nan), min(ratios, default=math.nan)
    worst_case = next((where for ratio, where in margins if ratio == worst), "")
    least_case = next((where for ratio, where in margins if ratio == least), "")
    if verdict == "accepted" and not worst <= CORRECT_MARGIN:
        return findings.fail(
            "examples",
            f"{name}: accepted, but its worst error is {worst:.2g}x the tolerance ({worst_case}); a correct file should stay within "
            f"{CORRECT_MARGIN}x (loosen the tolerance, or condition the family's data?)",
        )
    if verdict == "wrong_answer" and not least >= WRONG_MARGIN:
        return findings.fail(
            "examples",
            f"{name}: rejected, but only {least:.2g}x past the tolerance on the seed where it is closest ({least_case}); "
            f"a wrong file should fail by {WRONG_MARGIN}x (tighten it, or add a case?)",
        )
    if verdict == "accepted":
        margin = f" (margin: worst case {worst:.2g}x the tolerance, {worst_case})"
    elif verdict == "wrong_answer":
        by_numbers = f" (margin: at least {least:.2g}x the tolerance on every seed)"
        by_checks = " (margin: by what no tolerance measures, on every seed: an exact output, a shape, a type, an exception or an input changed)"
        margin = by_checks if math.isinf(least) else by_numbers
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
                with _time_limit(MUTANT_SECONDS), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a mutant's overflows and divisions by zero are its own: the outcome tells them
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

    from grader.expected import float64_args, run_entry_point
    from grader.judge import judge_reply
    from grader.results import CaseResult

    same = True
    for case, want in zip(cases, expected, strict=True):
        args = float64_args(case.args)
        for name in case.differentiable:
            args[name].requires_grad_(True)
        outputs, updated = run_entry_point(function, case, spec, args, [float64_args(s) for s in case.steps])
        results = [*outputs, *updated.values()]
        if not all(isinstance(o, torch.Tensor) and torch.isfinite(o).all() for o in results):
            return "broken"
        if set(updated) != set(want.updated) or not _close(results, [*want.outputs, *(want.updated[name] for name in updated)]):
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


def _close(got: Any, want: Any) -> bool:
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


# -- 5. degenerate answers -------------------------------------------------------------------------

DEGENERATE_SKIPPED = "the right answer itself"  # a degenerate answer equal to the expected one (a zero loss, an unchanged parameter)


def degenerate_answers(case: Any, want: Any, spec: Spec) -> list[tuple[str, str, dict[str, Any]]]:
    """(what is degenerate, how, the tensors the child would send back) for each degenerate answer
    to a case: each returned output, and each parameter updated in place (at every step of a
    class's case), in turn replaced by zeros, by ones (a constant), by the mean of its expected
    values, or by an argument of its shape (for an updated parameter, its own value before the
    call: an update that does nothing), everything else right; those equal to the expected answer
    left out. The gradients sent are the expected ones, so that the values alone must tell."""
    import torch

    from grader.judge import _unchanged

    dtype = getattr(torch, case.dtype)
    right: dict[str, Any] = {}
    slots: list[tuple[str, list[str]]] = []  # (how a finding names it, the tensors it covers)
    for index, (declared, value) in enumerate(zip(spec.returned, want.outputs, strict=True)):
        name = "output" if spec.returns == "tensor" else f"output_{index}"
        right[name] = value.to(dtype) if value.is_floating_point() else value
        slots.append((declared.name, [name]))
    by_parameter: dict[str, list[str]] = {}
    for name, value in want.updated.items():
        right[name] = value.to(value.dtype if not value.is_floating_point() else dtype)
        by_parameter.setdefault(name.removeprefix("after_").partition("@")[0], []).append(name)
    slots += list(by_parameter.items())
    right |= {name: tensor for name, tensor in _unchanged(case, spec)}
    right |= {f"grad_{name}": grad.to(dtype) for name, grad in want.grads.items()}
    inputs = case.inputs
    found = []
    for what, names in slots:
        candidates: dict[str, dict[str, Any]] = {"zeros": {}, "ones": {}, "the mean of the expected values": {}}
        for name in names:
            expected = right[name]
            candidates["zeros"][name] = torch.zeros_like(expected)
            candidates["ones"][name] = torch.ones_like(expected)
            mean = expected.to(torch.float64).mean() if expected.numel() else torch.tensor(0.0, dtype=torch.float64)
            candidates["the mean of the expected values"][name] = torch.full_like(expected, mean.item() if expected.is_floating_point() else round(mean.item()))
            for wire, tensor in inputs.items():
                if tuple(tensor.shape) == tuple(expected.shape) and tensor.dtype == expected.dtype:
                    own = wire == name.removeprefix("after_").partition("@")[0]
                    label = "the parameter's own value before the call (an update that does nothing)" if own else f"the argument {wire}"
                    candidates.setdefault(label, {})[name] = tensor.clone()
        for how, replaced in candidates.items():
            if set(replaced) != set(names) or all(_same_answer(replaced[name], right[name]) for name in names):
                continue
            found.append((what, how, right | replaced))
    return found


def _same_answer(got: Any, want: Any) -> bool:
    import torch

    if got.numel() == 0:
        return True  # no element to be wrong: any answer is the right one
    return bool(torch.equal(got, want)) or _close([got], [want])


def check_degenerate(spec: Spec, seed: str, findings: Findings) -> None:
    """Every hidden case must fail each degenerate answer by its values alone: else a submission
    that computes nothing passes it (zeros pass where the expected values are tiny against the
    tolerance's scale; an update that does nothing where a step moves a parameter by less than the
    tolerance)."""
    from grader import protocol
    from grader.cases import make_cases
    from grader.child.runner import describe_output, describe_tuple
    from grader.expected import expected_for
    from grader.judge import judge_reply
    from grader.results import CaseResult

    cases = [case for case in make_cases(spec, seed) if not case.public]
    detailed = dataclasses.replace(spec, hidden_case_details=True)  # each case's error, for the finding
    tried = passed = 0
    for case in cases:
        want = expected_for(case, spec)
        for what, how, tensors in degenerate_answers(case, want, spec):
            tried += 1
            reply: dict[str, Any] = {"kind": "result", "name": case.name}
            if spec.returns == "tensor":
                reply["output"], _ = describe_output(tensors["output"])
            elif spec.returns == "tuple":
                count = len(spec.returned)
                reply["output"], reply["parts"], _ = describe_tuple(tuple(tensors[f"output_{i}"] for i in range(count)), count)
            result = CaseResult(case.name, case.family, case.dtype, case.public, case.shape_text())
            judge_reply(case, want, reply, protocol.kept(tensors, protocol.expect_result(case, spec)), detailed, result)
            if result.passed:
                passed += 1
                numbers = ""
                if result.max_rel is not None and result.tolerance:
                    numbers = f" (its error is {result.max_rel:.2g} of the scale, the tolerance {result.tolerance:g})"
                findings.fail(
                    "degenerate",
                    f"case {case.name} ({case.family}, {case.dtype}, {case.shape_text()}) passes {how} as {what}{numbers}: "
                    "raise the data's scale (or the step's effect) in that family, or lower the tolerance or its scale_floor, until it fails",
                )
    if not passed:
        findings.ok("degenerate", f"each of the {len(cases)} hidden cases of {seed} fails every degenerate answer by its values ({tried} answers tried)")


# -- 6. the kit --------------------------------------------------------------------------------


def check_operators(spec: Spec, seed: str, findings: Findings) -> None:
    """The operators the accepted examples run (one case of each family, in this process: the
    author's own files), each on the problem's list of operators; one run only while autograd runs
    a backward pass may be on the backward list instead. An operator off the lists would make the
    runtime guard refuse the accepted example."""
    from grader.cases import make_cases
    from grader.child.runner import _run_calls
    from grader.operators import example_module, profiled

    examples = sorted((spec.hidden_folder / "submissions" / "accepted").glob("*.py"))
    if not examples:
        findings.note("operators", "no accepted example to run")
        return
    cases, families = [], set()
    for case in make_cases(spec, seed, False):
        if case.family not in families:
            families.add(case.family)
            cases.append(case)
    allowed, backward_allowed = set(spec.rules.operators), set(spec.rules.backward)
    forward_used: dict[str, str] = {}
    backward_used: dict[str, str] = {}
    for path in examples:
        if path.name.startswith("hostile"):
            continue
        fn = getattr(example_module(path), spec.entry_point)

        def run(fn: Any = fn, path: Path = path) -> None:
            for case in cases:
                _run_calls(fn, *case.request(), str(path))

        forward, backward = profiled(run)
        for name in forward:
            forward_used.setdefault(name, path.name)
        for name in backward:
            backward_used.setdefault(name, path.name)
    off = {name: example for name, example in forward_used.items() if name not in allowed}
    off |= {name: example for name, example in backward_used.items() if name not in allowed and name not in backward_allowed}
    used = len(set(forward_used) | set(backward_used))
    for name, example in sorted(off.items()):
        why = "the guard would refuse it (add it to grader/rules.toml, or change the example)"
        findings.fail("operators", f"{name}, which accepted/{example} runs, is on no list of the rules: {why}")
    if not off:
        findings.ok("operators", f"the accepted examples run {used} operators, each on the lists ({len(forward_used)} in forward passes)")


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


# -- the parts and the command --------------------------------------------------------------------


@dataclasses.dataclass
class Context:
    """What the parts share: the package, the seeds, the findings, and the examples' reports."""

    spec: Spec
    seeds: tuple[str, ...]
    findings: Findings
    installed: bool
    reports: dict[Path, Any] | None = None  # each example's report on the first seed, once the examples part ran


@dataclasses.dataclass(frozen=True)
class Part:
    name: str
    what: str
    run: Callable[[Context], None]


def _examples_part(context: Context) -> None:
    context.reports = check_examples(context.spec, context.seeds, context.findings)


def _diagnosis_part(context: Context) -> None:
    if context.reports is None:
        return context.findings.note("diagnosis", "needs the examples part's reports: not checked")
    check_diagnosis(context.spec, context.reports, context.findings)


PARTS = (
    Part("form", "problem.toml follows the format, stub.py declares the entry point, README.md's table states every limit and tolerance",
         lambda c: check_form(c.spec, c.findings)),
    Part("oracle", "the reference agrees with oracle.py in float64 on every case; float32 cases drawn again (fairness)",
         lambda c: check_oracle(c.spec, c.seeds, c.findings)),
    Part("examples", "each example submission gets its folder's verdict on every seed, with its margin", _examples_part),
    Part("diagnosis", "each wrong example that declares `# diagnosis: KEY...` is told exactly that", _diagnosis_part),
    Part("operators", "every ATen operator the accepted examples run is on the rules' lists (the guard would refuse any other)",
         lambda c: check_operators(c.spec, c.seeds[0], c.findings)),
    Part("mutants", "the hidden cases reject every mutant of the reference not marked equivalent (mutation score)",
         lambda c: check_mutants(c.spec, c.seeds[0], c.findings)),
    Part("degenerate", "every hidden case fails zeros, ones, the mean of its expected values and an argument of its shape",
         lambda c: check_degenerate(c.spec, c.seeds[0], c.findings)),
    Part("kit", "the candidate's kit builds and holds nothing hidden", lambda c: check_kit(c.spec, c.findings, installed=c.installed)),
)  # fmt: skip
PART_NAMES = tuple(part.name for part in PARTS)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader verify",
        description="Check a challenge's package, part by part. One line per finding; exit status 0 when every check passes, 1 otherwise, 2 on a usage error.",
        epilog="parts, in the order they run: " + "; ".join(f"{part.name}: {part.what}" for part in PARTS),
    )
    parser.add_argument("problem", metavar="ID", nargs="?", help="the challenge (python -m grader problems lists them)")
    parser.add_argument("--spec", type=Path, help="a problem.toml outside problem/ (for testing the harness), instead of ID")
    parser.add_argument(
        "--seeds", type=int, default=len(SEEDS), choices=range(1, len(SEEDS) + 1), help=f"seeds for the oracle and the examples (default {len(SEEDS)})"
    )
    parser.add_argument("-p", "--part", action="append", default=[], choices=PART_NAMES, help="run only this part (repeatable; default: every part)")
    parser.add_argument("--skip", action="append", default=[], choices=PART_NAMES, help="leave a part out (repeatable)")
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
    context = Context(spec, SEEDS[: args.seeds], findings, installed=args.spec is None)
    chosen = [part for part in PARTS if (not args.part or part.name in args.part) and part.name not in args.skip]
    started = time.monotonic()
    print(f"verifying {spec.id} ({spec.title}), package {spec.digest[:12]}: {', '.join(part.name for part in chosen)}", file=out, flush=True)
    for part in chosen:
        with _check(findings, part.name):
            part.run(context)
    seconds = time.monotonic() - started
    failed = findings.failed
    outcome = f"{failed} finding{'s' * (failed != 1)} to fix" if failed else "every check passed"
    print(f"{spec.id}: {outcome} ({seconds:.0f} s)", file=out)
    return 1 if findings.failed else 0
