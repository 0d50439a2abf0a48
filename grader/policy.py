"""Static forbidden-API check: reads the syntax tree (never imports or runs the submission) and
reports every violation at once, with its line, column, source text and what to do instead.

Names are resolved through imports and simple aliases (`import torch as t`, `from torch import
softmax as s`, `F = torch.nn.functional`), so a forbidden function is found under any name given
to it in the file. What no static check can see (names built at run time) is refused as a
construct (`getattr` with a computed name, `eval`, dunder access) and watched at run time by the
guard in grader/child/guard.py.
"""

import ast
import importlib
import inspect
from dataclasses import dataclass
from functools import cache
from typing import Any

ADVICE = {
    "softmax": "write the softmax with exp and sum (subtract the row maximum first)",
    "norm": "write the layer norm with mean and the population variance: (x - mean) / sqrt(var + 1e-5)",
    "gelu": "write the tanh GELU yourself: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))",
    "attention": "write the attention yourself: q @ k^T / sqrt(d_head), your softmax, then @ v",
    "transformer": "write the encoder block yourself from matmuls and your own helpers",
}


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


@cache
def _is_module(path: str) -> bool:
    """Whether a dotted attribute path of torch or numpy names a module (torch.os, numpy.sys)."""
    root, *rest = path.split(".")
    try:
        obj: Any = importlib.import_module(root)
        for part in rest:
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return False
    return inspect.ismodule(obj)


class Checker(ast.NodeVisitor):
    def __init__(self, source: str, policy: dict[str, Any]) -> None:
        self.source = source
        self.policy = policy
        self.aliases: dict[str, str] = {}  # local name -> dotted path of what it stands for
        self.violations: list[Violation] = []
        self.forbidden_functions = set(policy["forbidden_functions"])
        self.own_names: set[str] = set()  # names the file binds itself (they shadow built-ins)

    # -- helpers ------------------------------------------------------------------------------
    def flag(self, node: ast.AST, rule: str, advice: str) -> None:
        text = ast.get_source_segment(self.source, node) or ast.unparse(node)
        text = text if len(text) <= 80 else text[:77] + "..."
        self.violations.append(Violation(node.lineno, node.col_offset + 1, text, rule, advice))

    def resolve(self, node: ast.AST) -> str | None:
        """Dotted path of a Name/Attribute chain rooted at an imported module, else None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call) and self._literal_getattr(node):
            base = self.resolve(node.args[0])
            return f"{base}.{node.args[1].value}" if base else None
        return None

    def _literal_getattr(self, node: ast.Call) -> bool:
        return (
            isinstance(node.func, ast.Name)
            and node.func.id in self.policy["attribute_builtins"]
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        )

    def check_path(self, node: ast.AST, path: str) -> bool:
        """Flag a resolved torch/numpy path that leads to forbidden functionality. True if flagged."""
        parts = path.split(".")
        if parts[0] not in ("torch", "numpy"):
            if path in self.policy["forbidden_attributes"]:
                self.flag(node, f"{path} is forbidden (it reaches attributes by a computed name)", "write the attribute or method directly")
                return True
            return False
        if len(parts) > 1 and parts[1] == "nn":
            self.flag(node, f"{path} is forbidden (nothing from torch.nn may be used)", advice_for(parts[-1] if len(parts) > 2 else "transformer"))
            return True
        for i in range(1, len(parts)):
            prefix = ".".join(parts[: i + 1])
            name = parts[i]
            if name.startswith("__") and name.endswith("__") and name not in self.policy["allowed_dunders"]:
                self.flag(node, f"access to the special attribute {prefix} is forbidden", "use ordinary attributes")
                return True
            if name in self.forbidden_functions:
                self.flag(node, f"{prefix} is forbidden (built-in {name})", advice_for(name))
                return True
            if prefix in self.policy["forbidden_attributes"]:
                self.flag(node, f"{prefix} is forbidden (it reaches files, compilers or operators by name)", "use tensor operations only")
                return True
            if name.startswith("_"):
                self.flag(node, f"{prefix} is a private part of {parts[0]} and is forbidden", "use the public tensor API")
                return True
            if prefix not in self.policy["allowed_submodules"] and _is_module(prefix):
                self.flag(node, f"{prefix} is a module outside the allowed list", "use the public tensor API of torch, numpy and math")
                return True
        return False

    # -- imports ------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in self.policy["allowed_imports"]:
                self.flag(node, f"import of {alias.name} is not allowed", self._import_advice(alias.name))
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                self.aliases[root] = root

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        if node.level or module not in self.policy["allowed_imports"]:
            self.flag(node, f"import from {module} is not allowed", self._import_advice(module))
            return
        for alias in node.names:
            if alias.name == "*":
                self.flag(node, f"from {module} import * is not allowed (the imported names cannot be checked)", "import the module and use module.name")
                continue
            path = f"{module}.{alias.name}"
            if path not in self.policy["allowed_imports"]:
                self.check_path(node, path)
            self.aliases[alias.asname or alias.name] = path  # bound even when flagged: its uses are reported too

    def _import_advice(self, module: str) -> str:
        if module.startswith("torch."):
            return "import torch and write the forbidden parts yourself; torch submodules other than the allowed ones are off-limits"
        allowed = ", ".join(self.policy["allowed_imports"])
        return f"allowed imports: {allowed}"

    # -- names, attributes, calls ---------------------------------------------------------------
    def bind_alias(self, node: ast.Assign) -> None:
        """F = torch.nn.functional, t = torch: the name now stands for that path."""
        path = self.resolve(node.value)
        if path and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.aliases[node.targets[0].id] = path

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.policy["forbidden_builtins"] and node.id not in self.own_names:
            self.flag(node, f"the built-in {node.id} is forbidden", "call functions directly; files and dynamic code are off-limits")
        elif node.id in self.policy["attribute_builtins"] and node.id not in self.own_names:
            self.flag(node, f"{node.id} may only be called directly, with a string literal as the name", f'call {node.id}(obj, "name") directly')
        elif node.id.startswith("__") and node.id.endswith("__") and node.id not in self.policy["allowed_dunders"]:
            self.flag(node, f"the special name {node.id} is forbidden", "use ordinary names")
        elif (path := self.aliases.get(node.id)) and "." in path and isinstance(node.ctx, ast.Load):
            self.check_path(node, path)  # a use of `s` after `from torch import softmax as s`

    def visit_Attribute(self, node: ast.Attribute) -> None:
        path = self.resolve(node)
        if path and self.check_path(node, path):
            return  # one message for the longest forbidden chain; do not also flag its prefixes
        attr = node.attr
        if attr.startswith("__") and attr.endswith("__") and attr not in self.policy["allowed_dunders"]:
            self.flag(node, f"access to the special attribute {attr} is forbidden", "use ordinary attributes")
        elif not path and attr in self.forbidden_functions and not self._own_object(node.value):
            self.flag(node, f".{attr} is forbidden (built-in {attr})", advice_for(attr))
        elif attr in self.policy["forbidden_methods"]:
            self.flag(node, f".{attr} is forbidden (it writes files)", "return tensors; do not write files")
        if not path:
            self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.policy["attribute_builtins"]:
            if self._literal_getattr(node):
                name = node.args[1].value
                path = self.resolve(node)
                if not (path and self.check_path(node, path)):
                    if name.startswith("__") and name.endswith("__") and name not in self.policy["allowed_dunders"]:
                        self.flag(node, f"{func.id} of the special attribute {name} is forbidden", "use ordinary attributes")
                    elif name in self.forbidden_functions and not path:
                        self.flag(node, f"{func.id}(..., {name!r}) is forbidden (built-in {name})", advice_for(name))
            else:
                advice = f'write the attribute directly, or {func.id}(obj, "name") with a string literal'
                self.flag(node, f"{func.id} with a computed attribute name is forbidden", advice)
            for arg in node.args[:1] + node.args[2:] + [k.value for k in node.keywords]:
                self.visit(arg)
            return
        self.generic_visit(node)

    @staticmethod
    def _own_object(node: ast.AST) -> bool:
        """self.softmax / cls.gelu: a method of the candidate's own class."""
        return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _bound_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def check(tree: ast.Module, source: str, policy: dict[str, Any]) -> list[Violation]:
    """Every violation in the file, in source order."""
    checker = Checker(source, policy)
    checker.own_names = _bound_names(tree)
    # Bind imports, then aliases, before anything else, so a use above its binding still resolves.
    nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            checker.visit(node)
    for node in nodes:
        if isinstance(node, ast.Assign):
            checker.bind_alias(node)
    checker.visit(tree)  # visits the imports again: their duplicate violations are dropped below
    return sorted(set(checker.violations), key=lambda v: (v.line, v.column))


def explain(violations: list[Violation]) -> str:
    count = f"{len(violations)} use{'s' if len(violations) != 1 else ''} of forbidden APIs"
    return f"{count} (see the rules in problem/README.md):\n" + "\n".join(f"  {v}" for v in violations)
