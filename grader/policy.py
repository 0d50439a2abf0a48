"""Static forbidden-API check (placeholder rules until the policy lands)."""

import ast
from typing import Any


def check(tree: ast.Module, source: str, policy: dict[str, Any]) -> list[str]:
    return []


def explain(violations: list[str]) -> str:
    return "\n".join(violations)
