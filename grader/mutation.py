"""Mutants of a challenge's reference, for `verify` to prove that the hidden cases reject every wrong
variant of it (mutation adequacy): each mutant changes one point of the code the way a wrong
submission would (an operand swapped, an operator replaced, a constant or an axis changed, a
transpose dropped, ...). Here: making the mutants, reading the author's equivalence marks
(mutants.toml), loading a mutant as a module, and the score. Running a mutant on the cases is the
caller's job.

Only the standard library: nothing here imports or runs the code it mutates, except load_mutant.

A mutant's id is "<scope>:<operator>:<8 hex digits>", the digits a hash of the mutated site's text
(the statement's expression, the node before and after, and its occurrence among identical ones in
the scope): it survives moving code and editing other statements, and changes (leaving a stale mark
in mutants.toml, which score reports) when the site's own text changes, so a mark never silently
moves to another mutant.
"""

import ast
import hashlib
import tomllib
import types
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

# operator -> what its mutants do, in the order the module tries them on a node.
OPERATORS = {
    "swap_operands": "the operands of a non-commutative operator swapped: a - b -> b - a, a / b -> b / a, a @ b -> b @ a",
    "binary_operator": "an arithmetic operator replaced: + <-> -, * <-> /, // -> /, % -> //, ** -> *, @ -> *",
    "drop_term": "a term of a sum dropped: a + b -> a and -> b, a - b -> a and -> -b",
    "drop_factor": "a factor dropped: a * b -> a and -> b, a / b -> a, a @ b -> a and -> b",
    "transpose": "a transpose removed (x.T -> x, x.transpose(a, b) -> x) or added to an operand of @ (x -> x.mT)",
    "constant": "a numeric constant changed: ints c -> c + 1, c - 1, 0, -c; floats c -> 2c, 0, 10c when |c| < 0.01 (1e-5 -> 1e-4)",
    "axis": "an integer dim= / axis= argument changed as the ints of `constant` are: dim=-1 -> dim=0, dim=-2, dim=1",
    "index": "an integer index off by one: x[i] -> x[i + 1], x[i - 1]",
    "slice": "a slice off by one: x[a:b] -> x[a + 1:b], x[a:b - 1] (x[:b] -> x[1:b], x[a:] -> x[a:-1])",
    "flip_bool": "a boolean constant flipped: keepdim=True -> keepdim=False",
    "negate": "a unary operator removed: -x -> x, not x -> x, ~x -> x",
    "comparison": "a comparison replaced: > -> >= and <, < -> <= and >, >= -> > and <=, <= -> < and >=, == <-> !=",
    "reduction": "a reduction replaced by its twin: mean <-> sum, amax <-> amin, max <-> min, argmax <-> argmin, std <-> var",
    "detach": "a .detach() removed",
    "drop_sqrt": "a square root removed: torch.sqrt(e) -> e, math.sqrt(e) -> e, e.sqrt() -> e",
    "swap_args": "the two positional arguments of a call swapped (calls known to be symmetric excepted)",
    "swap_return": "two neighbouring elements of a returned tuple swapped",
}

OUTCOMES = ("killed", "survived", "same", "broken")

_SWAPPABLE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.MatMult)
_REPLACED_OPERATOR: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.MatMult: ast.Mult,
}
_REPLACED_COMPARISON: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Gt: (ast.GtE, ast.Lt),
    ast.Lt: (ast.LtE, ast.Gt),
    ast.GtE: (ast.Gt, ast.LtE),
    ast.LtE: (ast.Lt, ast.GtE),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
}
_TWIN_REDUCTION = {
    "mean": "sum",
    "sum": "mean",
    "amax": "amin",
    "amin": "amax",
    "max": "min",
    "min": "max",
    "argmax": "argmin",
    "argmin": "argmax",
    "std": "var",
    "var": "std",
}
_TRANSPOSE_ATTRIBUTES = {"T", "mT", "H", "mH"}
_TRANSPOSE_METHOD_ARGUMENTS = {"transpose": 2, "swapaxes": 2, "swapdims": 2, "t": 0}  # x.transpose(a, b); torch.transpose(x, a, b) has one more
_AXIS_KEYWORDS = {"dim", "axis", "dim0", "dim1"}
# Calls whose two arguments commute: swapping them makes an equivalent mutant, never a useful one.
_SYMMETRIC_CALLS = set("transpose swapaxes swapdims add mul multiply maximum minimum max min eq ne hypot isclose allclose equal".split())
_SKIPPED_FIELDS = {"annotation", "returns", "decorator_list", "type_comment", "type_params"}


@dataclass(frozen=True)
class Mutant:
    id: str  # "<scope>:<operator>:<hash>": scope is the function's qualified name, or a module-level constant's
    operator: str  # a key of OPERATORS
    line: int  # where the change is, in the original source
    description: str  # "line 22: `var + LAYER_NORM_EPS` -> `var - LAYER_NORM_EPS`"
    source: str  # the whole mutated module (ast.unparse: no comments)


@dataclass(frozen=True)
class _Scope:
    name: str
    node: ast.AST  # a FunctionDef, or a module- or class-level assignment
    targets: tuple[str, ...]  # an assignment's names; () for a function


def mutants(source: str, functions: Iterable[str] | None = None) -> list[Mutant]:
    """Every single-point mutant of the module `source` that compiles and differs from it, one per
    distinct mutated source, in source order (deterministic). `functions`: only these functions
    (qualified names, "Class.method"; functions nested in them included) and the module- or
    class-level assignments they read by name; None: every function and every such assignment
    (module-level constants such as LAYER_NORM_EPS = 1e-5 are part of the computation). Docstrings,
    annotations and decorators are never mutated. ValueError for a function name the module lacks."""
    if isinstance(functions, str):
        raise TypeError("functions is an iterable of names, not one name: write [name]")
    tree = ast.parse(source)
    scopes = _included(list(_scopes(tree.body, "")), functions)
    parents = _parents(tree)
    # The module as its top-level statements, each unparsed once: a mutant unparses only the one it changes.
    pieces = [_unparse_statement(statement, position) for position, statement in enumerate(tree.body)]
    found: list[Mutant] = []
    seen_sources = {_joined(pieces)}
    seen_keys: dict[str, int] = {}
    for scope in scopes:
        for scope_name, node in _walk_scope(scope):
            for operator, replacement in _edits(node, parents):
                mutant = _mutant(pieces, parents, scope_name, operator, node, replacement, seen_keys)
                if mutant is not None and mutant.source not in seen_sources:
                    seen_sources.add(mutant.source)
                    found.append(mutant)
    return found


def _scopes(body: list[ast.stmt], prefix: str) -> Iterator[_Scope]:
    """The module's functions and assignments, with their qualified names, in source order; other
    module- and class-level statements (imports, docstrings, `if __name__ == ...`) are not code the
    entry point runs."""
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            yield _Scope(prefix + statement.name, statement, ())
        elif isinstance(statement, ast.ClassDef):
            yield from _scopes(statement.body, f"{prefix}{statement.name}.")
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = tuple(node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name))
            if names:
                yield _Scope(prefix + ",".join(names), statement, names)


def _included(scopes: list[_Scope], functions: Iterable[str] | None) -> list[_Scope]:
    if functions is None:
        return scopes
    wanted = list(functions)
    defined = [scope.name for scope in scopes if not scope.targets]
    missing = [name for name in wanted if name not in defined]
    if missing:
        raise ValueError(f"no function named {', '.join(map(repr, missing))} in the module; its functions are: {', '.join(defined) or 'none'}")
    chosen = [scope for scope in scopes if not scope.targets and any(scope.name == name or scope.name.startswith(name + ".") for name in wanted)]
    nodes = [node for scope in chosen for node in ast.walk(scope.node)]
    read = {node.id for node in nodes if isinstance(node, ast.Name)} | {node.attr for node in nodes if isinstance(node, ast.Attribute)}
    return [scope for scope in scopes if scope in chosen or (scope.targets and read.intersection(scope.targets))]


def _parents(tree: ast.AST) -> dict[ast.AST, tuple[ast.AST, str, int | None]]:
    """Each node's parent, the parent's field holding it, and its index in that field when a list."""
    parents: dict[ast.AST, tuple[ast.AST, str, int | None]] = {}
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if isinstance(value, ast.AST):
                parents[value] = (parent, name, None)
            elif isinstance(value, list):
                for index, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        parents[child] = (parent, name, index)
    return parents


def _walk_scope(scope: _Scope) -> Iterator[tuple[str, ast.AST]]:
    """(scope name, node) for every node of the scope that may be mutated, in source order."""
    if isinstance(scope.node, ast.FunctionDef | ast.AsyncFunctionDef):
        yield from _walk_function(scope.node, scope.name)
    elif isinstance(scope.node, ast.AugAssign):
        yield scope.name, scope.node
        yield from _walk(scope.node.value, scope.name)
    elif isinstance(scope.node, ast.Assign | ast.AnnAssign) and scope.node.value is not None:
        yield from _walk(scope.node.value, scope.name)


def _walk_function(function: ast.FunctionDef | ast.AsyncFunctionDef, scope: str) -> Iterator[tuple[str, ast.AST]]:
    yield from _walk(function.args, scope)  # default values; annotations are skipped
    body = function.body
    if body and _is_docstring(body[0]):
        body = body[1:]
    for statement in body:
        yield from _walk(statement, scope)


def _walk(node: ast.AST, scope: str) -> Iterator[tuple[str, ast.AST]]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        yield from _walk_function(node, f"{scope}.{node.name}")
        return
    if isinstance(node, ast.ClassDef):
        for statement in node.body[1:] if node.body and _is_docstring(node.body[0]) else node.body:
            yield from _walk(statement, f"{scope}.{node.name}")
        return
    yield scope, node
    if _number(node) is not None and isinstance(node, ast.UnaryOp):
        return  # -1 is one constant, not a negation of 1
    for name, value in ast.iter_fields(node):
        if name in _SKIPPED_FIELDS:
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from _walk(child, scope)


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)


def _number(node: ast.AST) -> int | float | None:
    """The value of an int or float literal, negative ones (-1, a unary minus on 1) included."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
        return -node.operand.value
    return None


def _literal(value: int | float) -> ast.expr:
    """A number as a node that unparses right in any position: (-2) ** x, not -2 ** x."""
    if value < 0 or (value == 0 and str(value).startswith("-")):
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(-value))
    return ast.Constant(value)


def _variants(value: int | float) -> list[int | float]:
    if isinstance(value, int):
        candidates: list[int | float] = [value + 1, value - 1, 0, -value]
    else:
        candidates = [value * 2, 0.0]
        if 0 < abs(value) < 0.01:
            candidates.append(value * 10)
        if value == 0:
            candidates.append(1.0)
        candidates = [float(f"{c:.15g}") for c in candidates if abs(c) < float("inf")]  # 1e-5 * 10 is 0.0001, not 0.00010000000000000002
    unique: list[int | float] = []
    for candidate in candidates:
        if candidate != value and candidate not in unique:
            unique.append(candidate)
    return unique


def _edits(node: ast.AST, parents: Mapping[ast.AST, tuple[ast.AST, str, int | None]]) -> Iterator[tuple[str, ast.AST]]:
    """(operator, replacement) for each mutation of node; a replacement may share the original's
    children (nothing is modified in place for longer than one unparse)."""
    value = _number(node)
    if value is not None:
        parent, field_name, _ = parents[node]
        axis = isinstance(parent, ast.keyword) and parent.arg in _AXIS_KEYWORDS
        index = (
            (isinstance(parent, ast.Subscript) and field_name == "slice")
            or (isinstance(parent, ast.Tuple) and isinstance(parents[parent][0], ast.Subscript) and parents[parent][1] == "slice")
            or isinstance(parent, ast.Slice)
        )
        if index and isinstance(value, int):
            for new in (value + 1, value - 1):
                yield "index", _literal(new)
        else:
            operator = "axis" if axis and isinstance(value, int) else "constant"
            for new in _variants(value):
                yield operator, _literal(new)
        return
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield "flip_bool", ast.Constant(not node.value)
    elif isinstance(node, ast.BinOp):
        yield from _binary_edits(node)
    elif isinstance(node, ast.AugAssign) and type(node.op) in _REPLACED_OPERATOR:
        yield "binary_operator", ast.AugAssign(target=node.target, op=_REPLACED_OPERATOR[type(node.op)](), value=node.value)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Not | ast.Invert):
        yield "negate", node.operand
    elif isinstance(node, ast.Attribute) and node.attr in _TRANSPOSE_ATTRIBUTES and isinstance(node.ctx, ast.Load):
        yield "transpose", node.value
    elif isinstance(node, ast.Compare):
        for position, op in enumerate(node.ops):
            for new_op in _REPLACED_COMPARISON.get(type(op), ()):
                ops = [*node.ops[:position], new_op(), *node.ops[position + 1 :]]
                yield "comparison", ast.Compare(left=node.left, ops=ops, comparators=node.comparators)
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        yield from _slice_edits(node.slice, parents)
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
        for element in node.slice.elts:
            if isinstance(element, ast.Slice):
                yield from _slice_edits(element, parents)
    elif isinstance(node, ast.Call):
        yield from _call_edits(node)
    elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.value.elts):
        elements = node.value.elts
        for i in range(len(elements) - 1):
            swapped = [*elements[:i], elements[i + 1], elements[i], *elements[i + 2 :]]
            yield "swap_return", ast.Return(value=ast.Tuple(elts=swapped, ctx=ast.Load()))


def _binary_edits(node: ast.BinOp) -> Iterator[tuple[str, ast.AST]]:
    op = type(node.op)
    if op in _SWAPPABLE:
        yield "swap_operands", ast.BinOp(left=node.right, op=node.op, right=node.left)
    if op in _REPLACED_OPERATOR:
        yield "binary_operator", ast.BinOp(left=node.left, op=_REPLACED_OPERATOR[op](), right=node.right)
    if op is ast.Add:
        yield "drop_term", node.left
        yield "drop_term", node.right
    elif op is ast.Sub:
        yield "drop_term", node.left
        yield "drop_term", ast.UnaryOp(op=ast.USub(), operand=node.right)
    elif op in (ast.Mult, ast.MatMult):
        yield "drop_factor", node.left
        yield "drop_factor", node.right
    elif op in (ast.Div, ast.FloorDiv):
        yield "drop_factor", node.left
    if op is ast.MatMult:
        if not _is_transpose(node.left):
            yield "transpose", ast.BinOp(left=ast.Attribute(value=node.left, attr="mT", ctx=ast.Load()), op=node.op, right=node.right)
        if not _is_transpose(node.right):
            yield "transpose", ast.BinOp(left=node.left, op=node.op, right=ast.Attribute(value=node.right, attr="mT", ctx=ast.Load()))


def _is_transpose(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in _TRANSPOSE_ATTRIBUTES
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _TRANSPOSE_METHOD_ARGUMENTS


def _slice_edits(piece: ast.Slice, parents: Mapping[ast.AST, tuple[ast.AST, str, int | None]]) -> Iterator[tuple[str, ast.AST]]:
    """x[a:b] -> x[a + 1:b] and x[a:b - 1]; yields replacements of the whole Subscript."""
    subscript = parents[piece][0] if isinstance(parents[piece][0], ast.Subscript) else parents[parents[piece][0]][0]
    assert isinstance(subscript, ast.Subscript)
    for bound, step in (("lower", 1), ("upper", -1)):
        old = getattr(piece, bound)
        number = None if old is None else _number(old)
        if old is None:
            new: ast.expr = _literal(step)
        elif isinstance(number, int):
            new = _literal(number + step)
        else:
            new = ast.BinOp(left=old, op=ast.Add() if step > 0 else ast.Sub(), right=ast.Constant(1))
        changed = ast.Slice(**{**{"lower": piece.lower, "upper": piece.upper, "step": piece.step}, bound: new})
        if isinstance(subscript.slice, ast.Tuple):
            elements = [changed if element is piece else element for element in subscript.slice.elts]
            index: ast.expr = ast.Tuple(elts=elements, ctx=ast.Load())
        else:
            index = changed
        yield "slice", ast.Subscript(value=subscript.value, slice=index, ctx=subscript.ctx)


def _call_edits(node: ast.Call) -> Iterator[tuple[str, ast.AST]]:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    positional = node.args
    if isinstance(func, ast.Attribute) and name in _TRANSPOSE_METHOD_ARGUMENTS and not node.keywords:
        if len(positional) == _TRANSPOSE_METHOD_ARGUMENTS[name]:
            yield "transpose", func.value
        elif len(positional) == _TRANSPOSE_METHOD_ARGUMENTS[name] + 1:
            yield "transpose", positional[0]
    if name in _TWIN_REDUCTION and (isinstance(func, ast.Attribute) or name in ("max", "min")):
        twin = _TWIN_REDUCTION[name]
        new_func: ast.expr = (
            ast.Attribute(value=func.value, attr=twin, ctx=ast.Load()) if isinstance(func, ast.Attribute) else ast.Name(id=twin, ctx=ast.Load())
        )
        yield "reduction", ast.Call(func=new_func, args=node.args, keywords=node.keywords)
    if isinstance(func, ast.Attribute) and name == "detach" and not positional and not node.keywords:
        yield "detach", func.value
    if name == "sqrt" and not node.keywords:
        if isinstance(func, ast.Attribute) and not positional:
            yield "drop_sqrt", func.value
        elif len(positional) == 1 and not isinstance(positional[0], ast.Starred):
            yield "drop_sqrt", positional[0]
    if len(positional) == 2 and name not in _SYMMETRIC_CALLS and not any(isinstance(a, ast.Starred) for a in positional):
        yield "swap_args", ast.Call(func=func, args=[positional[1], positional[0]], keywords=node.keywords)


def _joined(pieces: list[str]) -> str:
    return "\n\n".join(pieces) + "\n"


def _unparse_statement(statement: ast.stmt, position: int) -> str:
    """A top-level statement's text; the first one in a module of its own, which writes a docstring
    as a docstring, not as a string expression."""
    return ast.unparse(ast.Module(body=[statement], type_ignores=[]) if position == 0 else statement)


def _mutant(
    pieces: list[str],
    parents: Mapping[ast.AST, tuple[ast.AST, str, int | None]],
    scope: str,
    operator: str,
    node: ast.AST,
    replacement: ast.AST,
    seen_keys: dict[str, int],
) -> Mutant | None:
    """The mutant that puts replacement in node's place (None if it does not compile). The tree is
    changed for the time of the unparse of node's top-level statement only."""
    shown = _shown(node, parents)
    top = _top(node, parents)
    before, context, original = ast.unparse(shown), ast.unparse(top), ast.unparse(node)
    statement = [n for n in _ancestry(node, parents) if n in parents and isinstance(parents[n][0], ast.Module)][0]
    position = parents[statement][2]
    assert isinstance(statement, ast.stmt) and position is not None
    parent, name, index = parents[node]
    _put(parent, name, index, replacement)
    try:
        changed = _unparse_statement(statement, position)
        after = ast.unparse(shown) if shown is not node else ast.unparse(replacement)
    finally:
        _put(parent, name, index, node)
    if isinstance(parent, ast.arguments):  # a default value: `eps=1e-06`, not a bare `1e-06`
        before, after = f"{_parameter(parent, name, index)}={before}", f"{_parameter(parent, name, index)}={after}"
    source = _joined([*pieces[:position], changed, *pieces[position + 1 :]])
    try:
        with warnings.catch_warnings():  # a mutant such as `(1)(x)` compiles with a SyntaxWarning: it is still a mutant, and silent
            warnings.simplefilter("ignore")
            compile(changed, "<mutant>", "exec")  # what may not compile is in this statement; the others compiled before
    except (SyntaxError, ValueError):
        return None
    key = "\n".join((scope, operator, context, original, ast.unparse(replacement)))
    occurrence = seen_keys.get(key, 0)
    seen_keys[key] = occurrence + 1
    digest = hashlib.sha256(f"{key}\n{occurrence}".encode()).hexdigest()[:8]
    line = next(n.lineno for n in _ancestry(node, parents) if hasattr(n, "lineno"))
    description = f"line {line}: `{_one_line(before)}` -> `{_one_line(after)}`"
    return Mutant(id=f"{scope}:{operator}:{digest}", operator=operator, line=line, description=description, source=source)


def _parameter(arguments: ast.arguments, name: str, index: int | None) -> str:
    """The parameter whose default is arguments.<name>[index]."""
    assert index is not None
    if name == "kw_defaults":
        return arguments.kwonlyargs[index].arg
    positional = [*arguments.posonlyargs, *arguments.args]
    return positional[len(positional) - len(arguments.defaults) + index].arg


def _put(parent: ast.AST, name: str, index: int | None, node: ast.AST) -> None:
    if index is None:
        setattr(parent, name, node)
    else:
        getattr(parent, name)[index] = node


def _ancestry(node: ast.AST, parents: Mapping[ast.AST, tuple[ast.AST, str, int | None]]) -> Iterator[ast.AST]:
    while True:
        yield node
        if node not in parents:
            return
        node = parents[node][0]


def _top(node: ast.AST, parents: Mapping[ast.AST, tuple[ast.AST, str, int | None]]) -> ast.AST:
    """The largest expression holding node inside its statement (node itself when a statement)."""
    while not isinstance(node, ast.stmt) and node in parents and not isinstance(parents[node][0], ast.stmt | ast.Module):
        node = parents[node][0]
    return node


def _shown(node: ast.AST, parents: Mapping[ast.AST, tuple[ast.AST, str, int | None]]) -> ast.AST:
    """What a description shows: node, or for a bare constant, name, attribute or slice, the
    expression around it (`0.5 * x`, `x.mean(dim=-1)`, `masked @ w_emb.T`), or the simple statement
    (`LAYER_NORM_EPS = 1e-05`)."""
    while _number(node) is not None or isinstance(node, ast.Constant | ast.Name | ast.Attribute | ast.Slice | ast.keyword | ast.Tuple):
        parent = parents.get(node, (None,))[0]
        if isinstance(parent, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Return | ast.Expr) or isinstance(parent, ast.expr | ast.keyword | ast.Slice):
            node = parent
            if isinstance(node, ast.stmt):
                break
        else:
            break
    return node


def _one_line(text: str) -> str:
    return " ".join(text.split())


def load_mutant(mutant: Mutant, name: str, package: str | None = None, *, file: str | Path | None = None) -> types.ModuleType:
    """A fresh module object running mutant.source, named `name` (the reference's own module name
    is fine: nothing is put in sys.modules, so the real module stays where it is and the mutant is
    gone once dropped). `package` (default: name's parent package) makes relative imports resolve
    as the reference's do (`from .helpers import x` imports the real package's helpers); `file` sets
    __file__ for code that reads files beside itself. The mutant's functions call each other
    through the mutant module's globals, so a change in a helper reaches the entry point."""
    module = types.ModuleType(name)
    module.__package__ = name.rpartition(".")[0] if package is None else package
    if file is not None:
        module.__file__ = str(file)
    exec(compile(mutant.source, f"<mutant {mutant.id}>", "exec"), module.__dict__)
    return module


def load_equivalent(path: Path) -> dict[str, str]:
    """The author's marks from a mutants.toml: mutant id -> why it computes what the reference
    computes ({} when the file does not exist). ValueError, naming the file, for a file that is not
    TOML, holds anything but an [equivalent] table, or gives a reason that is not a non-empty string."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    shape = 'one table, [equivalent], of "mutant id" = "why it computes what the reference computes"'
    unknown = sorted(set(data) - {"equivalent"})
    if unknown:
        raise ValueError(f"{path}: unknown key {', '.join(map(repr, unknown))}: the file holds {shape}")
    table = data.get("equivalent", {})
    if not isinstance(table, dict):
        raise ValueError(f"{path}: `equivalent` must be a table: the file holds {shape}")
    for mutant_id, reason in table.items():
        if not isinstance(reason, str) or not reason.strip():
            hint = " (write the id in quotes: a bare dotted key makes a table)" if isinstance(reason, dict) else ""
            raise ValueError(f"{path}: [equivalent] {mutant_id!r}: the reason must be a non-empty string, not {reason!r}{hint}")
    return dict(table)


@dataclass
class MutationScore:
    """How the hidden cases fared against the mutants. Ids keep the order of the outcomes given."""

    killed: list[str] = field(default_factory=list)  # rejected by the cases (broken ones not included)
    broken: list[str] = field(default_factory=list)  # raised or gave non-finite output on the reference's inputs: killed trivially
    survived: list[str] = field(default_factory=list)  # accepted and not marked equivalent: each needs a case or a mark
    equivalent: dict[str, str] = field(default_factory=dict)  # accepted and marked equivalent: id -> the author's reason
    same: list[str] = field(default_factory=list)  # float64 outputs equal to the reference's on every case: not counted
    stale: list[str] = field(default_factory=list)  # marks naming no mutant (the code changed)
    refuted: list[str] = field(default_factory=list)  # marked equivalent, yet killed or broken: the mark is wrong

    @property
    def counted(self) -> int:
        """The non-equivalent mutants: killed + survived - survivors marked equivalent."""
        return len(self.killed) + len(self.broken) + len(self.survived)

    @property
    def value(self) -> float:
        """Killed (broken included) / counted; 1.0 when nothing is counted."""
        return (len(self.killed) + len(self.broken)) / self.counted if self.counted else 1.0

    @property
    def adequate(self) -> bool:
        """Every non-equivalent mutant killed. Stale and refuted marks do not change it."""
        return not self.survived


def score(outcomes: Mapping[str, str], equivalent: Mapping[str, str]) -> MutationScore:
    """outcomes: every mutant's id -> "killed", "survived", "same" or "broken"; equivalent: the
    author's marks (load_equivalent). ValueError for another outcome."""
    result = MutationScore()
    for mutant_id, outcome in outcomes.items():
        if outcome not in OUTCOMES:
            raise ValueError(f"mutant {mutant_id}: outcome {outcome!r} is none of {', '.join(OUTCOMES)}")
        if outcome == "survived" and mutant_id in equivalent:
            result.equivalent[mutant_id] = equivalent[mutant_id]
        else:
            {"killed": result.killed, "broken": result.broken, "survived": result.survived, "same": result.same}[outcome].append(mutant_id)
            if outcome in ("killed", "broken") and mutant_id in equivalent:
                result.refuted.append(mutant_id)
    result.stale = [mutant_id for mutant_id in equivalent if mutant_id not in outcomes]
    return result


def score_lines(result: MutationScore, mutants: Iterable[Mutant], mutants_toml: str | Path) -> list[str]:
    """What verify prints: a line per survivor (with what to do), per equivalent mark used, per
    wrong or stale mark, then the score. mutants_toml: the file to name, reference/<module>/mutants.toml."""
    described = {mutant.id: mutant.description for mutant in mutants}
    toml = str(mutants_toml)
    lines = [
        f"survived: {mutant_id} {described.get(mutant_id, '(no description)')}: add a case that tells it apart, or mark it equivalent in {toml} with the reason"
        for mutant_id in result.survived
    ]
    lines += [f"equivalent (author): {mutant_id}: {reason}" for mutant_id, reason in result.equivalent.items()]
    lines += [
        f"marked equivalent but killed: {mutant_id} {described.get(mutant_id, '(no description)')}: a case tells it apart; remove its entry from {toml}"
        for mutant_id in result.refuted
    ]
    lines += [f"stale equivalence mark: {mutant_id} names no mutant of the reference (its code changed); remove it from {toml}" for mutant_id in result.stale]
    killed = len(result.killed) + len(result.broken)
    percent = f"{killed * 1000 // result.counted / 10:.1f}%" if result.counted else "100.0%"  # rounded down: 99.96% is not 100.0%
    lines.append(
        f"mutation score: {percent} ({killed} of {result.counted} non-equivalent mutants killed, {len(result.broken)} of them broken; "
        f"{len(result.equivalent)} equivalent, {len(result.same)} same output)"
    )
    return lines
