"""Static forbidden-API check: reads the syntax tree (never imports or runs the submission) and
reports, with line, column, source text and advice, what the text alone proves to be against the
rules: an import of a module outside the allowed list; a dotted path from an import (`torch.softmax`,
`F = torch.nn.functional`, `from torch import _C`) that the real objects show to be forbidden, private
or a module outside the list; a built-in function name (`.softmax`) on an object the file did not
define; the forbidden built-ins (eval, exec, open, ...), special names, `type()` with three arguments,
a metaclass or enum's functional API; class patterns that read private attributes or nest.

It is the message layer, not the wall: what the text cannot prove (a name on an object it cannot
identify, a name built at run time) is left to the run-time checks on the objects themselves
(grader/child/restricted.py, grader/child/guard.py), so that honest code is never refused on a
guess. The syntax tree is walked with an explicit stack, so a long generated expression cannot
exhaust Python's recursion limit.
"""

import ast
import enum
import fnmatch
import importlib
import inspect
import re
import types
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

ADVICE = {
    "softmax": "write the softmax with exp and sum (subtract the row maximum first)",
    "norm": "write the layer norm with mean and the population variance: (x - mean) / sqrt(var + 1e-5)",
    "gelu": "write the tanh GELU yourself: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))",
    "attention": "write the attention yourself: q @ k^T / sqrt(d_head), your softmax, then @ v",
    "transformer": "write the encoder block yourself from matmuls and your own helpers",
}
BASE_REASON = "it reaches files, compilers, code, operators by name or raw memory"
# Base-policy attributes an honest file may reach for, with why they are forbidden and what to write instead.
BASE_ATTRIBUTE_ADVICE = {
    "torch.embedding*": ("its backward trusts indices it saved", "index the matrix instead: w_emb[input_ids]"),
    "torch.Tensor.data": ("an alias autograd does not track", "use .detach()"),
    "torch.?*Tensor": ("it can alias a numpy array", "use torch.tensor(...) or torch.as_tensor(...)"),
    "torch.Tensor.new": ("it can alias a numpy array", "use torch.tensor(...) or x.new_tensor(...)"),
    "*unsafe_*": ("an alias autograd does not track", "use split or chunk"),
}


def _base_advice(path: str) -> tuple[str, str]:
    """Why the base policy forbids an attribute, and what to write instead."""
    return next((told for pattern, told in BASE_ATTRIBUTE_ADVICE.items() if fnmatch.fnmatchcase(path, pattern)), (BASE_REASON, "use tensor operations only"))


SEE_RULES = "use the public API of torch and numpy, or attributes your file defines (see the Rules in the statement)"
MODULE = ("a module", "")  # the refusal of a module-valued attribute: follow() says which
ENUM_FUNCTIONAL = {"names", "module", "qualname", "type", "start", "boundary"}  # Enum("E", names, ...)

# Python's own types, whose public attributes a submission may use (str.join, dict.items, slice.start).
BUILTIN_TYPES: tuple[type, ...] = (
    str, bytes, bytearray, list, tuple, dict, set, frozenset, int, float, complex, bool, slice, range,
    property, BaseException, type({}.keys()), type({}.values()), type({}.items()),
)  # fmt: skip


@dataclass(frozen=True)
class Violation:
    line: int
    column: int
    text: str  # the offending source
    rule: str
    advice: str

    def __str__(self) -> str:
        return f"line {self.line}:{self.column}: `{self.text}`: {self.rule}; {self.advice}"


def advice_for(name: str) -> str:
    lowered = name.lower()
    for key in ("transformer", "attention", "softmax", "gelu", "norm"):
        if key in lowered:
            return ADVICE[key]
    return "implement it from torch's elementary operations"


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


# -- the allow-list ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AllowList:
    modules: dict[str, types.ModuleType]  # allowed import or submodule path -> the module
    members: dict[Any, frozenset[str]]  # allowed module or type -> the attribute names allowed on it


@dataclass(frozen=True)
class Rules:
    """The spec's [policy] lists the check needs, hashable so the allow-list is built once."""

    allowed_imports: tuple[str, ...]
    allowed_submodules: tuple[str, ...]
    forbidden_functions: tuple[str, ...]
    forbidden_operators: tuple[str, ...]
    forbidden_attributes: tuple[str, ...]
    challenge_attributes: tuple[str, ...] = ()  # those of forbidden_attributes the challenge's package added to the base policy

    @staticmethod
    def of(policy: dict[str, Any]) -> "Rules":
        return Rules(
            *(tuple(policy[key]) for key in ("allowed_imports", "allowed_submodules", "forbidden_functions", "forbidden_operators", "forbidden_attributes")),
            tuple(policy.get("challenge_attributes", ())),
        )

    def attribute_rule(self, path: str) -> tuple[str, str]:
        """Why a forbidden attribute is (the challenge's own rule, or what the base policy's walls
        keep out), and what to write instead."""
        reason, advice = _base_advice(path)
        if any(fnmatch.fnmatchcase(path, pattern) for pattern in self.challenge_attributes):
            return "this challenge forbids it: see the rules in the statement", advice
        return reason, advice

    @cached_property
    def _operators(self) -> re.Pattern[str]:
        return re.compile("|".join(fnmatch.translate(p) for p in self.forbidden_operators) or "(?!)")

    @cached_property
    def _attributes(self) -> re.Pattern[str]:
        return re.compile("|".join(fnmatch.translate(p) for p in self.forbidden_attributes) or "(?!)")

    def builtin_function(self, name: str) -> bool:
        """softmax, layer_norm, batch_norm_stats, ...: functionality the candidate writes."""
        return name in self.forbidden_functions or self._operators.match(name) is not None

    @cached_property
    def _last_parts(self) -> re.Pattern[str]:
        return re.compile("|".join(fnmatch.translate(p.rpartition(".")[2]) for p in self.forbidden_attributes) or "(?!)")

    def forbidden_path(self, path: str) -> bool:
        return self._attributes.match(path) is not None

    def path_dependent(self, name: str) -> bool:
        """Whether a pattern of forbidden_attributes may refuse this name on some objects only."""
        return self._last_parts.match(name) is not None


def _is_internal(value: Any) -> bool:
    """torch's TorchScript and dispatcher classes (pybind11 types and their instances) and its
    operator objects: not tensor API, and ways to reach operators or compilers."""
    meta = type(value) if isinstance(value, type) else type(type(value))
    return meta.__name__ == "pybind11_type" or type(value).__module__.startswith("torch._ops")


def _returned_objects(modules: dict[str, types.ModuleType]) -> list[Any]:
    """Objects the allowed modules return whose types are not among their public attributes."""
    found: list[Any] = []
    if "torch" in modules:
        import torch

        found += [v for n, v in vars(torch.return_types).items() if not n.startswith("_") and inspect.isclass(v)]
        found += [torch.finfo(torch.float32), torch.iinfo(torch.int64)]
    if "numpy" in modules:
        import numpy

        linalg_results = getattr(getattr(numpy.linalg, "_linalg", None), "__dict__", {})
        found += [v for n, v in linalg_results.items() if n.endswith("Result") and inspect.isclass(v)]
        array = numpy.zeros(1)
        found += [numpy.finfo(numpy.float64), numpy.iinfo(numpy.int64), array.flags, array.flat]
    if "functools" in modules:
        import functools

        found.append(type(functools.lru_cache(len)))  # cache_clear, cache_info
    return found


class _Builder:
    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.module_paths = set(rules.allowed_imports) | set(rules.allowed_submodules)
        self.members: dict[Any, set[str]] = {}
        self.memo: dict[tuple[str, type], tuple[str, str] | None] = {}

    def refusal(self, path: str, name: str, value: Any) -> tuple[str, str] | None:
        """Why public attribute `name` (holding value) of the object at `path` is refused, or None."""
        if isinstance(value, types.ModuleType) or self.rules.path_dependent(name):
            return self._refusal(path, name, value)
        key = (name, type(value))  # otherwise the answer depends on these alone (classes share many)
        if key not in self.memo:
            self.memo[key] = self._refusal(path, name, value)
        return self.memo[key]

    def _refusal(self, path: str, name: str, value: Any) -> tuple[str, str] | None:
        full = f"{path}.{name}"
        if self.rules.builtin_function(name):
            return f".{name} is forbidden (built-in {name})", advice_for(name)
        if self.rules.forbidden_path(full):
            reason, advice = self.rules.attribute_rule(full)
            return f"{name} is forbidden ({full}: {reason})", advice
        if isinstance(value, types.ModuleType):
            return None if full in self.module_paths and value.__name__ == full else MODULE
        if _is_internal(value):
            return f"{name} is part of torch's TorchScript and dispatcher internals ({full}), not of its tensor API", "use tensor operations only"
        return None

    def scan(self, owner: Any, path: str, items: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """Record which of owner's public attributes are allowed; return those (name, value) pairs."""
        allowed = self.members.setdefault(owner, set())
        kept = []
        for name, value in items:
            if self.refusal(path, name, value) is None:
                allowed.add(name)
                kept.append((name, value))
        return kept

    @staticmethod
    def public(names: Iterable[str]) -> list[str]:
        return [name for name in names if not name.startswith("_")]

    def scan_type(self, cls: type, path: str, instance: Any = None) -> None:
        subject = cls if instance is None else instance
        if instance is None and cls in self.members:
            return
        items = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated attributes warn when read
            for name in self.public(dir(subject)):
                try:
                    items.append((name, getattr(subject, name)))
                except Exception:  # a descriptor that needs an instance
                    continue
        self.scan(cls, path, items)

    def build(self) -> AllowList:
        modules: dict[str, types.ModuleType] = {}
        for path in [*self.rules.allowed_imports, *self.rules.allowed_submodules]:
            try:
                modules[path] = importlib.import_module(path)
            except ImportError:
                continue
        classes: list[tuple[type, str]] = []
        for path, module in modules.items():
            namespace = vars(module)
            kept = self.scan(module, path, [(name, namespace[name]) for name in self.public(namespace)])
            classes += [(value, f"{path}.{name}") for name, value in kept if inspect.isclass(value)]
        for cls, path in classes:
            self.scan_type(cls, path)
        for cls in BUILTIN_TYPES:
            self.scan_type(cls, cls.__name__)
        for obj in _returned_objects(modules):
            if inspect.isclass(obj):
                self.scan_type(obj, f"{obj.__module__}.{obj.__qualname__}")
            else:
                self.scan_type(type(obj), f"{type(obj).__module__}.{type(obj).__qualname__}", instance=obj)

        return AllowList(
            modules=modules,
            members={owner: frozenset(found) for owner, found in self.members.items()},
        )


@cache
def _allow_list(rules: Rules) -> AllowList:
    return _Builder(rules).build()


def allow_list(policy: dict[str, Any]) -> AllowList:
    """The allow-list for this policy, built once per process from the installed modules."""
    return _allow_list(Rules.of(policy))


def _attribute(obj: Any, name: str) -> Any:
    """obj.name for a name on the allow-list (a module's own entry: no lazy imports)."""
    try:
        return vars(obj)[name] if isinstance(obj, types.ModuleType) else getattr(obj, name)
    except Exception:
        return None


def _missing(obj: Any, name: str) -> bool:
    """Whether obj surely has no attribute `name`, even one made on demand (a module's or class's
    __getattr__), so that using it can only raise an error."""
    if isinstance(obj, types.ModuleType):
        return name not in vars(obj) and "__getattr__" not in vars(obj)
    owner = obj if isinstance(obj, type) else type(obj)
    on_demand = any("__getattr__" in vars(cls) for cls in (*owner.__mro__, *type(owner).__mro__))
    return not on_demand and inspect.getattr_static(obj, name, _missing) is _missing


# -- what the file defines ----------------------------------------------------------------------------

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _class_body_names(node: ast.ClassDef) -> set[str]:
    """Names a class body binds (methods, nested classes, class attributes, dataclass fields)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(node.body)
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
            continue
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
            names.add(item.id)
        if not isinstance(item, SCOPES):
            stack.extend(ast.iter_child_nodes(item))
    return names


def _field_names(call: ast.Call) -> set[str]:
    """namedtuple("P", "a b") / NamedTuple("P", [("a", int)]): the field names given as strings."""
    names: set[str] = set()
    for arg in call.args[1:2]:
        for node in ast.walk(arg):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names |= {n for n in node.value.replace(",", " ").split() if n.isidentifier()}
    return names


@dataclass
class Survey:
    bound: set[str]  # every name the file binds (shadows a built-in of that name)
    attributes: set[str]  # attribute names the file defines
    aliases: dict[str, str]  # name -> the dotted module path it stands for, everywhere in the file
    annotations: set[int]  # ids of the nodes inside annotations


def _chain(node: ast.AST) -> tuple[ast.AST, list[tuple[str, ast.AST]]]:
    """(base, [(name, node), ...] innermost first) for x.a.b and getattr(x, "a").b."""
    steps: list[tuple[str, ast.AST]] = []
    while True:
        if isinstance(node, ast.Attribute):
            steps.append((node.attr, node))
            node = node.value
        elif _plain_getattr(node):
            assert isinstance(node, ast.Call)
            steps.append((node.args[1].value, node))  # type: ignore[attr-defined]
            node = node.args[0]
        else:
            break
    steps.reverse()
    return node, steps


def _literal_name(node: ast.Call) -> bool:
    return len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)


def _plain_getattr(node: ast.AST) -> bool:
    """getattr(obj, "name") with two arguments: the same as obj.name."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) == 2
        and not node.keywords
        and _literal_name(node)
    )


def _survey(tree: ast.Module) -> Survey:
    bound: set[str] = set()
    attributes: set[str] = set()
    annotations: set[int] = set()
    bindings: dict[str, list[str | ast.AST | None]] = {}  # name -> import path, assigned value, or None (anything else)

    def bind(name: str, how: str | ast.AST | None) -> None:
        bound.add(name)
        bindings.setdefault(name, []).append(how)

    simple_targets: set[int] = set()
    for node in ast.walk(tree):  # breadth first: an assignment comes before its targets
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            for target in node.targets:
                simple_targets.add(id(target))
                bind(target.id, node.value)  # type: ignore[attr-defined]
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in simple_targets:
            bind(node.id, None)
        elif isinstance(node, ast.arg):
            bind(node.arg, None)
            if node.annotation:
                annotations |= {id(n) for n in ast.walk(node.annotation)}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, None)
            if isinstance(node, ast.ClassDef):
                attributes |= _class_body_names(node)
            elif node.returns:
                annotations |= {id(n) for n in ast.walk(node.returns)}
        elif isinstance(node, ast.AnnAssign):
            annotations |= {id(n) for n in ast.walk(node.annotation)}
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bind(node.name, None)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bind(node.rest, None)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bind(alias.asname or alias.name.split(".")[0], alias.name if alias.asname else alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    bind(alias.asname or alias.name, f"{node.module}.{alias.name}" if not node.level else None)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            attributes.add(node.attr)  # self.x = ..., obj.y += ...
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if called == "setattr" and _literal_name(node):
                attributes.add(node.args[1].value)  # type: ignore[attr-defined]
            elif called in ("namedtuple", "NamedTuple"):
                attributes |= _field_names(node)

    aliases = _resolve_aliases(bindings)
    return Survey(bound, attributes, aliases, annotations)


def _resolve_aliases(bindings: dict[str, list[str | ast.AST | None]]) -> dict[str, str]:
    """name -> module path, for the names every binding of which says the same path (an import, or
    an assignment of an alias's path: F = torch.nn.functional). Depth first with an explicit stack,
    so a long chain of assignments, in any order, is resolved in linear time."""
    resolved: dict[str, str | None] = {}

    def depends_on(name: str) -> list[str]:
        bases = (_chain(how)[0] for how in bindings[name] if isinstance(how, ast.AST))
        return [base.id for base in bases if isinstance(base, ast.Name) and base.id in bindings]

    def path_of(how: str | ast.AST | None) -> str | None:
        return how if not isinstance(how, ast.AST) else _path_of(how, resolved)

    started: set[str] = set()
    for first in bindings:
        stack = [first]
        while stack:
            name = stack[-1]
            if name in resolved:
                stack.pop()
                continue
            waiting = [d for d in depends_on(name) if d not in resolved and d not in started]
            if waiting:  # resolve what it is assigned from first (a cycle resolves to nothing)
                started.add(name)
                stack += waiting
                continue
            paths = {path_of(how) for how in bindings[name]}
            resolved[name] = paths.pop() if len(paths) == 1 else None
            stack.pop()
    return {name: path for name, path in resolved.items() if path is not None}


def _path_of(node: ast.AST, aliases: dict[str, str | None]) -> str | None:
    base, steps = _chain(node)
    if isinstance(base, ast.Name) and (path := aliases.get(base.id)):
        return ".".join([path, *(name for name, _ in steps)])
    return None


# -- the check ------------------------------------------------------------------------------------------


class Checker:
    def __init__(self, tree: ast.Module, source: str, policy: dict[str, Any]) -> None:
        self.source = source
        self.lines = source.encode().splitlines(keepends=True)  # positions count UTF-8 bytes
        self.policy = policy
        self.rules = Rules.of(policy)
        self.allow = allow_list(policy)
        self.violations: list[Violation] = []
        survey = _survey(tree)
        self.bound = survey.bound
        self.aliases = survey.aliases
        self.annotations = survey.annotations
        self.own = survey.attributes
        self.allowed_dunders = set(policy["allowed_dunders"])  # as names and definitions
        self.readable_dunders = set(policy["readable_dunders"])  # as attributes
        self.module_paths = set(policy["allowed_imports"]) | set(policy["allowed_submodules"])
        self.handlers = {
            ast.Import: self.visit_import,
            ast.ImportFrom: self.visit_import_from,
            ast.Name: self.visit_name,
            ast.Attribute: self.visit_attribute,
            ast.Call: self.visit_call,
            ast.Subscript: self.visit_subscript,
            ast.FunctionDef: self.visit_definition,
            ast.AsyncFunctionDef: self.visit_definition,
            ast.ClassDef: self.visit_definition,
            ast.MatchClass: self.visit_match_class,
        }

    def run(self, tree: ast.Module) -> list[Violation]:
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            handler = self.handlers.get(type(node))
            children = handler(node) if handler else None  # type: ignore[operator]
            stack.extend(ast.iter_child_nodes(node) if children is None else children)
        return sorted(set(self.violations), key=lambda v: (v.line, v.column))

    def flag(self, node: ast.AST, rule: str, advice: str, text: str | None = None) -> None:
        text = " ".join((text or self.segment(node)).split())
        text = text if len(text) <= 80 else text[:77] + "..."
        line, column = node.lineno, node.col_offset  # type: ignore[attr-defined]
        if line <= len(self.lines):  # the offset counts UTF-8 bytes; the report counts characters
            column = len(self.lines[line - 1][:column].decode(errors="replace"))
        self.violations.append(Violation(line, column + 1, text, rule, advice))

    def segment(self, node: ast.AST) -> str:
        """The start of node's source text (what ast.get_source_segment gives, without splitting the
        whole file again for every violation)."""
        start, first = node.lineno - 1, node.col_offset  # type: ignore[attr-defined]
        end, last = (getattr(node, "end_lineno", None) or node.lineno) - 1, getattr(node, "end_col_offset", None)  # type: ignore[attr-defined]
        if start >= len(self.lines):
            return ""
        if start == end or end >= len(self.lines):
            return self.lines[start][first:last].decode(errors="replace")
        pieces = [self.lines[start][first:]]
        for line in self.lines[start + 1 : end]:
            if sum(map(len, pieces)) > 200:  # enough for the text shown
                break
            pieces.append(line)
        else:
            pieces.append(self.lines[end][:last])
        return b"".join(pieces).decode(errors="replace")

    # -- attribute names --------------------------------------------------------------------------

    def members_of(self, obj: Any) -> frozenset[str] | None:
        """The allowed attribute names of an allowed module, type, or instance of an allowed type."""
        for key in (obj, type(obj)):
            try:
                found = self.allow.members.get(key)
            except Exception:  # unhashable
                continue
            if found is not None:
                return found
        return None

    def name_allowed(self, name: str, node: ast.AST) -> bool:
        """An attribute of an object the check cannot identify. Only what the name alone proves is
        refused here: a special name, or a built-in function the file does not define itself.
        Everything else is judged at run time on the object itself (grader/child/restricted.py):
        a private name of someone else's object, a module or frame reached, a name that does not
        exist (an AttributeError, if that line ever runs)."""
        if is_dunder(name):
            if name in self.readable_dunders:
                return True
            self.flag(node, f"access to the special attribute {name} is forbidden", "use ordinary attributes")
            return False
        if self.rules.builtin_function(name) and name not in self.own:
            self.flag(node, f".{name} is forbidden (built-in {name})", advice_for(name))
            return False
        return True

    def refusal(self, owner: Any, path: str, name: str, full: list[str]) -> tuple[str, str]:
        """Why attribute `name` of an allowed module or type is not allowed (path ends in name)."""
        owner_path = path.rpartition(".")[0]
        root = owner_path.split(".")[0]
        if path == "torch.nn":
            whole = ".".join(full)
            return f"{whole} is forbidden (nothing from torch.nn may be used)", advice_for(full[-1] if len(full) > 2 else "transformer")
        if is_dunder(name):
            return f"access to the special attribute {path} is forbidden", "use ordinary attributes"
        if self.rules.builtin_function(name):
            return f"{path} is forbidden (built-in {name})", advice_for(name)
        if name.startswith("_"):
            return f"{path} is a private part of {root} and is forbidden", "use the public tensor API"
        if self.rules.forbidden_path(path):
            if root == "operator":
                return f"{path} is forbidden (it reaches attributes by a computed name)", "write the attribute or method directly"
            reason, advice = self.rules.attribute_rule(path)
            return f"{path} is forbidden ({reason})", advice
        value = vars(owner).get(name) if isinstance(owner, types.ModuleType) else inspect.getattr_static(owner, name, None)
        if inspect.ismodule(value):
            return f"{path} is a module outside the allowed list", "use the public API of torch, numpy and math"
        if value is not None and _is_internal(value):
            return f"{path} is part of torch's TorchScript and dispatcher internals, not of its tensor API", "use tensor operations only"
        return f"{path} is not a public attribute of {owner_path} that this challenge allows", SEE_RULES

    def follow(self, path: str, steps: list[tuple[str, ast.AST]], at: ast.AST, store: bool = False) -> Any:
        """Check a dotted path that starts at an allowed module (an alias, then the steps written
        after it) on the real objects, and flag the first refused name. Returns the object
        reached, or None."""
        parts = path.split(".")
        obj: Any = self.allow.modules.get(parts[0])
        if obj is None:
            return None  # not an allowed import: the import itself is flagged
        names = [(part, steps[0][1] if steps else at) for part in parts[1:]] + steps
        full = [parts[0]] + [name for name, _ in names]
        for index, (name, node) in enumerate(names):
            if is_dunder(name) and name in self.readable_dunders:  # torch.__version__, np.ndarray.__name__
                return None
            allowed = self.members_of(obj)
            if allowed is None:  # a function, a number, ...: from here on only names are known
                all(self.name_allowed(later, later_node) for later, later_node in names[index:])
                return None
            if name not in allowed:
                if not _missing(obj, name):  # a name that does not exist fails at run time by itself
                    self.flag(node, *self.refusal(obj, ".".join(full[: index + 2]), name, full))
                return None
            obj = _attribute(obj, name)
        if store:
            self.flag(
                steps[-1][1] if steps else at,
                f"changing {'.'.join(full)} is forbidden",
                "keep torch, numpy and the allowed modules as they are; use your own names",
            )
        return obj

    def object_at(self, path: str) -> Any:
        """The object a dotted path of allowed names leads to, or None."""
        parts = path.split(".")
        obj: Any = self.allow.modules.get(parts[0])
        for name in parts[1:]:
            allowed = self.members_of(obj) if obj is not None else None
            if allowed is None or name not in allowed:
                return None
            obj = _attribute(obj, name)
        return obj

    def check_chain(self, base: ast.AST, steps: list[tuple[str, ast.AST]], store: bool) -> list[ast.AST]:
        """Check the names of base.a.b...; return what is left to visit."""
        if isinstance(base, ast.Name) and base.id in self.aliases:
            self.follow(self.aliases[base.id], steps, base, store)
            return []
        for name, node in steps:
            if not self.name_allowed(name, node):
                break
        return [base]

    # -- handlers: each returns the child nodes still to visit, or None for all of them ---------------

    def visit_attribute(self, node: ast.Attribute) -> list[ast.AST]:
        base, steps = _chain(node)
        return self.check_chain(base, steps, store=not isinstance(node.ctx, ast.Load))

    def visit_name(self, node: ast.Name) -> list[ast.AST]:
        name = node.id
        if is_dunder(name) and name not in self.allowed_dunders:
            self.flag(node, f"the special name {name} is forbidden", "use ordinary names")
        elif name in self.policy["forbidden_builtins"] and name not in self.bound:
            advice = "call functions directly; files and dynamic code are off-limits"
            if name in ("bytearray", "memoryview"):
                advice = "use tensors and arrays; raw byte buffers are off-limits"
            self.flag(node, f"the built-in {name} is forbidden", advice)
        elif (path := self.aliases.get(name)) and "." in path and isinstance(node.ctx, ast.Load):
            self.follow(path, [], node)  # a use of `s` after `from torch import softmax as s`
        return []

    def visit_call(self, node: ast.Call) -> list[ast.AST] | None:
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.bound:
            if func.id in self.policy["attribute_builtins"] and _literal_name(node):
                return self.visit_attribute_builtin(node)
            if func.id == "type" and (len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred)):
                self.flag(node, "type() with more than one argument builds a class from names and a dict at run time", "define classes with a class statement")
        path = _path_of(func, self.aliases)
        target = self.object_at(path) if path else None
        if isinstance(target, type) and issubclass(target, type):
            self.flag(node, f"calling the metaclass {path} builds a class at run time", "define classes with a class statement")
        functional = len(node.args) > 1 or any(k.arg in ENUM_FUNCTIONAL for k in node.keywords)
        if isinstance(target, type) and issubclass(target, enum.Enum) and functional:
            self.flag(node, f"{path}(name, members) builds a class from names at run time", "define the enum with a class statement")
        return None

    def visit_attribute_builtin(self, node: ast.Call) -> list[ast.AST]:
        """getattr(x, "name") and its kin, with a string literal: checked like x.name (a computed
        name is judged at run time, on the object, by grader/child/restricted.py)."""
        func = node.func.id  # type: ignore[attr-defined]
        rest = [*node.args[2:], *(k.value for k in node.keywords)]
        if _plain_getattr(node):
            base, steps = _chain(node)
        else:  # getattr with a default, setattr, delattr, hasattr: one attribute of args[0]
            base, steps = _chain(node.args[0])
            steps = [*steps, (node.args[1].value, node)]  # type: ignore[attr-defined]
        return self.check_chain(base, steps, store=func in ("setattr", "delattr")) + rest

    def visit_subscript(self, node: ast.Subscript) -> list[ast.AST] | None:
        if isinstance(node.value, ast.Name) and node.value.id == "type":
            return [node.slice]  # type[X] in a hint
        return None

    def visit_definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        if is_dunder(node.name) and node.name not in self.allowed_dunders:
            keyword = "class" if isinstance(node, ast.ClassDef) else "def"
            self.flag(node, f"defining the special name {node.name} is forbidden", "use ordinary names", text=f"{keyword} {node.name}")
        return None

    def visit_match_class(self, node: ast.MatchClass) -> list[ast.AST]:
        base, steps = _chain(node.cls)
        for attribute in node.kwd_attrs:  # read where the run-time checks cannot see (restricted.py)
            if attribute.startswith("_") and not is_dunder(attribute):
                self.flag(node, f"a class pattern may not read the private attribute {attribute}", "match on public attributes")
        if any(isinstance(inner, ast.MatchClass) for pattern in [*node.patterns, *node.kwd_patterns] for inner in ast.walk(pattern)):
            self.flag(node, "a class pattern inside a class pattern reads attributes no check can see", "match the outer object, then the inner one")
        if not node.kwd_attrs:
            return [*self.check_chain(base, steps, store=False), *node.patterns]
        for attribute in node.kwd_attrs:  # case Cls(name=...) reads Cls's attribute `name`
            self.check_chain(base, [*steps, (attribute, node)], store=False)
        return [base, *node.patterns, *node.kwd_patterns]

    # -- imports ------------------------------------------------------------------------------------

    def visit_import(self, node: ast.Import) -> list[ast.AST]:
        for alias in node.names:
            if alias.name not in self.module_paths:
                self.flag(node, f"import of {alias.name} is not allowed", self._import_advice(alias.name))
        return []

    def visit_import_from(self, node: ast.ImportFrom) -> list[ast.AST]:
        module = "." * node.level + (node.module or "")
        if node.level or module not in self.module_paths:
            self.flag(node, f"import from {module} is not allowed", self._import_advice(module))
            return []
        for alias in node.names:
            if alias.name == "*":
                self.flag(node, f"from {module} import * is not allowed (the imported names cannot be checked)", "import the module and use module.name")
            elif f"{module}.{alias.name}" not in self.module_paths:
                self.follow(module, [(alias.name, node)], node)
        return []

    def _import_advice(self, module: str) -> str:
        if module.startswith("torch."):
            allowed = ", ".join(self.policy["allowed_submodules"])
            return f"import torch and write the forbidden parts yourself; of torch's submodules only {allowed} may be used"
        allowed = ", ".join(self.policy["allowed_imports"])
        return f"allowed imports: {allowed}"


def check(tree: ast.Module, source: str, policy: dict[str, Any]) -> list[Violation]:
    """Every violation in the file, in source order."""
    source = source.removeprefix("\ufeff")  # a byte-order mark is not part of the code
    return Checker(tree, source, policy).run(tree)


SHOWN = 50  # violations listed in a report; a file with thousands gets the first ones and a count


def explain(violations: list[Violation]) -> str:
    count = f"{len(violations)} use{'s' if len(violations) != 1 else ''} of forbidden APIs"
    lines = [f"  {v}" for v in violations[:SHOWN]]
    if len(violations) > SHOWN:
        lines.append(f"  ... and {len(violations) - SHOWN} more (fix these first)")
    return f"{count} (see the rules in the statement: README.md, section Rules):\n" + "\n".join(lines)
