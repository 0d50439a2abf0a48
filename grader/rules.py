"""What a submission may use: the harness's allow-lists (grader/rules.toml), narrowed by a
challenge's package, with the advice each refusal gives.

Every layer reads the one `Rules` a spec carries: the static check (grader/policy.py) for its
messages, the child (its capability layer and runtime guard) through `Rules.child_config()`,
`python -m grader rules` and the statements' Rules sections through `Rules.listing()` and
`Rules.markdown()`. A package narrows the lists with `[[rules.forbid]]` entries in its problem.toml:
each names what the candidate writes themselves (`what`), glob patterns of what it removes from
every list (`names`) and the advice a refusal of such a name gives (`advice`). Nothing a package
says can add to a list.
"""

import builtins
import fnmatch
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

BASE_RULES_PATH = Path(__file__).resolve().parent / "rules.toml"

# What the child's own code runs on a case's tensors, under the runtime guard (grader/child/runner.py,
# wire.py, vjp.py): copies of the inputs and of what comes back, and, where gradients are checked,
# the vector-Jacobian product. A package may not remove them: the guard would refuse the grader too.
GRADER_OPERATORS = (
    "aten::clone", "aten::detach", "aten::alias", "aten::copy_", "aten::empty", "aten::empty_like", "aten::empty_strided",
    "aten::lift_fresh", "aten::_to_copy", "aten::to", "aten::contiguous",
)  # fmt: skip
GRADIENT_OPERATORS = ("aten::mul", "aten::sum", "aten::add", "aten::ones_like", "aten::expand", "aten::zeros_like", "aten::zero_", "aten::fill_")


class RulesError(ValueError):
    """A package's [rules] that cannot be used: one line naming the entry and what to change."""


FORBID_KEYS = {"what", "names", "advice"}
RULES_KEYS = {"forbid"}


@dataclass(frozen=True)
class Forbidden:
    """Something the candidate writes themselves: what it is, the patterns of the names it covers
    (removed from every list), and what to write instead."""

    what: str
    names: tuple[str, ...]
    advice: str

    def covers(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.names)


@dataclass(frozen=True)
class Group:
    title: str
    names: tuple[str, ...]
    note: str = ""  # what the statement says of the group beyond its names (a limit on how they are used)


@dataclass(frozen=True)
class Rules:
    """The allow-lists for one challenge. Every name is a qualified name (torch.exp, torch.Tensor.view,
    aten::exp, __call__); nothing off these lists is allowed."""

    modules: tuple[str, ...]  # importable by exactly these names
    submodules: tuple[str, ...]  # reachable by dotted path from an import
    groups: tuple[Group, ...]  # the callables and classes, by group
    attributes: tuple[str, ...]  # data attributes of library objects that may be read
    writable: tuple[str, ...]  # attributes of library objects that may be set
    builtins: tuple[str, ...]
    define: tuple[str, ...]  # special names a file may define
    read: tuple[str, ...]  # special attributes a file may read on any object
    operators: tuple[str, ...]  # ATen (and other) operators, without overload
    backward: tuple[str, ...]  # operators allowed only while autograd runs them
    forbidden: tuple[Forbidden, ...] = ()  # the package's: what the candidate writes themselves
    advice: tuple[tuple[str, str], ...] = ()  # the harness's: (pattern, advice) for names off the lists
    removed: tuple[str, ...] = field(default=(), compare=False)  # base names the package removed (for verify and tests)

    @property
    def functions(self) -> tuple[str, ...]:
        return tuple(name for group in self.groups for name in group.names)

    def advice_for(self, name: str) -> str:
        """What to write instead of a name off the lists: the package's word first, then the harness's."""
        for forbidden in self.forbidden:
            if forbidden.covers(name):
                return forbidden.advice
        for pattern, advice in self.advice:
            if fnmatch.fnmatchcase(name, pattern):
                return advice
        return DEFAULT_ADVICE

    def child_config(self) -> dict[str, Any]:
        """What the child reads (JSON): the lists, and the advice by pattern, package's first."""
        return {
            "modules": list(self.modules),
            "submodules": list(self.submodules),
            "functions": list(self.functions),
            "attributes": list(self.attributes),
            "writable": list(self.writable),
            "builtins": list(self.builtins),
            "define": list(self.define),
            "read": list(self.read),
            "operators": list(self.operators),
            "backward": list(self.backward),
            "advice": [[pattern, f.advice] for f in self.forbidden for pattern in f.names] + [list(pair) for pair in self.advice],
        }

    def listing(self) -> dict[str, Any]:
        """What `python -m grader rules --json` prints."""
        return {
            "modules": [*self.modules, *self.submodules],
            "functions": list(self.functions),
            "attributes": list(self.attributes),
            "writable_attributes": list(self.writable),
            "operators": list(self.operators),
            "backward_operators": list(self.backward),
            "builtins": list(self.builtins),
            "special_methods": list(self.define),
            "special_attributes": list(self.read),
            "write_yourself": [{"what": f.what, "names": list(f.names), "advice": f.advice} for f in self.forbidden],
        }

    def markdown(self) -> str:
        """The compact list a statement's Rules section shows, between its markers (made from the
        lists themselves, so that it cannot drift from them). A method whose name is an allowed
        function's of its library (x.exp() beside torch.exp) is counted, not listed."""
        functions = {name.rpartition(".")[2] for name in self.functions if name.count(".") == 1}
        lines = [f"- **Write yourself**: {f.what}; {f.advice}." for f in self.forbidden]
        for group in self.groups:
            methods = [name for name in group.names if name.startswith(("torch.Tensor.", "numpy.ndarray."))]
            bases = {name.rpartition(".")[2] for name in methods}

            def twin(name: str, bases: set[str] = bases) -> bool:
                base = name.rpartition(".")[2]
                return base in functions or (base.endswith("_") and base.removesuffix("_") in bases)

            twins = [name for name in methods if twin(name)]
            listed = [f"`{_short(name)}`" for name in group.names if name not in twins]
            if twins:
                forms = "the method form of each function above that has one, and the in-place form of each method"
                listed.insert(0, f"{forms} (`x.exp()`, `x.sum(dim)`, `x.add_(y)`): {len(twins)} in all")
            if listed:
                lines.append(f"- **{group.title}**: {', '.join(listed)}{'; ' + group.note if group.note else ''}.")
        lines.append(f"- **Tensor and array attributes**: {', '.join(f'`{_short(name)}`' for name in self.attributes)}.")
        writable = ", ".join(f"`{_short(name)}`" for name in self.writable) or "none"
        lines.append(f"- **Attributes of tensors, arrays and torch's objects you may set**: {writable}; every other is read-only to you.")
        lines.append(f"- **Imports**: {', '.join(f'`{name}`' for name in (*self.modules, *self.submodules))}.")
        refused = sorted(name for name in vars(builtins) if not name.startswith("_") and name not in self.builtins)
        lines.append(f"- **Built-ins**: every built-in function, type and exception but {', '.join(f'`{name}`' for name in refused)}.")
        methods = [f"`{name}`" for name in self.define if name not in NOT_METHODS]
        lines.append(
            f"- **Special methods your classes may define**: {', '.join(methods)}, each with `def` (or as a property, "
            "staticmethod or classmethod of your functions), not as a cache or someone else's callable; Python calls them, "
            "numpy's and torch's C code may not (hand numpy and torch numbers, lists of numbers and tensors, not objects of "
            "your classes). Your classes derive from `object`, Python's types, an Enum, an ABC, a NamedTuple, "
            "`typing.Generic` or `Protocol`, `torch.autograd.Function` or `torch.Tensor`."
        )
        return "\n".join(lines)


DEFAULT_ADVICE = "use what `python -m grader rules` lists (the statement's Rules section)"
NOT_METHODS = frozenset({"__name__", "__main__", "__doc__", "__all__", "__future__", "__slots__"})


def _short(name: str) -> str:
    """torch.Tensor.view as Tensor.view, numpy.ndarray.sum as ndarray.sum, torch.exp as torch.exp."""
    return name.removeprefix("torch.").removeprefix("numpy.") if name.startswith(("torch.Tensor.", "numpy.ndarray.")) else name


@cache
def base_rules(path: Path = BASE_RULES_PATH) -> Rules:
    """The harness's allow-lists, read once."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    operators = data["operators"]
    return Rules(
        modules=tuple(data["modules"]["import"]),
        submodules=tuple(data["modules"]["submodules"]),
        groups=tuple(Group(table["group"], tuple(table["names"]), table.get("note", "")) for table in data["functions"]),
        attributes=tuple(data["attributes"]["names"]),
        writable=tuple(data["attributes"]["writable"]),
        builtins=tuple(data["builtins"]["names"]),
        define=tuple(data["special_methods"]["define"]),
        read=tuple(data["special_methods"]["read"]),
        operators=tuple(name for table in operators["allowed"] for name in table["names"]),
        backward=tuple(operators["backward"]),
        advice=tuple((pattern, advice) for pattern, advice in data["advice"].items()),
    )


def narrowed(table: dict[str, Any], gradient: bool, base: Rules | None = None) -> Rules:
    """The base rules narrowed by a package's [rules] table. ValueError, naming the key, for a table
    that is not one, and for a removal of what the grader's own code runs in the child."""
    base = base or base_rules()
    if unknown := sorted(set(table) - RULES_KEYS):
        raise RulesError(f"[rules] has no key {unknown[0]!r} (its only key is forbid: [[rules.forbid]] tables with what, names and advice)")
    forbidden = []
    for entry in table.get("forbid", []):
        if not isinstance(entry, dict) or set(entry) != FORBID_KEYS:
            found = sorted(entry) if isinstance(entry, dict) else entry
            raise RulesError(f"each [[rules.forbid]] has exactly the keys what, names and advice; one has {found!r}")
        names = entry["names"]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise RulesError(f"[[rules.forbid]] {entry['what']!r}: names must be a non-empty list of names or glob patterns")
        if not isinstance(entry["what"], str) or not isinstance(entry["advice"], str):
            raise RulesError("[[rules.forbid]]: what and advice are strings")
        forbidden.append(Forbidden(entry["what"], tuple(names), entry["advice"]))
    if not forbidden:
        return base

    def kept(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(name for name in names if not any(f.covers(name) for f in forbidden))

    needed = GRADER_OPERATORS + GRADIENT_OPERATORS * gradient
    for name in needed:
        for f in forbidden:
            if f.covers(name):
                raise RulesError(
                    f"[[rules.forbid]] {f.what!r} removes {name}, which the grader's own code runs in the child "
                    "(docs/problem-format.md lists those operators): name the functions and methods to forbid "
                    f"(torch.sum, torch.Tensor.sum) instead of a pattern that covers {name}"
                )
    every = (*base.modules, *base.submodules, *base.functions, *base.attributes, *base.writable)
    every += (*base.builtins, *base.define, *base.read, *base.operators, *base.backward)
    return Rules(
        modules=kept(base.modules),
        submodules=kept(base.submodules),
        groups=tuple(Group(group.title, kept(group.names), group.note) for group in base.groups),
        attributes=kept(base.attributes),
        writable=kept(base.writable),
        builtins=kept(base.builtins),
        define=kept(base.define),
        read=kept(base.read),
        operators=kept(base.operators),
        backward=kept(base.backward),
        forbidden=tuple(forbidden),
        advice=base.advice,
        removed=tuple(name for name in every if any(f.covers(name) for f in forbidden)),
    )
