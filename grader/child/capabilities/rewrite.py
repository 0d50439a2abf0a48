"""The rewrite: the submission's syntax tree changed so that attribute reads and writes, subscripts,
class statements, call results, loop items, unpacking, pattern captures and the values others bind
to its names go through the run-time checks (grader/child/capabilities/checks.py), then compiled from
the very text the grader checked.

Each rewritten construct calls a name starting with PREFIX, bound in the module's globals by
`Capabilities.namespace`; a file may not use such names itself.
"""

import ast
import builtins
import copy
from collections.abc import Iterable
from types import CodeType
from typing import Any

PREFIX = "__mlm_"  # names the rewrite adds; a file may not use names starting with it
NAMES = (
    "getattr", "getitem", "write", "own_class", "check", "subject", "augmented_attribute", "augmented_item", "result", "items",
    "unpacked", "decorator", "called", "resumed", "value_attribute", "value", "result_read", "class_value",
)  # fmt: skip
(
    GETATTR, GETITEM, WRITE, OWN_CLASS, CHECK, SUBJECT, AUGMENTED_ATTRIBUTE, AUGMENTED_ITEM, RESULT, ITEMS, UNPACKED, DECORATOR, CALLED, RESUMED,
    VALUE_ATTRIBUTE, VALUE, RESULT_READ, CLASS_VALUE,
) = (f"{PREFIX}{n}__" for n in NAMES)  # fmt: skip
BOUND = f"{PREFIX}bound__"
# Built-in names read as values (key=len) come through VALUE: a callable of CPython's is handed out as its relay.
BUILTIN_NAMES = frozenset(name for name in vars(builtins) if not name.startswith("__"))

AUGMENTED = {
    ast.Add: "iadd", ast.Sub: "isub", ast.Mult: "imul", ast.MatMult: "imatmul", ast.Div: "itruediv", ast.FloorDiv: "ifloordiv",
    ast.Mod: "imod", ast.Pow: "ipow", ast.LShift: "ilshift", ast.RShift: "irshift", ast.BitOr: "ior", ast.BitXor: "ixor", ast.BitAnd: "iand",
}  # fmt: skip


PATTERN_NAMES = {(ast.MatchClass, "cls"), (ast.MatchValue, "value"), (ast.MatchMapping, "keys")}
ANNOTATIONS = {(ast.arg, "annotation"), (ast.FunctionDef, "returns"), (ast.AsyncFunctionDef, "returns"), (ast.AnnAssign, "annotation")}


class RefusedSyntax(Exception):
    """The text uses a name or construct that only the grader may use, or one whose reads cannot be
    checked (a class pattern inside a class pattern, a private name in a class pattern)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


def _call(name: str, node: ast.AST, *args: ast.expr) -> ast.Call:
    line = ast.Constant(getattr(node, "lineno", 0))
    return ast.copy_location(ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[*args, line], keywords=[]), node)


def _refuse_nested_class_patterns(patterns: Iterable[ast.AST]) -> None:
    for pattern in patterns:
        for node in ast.walk(pattern):
            if isinstance(node, ast.MatchClass):
                raise RefusedSyntax(node.lineno, "a class pattern inside a class pattern (its attribute reads cannot be checked)")


def _captured_names(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []


def _dotted_names(pattern: ast.AST) -> list[ast.expr]:
    """The dotted names a pattern reads where the compiler accepts nothing else: class patterns'
    classes, value patterns (case torch.float32:) and mapping keys. Each is refused if it names a
    private or special attribute."""
    found: list[ast.expr] = []
    for node in ast.walk(pattern):
        if isinstance(node, ast.MatchClass):
            found.append(node.cls)
        elif isinstance(node, ast.MatchValue):
            found.append(node.value)
        elif isinstance(node, ast.MatchMapping):
            found += node.keys
    for name in found:
        for part in ast.walk(name):
            if isinstance(part, ast.Attribute) and part.attr.startswith("_"):
                raise RefusedSyntax(part.lineno, f"a pattern naming the private or special attribute {part.attr}")
    return [name for name in found if isinstance(name, ast.Attribute)]


def _rewrite_match(match: ast.Match) -> None:
    """A pattern's dotted names are read where no call can be put, and a value pattern hands what it
    reads to the subject's __eq__: each is read once through the checks, with the subject, before
    the match compares anything (`match __mlm_subject__(subject, torch.float32, ...)`)."""
    dotted = [copy.deepcopy(name) for case in match.cases for name in _dotted_names(case.pattern)]
    classes = [node for case in match.cases for node in ast.walk(case.pattern) if isinstance(node, ast.MatchClass)]
    if dotted or classes:
        patterns = ast.Tuple(
            elts=[
                ast.Tuple(elts=[copy.deepcopy(node.cls), ast.Constant(len(node.patterns)), ast.Constant(tuple(node.kwd_attrs))], ctx=ast.Load())
                for node in classes
            ],
            ctx=ast.Load(),
        )
        match.subject = _call(SUBJECT, match.subject, match.subject, patterns, *dotted)


def _shape(target: ast.expr) -> Any:
    """How deep an assignment target unpacks: 0 for a name (or attribute, subscript), a tuple of
    the shapes of its parts for a, (b, c), 1 for a target with a starred part."""
    if not isinstance(target, (ast.Tuple, ast.List)):
        return 0
    if any(isinstance(e, ast.Starred) for e in target.elts):
        return 1
    return tuple(_shape(e) for e in target.elts)


def _rewrite_case(case: ast.match_case) -> None:
    """A pattern reads attributes and items where no call can be put: every name it captures is
    checked before the case's own guard and body (a refusal ends the run, whatever the file catches)."""
    for node in ast.walk(case.pattern):
        if isinstance(node, ast.MatchClass):
            for attribute in node.kwd_attrs:
                if attribute.startswith("_"):
                    raise RefusedSyntax(node.lineno, f"a class pattern reading the private or special attribute {attribute}")
            _refuse_nested_class_patterns([*node.patterns, *node.kwd_patterns])
    captured = [name for node in ast.walk(case.pattern) for name in _captured_names(node)]
    if captured:
        checks = [_call(CHECK, case.pattern, ast.Name(id=name, ctx=ast.Load())) for name in captured]
        values = [*checks, *([case.guard] if case.guard else [])]
        case.guard = ast.copy_location(ast.BoolOp(op=ast.And(), values=values), case.pattern) if len(values) > 1 else values[0]


def _parameters(arguments: ast.arguments) -> list[str]:
    every = [*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs, arguments.kwarg]
    return [a.arg for a in every if a is not None]


def _stored_names(target: ast.AST | None) -> list[str]:
    """The plain names a `with ... as` or `async for` target binds (an attribute or item is checked when read)."""
    if target is None:
        return []
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _checked_binding(name: str, what: str, node: ast.AST) -> ast.Call:
    """`__mlm_bound__(name, what, line)`: the value someone else bound to `name`, checked."""
    return _call(BOUND, node, ast.Name(id=name, ctx=ast.Load()), ast.Constant(what.format(name)))


def _checked_bindings(names: list[str], what: str, node: ast.AST) -> list[ast.stmt]:
    """`name = __mlm_bound__(name, what, line)` for each name."""
    return [ast.copy_location(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=_checked_binding(n, what, node)), node) for n in names]


def _is_special(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _called_statement(node: ast.AST) -> ast.stmt:
    return ast.copy_location(ast.Expr(_call(CALLED, node)), node)


def _own_scope(function: ast.AST) -> list[ast.AST]:
    """The nodes of a function's own scope: not those of the functions, lambdas, classes and
    comprehensions inside it."""
    found, stack = [], list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _check_reentries(function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """A generator is entered again where its `yield`s resume (checked there) and where `throw` and
    `close` raise into it: the code that then runs first is an `except` or `finally` block, or
    what follows a `with` block whose context manager swallowed the exception. Each starts with
    the check of who called, in every function: whether a function is a generator is the
    compiler's to say (a `yield` in a comprehension's first iterable or a lambda's default makes
    one), and in a plain function the check finds what it found at the start."""
    for node in [function, *_own_scope(function)]:
        if isinstance(node, ast.ExceptHandler):
            node.body.insert(0, _called_statement(node))
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if not isinstance(statements, list) or not statements or not isinstance(statements[0], ast.stmt):
                continue
            if field == "finalbody":
                statements.insert(0, _called_statement(node))
            for index in range(len(statements) - 1, -1, -1):
                if isinstance(statements[index], (ast.With, ast.AsyncWith)):
                    statements.insert(index + 1, _called_statement(statements[index]))


def _check_bindings(node: ast.AST) -> None:
    """Values bound by someone else than the file's code are checked where they enter: the
    parameters of every function the file writes (library code calls them back with its own
    values: a sort key, a hook, a special method, __exit__ with a traceback), the names of
    `with ... as` and `except ... as`."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        docstring = isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str)
        at = 1 if docstring else 0
        node.body[at:at] = _checked_bindings(_parameters(node.args), f"the argument {{}} of {node.name}()", node)
        node.body.insert(at, _called_statement(node))  # who called it is checked first (callers.py): library C code may not
        _check_reentries(node)
    elif isinstance(node, ast.Lambda):
        # no statement fits in a lambda: `lambda x: body` becomes `lambda x: body if (called(), x := check(x)) else None`
        names = _parameters(node.args)
        checks = [ast.NamedExpr(target=ast.Name(id=n, ctx=ast.Store()), value=_checked_binding(n, "the argument {} of a lambda", node)) for n in names]
        test = ast.Tuple(elts=[_call(CALLED, node), *checks], ctx=ast.Load())
        node.body = ast.copy_location(ast.IfExp(test=test, body=node.body, orelse=ast.Constant(None)), node.body)
    elif isinstance(node, ast.GeneratorExp):
        # resumed by whoever iterates it: each clause's conditions start with the check, so that no code of the
        # file's (a condition, the element, an inner clause's iterable) runs after a resume before it
        for clause in node.generators:
            clause.ifs.insert(0, ast.copy_location(ast.Compare(left=_call(CALLED, node), ops=[ast.Is()], comparators=[ast.Constant(None)]), node))
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        names = [name for item in node.items for name in _stored_names(item.optional_vars)]
        node.body[0:0] = _checked_bindings(names, "the value `with ... as {}` bound", node)
    elif isinstance(node, ast.AsyncFor):  # its items come from an asynchronous iterator, which the loop's own check cannot wrap
        node.body[0:0] = _checked_bindings(_stored_names(node.target), "the value `async for {}` bound", node)
    elif isinstance(node, ast.comprehension) and node.is_async:
        raise RefusedSyntax(getattr(node.iter, "lineno", 0), "an asynchronous comprehension (its items cannot be checked: write an `async for` loop)")
    elif isinstance(node, ast.ExceptHandler) and node.name:
        node.body[0:0] = _checked_bindings([node.name], "the exception `except ... as {}` bound", node)


def _used_at_once(node: ast.expr) -> None:
    """Mark a read whose value is called, or read from, where it is read (f(x), np.add.reduce,
    make().field): no one else gets it, so a callable of someone else's needs no relay there (checks.py)."""
    if isinstance(node, (ast.Attribute, ast.Name, ast.Call)):
        node.used = True  # type: ignore[attr-defined]


def _rewrite_child(node: ast.AST, value_names: frozenset[str] = BUILTIN_NAMES) -> ast.AST:
    """The node that replaces `node` in its parent: reads, writes and classes through Capabilities."""
    if isinstance(node, (ast.Call, ast.Yield, ast.YieldFrom, ast.Await)) and not getattr(node, "checked", False):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith(PREFIX):
            return node  # a call the rewrite put here
        node.checked = True  # type: ignore[attr-defined] - visited again as the argument of its check
        if isinstance(node, ast.Call):
            _used_at_once(node.func)
            return _call(RESULT_READ if getattr(node, "used", False) else RESULT, node, node)
        return _call(RESUMED, node, node)  # a generator or coroutine resumed: by whom is checked, as for a special method
    _check_bindings(node)
    if isinstance(node, ast.For) or (isinstance(node, ast.comprehension) and not node.is_async):
        node.iter = _call(ITEMS, node.iter, node.iter, ast.Constant(_shape(node.target)))
    elif isinstance(node, ast.Assign) and all(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
        node.value = _call(UNPACKED, node, node.value, ast.Constant(_shape(node.targets[0])))  # a, (b, c) = ...
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if isinstance(node, ast.ClassDef):
            # What a class statement assigns goes through CLASS_VALUE: a callable of someone else's
            # as the relay that keeps its meaning in a class (checks.py), so the names its body
            # binds hold relays too.
            for statement in node.body:
                if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                    _used_at_once(statement.value)
                    statement.value = _call(CLASS_VALUE, statement.value, statement.value)
                elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    for inner in [statement, *_own_scope(statement)]:
                        if isinstance(inner, ast.ImportFrom):
                            raise RefusedSyntax(inner.lineno, "`from ... import` inside a class statement (import at the top of the file)")
        for decorator in node.decorator_list:
            _used_at_once(decorator)  # (called at once, by the check)
        node.decorator_list = [d if isinstance(d, ast.Name) and d.id.startswith(PREFIX) else _call(DECORATOR, d, d) for d in node.decorator_list]
    if isinstance(node, ast.Attribute):
        _used_at_once(node.value)
        if isinstance(node.ctx, ast.Load):
            return _call(GETATTR if getattr(node, "used", False) else VALUE_ATTRIBUTE, node, node.value, ast.Constant(node.attr))
        node.value = _call(WRITE, node, node.value, ast.Constant(node.attr))
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in value_names and not getattr(node, "used", False):
        node.used = True  # type: ignore[attr-defined] - visited again as the argument of its check
        return _call(VALUE, node, node)
    elif isinstance(node, ast.Starred) and isinstance(node.ctx, ast.Load):
        node.value = _call(ITEMS, node.value, node.value, ast.Constant(0))  # f(*items): each item as a loop's
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        _used_at_once(node.value)
        return _call(GETITEM, node, node.value, node.slice)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, (ast.Attribute, ast.Subscript)):
        # x.a += v reads x.a where no call can be put: one call reads, combines in place and writes.
        target, operation = node.target, ast.Constant(AUGMENTED[type(node.op)])
        if isinstance(target, ast.Attribute):
            call = _call(AUGMENTED_ATTRIBUTE, node, target.value, ast.Constant(target.attr), operation, node.value)
        else:
            call = _call(AUGMENTED_ITEM, node, target.value, target.slice, operation, node.value)
        return ast.copy_location(ast.Expr(call), node)
    elif isinstance(node, ast.ClassDef):
        node.decorator_list.insert(0, ast.copy_location(ast.Name(id=OWN_CLASS, ctx=ast.Load()), node))
    elif isinstance(node, ast.match_case):
        _rewrite_case(node)
    elif isinstance(node, ast.Match):
        _rewrite_match(node)
    return node


def _mangle(tree: ast.AST) -> None:
    """Private names inside a class (self.__x) as the compiler would mangle them (self._Class__x):
    the rewrite turns attribute reads into strings, which the compiler does not mangle."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, owner = stack.pop()
        if isinstance(node, ast.Attribute) and owner and node.attr.startswith("__") and not node.attr.endswith("__"):
            node.attr = f"_{owner}{node.attr}"
        inner = node.name.lstrip("_") if isinstance(node, ast.ClassDef) else owner
        for child in ast.iter_child_nodes(node):
            # a class's bases, keywords and decorators are read outside its body
            outside = isinstance(node, ast.ClassDef) and child in (*node.bases, *node.keywords, *node.decorator_list)
            stack.append((child, owner if outside else inner))


def _check_names(tree: ast.AST) -> None:
    """Refuse the names only the grader may use, before the rewrite adds its own."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.alias):
            names = [node.name, node.asname or ""]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names = list(node.names)
        elif isinstance(node, ast.keyword):
            names = [node.arg or ""]
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            names = [node.name or ""]
        else:
            continue
        for name in names:
            if name.startswith(PREFIX) or name == "__builtins__":
                raise RefusedSyntax(getattr(node, "lineno", 0), f"the name {name} is reserved for the grader")
        if isinstance(node, ast.Name) and node.id == "__name__" and not isinstance(node.ctx, ast.Load):
            raise RefusedSyntax(node.lineno, "assigning __name__ (the module's name is the grader's)")


def transform(tree: ast.Module) -> ast.Module:
    """Rewrite the tree in place so that reads, writes and classes go through Capabilities. Walks
    with an explicit stack: a long generated expression cannot exhaust Python's recursion limit."""
    _check_names(tree)
    _mangle(tree)
    # Under `from __future__ import annotations` annotations are never run, only kept as text, which
    # dataclasses reads (ClassVar, InitVar): they stay as written.
    future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names) for n in tree.body)
    # Names a built-in or `from m import f` binds are read as values through VALUE (a callable of someone
    # else's comes as a relay); called where they are read, they are the import's own objects, which
    # library code that looks at its caller's frame needs (collections.namedtuple names the module so).
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    value_names = BUILTIN_NAMES | frozenset(imported)
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for field, value in ast.iter_fields(node):
            if (node.__class__, field) in PATTERN_NAMES:
                continue  # a dotted name, read through the checks by _rewrite_match: the compiler accepts nothing else there
            if future and (node.__class__, field) in ANNOTATIONS:
                continue
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        value[index] = replaced = _rewrite_child(item, value_names)
                        stack.append(replaced)
            elif isinstance(value, ast.AST):
                replaced = _rewrite_child(value, value_names)
                setattr(node, field, replaced)
                stack.append(replaced)
    return ast.fix_missing_locations(tree)


def compile_submission(text: str, filename: str) -> CodeType:
    """The code object of the rewritten submission (SyntaxError or RefusedSyntax if it cannot be)."""
    return compile(transform(ast.parse(text, filename=filename)), filename, "exec", dont_inherit=True)
