"""Messages a candidate can act on: what the submission printed, the end of a public run, numbers
that show the difference, one line for a run that never reached a case, a diagnosis in every
format, and a test suite that does not depend on what problem/solution.py holds."""

import ast
import json
import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from grader import policy
from grader.child import wire
from grader.formats import FORMATS, Options, render
from grader.formats.gradescope import to_gradescope
from grader.formats.prairielearn import to_prairielearn
from grader.formats.text import ERROR_COLUMN, OUTPUT_SHOWN, render_text
from grader.judge import PUBLIC_PASSED, Rejection, read_submission
from grader.results import NOT_RUN, CaseResult, Report, Verdict
from grader.sandbox.output import WITHHELD_OUTPUT, CappedBuffer
from grader.spec import load_spec
from tests import in_process
from tests.grading import ROOT, SUBMISSIONS, grade_json, run_grader
from tests.test_hidden_cases import a_case, judged

SPEC = load_spec()
CORRECT = SUBMISSIONS / "accepted" / "plain_helpers.py"
STDOUT_HEADING = "--- what your submission printed on stdout ---"


def table_row(text: str, name: str) -> list[str]:
    return next(line for line in text.splitlines() if line.startswith(name + " ")).split()


# --- 1. the submission's own output -------------------------------------------------------------


BUFFERED = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}  # as in the child, whose environment is cleared


@pytest.mark.sandbox
@pytest.mark.parametrize("way_out", ["os._exit(3)", "os.abort()", "sys.exit(4)", "raise ValueError('boom')"])
def test_the_childs_output_reaches_the_pipe_whatever_way_it_ends(way_out):
    """The child's streams are unbuffered from its first line: a print without flush is kept even when
    the process ends without flushing (os._exit) or dies of a signal."""
    code = f"import os, sys\nfrom grader.child.runner import unbuffered_output\nunbuffered_output()\nprint('kept before the end')\n{way_out}\n"
    ended = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=BUFFERED)
    assert ended.returncode != 0 and ended.stdout == "kept before the end\n", ended.stderr


@pytest.mark.sandbox
def test_without_unbuffered_output_a_print_before_os_exit_is_lost():
    """The control of the test above: Python's own buffered stdout loses it, so that test can fail."""
    ended = subprocess.run([sys.executable, "-c", "import os\nprint('lost')\nos._exit(3)\n"], capture_output=True, text=True, timeout=60, env=BUFFERED)
    assert ended.returncode == 3 and ended.stdout == ""


FAILING_AFTER_PRINT = {
    "raises_in_call": ("def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):\n"
                       "    print('inside the call')\n    raise ValueError('deliberate')\n", "[case public_tiny, forward call]", "inside the call"),
    "exits_at_import": ("print('while importing')\nraise SystemExit(3)\n", "[while importing the file]", "while importing"),
}  # fmt: skip


@pytest.mark.sandbox
@pytest.mark.parametrize("name", FAILING_AFTER_PRINT)
def test_what_a_failing_submission_printed_without_flush_is_shown_under_a_heading(name, tmp_path):
    source, label, printed = FAILING_AFTER_PRINT[name]
    path = tmp_path / f"{name}.py"
    path.write_text('"""A candidate\'s debugging print, never flushed, then a failure."""\n\n' + source)
    result = run_grader(str(path), "--public")
    assert result.returncode == 1 and "RUNTIME_ERROR" in result.stdout, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[lines.index(STDOUT_HEADING) + 1 :][:2] == [label, printed], result.stdout


def test_long_output_is_cut_in_the_text_report_with_a_note():
    printed = "".join(f"line {i}\n" for i in range(2000))
    report = Report(Verdict.ACCEPTED, "all 1 cases passed", "s.py", "id", "process", stdout=printed)
    text = render_text(report, SPEC)
    shown = text[text.index(STDOUT_HEADING) :]
    assert "line 0\n" in shown and "line 1999" in shown and "line 1000\n" not in shown  # the beginning and the end
    hidden = len(printed) - 2 * (OUTPUT_SHOWN // 2)
    assert f"[... {hidden} characters not shown here; the JSON report (--json) keeps the first {SPEC.limits.output_bytes // 1024} KiB ...]" in shown
    assert len(shown) < OUTPUT_SHOWN + 300


# Which call printed what: the runner writes a label line (wire.OUTPUT_LABEL) before the import and
# before each call; the grader's buffer takes them out and puts the label above what the call printed.


def label(what: str) -> bytes:
    return wire.OUTPUT_LABEL + what.encode() + b"\n"


STREAM = label("import") + b"importing\n" + label("public_tiny forward") + b"forward says\n" + label("public_tiny gradient")
STREAM += label("public_multi_head forward") + b"partial line" + label("public_multi_head gradient") + b"gradient says\n"
LABELLED = (
    "[while importing the file]\nimporting\n[case public_tiny, forward call]\nforward says\n"
    "[case public_multi_head, forward call]\npartial line\n[case public_multi_head, gradient call]\ngradient says\n"
)


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_output_is_labelled_with_the_call_that_printed_it_however_the_pipe_cuts_it(size):
    """A label with nothing printed after it is left out (public_tiny's gradient call printed nothing);
    a label always starts a line; the labels cost none of the bytes kept."""
    buffer = CappedBuffer(64)
    for i in range(0, len(STREAM), size):
        buffer.feed(STREAM[i : i + size])
    buffer.end()
    assert buffer.text() == buffer.shown() == LABELLED
    assert buffer.total == len(b"importing\nforward says\npartial linegradient says\n") < 64


def test_a_label_line_that_is_not_the_runners_is_output():
    buffer = CappedBuffer(1000)
    printed = wire.OUTPUT_LABEL + b"not a label!\n" + wire.OUTPUT_LABEL + b"x" * 200 + b"\n" + wire.OUTPUT_LABEL[:5]
    buffer.feed(printed)
    buffer.end()
    assert buffer.text().encode() == printed


def held_back_after(public: bytes, hidden: bytes) -> CappedBuffer:
    buffer = CappedBuffer(1000)
    buffer.feed(public)
    buffer.hold_back()  # just before the first hidden case is sent
    buffer.feed(hidden)
    buffer.end()
    return buffer


def test_the_labels_of_hidden_cases_are_withheld_and_a_silent_submission_shows_no_withheld_line():
    public = label("public_tiny forward") + b"public print\n"
    silent = held_back_after(public, label("edge_no_blocks forward") + label("edge_no_blocks gradient"))
    assert silent.shown() == "[case public_tiny, forward call]\npublic print\n" and not silent.held_back  # as before the labels
    loud = held_back_after(public, label("edge_no_blocks forward") + b"hidden print\n")
    assert "edge_no_blocks" not in loud.shown() and "hidden print" not in loud.shown()
    assert loud.shown() == "[case public_tiny, forward call]\npublic print\n" + WITHHELD_OUTPUT
    assert loud.text().endswith("[case edge_no_blocks, forward call]\nhidden print\n")  # staff see it all


def test_a_label_begun_in_a_public_case_and_ended_in_a_hidden_one_is_withheld():
    """A submission that prints the start of a label line last in a public case and its end (hidden
    data) in a hidden case reads nothing of it back: what is shown is decided by offsets."""
    attack = held_back_after(b"public\n" + wire.OUTPUT_LABEL, b"secret7 forward\nhidden print\n")
    assert attack.shown() == "public\n" + WITHHELD_OUTPUT
    assert attack.text() == "public\n[case secret7, forward call]\nhidden print\n"  # staff see it all


@pytest.mark.sandbox
def test_forward_and_gradient_prints_are_labelled_with_their_case_and_call(tmp_path):
    """The gradient call is the one whose w_emb requires grad: each line must sit under its own label."""
    path = tmp_path / "prints_requires_grad.py"
    path.write_text(
        (SUBMISSIONS / "accepted" / "plain_helpers.py").read_text()
        + "\n\n_right = mlm_forward_tied\n\n\n"
        + "def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):\n"
        + "    print('requires grad', w_emb.requires_grad)\n"
        + "    return _right(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads)\n"
    )
    report, status = grade_json(str(path), "--public")
    assert status == 0, report
    names = [case["name"] for case in report["cases"]]
    expected = "".join(f"[case {name}, forward call]\nrequires grad False\n[case {name}, gradient call]\nrequires grad True\n" for name in names)
    assert report["stdout"] == expected and report["stderr"] == ""


@pytest.mark.sandbox
def test_a_silent_submission_shows_no_output_at_all():
    report, status = grade_json(str(CORRECT))  # the hidden cases too: their labels are no output
    assert status == 0 and report["stdout"] == report["stderr"] == "" and "staff_only" not in report


# --- 2. the end of a public run -----------------------------------------------------------------


@pytest.mark.sandbox
def test_a_public_run_that_passes_ends_with_the_public_cases_not_a_verdict():
    result = run_grader(str(SUBMISSIONS / "accepted" / "prints_without_flush.py"), "--public")
    assert result.returncode == 0, result.stdout + result.stderr  # the exit status of --public is unchanged
    count = len(in_process.cases_and_expected(SPEC, public_only=True))
    assert result.stdout.rstrip().splitlines()[-1] == PUBLIC_PASSED.format(count) == f"all {count} public cases passed; hidden cases not run"
    assert "ACCEPTED" not in result.stdout.split("\n", 1)[1]  # below the file's name
    lines = result.stdout.splitlines()
    tiny = next(case for case, _ in in_process.cases_and_expected(SPEC, public_only=True) if case.name == "public_tiny")
    selected = int((tiny.args["mask_indicator"] > 0.5).sum())  # what the file prints: the case's masked positions
    assert lines[lines.index(STDOUT_HEADING) + 1 :][:2] == [
        "[case public_tiny, forward call]",
        f"selected {selected} positions",
    ]  # printed without flush, on a normal return


def test_the_json_of_a_public_run_says_it_is_public_only():
    passed = in_process.report(in_process.entry_point(CORRECT), public_only=True)
    shown = json.loads(render(passed, "json", SPEC, Options()))
    assert shown["verdict"] == "accepted" and shown["public_only"] is True and shown["message"] == PUBLIC_PASSED.format(len(passed.cases))
    assert "hidden cases were not run" in render_text(passed, SPEC).splitlines()[1]
    full = Report(Verdict.ACCEPTED, "all 3 cases passed", "s.py", "id", "process")
    assert json.loads(render(full, "json", SPEC, Options()))["public_only"] is False
    assert render_text(full, SPEC).splitlines()[1] == "Verdict:    ACCEPTED"


# --- 3. numbers ---------------------------------------------------------------------------------


def test_the_table_labels_its_error_column_and_shows_the_tolerance():
    case = a_case(public=True)
    tolerance = SPEC.tolerance(case.family, case.dtype)
    result = judged(case, output_scale=1.25)  # every logit a quarter too large: error / max|expected| = 0.25
    assert result.check == "values" and result.max_rel == pytest.approx(0.25, rel=1e-5)
    text = render_text(Report(Verdict.WRONG_ANSWER, "failed", "s.py", "id", "process", cases=[result]), SPEC)
    header = next(line for line in text.splitlines() if line.startswith("case "))
    assert ERROR_COLUMN == "error / max|expected|" and ERROR_COLUMN in header and "tolerance" in header
    assert table_row(text, case.name)[-3:-1] == ["2.5e-01", f"{tolerance:.1e}"]


def test_a_gradient_failure_shows_the_gradients_error_and_tolerance():
    case = a_case(public=True)
    gradient_tolerance = SPEC.tolerance(case.family, case.dtype, gradient=True)
    result = judged(case, grad_scale=1.5)  # right logits, every gradient half as large again
    assert result.check == "gradient" and result.max_rel == pytest.approx(0.5, rel=1e-5)
    text = render_text(Report(Verdict.WRONG_ANSWER, "failed", "s.py", "id", "process", cases=[result]), SPEC)
    assert table_row(text, case.name)[-3:-1] == ["5.0e-01", f"{gradient_tolerance:.1e}"]


def test_the_per_element_relative_difference_is_named_as_such():
    message = judged(a_case(public=True), output_scale=1.25).message
    assert "Greatest per-element relative difference (|got - expected| / |expected| of one element): " in message
    assert "Greatest relative difference" not in message


# --- one message per distinct error ------------------------------------------------------------

TRACEBACK = 'raised during the call:\n  File "s.py", line 3, in mlm_forward_tied\n    x = w[ids.float()]\nIndexError: tensors used as indices must be long'


def failing(name: str, message: str, public: bool = True, staff: str = "") -> CaseResult:
    return CaseResult(name, "basic", "float32", public, "N=1", status=Verdict.RUNTIME_ERROR, check="exception", message=message, staff_message=staff)


def failed_report(cases: list[CaseResult]) -> Report:
    first = cases[0]
    return Report(Verdict.RUNTIME_ERROR, f"case {first.name} failed (0 of {len(cases)} cases passed): {first.message}", "s.py", "id", "process", cases=cases)


@pytest.mark.parametrize("verbose", [False, True])
def test_a_traceback_shared_by_several_cases_is_shown_once_with_the_cases_it_applies_to(verbose):
    other = "raised during the gradient call (backward through your result):\nRuntimeError: element 0 does not require grad"
    cases = [failing("a", TRACEBACK), failing("b", TRACEBACK), failing("c", other), failing("d", TRACEBACK), failing("e", other)]
    text = render_text(failed_report(cases), SPEC, verbose=verbose)
    assert text.count("IndexError") == 1 and text.count("element 0 does not require grad") == 1, text
    assert "(the same message for 2 more cases: b, d)" in text and f"cases c, e: {other}" in text


def test_without_verbose_three_other_messages_are_shown_and_the_rest_counted():
    cases = [failing("first", TRACEBACK)] + [failing(f"c{i}", f"ValueError: number {i // 2}") for i in range(10)]  # 5 messages, 2 cases each
    text = render_text(failed_report(cases), SPEC)
    assert [n for n in range(5) if f"ValueError: number {n}" in text] == [0, 1, 2]
    assert "(4 more failing cases with 2 other messages; --verbose shows each)" in text
    assert all(f"ValueError: number {n}" in render_text(failed_report(cases), SPEC, verbose=True) for n in range(5))


def test_hidden_cases_are_grouped_by_what_the_candidate_reads_never_by_their_withheld_messages():
    """Two reports whose hidden cases' real messages are alike in one and differ in the other read the
    same to the candidate; staff see each distinct real message once."""
    withheld = "raised an exception (the message of a hidden case is not shown)"
    alike = [failing("p", TRACEBACK), failing("h1", withheld, False, "ValueError: 1"), failing("h2", withheld, False, "ValueError: 1")]
    differ = [failing("p", TRACEBACK), failing("h1", withheld, False, "ValueError: 1"), failing("h2", withheld, False, "ValueError: 2")]
    assert render_text(failed_report(alike), SPEC, verbose=True) == render_text(failed_report(differ), SPEC, verbose=True)
    assert f"cases h1, h2: {withheld}" in render_text(failed_report(differ), SPEC, verbose=True)
    assert "cases h1, h2 (hidden): ValueError: 1" in render_text(failed_report(alike), SPEC, staff=True)
    staff = render_text(failed_report(differ), SPEC, staff=True)
    assert "case h1 (hidden): ValueError: 1" in staff and "case h2 (hidden): ValueError: 2" in staff


@pytest.mark.sandbox
def test_a_file_that_raises_in_every_case_shows_its_traceback_once():
    result = run_grader(str(SUBMISSIONS / "runtime_error" / "raises_in_call.py"), "--public")
    assert result.returncode == 1 and result.stdout.count("IndexError: tensors used as indices") == 1, result.stdout
    count = len(in_process.cases_and_expected(SPEC, public_only=True))
    assert f"(the same message for {count - 1} more cases: public_multi_head, " in result.stdout


# --- 4. a run that never reached a case ---------------------------------------------------------


@pytest.mark.parametrize("verdict", [Verdict.INVALID_SUBMISSION, Verdict.RUNTIME_ERROR, Verdict.TIME_LIMIT_EXCEEDED])
def test_a_start_up_failure_is_one_line_not_a_row_per_case(verdict):
    message = {Verdict.INVALID_SUBMISSION: "the file defines no function named mlm_forward_tied"}.get(verdict, "importing the submission failed")
    cases = [CaseResult(f"case_{i}", "basic", "float32", True, "N=1", status=verdict, message="not run: " + message) for i in range(5)]
    report = Report(verdict, message, "s.py", "id", "process", cases=cases)
    text = render_text(report, SPEC)
    assert "case_" not in text and "not run" not in text and text.count(message) == 1, text
    assert text.splitlines()[2] == "Cases:      none run (5 cases): the submission failed before the first case"
    suite = ET.fromstring(render(report, "junit", SPEC, Options()))
    assert [c.get("name") for c in suite.iter("testcase")] == [verdict.value.replace("_", " ").capitalize()]
    assert len(to_gradescope(report, SPEC.scoring)["tests"]) == 1


def test_a_run_cut_short_keeps_its_rows():
    cases = [CaseResult("first", "basic", "float32", True, "N=1", status="passed", seconds=0.1)]
    cases += [CaseResult("second", "basic", "float32", True, "N=1", status=Verdict.RUNTIME_ERROR, check="process", message="killed")]
    cases += [CaseResult("third", "basic", "float32", True, "N=1", status=NOT_RUN)]
    text = render_text(Report(Verdict.RUNTIME_ERROR, "case second failed", "s.py", "id", "process", cases=cases), SPEC)
    assert table_row(text, "first") and table_row(text, "second") and table_row(text, "third") and "Score:      1/3 cases" in text


# --- 5. the stub and problem/solution.py --------------------------------------------------------


def test_problem_stub_is_the_stub_and_raises_not_implemented():
    stub = in_process.load(ROOT / "problem" / "mlm-forward-tied" / "stub.py")
    with pytest.raises(NotImplementedError, match="see the statement, README.md next to this file"):
        stub.mlm_forward_tied(None, None, None, None, None, 1)
    tree = ast.parse((ROOT / "problem" / "mlm-forward-tied" / "stub.py").read_text())
    (function,) = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert [a.arg for a in function.args.args] == list(SPEC.parameter_names)


def reads_problem_solution(node: ast.AST) -> bool:
    """A path to problem/solution.py in code: the string "problem/solution.py", or ... / "problem" / "solution.py"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.endswith("problem/solution.py")
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.right, ast.Constant)
        and node.right.value == "solution.py"
        and isinstance(node.left, ast.BinOp)
        and isinstance(node.left.right, ast.Constant)
        and node.left.right.value == "problem"
    )


def test_no_test_reads_problem_solution_py():
    """problem/solution.py is where a candidate writes: the tests use problem/stub.py, so they pass whatever it holds."""
    assert reads_problem_solution(ast.parse('ROOT / "problem" / "solution.py"').body[0].value)
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.resolve() != Path(__file__).resolve() and "submissions" not in path.parts:
            assert not any(reads_problem_solution(node) for node in ast.walk(ast.parse(path.read_text()))), path
    # nor does the project's lint (make test runs it first)
    assert "problem/solution.py" in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["extend-exclude"]


@pytest.mark.sandbox
def test_cases_and_dist_are_ignored_by_git():
    ignored = subprocess.run(["git", "check-ignore", "cases/x.pt", "dist/kit.zip"], cwd=ROOT, capture_output=True, text=True)
    assert ignored.stdout.split() == ["cases/x.pt", "dist/kit.zip"], ignored.stderr


# --- 6. messages point to the statement wherever it is ------------------------------------------


def test_messages_point_to_the_statement_not_to_a_repository_path():
    """A kit holder has README.md next to solution.py and no problem/ folder."""
    for path in [*sorted((ROOT / "grader").rglob("*.py")), ROOT / "problem" / "mlm-forward-tied" / "stub.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert "problem/README" not in node.value, f"{path}: {node.value[:80]}"
    explained = policy.explain([policy.Violation(1, 0, "torch.softmax(x)", "forbidden", "write it yourself")])
    assert "see the rules in the statement: README.md, section Rules" in explained


# --- 7. the diagnosis in every format -----------------------------------------------------------


def test_the_diagnosis_is_in_every_format_for_a_wrong_answer_and_absent_when_accepted():
    wrong = in_process.report(in_process.entry_point(SUBMISSIONS / "wrong_answer" / "causal_mask.py"))
    assert wrong.verdict == Verdict.WRONG_ANSWER and wrong.diagnosis
    accepted = in_process.report(in_process.entry_point(CORRECT))
    assert accepted.verdict == Verdict.ACCEPTED and not accepted.diagnosis
    for fmt in FORMATS:
        shown = render(wrong, fmt, SPEC, Options())
        if fmt == "junit":  # once, as properties of the suite
            assert [p.get("value") for p in ET.fromstring(shown).iter("property") if p.get("name") == "diagnosis"] == wrong.diagnosis, fmt
        else:  # the text report wraps its lines; the others carry each sentence whole
            text = shown if fmt == "text" else json.loads(shown)["output" if fmt in ("gradescope", "prairielearn") else "diagnosis"]
            text = " ".join(text.split()) if fmt == "text" else "\n".join(text) if fmt == "json" else text
            assert all(sentence in text for sentence in wrong.diagnosis), fmt
        assert "Diagnosis" not in render(accepted, fmt, SPEC, Options()).replace('"diagnosis": []', ""), fmt
    assert "**Diagnosis:** " + wrong.diagnosis[0] in to_gradescope(wrong, SPEC.scoring)["output"]
    assert "Diagnosis: " + wrong.diagnosis[0] in to_prairielearn(wrong, SPEC.scoring)["output"]


@pytest.mark.parametrize("text, what", [("", "it is empty"), ("\n  \n", "it is empty"), ("# TODO: write it\n\n", "only comments and blank lines")])
def test_a_file_without_code_is_told_so_before_any_child_starts(tmp_path, text, what):
    path = tmp_path / "solution.py"
    path.write_text(text)
    with pytest.raises(Rejection) as rejected:
        read_submission(path, SPEC.limits.source_bytes)
    assert rejected.value.verdict == Verdict.INVALID_SUBMISSION
    assert str(rejected.value.message) == f"solution.py holds no code ({what}): submit the file with your solution in it"
