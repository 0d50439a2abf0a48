"""The fixture's oracle."""

from tests.fixture_problem.reference import differently as oracle

__all__ = ["oracle"]
