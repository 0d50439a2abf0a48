"""The challenge's contract, read from problem/spec.toml into typed objects."""

import hashlib
import importlib
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC_PATH = ROOT / "problem" / "spec.toml"
PROBE_FAMILY = "probes"  # the hidden cases the diagnosis reads (grader/diagnosis.py)

# The [policy] lists the child reads: its runtime guard and the capabilities of grader/child/restricted.py.
CHILD_POLICY = ("allowed_imports", "allowed_submodules", "forbidden_functions", "forbidden_operators", "forbidden_attributes", "readable_dunders")


class SetupError(ValueError):
    """The grader's own set-up cannot be used (its spec file): no submission can be graded and none is
    to blame, so every path reports grader_error. A ValueError, as the spec's faults were before."""


class MissingReference(ImportError):
    """The hidden reference does not import: the grader's set-up is incomplete. An ImportError, as a
    candidate's kit (which has no reference/) expects."""


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


SCORING_MODES = ("all_or_nothing", "per_case")


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
    parameters: tuple[str, ...]
    mask_threshold: float
    layer_norm_eps: float
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

    def seed_warnings(self, hidden_seed: str, public_only: bool = False) -> list[str]:
        """What a report must say about its seed: hidden cases from the fixed local seed are no secret."""
        if public_only or hidden_seed != self.default_hidden_seed:
            return []
        return [
            f"the hidden cases come from the fixed local seed (no {self.seed_env_var} and no --seed), which anyone can reproduce: "
            f"set a secret seed in {self.seed_env_var} before grading for real"
        ]

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


def parse_spec(data: dict[str, Any]) -> Spec:
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
    return Spec(
        entry_point=problem["entry_point"],
        parameters=tuple(problem["parameters"]),
        mask_threshold=problem["mask_threshold"],
        layer_norm_eps=problem["layer_norm_eps"],
        limits=Limits(**data["limits"]),
        tolerance={k: v for k, v in data["tolerance"].items() if not isinstance(v, dict)},
        gradient_tolerance=dict(data["tolerance"]["gradient"]),
        public_seed=data["seeds"]["public"],
        default_hidden_seed=data["seeds"]["default_hidden"],
        seed_env_var=data["seeds"]["env_var"],
        families=families,
        templates=_templates(families, data.get("cases", [])),
        policy=data.get("policy", {}),
        scoring=_scoring(data.get("scoring", {}), families),
        hidden_case_details=_flag(data.get("report", {}), "hidden_case_details"),
        known_mistakes=_flag(data.get("diagnosis", {}), "known_mistakes", default=True),
    )


def _flag(table: dict[str, Any], key: str, default: bool = False) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false")
    return value


@cache
def load_spec(path: Path = SPEC_PATH) -> Spec:
    """The spec at path; SetupError, saying which file and why, when it cannot be read or used."""
    try:
        with open(path, "rb") as f:
            return parse_spec(tomllib.load(f))
    except Exception as error:  # noqa: BLE001 - a missing file, bad TOML, a missing key, a wrong type: all the set-up's
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise SetupError(f"the spec file {path} cannot be used ({type(error).__name__}: {why})") from error
