"""A challenge's contract, read from its package's problem/<id>/problem.toml into typed objects
(docs/challenges.md, "A challenge package"), with the harness's base policy (grader/base_policy.toml) merged in."""

import argparse
import dataclasses
import fnmatch
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

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ROOT / "problem"  # problem/<id>/problem.toml, one folder per challenge
DEFAULT_PROBLEM = "mlm-forward-tied"
SPEC_PATH = PROBLEMS / DEFAULT_PROBLEM / "problem.toml"
BASE_POLICY_PATH = Path(__file__).resolve().parent / "base_policy.toml"
PROBE_FAMILY = "probes"  # the hidden cases the diagnosis reads (grader/diagnosis.py)

# The [policy] lists the child reads: its runtime guard and the capabilities of grader/child/restricted.py.
CHILD_POLICY = (
    "allowed_imports",
    "allowed_submodules",
    "forbidden_functions",
    "forbidden_operators",
    "forbidden_attributes",
    "challenge_attributes",
    "readable_dunders",
)


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


@dataclass(frozen=True)
class CaseTemplate:
    """A case before its values are drawn: a name, a family and settings (fixed or ranges)."""

    name: str
    family: str
    settings: dict[str, Any]


PARAMETER_TYPES = ("tensor", "int", "float", "bool")
FLOAT = "float"  # a dtype written "float" is the case's own: float32 or float64
RETURNS = ("tensor", "tuple")


@dataclass(frozen=True)
class Parameter:
    """One positional parameter of the entry point: a tensor (of the case's float dtype, or a fixed
    one) or a Python scalar."""

    name: str
    type: str  # one of PARAMETER_TYPES
    dtype: str = ""  # tensors: FLOAT or a torch dtype name (int64, bool, ...)


@dataclass(frozen=True)
class Output:
    """One returned tensor: its dtype rule, how messages name it and its shape, and how it is judged."""

    name: str
    dtype: str  # FLOAT (the case's dtype) or a fixed torch dtype name
    shape: str  # how the statement writes the expected shape, for messages: "(M, vocab_size)"
    what: str  # how a message names it: "the logits"
    scale_floor: float = 0.0  # the tolerance's scale is max(max|expected|, scale_floor)
    tolerance: dict[str, float] = field(default_factory=dict)  # dtype -> override of the spec's tolerance

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
class Spec:
    entry_point: str
    parameters: tuple[Parameter, ...]
    limits: Limits
    tolerance: dict[str, float]  # dtype name -> tolerance on outputs
    gradient_tolerance: dict[str, float]  # dtype name -> tolerance on gradients
    public_seed: str
    default_hidden_seed: str
    seed_env_var: str
    families: dict[str, Family]
    templates: tuple[CaseTemplate, ...]  # explicit cases, then each family's drawn ones
    policy: dict[str, Any]
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
    diagnosis: bool = False  # [diagnosis] probes: the package's probe cases localise a wrong answer (grader/diagnosis.py)
    digest: str = ""  # sha256 of the package's files (problem/<id>/ and reference/<module>/): reports, resume and merge carry it

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @property
    def tensor_parameters(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters if p.type == "tensor")

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

    def output_tolerance(self, output: Output, family: str, dtype: str) -> float:
        """The tolerance on one output: the family's override, else the output's own, else the spec's."""
        overrides = self.families[family].tolerance
        return overrides.get(dtype, output.tolerance.get(dtype, self.tolerance[dtype]))

    def tolerances(self, family: str, dtype: str) -> tuple[float, float]:
        """(tolerance on outputs, tolerance on gradients) for a case of this family and dtype."""
        overrides = self.families[family]
        return (
            overrides.tolerance.get(dtype, self.tolerance[dtype]),
            overrides.gradient_tolerance.get(dtype, self.gradient_tolerance[dtype]),
        )


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


def parse_spec(data: dict[str, Any], base_policy: dict[str, Any] | None = None, digest: str = "") -> Spec:
    """The spec of a problem.toml's data; its [policy] is merged into base_policy (the harness's own,
    grader/base_policy.toml, when None)."""
    defaults = data["defaults"]
    families = {}
    for raw in data["families"]:
        own = ("name", "description", "hint", "count", "tolerance", "gradient_tolerance")
        settings = defaults | {k: v for k, v in raw.items() if k not in own}
        families[raw["name"]] = Family(
            name=raw["name"],
            description=raw["description"],
            hint=raw.get("hint", defaults["hint"]),
            count=raw.get("count", defaults["count"]),
            settings=settings,
            tolerance=raw.get("tolerance", {}),
            gradient_tolerance=raw.get("gradient_tolerance", {}),
        )
    problem = data["problem"]
    parameters = _parameters(data.get("parameters", []))
    outputs = _outputs(data.get("outputs", []))
    returns = problem.get("returns", "tensor")
    if returns not in RETURNS or (returns == "tensor" and len(outputs) != 1):
        raise ValueError(f'[problem] returns must be "tensor" (with one [[outputs]] table) or "tuple", not {returns!r} with {len(outputs)} outputs')
    gradient_wrt = tuple(problem.get("gradient_wrt", ()))
    tensors = [p.name for p in parameters if p.type == "tensor"]
    if unknown := [name for name in gradient_wrt if name not in tensors]:
        raise ValueError(f"[problem] gradient_wrt names {unknown[0]!r}, which is not a tensor parameter ({', '.join(tensors)})")
    diagnosis = data.get("diagnosis", {})
    policy = merge_policy(load_base_policy() if base_policy is None else base_policy, data.get("policy", {}))
    refuse_what_the_grader_calls(policy, bool(gradient_wrt))
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
        tolerance={k: v for k, v in data["tolerance"].items() if not isinstance(v, dict)},
        gradient_tolerance=dict(data["tolerance"].get("gradient", {})),
        public_seed=data["seeds"]["public"],
        default_hidden_seed=data["seeds"]["default_hidden"],
        seed_env_var=data["seeds"]["env_var"],
        families=families,
        templates=_templates(families, data.get("cases", [])),
        policy=policy,
        scoring=_scoring(data.get("scoring", {}), families),
        hidden_case_details=_flag(data.get("report", {}), "hidden_case_details"),
        known_mistakes=_flag(diagnosis, "known_mistakes", default=True),
        diagnosis=_flag(diagnosis, "probes"),
        digest=digest,
        hidden=problem.get("module", ""),
    )


def _parameters(tables: list[dict[str, Any]]) -> tuple[Parameter, ...]:
    parameters = []
    for table in tables:
        parameter = Parameter(table["name"], table["type"], table.get("dtype", ""))
        if parameter.type not in PARAMETER_TYPES:
            raise ValueError(f"parameter {parameter.name}: type must be one of {', '.join(PARAMETER_TYPES)}, not {parameter.type!r}")
        if (parameter.type == "tensor") != bool(parameter.dtype):
            raise ValueError(f'parameter {parameter.name}: a tensor has a dtype ("float" or a torch dtype name), a scalar none')
        parameters.append(parameter)
    if not parameters:
        raise ValueError("the problem declares no [[parameters]]")
    return tuple(parameters)


def _outputs(tables: list[dict[str, Any]]) -> tuple[Output, ...]:
    outputs = tuple(
        Output(
            name=table["name"],
            dtype=table.get("dtype", FLOAT),
            shape=table.get("shape", ""),
            what=table.get("what", table["name"]),
            scale_floor=float(table.get("scale_floor", 0.0)),
            tolerance=dict(table.get("tolerance", {})),
        )
        for table in tables
    )
    if not outputs:
        raise ValueError("the problem declares no [[outputs]]")
    return outputs


# A package's [policy] may only tighten the base: these lists are added to the base's ...
ADDED_POLICY = ("forbidden_functions", "forbidden_operators", "forbidden_attributes", "forbidden_builtins")
# ... and these may be given as a subset of the base's (what is allowed, only narrowed).
NARROWED_POLICY = ("allowed_imports", "allowed_submodules", "allowed_dunders", "readable_dunders")


def merge_policy(base: dict[str, Any], package: dict[str, Any]) -> dict[str, Any]:
    """The base policy tightened by a package's: forbidden lists extended, allowed lists narrowed to
    the package's subset. ValueError for a key the package may not set or an allowance it widens."""
    merged = {key: list(value) for key, value in base.items()}
    for key, value in package.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"[policy] {key} must be a list of strings")
        if key in ADDED_POLICY:
            merged[key] = merged.get(key, []) + [v for v in value if v not in merged.get(key, [])]
        elif key in NARROWED_POLICY:
            if widened := [v for v in value if v not in base.get(key, [])]:
                raise ValueError(f"[policy] {key} may only narrow the harness's base policy; it adds {widened[0]!r}")
            merged[key] = list(value)
        else:
            raise ValueError(
                f"[policy] {key} cannot be set by a problem package (it may add to {', '.join(ADDED_POLICY)}; narrow {', '.join(NARROWED_POLICY)})"
            )
    for key in ADDED_POLICY[:2]:
        merged.setdefault(key, [])
    merged["challenge_attributes"] = list(package.get("forbidden_attributes", []))  # worded as the challenge's rule in refusals
    return merged


# What the child's own code calls on the tensors of a case (grader/child/runner.py, vjp.py), under the
# runtime guard, which refuses a forbidden name or operator whoever calls it: copies of the inputs and
# of what comes back, and, for a gradient check, leaves and the vector-Jacobian product.
GRADER_CALLS = ("clone", "detach")
GRADIENT_CALLS = ("requires_grad_", "grad", "mul", "__mul__", "sum", "to", "add", "__add__", "zeros_like")
GRADER_OPERATORS = ("clone", "detach", "alias")
GRADIENT_OPERATORS = ("mul", "sum", "_to_copy", "add", "zeros_like", "zero_", "fill_", "ones_like", "expand", "sum_backward")


def refuse_what_the_grader_calls(policy: dict[str, Any], gradient: bool) -> None:
    """ValueError when the policy forbids, as a torch function or an ATen operator, what the grader's
    own code in the child calls: the guard would refuse the grader too. To keep a submission from
    autograd, forbid it by attribute (forbidden_attributes: "torch.autograd*", "*.backward", ...),
    which the static check and the capability layer apply to the submission's code alone."""
    names = GRADER_CALLS + GRADIENT_CALLS * gradient
    operators = GRADER_OPERATORS + GRADIENT_OPERATORS * gradient
    if used := sorted(set(policy.get("forbidden_functions", [])) & set(names)):
        raise ValueError(
            f"[policy] forbidden_functions names {', '.join(used)}, which the grader's own code calls in the child; "
            'forbid a submission\'s use by attribute instead (forbidden_attributes, e.g. "*.requires_grad_")'
        )
    for pattern in policy.get("forbidden_operators", []):
        if hit := fnmatch.filter(operators, pattern):
            raise ValueError(f"[policy] forbidden_operators pattern {pattern!r} matches aten.{hit[0]}, which the grader's own code runs in the child")


@cache
def load_base_policy(path: Path = BASE_POLICY_PATH) -> dict[str, Any]:
    with open(path, "rb") as f:
        return tomllib.load(f)["policy"]


def _flag(table: dict[str, Any], key: str, default: bool = False) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false")
    return value


@cache
def load_spec(path: Path = SPEC_PATH) -> Spec:
    """The spec at path (a package's problem.toml); SetupError, saying which file and why, when it
    cannot be read or used."""
    try:
        with open(path, "rb") as f:
            return dataclasses.replace(parse_spec(tomllib.load(f), digest=package_digest(path)), path=path)
    except Exception as error:  # noqa: BLE001 - a missing file, bad TOML, a missing key, a wrong type: all the set-up's
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise SetupError(f"the spec file {path} cannot be used ({type(error).__name__}: {why})") from error


def package_digest(spec_path: Path) -> str:
    """sha256 over what decides a challenge's verdicts: the harness's base policy and, for an
    installed package (problem/<id>/problem.toml), every file of problem/<id>/ and of its hidden side
    reference/<module>/ where the checkout has it (the kit has none), its example submissions aside; for a spec file elsewhere (a
    test's), that file. Reports, results lines, resume and merge carry it, so that a batch never
    resumes across a changed package."""
    digest = hashlib.sha256(BASE_POLICY_PATH.read_bytes() if BASE_POLICY_PATH.is_file() else b"")
    folder = spec_path.parent
    if spec_path.name != "problem.toml" or folder.parent != PROBLEMS:
        digest.update(spec_path.read_bytes())
        return digest.hexdigest()
    hidden = ROOT / "reference" / folder.name.replace("-", "_")
    for root in (folder, hidden):
        if not root.is_dir():
            continue
        # The example submissions (verify's) decide nothing and are left out of the zips and kits built from it.
        skipped = {"__pycache__", "submissions"}
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not skipped & set(p.relative_to(root).parts) and p.name != "solution.py"):
            digest.update(f"{path.relative_to(root.parent).as_posix()}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


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
