"""Auto-grader for PyTorch coding challenges, each a package (problem/<id>/ and reference/<module>/).
Run it as `python -m grader SUBMISSION [--problem ID]`, `python -m grader batch PATH...` for many, or
`python -m grader serve` over HTTP; from Python: `from grader import Grader, AsyncGrader, grade_source,
grade_many` (grader.client for the service)."""

__version__ = "0.1.0"

_API = ("Grader", "AsyncGrader", "grade_source", "grade_many", "Report")


def __getattr__(name: str) -> object:
    """The API is imported on first use, so that `import grader` (and the command line) does not
    pay for it."""
    if name in _API:
        from grader import api

        return getattr(api, name)
    raise AttributeError(f"module 'grader' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
