"""The diagnosis of a wrong answer names what is wrong, and never a part that is right.

Each non-hostile file in reference/mlm_forward_tied/submissions/wrong_answer says on a line `# diagnosis: KEY...` what
its diagnosis must find, exactly: the probe conclusion (grader.diagnosis.CONCLUSIONS), the known
mistake (a twin's name in reference/mlm_forward_tied/mistakes.py), "precision", or the checks not about numbers
(type, dtype, device, inputs). Every other file is a submission where those must not fire; the
correct files get no diagnosis at all. The twins themselves, run as submissions, are named and
localised too, so every sentence has a submission where it fires.
"""

import dataclasses
import json
import re
from pathlib import Path

import pytest
import torch

from grader import diagnosis
from grader.diagnosis import analyse, localise, probe_outcomes
from grader.formats.text import render_text
from grader.results import CaseResult, Report, Verdict
from grader.spec import load_spec, parse_spec
from reference.mlm_forward_tied.mistakes import MISTAKES, Twin
from reference.mlm_forward_tied.reference import mlm_forward_tied
from tests import in_process
from tests.grading import ROOT, SUBMISSIONS, grade_json, ordinary_files, run_grader

SPEC = load_spec()
MODEL = SPEC.diagnosis  # the package's probes and parts ([diagnosis] in its problem.toml)
CONCLUSIONS = {name: part.conclusion for name, part in MODEL.parts.items() if not part.told_as}  # the parts a diagnosis can name
PROBES = tuple(MODEL.probes)
OUTSIDE_PROBES = MODEL.premises["blocks"].probes
BLOCK_PROBES = tuple(name for name in PROBES if name in MODEL.nonfinite_probes)
EXAM = dataclasses.replace(SPEC, known_mistakes=False)
WRONG = ordinary_files("wrong_answer")
TWIN_NAMES = {twin.name for twin in MISTAKES}
CHECK_KEYS = {"type", "dtype", "device", "inputs", "precision"}

# Where the probes must locate each twin's mistake (None: the probes all pass, or prove nothing).
TWIN_PARTS = {
    "no_score_scaling": "scores",
    "scale_by_d_model": "heads",
    "scale_by_d_head": "scores",
    "softmax_over_queries": "scores",
    "interleaved_heads": "heads",
    "w_o_transposed": "value_path",
    "keys_from_query_weights": "scores",
    "values_from_key_weights": "value_path",
    "causal_mask": "averaging",
    "naive_softmax": None,  # only float32 overflows it; the probes are float64
    "softmax_shift_by_mean": None,  # the same
    "weights_transposed": "orientation",
    "unbiased_variance": "layer_norm",
    "eps_outside_root": "layer_norm",
    **{f"eps_{eps:g}": "layer_norm" for eps in (1e-6, 1e-12, 1e-8, 1e-4)},
    "eps_float32": None,  # only the float64 low-variance case shows it; the probes are far from eps
    "no_layer_norm": "layer_norm",
    "gelu_erf": "feed_forward",
    **{twin.name: "feed_forward" for twin in MISTAKES if twin.name.startswith("gelu_")},
    "relu": "feed_forward",
    "no_gelu": "feed_forward",
    "post_layer_norm": "structure",
    "no_attention_residual": "structure",
    "no_ffn_residual": "structure",
    "residual_from_normalized": "structure",
    "residuals_from_normalized": "structure",
    "parallel_sublayers": "chaining",
    "first_block_only": "across_blocks",
    "blocks_reversed": "across_blocks",
    "final_layer_norm": "embedding_or_head",
    "missing_pos_embed": "embedding_or_head",
    "mask_greater_equal": "selection",
    "mask_nonzero": "selection",
    "mask_positive": "selection",
    "column_major_gather": "gather_order",
    "all_positions": "selection",
    "no_head": "head_columns",
    "detached_head": "gradient_outside",
    "detached_lookup": "gradient_outside",
    "detached_attention_weights": "gradient_blocks",
    "detached_result": "gradient_outside",
}


def declared(path: Path) -> set[str]:
    """The keys a file's `# diagnosis:` line says its diagnosis must find."""
    found = re.findall(r"^# diagnosis: (.+)$", path.read_text(), flags=re.MULTILINE)
    assert len(found) == 1, f"{path.name} needs one line '# diagnosis: KEY...'"
    return set(found[0].split())


def judged(fn):
    return in_process.judge(fn, SPEC)


def finding_of(fn, spec=SPEC) -> diagnosis.Finding:
    cases, results, received = judged(fn)
    assert {r.status for r in results} <= {"passed", Verdict.WRONG_ANSWER}
    return analyse(cases, results, received, spec)


TABLES: dict[str, list[CaseResult]] = {}  # each wrong file's case results, as its report's table shows them (filled by wrong_findings)


@pytest.fixture(scope="module")
def wrong_findings() -> dict[str, tuple[diagnosis.Finding, diagnosis.Finding, dict]]:
    """For every wrong file: its finding with known mistakes, without them (an exam), and its probe outcomes."""
    found = {}
    for path in WRONG:
        cases, results, received = judged(in_process.entry_point(path))
        TABLES[path.stem] = results
        found[path.stem] = analyse(cases, results, received, SPEC), analyse(cases, results, received, EXAM), probe_outcomes(results, MODEL)
    return found


# -- the twins and the probes ------------------------------------------------------------------------
def test_the_untouched_twin_is_the_reference_bit_for_bit():
    for case in load_spec_cases():
        for dtype in (torch.float32, torch.float64):
            inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in case.inputs.items()}
            assert torch.equal(Twin()(**inputs, num_heads=case.args["num_heads"]), mlm_forward_tied(**inputs, num_heads=case.args["num_heads"])), case.name


def load_spec_cases():
    return [case for case, _ in in_process.cases_and_expected(SPEC)]


def test_twins_have_unique_names_a_fix_and_a_part_to_point_at():
    assert len(TWIN_NAMES) == len(MISTAKES)
    assert set(TWIN_PARTS) == TWIN_NAMES
    assert all(twin.what and twin.fix for twin in MISTAKES)
    assert {part for part in TWIN_PARTS.values() if part} <= set(CONCLUSIONS)


def test_the_spec_holds_every_probe_the_diagnosis_reads():
    probes = [t.name for t in SPEC.templates if t.family == "probes"]
    assert sorted(probes) == sorted(PROBES)
    # Public, so that the kit (and --public) names the part as the grader does.
    assert all(t.settings["visibility"] == "public" for t in SPEC.templates if t.name in PROBES)


@pytest.mark.slow
@pytest.mark.parametrize("twin", MISTAKES, ids=lambda twin: twin.name)
def test_each_twin_run_as_a_submission_is_named_and_localised(twin):
    cases, results, received = judged(twin)
    assert {r.status for r in results} <= {"passed", Verdict.WRONG_ANSWER}
    finding = analyse(cases, results, received, SPEC)
    assert finding.mistake == twin.name, finding.sentences
    assert finding.part == TWIN_PARTS[twin.name], finding.sentences
    sentence = next(s for s in finding.sentences if twin.what in s)
    if twin.gradient_only:
        assert sentence.startswith("Your logits are right and your gradients match")
    elif all(r.check == "shape" for r in results if not r.passed):  # a result of the wrong shape is not kept: its shape is what matches
        assert sentence.startswith("Your results have the shape of the reference")
    else:
        assert sentence.startswith("Your logits match the reference")
    assert CONCLUSIONS[finding.part] in finding.sentences[-1] if finding.part else len(finding.sentences) == 1


@pytest.mark.slow
def test_every_probe_conclusion_fires_for_some_twin_and_some_file(wrong_findings):
    by_twins = set(TWIN_PARTS.values()) - {None}
    by_files = {part for finding, _, _ in wrong_findings.values() for part in finding.parts}
    assert by_twins == set(CONCLUSIONS) - {"nonfinite_blocks"} and by_files == set(CONCLUSIONS)


# -- the corpus: exactly what each file declares ------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("path", WRONG, ids=lambda p: p.stem)
def test_each_wrong_file_gets_exactly_its_declared_diagnosis(path, wrong_findings):
    finding, exam, _ = wrong_findings[path.stem]
    keys = declared(path)
    assert keys <= TWIN_NAMES | set(CONCLUSIONS) | CHECK_KEYS, keys
    assert finding.sentences and finding.keys() == keys, finding.sentences
    # An exam names no mistake and keeps everything else.
    assert exam.keys() == keys - TWIN_NAMES, exam.sentences
    assert not any(s.startswith("Your logits") for s in exam.sentences)
    assert exam.sentences or keys <= TWIN_NAMES


def localise_(outcomes: dict[str, str]) -> tuple[str, ...]:
    return localise(outcomes, MODEL)


def test_the_diagnosis_never_says_of_a_probe_what_the_table_contradicts(wrong_findings):
    """The probes the diagnosis names as giving wrong logits failed the values (or shape) check in the
    table; those it names as giving right logits with a wrong gradient failed the gradient check; and
    no sentence claims a probe passes. (A float32 constant in float64 cases once was told "the
    attention-only one passes" beside a table where probe_attention_only failed its gradient check.)"""
    checked = 0
    for stem, (finding, _, _) in wrong_findings.items():
        table = {r.name: r for r in TABLES[stem]}
        for sentence in finding.sentences:
            assert not re.search(r"\bpass(es)?\b", sentence), (stem, sentence)
            said = re.search(r"\(Probe cases with (.*)\.\)$", sentence)
            if not said:
                continue
            checked += 1
            for clause in said.group(1).split("; with "):
                kind, _, names = clause.partition(": ")
                wanted = {"gradient"} if "wrong gradient" in kind else {"values", "shape"}
                assert all(table[name].check in wanted for name in names.split(", ")), (stem, clause)
    assert checked >= 10
    finding, _, _ = wrong_findings["gelu_float32_constants"]
    assert "probe_attention_only" in finding.sentences[-1].split("wrong gradient: ")[1]


def failing(*names: str, outcome: str = "values", **others: str) -> dict[str, str]:
    """Probe outcomes: the named probes fail, the others pass (or have the outcome given by name)."""
    return dict.fromkeys(PROBES, "ok") | dict.fromkeys(names, outcome) | others


FULL_BLOCK = ("probe_symmetric_weights", "probe_one_block", "probe_two_blocks")


def test_the_probe_conclusions_follow_the_pattern_of_failing_probes():
    assert localise_(failing()) == () and localise_({}) == ()
    assert localise_(failing("probe_attention_only", "probe_single_head", *FULL_BLOCK)) == ("scores",)
    assert localise_(failing("probe_attention_only", *FULL_BLOCK)) == ("heads",)
    # A failure before the blocks says nothing about the blocks, whatever else fails.
    assert localise_(dict.fromkeys(PROBES, "values")) == ("embedding_or_head",)
    assert localise_(failing("probe_two_blocks", outcome="gradient")) == ("gradient_blocks",)
    assert localise_(failing("probe_embedding", outcome="gradient")) == ("gradient_outside",)


def test_two_faults_are_each_named_and_the_part_they_share_is_not():
    """A causal mask and another activation: the attention and the feed-forward both fail, but one
    position with attention only passes, so the layer norm they share is right."""
    causal_and_relu = failing(
        "probe_without_attention", "probe_attention_only", "probe_uniform_attention", "probe_single_head", "probe_single_position", *FULL_BLOCK
    )
    assert localise_(causal_and_relu) == ("feed_forward", "averaging")
    assert localise_(dict(causal_and_relu, probe_single_position_attention="values")) == ("layer_norm",)


def test_a_part_is_named_only_when_no_other_explanation_is_as_small():
    # The probes without blocks did not run and every probe through a block fails: the outside and
    # the residual structure explain it equally well.
    unrun = dict.fromkeys(OUTSIDE_PROBES, "unknown") | dict.fromkeys(BLOCK_PROBES, "values")
    assert localise_(unrun) == ()
    # A probe that passes through a block proves the embedding and the head right: the fault is in the blocks.
    in_the_blocks = dict(unrun, probe_identity_blocks="ok")
    assert localise_(in_the_blocks) == localise_(dict(failing(*BLOCK_PROBES), probe_identity_blocks="ok")) == ("layer_norm",)
    # A failing probe whose every part a passing probe proves right: the pattern fits no fault, nothing is named.
    assert localise_(failing("probe_identity_blocks")) == ()


def test_nan_through_a_zeroed_matrix_is_not_blamed_on_the_residual_structure():
    nan = failing(*BLOCK_PROBES, outcome="nonfinite")
    assert localise_(nan) == ("nonfinite_blocks",)
    assert localise_(failing(*BLOCK_PROBES)) == ("structure",)  # the same failures, finite: the identity block changes x


# -- what the probes alone and the named mistakes achieve on the corpus --------------------------------
def test_the_probes_alone_localise_every_file_with_a_part(wrong_findings):
    for stem, (_, _, outcomes) in wrong_findings.items():
        parts = declared(SUBMISSIONS / "wrong_answer" / f"{stem}.py") & set(CONCLUSIONS)
        if parts and stem not in ("forgets_the_head",) and "nonfinite_blocks" not in parts:  # the shape and NaN are read from the outputs
            assert set(localise_(outcomes)) == parts, stem


def test_a_small_float64_error_that_is_not_float32_rounding_is_not_called_precision(wrong_findings):
    finding, _, _ = wrong_findings["gelu_float32_constants"]
    assert not finding.precision and finding.part == "feed_forward"


# -- robustness: nothing a submission returns makes the diagnosis fail -------------------------------------
@pytest.mark.parametrize(
    "result",
    [
        lambda rows: torch.full_like(rows, float("nan")),
        lambda rows: torch.zeros(rows.shape[0], rows.shape[1] + 1, dtype=rows.dtype),
        lambda rows: torch.zeros(2, 3, 4, dtype=rows.dtype),
        lambda rows: rows.to(torch.int64),
        lambda rows: rows.double().float() if rows.dtype == torch.float64 else rows.to(torch.float64),
    ],
    ids=["nan", "wrong-columns", "three-dimensional", "int64", "dtype-swapped"],
)
def test_any_returned_tensor_gives_a_diagnosis_without_error(result):
    def submission(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
        return result(mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads))

    report = in_process.report(submission)
    assert report.verdict == Verdict.WRONG_ANSWER and report.diagnosis


# -- hints: the misleading ones are gone ----------------------------------------------------------------
SOFT_MASK_HINT = SPEC.families["soft_mask"].hint


@pytest.mark.parametrize("public_only", [False, True], ids=["all-cases", "public"])
@pytest.mark.parametrize("name", ["column_major_gather", "modifies_input"])
def test_a_wrong_order_or_an_in_place_change_gets_no_soft_mask_hint(name, public_only):
    report = in_process.report(in_process.entry_point(SUBMISSIONS / "wrong_answer" / f"{name}.py"), public_only=public_only)
    assert report.verdict == Verdict.WRONG_ANSWER and SOFT_MASK_HINT not in report.hints
    assert report.diagnosis


@pytest.mark.parametrize("public_only", [False, True], ids=["all-cases", "public"])
def test_a_wrong_selection_rule_gets_the_soft_mask_hint(public_only):
    report = in_process.report(in_process.entry_point(SUBMISSIONS / "wrong_answer" / "mask_greater_equal.py"), public_only=public_only)
    assert SOFT_MASK_HINT in report.hints


def test_with_public_cases_only_a_detached_head_is_named_and_localised_outside_the_blocks():
    report = in_process.report(in_process.entry_point(SUBMISSIONS / "wrong_answer" / "detached_head.py"), public_only=True)
    assert all(c.check == "gradient" for c in report.cases if not c.passed)  # M = 0 has no head term to lose
    assert any("detached copy of w_emb" in sentence for sentence in report.diagnosis)
    assert CONCLUSIONS["gradient_outside"] in report.diagnosis[-1] and report.hints == []  # the diagnosis says where: no hint beside it


@pytest.mark.parametrize("name", ["detached_attention_weights", "detached_lookup"])
def test_the_gradient_hint_never_points_elsewhere_than_the_diagnosis(name):
    report = in_process.report(in_process.entry_point(SUBMISSIONS / "wrong_answer" / f"{name}.py"))
    located = [s for s in report.diagnosis if CONCLUSIONS["gradient_outside"] in s or CONCLUSIONS["gradient_blocks"] in s]
    assert located and not any("Only the gradient check fails" in hint for hint in report.hints), (report.diagnosis, report.hints)


def test_with_public_cases_only_eps_outside_the_root_is_named_and_its_hint_names_eps():
    report = in_process.report(in_process.entry_point(SUBMISSIONS / "wrong_answer" / "eps_outside_sqrt.py"), public_only=True)
    assert any("eps added after the square root" in sentence for sentence in report.diagnosis)
    assert report.hints and all("eps" in hint for hint in report.hints)


# -- the switch, the report, the command line ---------------------------------------------------------------
def test_known_mistakes_are_on_unless_the_spec_turns_them_off():
    data = json.loads(json.dumps(_spec_data()))  # a copy
    assert parse_spec(data).known_mistakes is True
    data["diagnosis"] = {"known_mistakes": False}
    assert parse_spec(data).known_mistakes is False


def _spec_data() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "problem" / "mlm-forward-tied" / "problem.toml").read_text())


def test_the_text_report_shows_the_diagnosis_right_under_the_verdict():
    report = Report(Verdict.WRONG_ANSWER, "case x failed", "s.py", "id", "process", cases=[CaseResult("x", "basic", "float32", True, "N=1")])
    report.diagnosis = ["First sentence. " * 12, "Second."]
    lines = render_text(report, SPEC).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Verdict:"))
    assert lines[at + 1].startswith("Score:") and lines[at + 2].startswith("Diagnosis:  First sentence.")
    continued = lines[at + 3 : lines.index("            Second.")]
    assert continued and all(line.startswith(" " * 12) and line[12] != " " and len(line) <= 12 + 110 for line in continued)
    assert lines[lines.index("            Second.") + 1] == ""


@pytest.mark.sandbox
def test_the_command_line_reports_the_diagnosis_and_an_exam_spec_names_no_mistake(tmp_path):
    wrong = str(SUBMISSIONS / "wrong_answer" / "no_score_scaling.py")
    report, status = grade_json(wrong)
    assert status == 1 and report["diagnosis"][0].startswith("Your logits match the reference without the 1/sqrt(d_head) scaling")
    assert CONCLUSIONS["scores"] in report["diagnosis"][1]

    exam = tmp_path / "spec.toml"
    exam.write_text((ROOT / "problem" / "mlm-forward-tied" / "problem.toml").read_text().replace("known_mistakes = true", "known_mistakes = false"))
    result = run_grader(wrong, "--spec", str(exam))
    lines = result.stdout.splitlines()
    assert lines[3].startswith("Diagnosis:  The embedding, the selection of rows and the tied head are right"), result.stdout
    assert "Your logits match" not in result.stdout and "sqrt(d_head)" in result.stdout


@pytest.mark.sandbox
def test_a_correct_file_gets_an_empty_diagnosis_in_json():
    report, status = grade_json(str(SUBMISSIONS / "accepted" / "plain_helpers.py"))
    assert status == 0 and report["diagnosis"] == []


def test_a_result_on_another_device_is_said_so_and_nothing_else():
    cases = load_spec_cases()
    results = [CaseResult(c.name, c.family, c.dtype, c.public, c.shape_text(), status="passed") for c in cases]
    results[0].status, results[0].check = Verdict.WRONG_ANSWER, "device"
    finding = analyse(cases, results, {}, SPEC)
    assert finding.keys() == {"device"} and finding.sentences[0].startswith("The result is not on the inputs' device")
