"""The statement (problem/mlm-forward-tied/README.md) and the package's problem.toml say the same thing."""

import re
import tomllib

import pytest

from grader.spec import ROOT, load_spec

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


def test_every_policy_entry_is_stated():
    policy = load_spec().policy  # the package's [policy] merged into the harness's base policy: what a submission meets
    for key in ("allowed_imports", "allowed_submodules", "forbidden_builtins", "attribute_builtins", "allowed_dunders"):
        for item in policy[key]:
            assert f"`{item}`" in STATEMENT, f"{key}: {item}"
    for attribute in ("torch.load", "torch.save", "numpy.load", "numpy.save", "torch.compile", "torch.jit", "torch.ops", "operator.methodcaller"):
        assert attribute in policy["forbidden_attributes"] and f"`{attribute}`" in STATEMENT


def test_the_statements_conventions_are_the_specs():
    stated_eps = {float(x) for x in re.findall(r"eps = ([0-9.e-]+)", STATEMENT)}
    assert stated_eps == {SPEC["problem"]["constants"]["layer_norm_eps"]}
    assert f"`> {SPEC['problem']['constants']['mask_threshold']}`" in STATEMENT
    assert "def mlm_forward_tied(" + ", ".join(p["name"] for p in SPEC["parameters"]) + "):" in STATEMENT
