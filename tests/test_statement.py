"""The statement (problem/mlm-forward-tied/README.md) and the package's problem.toml say the same thing."""

import re
import tomllib

import pytest

from grader.spec import ROOT, problem_ids, problem_spec

STATEMENT = (ROOT / "problem" / "mlm-forward-tied" / "README.md").read_text()
SPEC = tomllib.loads((ROOT / "problem" / "mlm-forward-tied" / "problem.toml").read_text())


def spec_value(key: str):
    """Look up a dotted key; families.NAME.x looks inside the family called NAME."""
    parts = key.split(".")
    if parts[0] == "families":
        node = next(f for f in SPEC["families"] if f["name"] == parts[1])
        parts = parts[2:]
    else:
        node = SPEC
    for part in parts:
        node = node[part]
    return node


def table_rows() -> list[tuple[str, str]]:
    """(value cell, spec key) for every row of the limits table that names a spec key."""
    return re.findall(r"^\| [^|]+ \| ([^|]+) \| `([a-z_0-9.]+)` \|$", STATEMENT, flags=re.MULTILINE)


def test_the_table_has_a_row_for_every_limit_and_tolerance():
    keys = {key for _, key in table_rows()}
    expected = {f"limits.{k}" for k in SPEC["limits"]}
    expected |= {f"tolerance.{k}" for k in ("float32", "float64")} | {f"tolerance.gradient.{k}" for k in ("float32", "float64")}
    for family in SPEC["families"]:
        for kind in ("tolerance", "gradient_tolerance"):
            expected |= {f"families.{family['name']}.{kind}.{dtype}" for dtype in family.get(kind, {})}
    assert keys == expected


@pytest.mark.parametrize("value, key", table_rows())
def test_each_number_in_the_table_is_the_specs(value, key):
    first_number = re.match(r"[0-9.e+-]+", value.strip()).group()
    assert float(first_number) == float(spec_value(key))


RULES_BLOCK = re.compile(r"<!-- rules: [^\n]*-->\n(.*?)\n<!-- end of rules -->", re.DOTALL)


@pytest.mark.parametrize("problem", problem_ids())
def test_each_statements_rules_are_the_lists_themselves(problem):
    """The Rules section shows what the allow-lists allow, generated from them, so it cannot drift."""
    statement = (ROOT / "problem" / problem / "README.md").read_text()
    found = RULES_BLOCK.search(statement)
    assert found, f"problem/{problem}/README.md has no rules block (python -m grader rules --problem {problem} --markdown)"
    assert found.group(1) == problem_spec(problem).rules.markdown()


@pytest.mark.parametrize("problem", problem_ids())
def test_each_statements_rules_section_is_short(problem):
    statement = (ROOT / "problem" / problem / "README.md").read_text()
    section = statement[statement.index("## Rules") : statement.index("\n## ", statement.index("## Rules") + 1)]
    assert section.count("\n") <= 40


def test_the_statements_conventions_are_the_specs():
    stated_eps = {float(x) for x in re.findall(r"eps = ([0-9.e-]+)", STATEMENT)}
    assert stated_eps == {SPEC["problem"]["constants"]["layer_norm_eps"]}
    assert f"`> {SPEC['problem']['constants']['mask_threshold']}`" in STATEMENT
    assert "def mlm_forward_tied(" + ", ".join(p["name"] for p in SPEC["parameters"]) + "):" in STATEMENT
