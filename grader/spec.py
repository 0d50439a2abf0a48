"""A challenge's contract, read from its package's problem/<id>/problem.toml into typed objects
(docs/problem-format.md specifies every key, docs/challenges.md lists the packages; grader/package_format.py
checks the keys, and merges a package that extends another), with the harness's allow-lists (grader/rules.toml) narrowed by its [rules]."""

import argparse
import dataclasses
import hashlib
import importlib
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from grader.package_format import FormatError, check_format, merge, nearest
from grader.rules import BASE_RULES_PATH, Rules, RulesError, narrowed

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ROOT / "problem"  # problem/<id>/problem.toml, one folder per challenge
DEFAULT_FILE = PROBLEMS / "DEFAULT"  # the id of the challenge graded when none is named, on one line


def _default_problem() -> str:
    """The challenge graded when none is named: problem/DEFAULT's id, else the first installed one."""
    try:
        return DEFAULT_FILE.read_text(encoding="utf-8").strip()
    except OSError:  # a kit, or a checkout without the file
        return next((path.parent.name for path in sorted(PROBLEMS.glob("*/problem.toml"))), "")


DEFAULT_PROBLEM = _default_problem()
SPEC_PATH = PROBLEMS / DEFAULT_PROBLEM / "problem.toml"


class SetupError(ValueError):
    """The grader's own set-up cannot be used (its spec file): no submission can be graded and none is
    to blame, so every path reports grader_error. A ValueError, as the spec's faults were before."""


class MissingReference(ImportError):
    """The hidden reference does not import: the grader's set-up is incomplete. An ImportError, as a
    candidate's kit (which has no reference/) expects."""


class BrokenReference(SetupError):
    """A module of the hidden reference raised an exception other than ImportError at import: the
    grader's set-up is broken (the reference is there, unlike MissingReference's)."""


def setup_fault(error: BaseException) -> bool:
    """True when error says the grader's set-up is broken rather than a submission: its spec file, its
    reference, or a module the grader's own process cannot import (torch, numpy: the submission runs
    in a child, so an ImportError here is never the submission's)."""
    return isinstance(error, SetupError | ImportError)


def hidden_module(name: str) -> Any:
    """A module of reference/, the hidden reference beside grader/ in the checkout, whatever folder
    the grader runs from (MissingReference, an ImportError, in a candidate's kit, which has no
    reference/). It is not installed as a package: only the grader's own process finds it, by the
    checkout's path."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise MissingReference(
            f"the hidden reference module {name} cannot be imported from {ROOT / 'reference'} ({type(error).__name__}: {error})", name=name
        ) from error
    except Exception as error:  # noqa: BLE001 - whatever the module raises, the set-up is broken
        raise BrokenReference(f"the hidden reference module {name} raised {type(error).__name__} when imported: {error}") from error


def seed_public_id(seed: str) -> str:
    """A short, non-reversible name for a seed, safe to print in reports."""
    return hashlib.sha256(f"mlm-grader-seed:{seed}".encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Limits:
    source_bytes: int
    startup_seconds: float
    case_seconds: float
    total_seconds: float
    cpu_seconds: int
    memory_mib: int
    file_size_mib: int
    open_files: int
    output_bytes: int


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    hint: str
    count: int
    settings: dict[str, Any]  # defaults overlaid with the family's own values
    tolerance: dict[str, float]  # dtype -> override of the spec's tolerance on outputs
    gradient_tolerance: dict[str, float]  # dtype -> override on gradients
    hint_checks: frozenset[str] = frozenset()  # the checks whose failure its hint is about (empty: any about the numbers)


@dataclass(frozen=True)
class CaseTemplate:
    """A case before its values are drawn: a name, a family and settings (fixed or ranges)."""

    name: str
    family: str
    settings: dict[str, Any]


PARAMETER_TYPES = ("tensor", "tensors", "int", "float", "floats", "bool")
TENSOR_TYPES = ("tensor", "tensors")  # a tensor, or a list of tensors (each sent and judged on its own)
FLOAT = "float"  # a dtype written "float" is the case's own: float32 or float64
RETURNS = ("tensor", "tuple", "none")
KINDS = ("function", "class")
JUDGES = ("reference", "properties")


@dataclass(frozen=True)
class Parameter:
    """One parameter of the entry point (or, for a class, of its constructor or its method): a
    tensor (of the case's float dtype, or a fixed one), a list of such tensors, or a Python value
    (int, float, bool, or a tuple of floats)."""

    name: str
    type: str  # one of PARAMETER_TYPES
    dtype: str = ""  # tensors: FLOAT or a torch dtype name (int64, bool, ...)
    keyword: bool = False  # passed by name (name=value) rather than by position

    @property
    def tensor(self) -> bool:
        return self.type in TENSOR_TYPES


@dataclass(frozen=True)
class Output:
    """One returned tensor: its dtype rule, how messages name it and its shape, and how it is judged."""

    name: str
    dtype: str  # FLOAT (the case's dtype) or a fixed torch dtype name
    shape: str  # how the statement writes the expected shape, for messages: "(M, vocab_size)"
    what: str  # how a message names it: "the logits"
    scale_floor: float = 0.0  # the tolerance's scale is max(max|expected|, scale_floor)
    tolerance: dict[str, float] = field(default_factory=dict)  # dtype -> override of the spec's tolerance
    updates: str = ""  # a parameter the call updates in place by contract: this output is its state after the call, not a returned value

    def dtype_for(self, case_dtype: str) -> str:
        return case_dtype if self.dtype == FLOAT else self.dtype

    @property
    def exact(self) -> bool:
        """Integer and bool outputs are compared exactly."""
        return self.dtype != FLOAT and not self.dtype.startswith(("float", "bfloat", "complex"))


SCORING_MODES = ("all_or_nothing", "per_case")
CASE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # what grader/sandbox/output.py reads back as a case's label


@dataclass(frozen=True)
class Scoring:
    """How the platform formats share points among cases (the spec's [scoring] table)."""

    mode: str = "all_or_nothing"  # all_or_nothing: the points only when every case passes; per_case: each passed case its share
    weights: dict[str, float] = field(default_factory=dict)  # family -> weight of each of its cases (default 1)

    def weight(self, family: str) -> float:
        return self.weights.get(family, 1.0)


@dataclass(frozen=True)
class Part:
    """A part of the computation the probe cases can tell wrong ([diagnosis.parts.<name>])."""

    name: str
    conclusion: str  # the diagnosis when the probes show this part alone wrong
    fix: str = ""  # where it is and what it must be, when the probes show several parts wrong
    premise: str = ""  # a [diagnosis.premises] entry the conclusion begins with
    told_as: str = ""  # another part's conclusion is told instead (a part the probes tell apart, the candidate need not)


@dataclass(frozen=True)
class Probe:
    """A probe case and the parts its values depend on ([[diagnosis.probe]])."""

    case: str
    parts: frozenset[str]
    gradient: str = ""  # the part named when this probe's values are right and its gradient is not


@dataclass(frozen=True)
class Premise:
    """What a conclusion may say is right, when the probes named give right values."""

    probes: tuple[str, ...]
    holds: str  # said when every probe named gives right values
    otherwise: str  # said when some did not run or raised


@dataclass(frozen=True)
class Diagnosis:
    """The package's probe cases and what they prove ([diagnosis] with probes = true): grader/diagnosis.py
    reads which probes give right and wrong values and names the parts that explain them."""

    parts: dict[str, Part]  # in the order the conclusions are told
    probes: dict[str, Probe]  # by case name
    premises: dict[str, Premise]
    nonfinite_probes: frozenset[str] = frozenset()  # probes whose NaN or inf values may come from any of nonfinite_parts
    nonfinite_parts: frozenset[str] = frozenset()
    nonfinite_fallback: str = ""  # told when NaN or inf cannot be localised, once nonfinite_proven are proven right
    nonfinite_proven: frozenset[str] = frozenset()
    shapes: tuple[tuple[str, int, str], ...] = ()  # (output, axis, part): a wrong size on that axis points at the part

    @property
    def gradient_parts(self) -> frozenset[str]:
        """The parts that say where a gradient is cut."""
        return frozenset(probe.gradient for probe in self.probes.values() if probe.gradient)


@dataclass(frozen=True)
class Spec:
    entry_point: str
    parameters: tuple[Parameter, ...]
    limits: Limits
    tolerances: dict[str, float]  # [tolerance]: dtype name -> tolerance on outputs (Spec.tolerance() applies the overrides)
    gradient_tolerances: dict[str, float]  # [tolerance.gradient]: dtype name -> tolerance on gradients
    public_seed: str
    default_hidden_seed: str
    seed_env_var: str
    families: dict[str, Family]
    templates: tuple[CaseTemplate, ...]  # explicit cases, then each family's drawn ones
    rules: Rules  # what a submission may use (grader/rules.py): the harness's allow-lists, narrowed by [rules]
    scoring: Scoring = field(default_factory=Scoring)
    hidden_case_details: bool = False  # [report]: full mismatch detail for hidden cases too (practice only)
    known_mistakes: bool = True  # [diagnosis]: name a known mistake when a wrong answer's output matches one
    id: str = DEFAULT_PROBLEM
    title: str = ""
    returns: str = "tensor"  # "tensor": one tensor; "tuple": a tuple of len(outputs) tensors
    outputs: tuple[Output, ...] = ()
    gradient_wrt: tuple[str, ...] = ()  # tensor parameters whose gradient is checked
    constants: dict[str, Any] = field(default_factory=dict)  # [problem.constants]
    hints: dict[str, str] = field(default_factory=dict)  # [hints]: check kind -> what it usually means
    diagnosis: Diagnosis | None = None  # [diagnosis] probes = true: the package's probe cases localise a wrong answer (grader/diagnosis.py)
    digest: str = ""  # sha256 of everything of the package the grader reads (package_digest): reports, resume and merge carry it
    kind: str = "function"  # "class": the entry point is a class, constructed once per case, then `method` called once per step
    method: str = ""  # a class's method each step calls
    step_parameters: tuple[Parameter, ...] = ()  # the method's parameters (a class's); a step's arguments are drawn per step
    judge: str = "reference"  # "properties": the outputs are judged by the package's properties.py, not by equality with the reference
    extends: str = ""  # the package this one extends (its problem.toml is read first)

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @property
    def tensor_parameters(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters if p.type == "tensor")

    @property
    def updated(self) -> dict[str, Output]:
        """The parameters updated in place by contract, by name, and the output that judges each."""
        return {output.updates: output for output in self.outputs if output.updates}

    @property
    def returned(self) -> tuple[Output, ...]:
        """The outputs the call returns (in return order), the updated parameters aside."""
        return tuple(output for output in self.outputs if not output.updates)

    hidden: str = ""  # [problem] module: the Python package of its hidden side, when not reference/<id, "-" written "_">
    path: Path | None = None  # the problem.toml it was read from

    @property
    def folder(self) -> Path:
        """Its public side: problem/<id>/, or the folder of the problem.toml it was read from."""
        return self.path.parent if self.path else PROBLEMS / self.id

    @property
    def hidden_folder(self) -> Path:
        """Its hidden side, the folder of its module (reference/<module>/ in the checkout)."""
        return ROOT.joinpath(*self.module.split("."))

    @property
    def module(self) -> str:
        """The package of its hidden side: reference/<id, "-" written "_"> unless problem.toml names another."""
        return self.hidden or "reference." + self.id.replace("-", "_")

    def seed_warnings(self, hidden_seed: str, public_only: bool = False) -> list[str]:
        """What a report must say about its seed: hidden cases from the fixed local seed are no secret."""
        if public_only or hidden_seed != self.default_hidden_seed:
            return []
        return [
            f"the hidden cases come from the fixed local seed (no {self.seed_env_var} and no --seed), which anyone can reproduce: "
            f"set a secret seed in {self.seed_env_var} before grading for real"
        ]

    def tolerance(self, family: str, dtype: str, output: Output | None = None, gradient: bool = False) -> float:
        """The tolerance of one comparison, the only lookup there is. A gradient's: the family's
        gradient_tolerance, else [tolerance.gradient]. An output's values (output None: the first
        output): the family's tolerance, else the output's own, else [tolerance]."""
        overrides = self.families[family]
        if gradient:
            return overrides.gradient_tolerance.get(dtype, self.gradient_tolerances[dtype])
        declared = output or self.outputs[0]
        return overrides.tolerance.get(dtype, declared.tolerance.get(dtype, self.tolerances[dtype]))


def _templates(families: dict[str, Family], explicit: list[dict]) -> tuple[CaseTemplate, ...]:
    templates = []
    for case in explicit:
        family = families[case["family"]]
        settings = family.settings | {k: v for k, v in case.items() if k not in ("name", "family")}
        templates.append(CaseTemplate(case["name"], family.name, settings))
    for family in families.values():
        for index in range(family.count):
            templates.append(CaseTemplate(f"{family.name}_{index + 1}", family.name, family.settings))
    names = [t.name for t in templates]
    if len(names) != len(set(names)):
        raise ValueError("case names in the spec must be unique")
    if odd := [name for name in names if not CASE_NAME.fullmatch(name)]:
        raise ValueError(f"case name {odd[0]!r}: case names are 1 to 100 letters, digits, '_', '.' or '-' (the child labels its output with them)")
    return tuple(templates)


def _scoring(table: dict[str, Any], families: dict[str, Family]) -> Scoring:
    mode = table.get("mode", "all_or_nothing")
    if mode not in SCORING_MODES:
        raise ValueError(f"[scoring] mode must be one of {', '.join(SCORING_MODES)}, not {mode!r}")
    weights = table.get("weights", {})
    for family, weight in weights.items():
        if family not in families:
            raise ValueError(f"[scoring.weights] names {family!r}, which is not a family; families: {', '.join(families)}")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
            raise ValueError(f"[scoring.weights] {family} must be a positive number, not {weight!r}")
    unknown = set(table) - {"mode", "weights"}
    if unknown:
        raise ValueError(f"[scoring] has unknown keys: {', '.join(sorted(unknown))} (known: mode, weights)")
    return Scoring(mode, {family: float(weight) for family, weight in weights.items()})


def parse_spec(data: dict[str, Any], digest: str = "") -> Spec:
    """The spec of a problem.toml's data (with `extends` resolved: read_package), its [rules] narrowing
    the harness's allow-lists (grader/rules.toml)."""
    defaults = {"count": 1, "visibility": "hidden", "dtype": "float32", "hint": ""} | data["defaults"]
    families = {}
    for raw in data["families"]:
        own = ("name", "description", "hint", "count", "tolerance", "gradient_tolerance", "hint_checks")
        settings = defaults | {k: v for k, v in raw.items() if k not in own}
        families[raw["name"]] = Family(
            name=raw["name"],
            description=raw["description"],
            hint=raw.get("hint", defaults["hint"]),
            count=raw.get("count", defaults["count"]),
            settings=settings,
            tolerance=raw.get("tolerance", {}),
            gradient_tolerance=raw.get("gradient_tolerance", {}),
            hint_checks=frozenset(raw.get("hint_checks", ())),
        )
    problem = data["problem"]
    kind = problem.get("kind", "function")
    if kind not in KINDS:
        raise ValueError(f"[problem] kind must be one of {', '.join(KINDS)}, not {kind!r}")
    parameters = _parameters(data.get("parameters", []), "parameters")
    step_parameters = _parameters(data.get("step_parameters", []), "step_parameters", allow_none=True)
    method = problem.get("method", "")
    if (kind == "class") != bool(method):
        raise ValueError('[problem] method names the method a class\'s steps call: give it with kind = "class", and only then')
    if any(p.keyword for p in step_parameters):
        raise ValueError("[[step_parameters]] are passed by position: keyword = true is for the constructor's or the function's [[parameters]]")
    if step_parameters and kind != "class":
        raise ValueError("[[step_parameters]] are a class's method's: they need kind = \"class\"")
    outputs = _outputs(data.get("outputs", []), parameters)
    returns = problem.get("returns", "none" if kind == "class" else "tensor")
    returned = [output for output in outputs if not output.updates]
    if returns not in RETURNS or (returns == "tensor" and len(returned) != 1) or (returns == "none" and returned):
        raise ValueError(
            f'[problem] returns must be "tensor" (with one returned [[outputs]] table), "tuple" or "none" (every output updates a parameter), '
            f"not {returns!r} with {len(returned)} returned outputs"
        )
    if kind == "class" and returns != "none":
        raise ValueError('[problem] returns of a class is "none": its outputs are the parameters its steps update (updates = "...")')
    gradient_wrt = tuple(problem.get("gradient_wrt", ()))
    tensors = [p.name for p in parameters if p.type == "tensor"]
    if unknown := [name for name in gradient_wrt if name not in tensors]:
        raise ValueError(f"[problem] gradient_wrt names {unknown[0]!r}, which is not a tensor parameter ({', '.join(tensors)})")
    if gradient_wrt and (kind == "class" or not returned):
        raise ValueError("[problem] gradient_wrt: gradients are checked through returned outputs, which a class's steps do not have")
    judge = problem.get("judge", "reference")
    if judge not in JUDGES:
        raise ValueError(f"[problem] judge must be one of {', '.join(JUDGES)}, not {judge!r}")
    if judge == "properties" and (gradient_wrt or kind == "class"):
        raise ValueError('[problem] judge = "properties" judges a function\'s returned outputs, without a gradient check')
    diagnosis = data.get("diagnosis", {})
    rules = narrowed(data.get("rules", {}), gradient=bool(gradient_wrt))
    templates = _templates(families, data.get("cases", []))
    return Spec(
        id=problem["id"],
        title=problem.get("title", problem["id"]),
        entry_point=problem["entry_point"],
        parameters=parameters,
        returns=returns,
        outputs=outputs,
        gradient_wrt=gradient_wrt,
        constants=dict(problem.get("constants", {})),
        hints=dict(data.get("hints", {})),
        limits=Limits(**data["limits"]),
        tolerances={k: v for k, v in data["tolerance"].items() if not isinstance(v, dict)},
        gradient_tolerances=dict(data["tolerance"].get("gradient", {})),
        public_seed=data["seeds"]["public"],
        default_hidden_seed=data["seeds"]["default_hidden"],
        seed_env_var=data["seeds"]["env_var"],
        families=families,
        templates=templates,
        rules=rules,
        scoring=_scoring(data.get("scoring", {}), families),
        hidden_case_details=_flag(data.get("report", {}), "hidden_case_details"),
        known_mistakes=_flag(diagnosis, "known_mistakes", default=True),
        diagnosis=_diagnosis(diagnosis, templates, outputs) if _flag(diagnosis, "probes") else None,
        digest=digest,
        hidden=problem.get("module", ""),
        kind=kind,
        method=method,
        step_parameters=step_parameters,
        judge=judge,
        extends=data.get("extends", ""),
    )


def _diagnosis(table: dict[str, Any], templates: tuple[CaseTemplate, ...], outputs: tuple[Output, ...]) -> Diagnosis:
    """The probes and parts of [diagnosis], each name it uses checked against what the package has."""
    cases = {t.name for t in templates}
    parts = {
        name: Part(name, part["conclusion"], part.get("fix", ""), part.get("premise", ""), part.get("told_as", ""))
        for name, part in table.get("parts", {}).items()
    }
    premises = {name: Premise(tuple(p["probes"]), p["holds"], p["otherwise"]) for name, p in table.get("premises", {}).items()}
    probes = {p["case"]: Probe(p["case"], frozenset(p["parts"]), p.get("gradient", "")) for p in table.get("probe", [])}
    nonfinite = table.get("nonfinite", {})
    found = Diagnosis(
        parts,
        probes,
        premises,
        frozenset(nonfinite.get("probes", ())),
        frozenset(nonfinite.get("parts", ())),
        nonfinite.get("fallback", ""),
        frozenset(nonfinite.get("proven", ())),
        tuple((shape["output"], shape["axis"], shape["part"]) for shape in table.get("shapes", [])),
    )
    named_parts = [part for probe in probes.values() for part in (*probe.parts, probe.gradient)]
    named_parts += [*found.nonfinite_parts, found.nonfinite_fallback, *found.nonfinite_proven, *(part for _, _, part in found.shapes)]
    named_parts += [part.told_as for part in parts.values()]
    for name in filter(None, named_parts):
        if name not in parts:
            raise ValueError(f"[diagnosis] names the part {name!r}, which [diagnosis.parts] does not declare{nearest(name, parts)}")
    for name in [*probes, *found.nonfinite_probes, *(probe for premise in premises.values() for probe in premise.probes)]:
        if name not in cases:
            raise ValueError(f"[diagnosis] names the probe {name!r}, which is no case of the package{nearest(name, cases)}")
    for part in parts.values():
        if part.premise and part.premise not in premises:
            raise ValueError(f"[diagnosis.parts.{part.name}] premise {part.premise!r} is not in [diagnosis.premises]{nearest(part.premise, premises)}")
    names = [o.name for o in outputs]
    for output, _, _ in found.shapes:
        if output not in names:
            raise ValueError(f"[[diagnosis.shapes]] output {output!r} is not an output{nearest(output, names)}")
    if not probes:
        raise ValueError("[diagnosis] probes = true needs [[diagnosis.probe]] tables: each probe case and the parts it depends on")
    return found


def _parameters(tables: list[dict[str, Any]], table: str, allow_none: bool = False) -> tuple[Parameter, ...]:
    parameters = []
    for raw in tables:
        parameter = Parameter(raw["name"], raw["type"], raw.get("dtype", ""), raw.get("keyword", False))
        if parameter.type not in PARAMETER_TYPES:
            near = nearest(parameter.type, PARAMETER_TYPES)
            raise ValueError(f"[[{table}]] {parameter.name}: type must be one of {', '.join(PARAMETER_TYPES)}, not {parameter.type!r}{near}")
        if parameter.tensor != bool(parameter.dtype):
            raise ValueError(f'[[{table}]] {parameter.name}: a tensor has a dtype ("float" or a torch dtype name), a scalar none')
        parameters.append(parameter)
    if not parameters and not allow_none:
        raise ValueError(f"the problem declares no [[{table}]]")
    names = [p.name for p in parameters]
    if len(names) != len(set(names)):
        raise ValueError(f"[[{table}]]: parameter names must be unique")
    return tuple(parameters)


def _outputs(tables: list[dict[str, Any]], parameters: tuple[Parameter, ...]) -> tuple[Output, ...]:
    outputs = tuple(
        Output(
            name=table["name"],
            dtype=table.get("dtype", FLOAT),
            shape=table.get("shape", ""),
            what=table.get("what", table["name"]),
            scale_floor=float(table.get("scale_floor", 0.0)),
            tolerance=dict(table.get("tolerance", {})),
            updates=table.get("updates", ""),
        )
        for table in tables
    )
    if not outputs:
        raise ValueError("the problem declares no [[outputs]]")
    tensors = {p.name: p for p in parameters if p.tensor}
    for output in outputs:
        if output.updates and output.updates not in tensors:
            raise ValueError(f"[[outputs]] {output.name}: updates names {output.updates!r}, which is no tensor parameter{nearest(output.updates, tensors)}")
        if output.updates and tensors[output.updates].dtype != output.dtype:
            raise ValueError(f"[[outputs]] {output.name}: its dtype must be that of the parameter it updates ({tensors[output.updates].dtype})")
    return outputs


def _flag(table: dict[str, Any], key: str, default: bool = False) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false")
    return value


@cache
def load_spec(path: Path = SPEC_PATH) -> Spec:
    """The spec at path (a package's problem.toml); SetupError, saying which file and why, when it
    cannot be read or used: one line naming the key, and for an unknown key the nearest valid one."""
    try:
        data, files = read_package(path)
        spec = dataclasses.replace(parse_spec(data), path=path)
        return dataclasses.replace(spec, digest=package_digest(spec, files))
    except SetupError:
        raise
    except Exception as error:  # noqa: BLE001 - a missing file, bad TOML, a missing key, a wrong type: all the set-up's
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        kind = "" if isinstance(error, FormatError | RulesError) else f"{type(error).__name__}: "
        raise SetupError(f"the spec file {path} cannot be used ({kind}{why})") from error


def read_package(path: Path, seen: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[Path]]:
    """A problem.toml's data with `extends` resolved (grader/package_format.py merge), checked against
    the format, and the problem.toml files read: this one, then each it extends. An error names
    the file it is in."""
    with open(path, "rb") as f:
        own = tomllib.load(f)
    parent = own.get("extends")
    try:
        check_format(own, partial=parent is not None)
    except FormatError as error:
        raise SetupError(f"the spec file {path} cannot be used ({error})") from None
    if parent is None:
        return own, [path]
    if not isinstance(parent, str) or parent not in problem_ids():
        known = problem_ids()
        raise SetupError(f"the spec file {path} cannot be used (extends {parent!r}, which is no installed problem{nearest(str(parent), known)})")
    if parent in seen:
        raise SetupError(f"the spec file {path} cannot be used (extends {parent!r}, which extends it back)")
    base, files = read_package(PROBLEMS / parent / "problem.toml", (*seen, parent))
    data = merge(base, own)
    data["extends"] = parent
    try:
        check_format(data)
    except FormatError as error:
        raise SetupError(f"the spec file {path} cannot be used ({error}, once what it extends is merged in)") from None
    return data, [path, *files]


SKIPPED = {"__pycache__", "submissions"}  # in a package's folders: what decides nothing (verify's example submissions)


def package_digest(spec: Spec, files: list[Path]) -> str:
    """sha256 over everything of the package the grader reads, so that reports, results lines,
    resume and merge never mix verdicts of two versions of it: the harness's allow-lists (grader/rules.toml); the
    problem.toml files read (the package's and those it extends) and, for an installed package, every
    file of its folder problem/<id>/ (the statement, the stub, properties.py) and of theirs; the
    folder of its hidden module (reference/<module>/, or the one [problem] module names) and of
    every module of reference/ the hidden code imports, where the checkout has them (the kit has
    none). Example submissions, caches and a candidate's solution.py are left out."""
    digest = hashlib.sha256(BASE_RULES_PATH.read_bytes() if BASE_RULES_PATH.is_file() else b"")
    folders: list[Path] = []
    for file in files:
        if file.name == "problem.toml" and file.parent.parent == PROBLEMS:
            folders.append(file.parent)
        else:
            _add(digest, file, file.parent)
    hidden = [spec.hidden_folder] + [PROBLEMS.parent / "reference" / parent.name.replace("-", "_") for parent in folders[1:]]
    for folder in hidden:
        hidden += [found for found in _imported_hidden_folders(folder) if found not in hidden]
    for root in dict.fromkeys([*folders, *hidden]):
        if not root.is_dir():
            continue
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not SKIPPED & set(p.relative_to(root).parts) and p.name != "solution.py"):
            _add(digest, path, root.parent)
    return digest.hexdigest()


def _add(digest: Any, path: Path, base: Path) -> None:
    digest.update(f"{path.relative_to(base).as_posix()}\0".encode())
    digest.update(path.read_bytes())
    digest.update(b"\0")


def _imported_hidden_folders(folder: Path) -> list[Path]:
    """The folders of the reference/<other>/ packages that the Python files of `folder` import."""
    import ast

    found = []
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                parts = name.split(".")
                if parts[0] == "reference" and len(parts) > 1 and (ROOT / "reference" / parts[1]).is_dir():
                    found.append(ROOT / "reference" / parts[1])
    return found


def problem_ids(folder: Path = PROBLEMS) -> list[str]:
    """The challenges installed: every problem/<id>/ with a problem.toml."""
    return sorted(path.parent.name for path in folder.glob("*/problem.toml"))


class UnknownProblem(ValueError):
    """A caller named a challenge that is not installed (a usage error, not the set-up's)."""


def problem_spec(problem_id: str = DEFAULT_PROBLEM) -> Spec:
    """The spec of an installed challenge; UnknownProblem naming the ones there are when it is not one."""
    if problem_id not in problem_ids():
        known = ", ".join(problem_ids()) or "none"
        raise UnknownProblem(f"there is no problem {problem_id!r} (problems: {known}; `python -m grader problems` lists them)")
    return load_spec(PROBLEMS / problem_id / "problem.toml")


def add_problem_arguments(parser: argparse.ArgumentParser) -> None:
    """--problem ID and --spec FILE, for every command that grades or counts."""
    parser.add_argument(
        "--problem",
        default=os.environ.get("MLM_GRADER_PROBLEM", DEFAULT_PROBLEM),
        metavar="ID",
        help=f"the challenge (default {DEFAULT_PROBLEM}, or MLM_GRADER_PROBLEM when set); python -m grader problems lists them",
    )
    parser.add_argument("--spec", type=Path, help="a problem.toml to use instead of the installed package's (for testing the grader)")


def spec_of_arguments(args: argparse.Namespace) -> Spec:
    """The spec --spec or --problem names; SetupError when it cannot be used."""
    return load_spec(args.spec.resolve()) if args.spec else problem_spec(args.problem)
