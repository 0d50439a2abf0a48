"""The layout is a specification: imports point one way, from the entry points down to deciding and
running, and the code that runs inside the sandbox stands alone. Every import of grader/ is read
from the syntax tree, those inside functions and under TYPE_CHECKING included."""

import ast
from pathlib import Path

import pytest

GRADER = Path(__file__).resolve().parents[1] / "grader"
ENTRY_POINTS = {
    "grader.cli",
    "grader.api",
    "grader.merge",
    "grader.batch.command",
    "grader.catalog",
    "grader.verify",
    "grader.new",
    "grader.allowlist",
    "grader.__main__",
    "grader.service.command",
    "grader.client",
}
DECIDING = {
    "grader.case",
    "grader.cases",
    "grader.expected",
    "grader.compare",
    "grader.diagnosis",
    "grader.results",
    "grader.report",
    "grader.policy",
    "grader.spec",
    "grader.package_format",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(GRADER.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(GRADER.rglob("*.py"))}


def imports_of(path: Path) -> set[str]:
    """The grader modules `path` imports (a `from package import name` counts as the submodule
    when there is one)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: the child package's own imports
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
            found |= submodules if len(submodules) == len(node.names) else {base, *submodules}  # only submodules: not the package
    return {module for module in found if module in MODULES}


GRAPH = {name: imports_of(path) - {name} for name, path in MODULES.items()}
# The package's door to the API (`from grader import grade_source`) imports it on first use, from
# __getattr__, long after the package itself is loaded: not a cycle at import time.
GRAPH["grader"] -= {"grader.api"}


def under(prefix: str) -> set[str]:
    return {name for name in MODULES if name == prefix or name.startswith(prefix + ".")}


def test_the_grader_has_no_import_cycle():
    def cycle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in GRAPH[node]:
                if nxt == start:
                    return [*path, start]
                if nxt not in path and nxt > start:  # each cycle is found from its smallest member only
                    stack.append((nxt, [*path, nxt]))
        return None

    cycles = [cycle for name in sorted(MODULES) if (cycle := cycle_from(name))]
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("grader.sandbox", {*ENTRY_POINTS, "grader.judge", "grader.seeding", "grader.layout"} | under("grader.formats") | under("grader.batch")),
        ("grader.formats", {*ENTRY_POINTS, "grader.judge", "grader.seeding"} | under("grader.sandbox") | under("grader.batch")),
        ("grader.judge", ENTRY_POINTS | under("grader.formats") | under("grader.batch")),
        ("grader.batch", ENTRY_POINTS - {"grader.batch.command"}),
        ("grader.seeding", ENTRY_POINTS | under("grader.sandbox") | {"grader.judge"}),
        ("grader.graded", ENTRY_POINTS | under("grader.service") | under("grader.batch") | under("grader.sandbox") | {"grader.judge"}),
        ("grader.reward", ENTRY_POINTS | under("grader.service") | under("grader.batch") | under("grader.sandbox") | {"grader.judge"}),
    ],
)
def test_a_lower_layer_never_imports_a_higher_one(lower: str, higher: set[str]):
    broken = {f"{name} imports {imported}" for name in under(lower) for imported in GRAPH[name] & higher}
    assert broken == set()


def test_deciding_never_imports_the_sandbox_the_child_or_an_entry_point():
    """Cases, expected outputs, comparison, diagnosis and reports are computed apart from running
    untrusted code: none of them reaches the sandbox or the child's guard, runner or capability layer
    (the vector-Jacobian product both sides take is grader/child/vjp.py, and the allow-lists resolved to
    the objects they name, which the static check and the capability layer both read, are
    grader/child/capabilities/allowed.py: each holds nothing else)."""
    shared = {"grader.child", "grader.child.vjp", "grader.child.wire", "grader.child.capabilities", "grader.child.capabilities.allowed"}
    running = under("grader.sandbox") | under("grader.child") - shared
    banned = running | ENTRY_POINTS | {"grader.judge", "grader.seeding"} | under("grader.batch")
    broken = {f"{name} imports {imported}" for name in DECIDING for imported in GRAPH[name] & banned}
    assert broken == set()


def test_the_child_side_imports_nothing_of_the_grader():
    """grader/child/ is copied alone into the sandbox (and into the runner image): it imports only
    its own modules, relatively."""
    child = under("grader.child")
    broken = {f"{name} imports {imported}" for name in child for imported in GRAPH[name] - child}
    absolute = {
        name
        for name in child
        if any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("grader") for n in ast.walk(ast.parse(MODULES[name].read_text())))
    }
    assert (broken, absolute) == (set(), set())


def test_entry_points_share_code_through_lower_modules_not_through_each_other():
    """The command line may hand over to `batch` and `merge` (its subcommands); nothing imports
    another entry point, and the batch (many submissions, under the API and the command line) none."""
    allowed = {
        ("grader.cli", "grader.merge"),
        ("grader.cli", "grader.batch.command"),
        ("grader.cli", "grader.catalog"),
        ("grader.cli", "grader.verify"),
        ("grader.cli", "grader.allowlist"),
        ("grader.cli", "grader.new"),
        ("grader.cli", "grader.service.command"),
        ("grader.service.app", "grader.api"),  # the service is the Python API over HTTP
        ("grader.__main__", "grader.cli"),
    }
    broken = {(name, imported) for name in MODULES for imported in GRAPH[name] & ENTRY_POINTS} - allowed
    assert broken == set()


def reached_from(start: str) -> set[str]:
    seen, stack = set(), [start]
    while stack:
        for imported in GRAPH[stack.pop()] - seen:
            seen.add(imported)
            stack.append(imported)
    return seen


def test_the_service_is_the_api_over_http_and_nothing_below_reaches_it():
    """The service grades through the API (grader.api's AsyncGrader), not with a grader of its own;
    only the command line's `serve` reaches into it."""
    service = under("grader.service")
    reaching_in = {(name, imported) for name in MODULES.keys() - service for imported in GRAPH[name] & service}
    assert reaching_in == {("grader.cli", "grader.service.command")}
    assert "grader.api" in GRAPH["grader.service.app"] and "grader.judge" not in GRAPH["grader.service.app"]


def test_the_client_shares_only_the_reports_format_and_the_reward_with_the_service():
    """A trainer imports grader.client without the grader: no judge, no sandbox, no batch, no service, no torch."""
    reached = reached_from("grader.client")
    assert {"grader.graded", "grader.reward"} <= reached
    assert reached & ({"grader.api", "grader.judge"} | under("grader.service") | under("grader.sandbox") | under("grader.batch")) == set()


def test_the_layering_test_reads_real_imports():
    """A guard against a test that passes because it reads nothing: known edges are seen."""
    assert "grader.sandbox.child" in GRAPH["grader.sandbox.process"]
    assert "grader.child.vjp" in GRAPH["grader.expected"]
    assert "grader.child.wire" in GRAPH["grader.child.runner"]  # a relative import, resolved
    assert "grader.judge" in GRAPH["grader.cli"]
