"""Static forbidden-API check: reads the syntax tree (never imports or runs the submission) and
reports, with line, column, source text and advice, what the text alone proves to be against the
rules: an import of a module outside the allowed list; a dotted path from an import (`torch.softmax`,
`F = torch.nn.functional`, `from torch import _C`) that the real objects show to be forbidden, private
or a module outside the list; a built-in function name (`.softmax`) on an object the file did not
define; the forbidden built-ins (eval, exec, open, ...), special names, `type()` with three arguments,
a metaclass or enum's functional API; class patterns that read private attributes or nest.

It is the message layer, not the wall: what the text cannot prove (a name on an object it cannot
identify, a name built at run time) is left to the run-time checks on the objects themselves
(grader/child/capabilities/, grader/child/guard.py), so that honest code is never refused on a
guess. The syntax tree is walked with an explicit stack, so a long generated expression cannot
exhaust Python's recursion limit.
"""

import ast
import builtins
import enum
import inspect
import types
from dataclasses import dataclass
from functools import cache
from typing import Any

from grader.rules import Rules

SEE_RULES = "use what the Rules in the statement list (python -m grader rules prints them), or attributes your file defines"
MODULE = ("a module", "")  # the refusal of a module-valued attribute: follow() says which
ENUM_FUNCTIONAL = {"names", "module", "qualname", "type", "start", "boundary"}  # Enum("E", names, ...)
ATTRIBUTE_BUILTINS = ("getattr", "setattr", "delattr", "hasattr")  # with a string literal, read as obj.name
BUILTIN_NAMES = frozenset(name for name in vars(builtins) if not name.startswith("__") or name in ("__import__", "__build_class__"))

# Python's own types, whose public attributes a submission may use (str.join, dict.items, slice.start).
BUILTIN_TYPES: tuple[type, ...] = (
    str, bytes, list, tuple, dict, set, frozenset, int, float, complex, bool, slice, range,
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


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


# -- the allow-list ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AllowList:
    modules: dict[str, types.ModuleType]  # allowed import or submodule path -> the module
    members: dict[int, frozenset[str]]  # id of an allowed module or class -> the attribute names allowed on it
    kept: tuple[Any, ...]  # the owners, so that their ids stay theirs
    data: tuple[type, ...]  # the kinds of a module's data (a number, a string, a dtype): readable, as the child judges them


@cache
def allow_list(rules: Rules) -> AllowList:
    """The rules' lists as the objects they name, made once per process (the child's own resolution,
    grader/child/capabilities/allowed.py, so that both sides name the same objects). Imported
    here, not with this module: it imports torch and numpy, which the grader's process loads while
    the child starts (grader/judge.py checks the file once the child is on its way)."""
    from grader.child.capabilities.allowed import DATA, resolve

    allowed = resolve(rules.child_config())
    modules = {name: allowed.modules[ident] for ident, name in allowed.module_names.items()}
    members: dict[int, frozenset[str]] = {id(owner): frozenset(names) for owner, names in allowed.owners.values()}
    kept = [owner for owner, _ in allowed.owners.values()]
    for cls in BUILTIN_TYPES:  # Python's own types: their public names
        members[id(cls)] = frozenset(name for name in dir(cls) if not name.startswith("_"))
        kept.append(cls)
    return AllowList(modules, members, tuple(kept), DATA)


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
    def __init__(self, tree: ast.Module, source: str, rules: Rules) -> None:
        self.source = source
        self.lines = source.encode().splitlines(keepends=True)  # positions count UTF-8 bytes
        self.rules = rules
        self.allow = allow_list(rules)
        self.violations: list[Violation] = []
        survey = _survey(tree)
        self.bound = survey.bound
        self.aliases = survey.aliases
        self.annotations = survey.annotations
        self.own = survey.attributes
        self.allowed_dunders = set(rules.define)  # as names and definitions
        self.readable_dunders = set(rules.read)  # as attributes
        self.module_paths = set(rules.modules) | set(rules.submodules)
        self.builtins = set(rules.builtins)
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
        """The allowed attribute names of an allowed module or class, or of an instance of one of
        Python's own types; None for anything else (what is on it is judged at run time)."""
        found = self.allow.members.get(id(obj))
        if found is None and not isinstance(obj, type | types.ModuleType):
            found = self.allow.members.get(id(type(obj))) if type(obj) in BUILTIN_TYPES else None
        return found

    def name_allowed(self, name: str, node: ast.AST) -> bool:
        """An attribute of an object the check cannot identify. Only what the name alone proves is
        refused here: a special name off the list, or a name of something the challenge has the
        candidate write (x.softmax(-1)) that the file does not define itself. Everything else is
        judged at run time on the object itself (grader/child/capabilities/): a name no list allows
        on that object, a private name of someone else's object, a module or frame reached, a name
        that does not exist (an AttributeError, if that line ever runs)."""
        if is_dunder(name):
            if name in self.readable_dunders:
                return True
            self.flag(node, f"access to the special attribute {name} is forbidden", "use ordinary attributes")
            return False
        forbidden = next((f for f in self.rules.forbidden if f.covers(f"torch.Tensor.{name}") or f.covers(f"torch.{name}")), None)
        if forbidden is not None and name not in self.own:
            self.flag(node, f".{name} is forbidden ({forbidden.what}: write it yourself)", forbidden.advice)
            return False
        return True

    def refusal(self, owner: Any, path: str, name: str, full: list[str]) -> tuple[str, str]:
        """Why attribute `name` of an allowed module or type is not allowed (path ends in name)."""
        owner_path = path.rpartition(".")[0]
        root = owner_path.split(".")[0]
        if is_dunder(name):
            return f"access to the special attribute {path} is forbidden", "use ordinary attributes"
        forbidden = next((f for f in self.rules.forbidden if f.covers(path)), None)
        if forbidden is not None:
            return f"{path} is forbidden ({forbidden.what}: write it yourself)", forbidden.advice
        if name.startswith("_"):
            return f"{path} is a private part of {root} and is forbidden", "use the public tensor API"
        value = vars(owner).get(name) if isinstance(owner, types.ModuleType) else inspect.getattr_static(owner, name, None)
        if inspect.ismodule(value):
            return f"{path} is a module outside the allowed list", self.rules.advice_for(path)
        return f"{path} is not on this challenge's allow-list", self.rules.advice_for(path)

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
            if name not in allowed and not (isinstance(obj, types.ModuleType) and name in vars(obj) and isinstance(vars(obj)[name], self.allow.data)):
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
        for index, (name, node) in enumerate(steps):
            if index == 0 and name == "__setattr__" and isinstance(base, ast.Name) and base.id == "object":
                continue  # object.__setattr__(self, name, value) in a frozen dataclass: at run time, a write judged as any other
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
        elif name in BUILTIN_NAMES and name not in self.builtins and name not in self.bound:
            advice = "call functions directly; files and dynamic code are off-limits"
            if name in ("bytearray", "memoryview"):
                advice = "use tensors and arrays; raw byte buffers are off-limits"
            self.flag(node, f"the built-in {name} is forbidden (it is not on this challenge's list of built-ins)", advice)
        elif (path := self.aliases.get(name)) and "." in path and isinstance(node.ctx, ast.Load):
            self.follow(path, [], node)  # a use of `s` after `from torch import softmax as s`
        return []

    def visit_call(self, node: ast.Call) -> list[ast.AST] | None:
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.bound:
            if func.id in ATTRIBUTE_BUILTINS and _literal_name(node):
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
        name is judged at run time, on the object, by grader/child/capabilities/)."""
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
        for attribute in node.kwd_attrs:  # read where the run-time checks cannot see (grader/child/capabilities/)
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
            allowed = ", ".join(self.rules.submodules)
            return f"import torch and write the forbidden parts yourself; of torch's submodules only {allowed} may be used"
        allowed = ", ".join(self.rules.modules)
        return f"allowed imports: {allowed}"


def check(tree: ast.Module, source: str, rules: Rules) -> list[Violation]:
    """Every violation in the file, in source order."""
    source = source.removeprefix("\ufeff")  # a byte-order mark is not part of the code
    return Checker(tree, source, rules).run(tree)


SHOWN = 50  # violations listed in a report; a file with thousands gets the first ones and a count


def explain(violations: list[Violation]) -> str:
    count = f"{len(violations)} use{'s' if len(violations) != 1 else ''} of forbidden APIs"
    lines = [f"  {v}" for v in violations[:SHOWN]]
    if len(violations) > SHOWN:
        lines.append(f"  ... and {len(violations) - SHOWN} more (fix these first)")
    return f"{count} (see the rules in the statement: README.md, section Rules):\n" + "\n".join(lines)
