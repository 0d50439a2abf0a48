"""The package format (docs/problem-format.md): what a problem.toml may hold, the one-line error for
a key that is unknown, missing or of the wrong type, a package that extends another, and problem
knowledge kept in the packages, never in grader/."""

import re
import tomllib
from pathlib import Path

import pytest
import torch

from grader.package_format import SCHEMA
from grader.spec import PROBLEMS, ROOT, SetupError, load_spec, problem_ids, problem_spec, read_package

TIED = PROBLEMS / "mlm-forward-tied" / "problem.toml"
FIXTURE = ROOT / "tests" / "fixture_problem" / "problem.toml"


def written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "problem.toml"
    path.write_text(text)
    return path


def refusal(path: Path) -> str:
    load_spec.cache_clear()
    with pytest.raises(SetupError) as raised:
        load_spec(path)
    return str(raised.value)


# -- knowledge of a challenge lives in its package ------------------------------------------------


def torchs(name: str) -> bool:
    """A name torch defines (torch.linalg.eigh is torch's, though a challenge's entry point is eigh)."""
    return any(hasattr(module, name) for module in (torch, torch.nn.functional, torch.linalg))


def challenge_names() -> dict[str, str]:
    """Each name that belongs to one challenge, and the challenge: its id, hidden module, entry
    point, probe cases, and the families and diagnosis parts whose names are compound identifiers
    (a plain word such as "random" or "probes" is the format's or English, and names torch defines are torch's)."""
    names = {}
    for problem in problem_ids():
        spec = problem_spec(problem)
        own = {problem, spec.module.rpartition(".")[2]} | {spec.entry_point} - set(filter(torchs, [spec.entry_point]))
        compound = set(spec.families) | set(spec.diagnosis.parts if spec.diagnosis else ())
        own |= {name for name in compound if "_" in name and not torchs(name)}
        own |= set(spec.diagnosis.probes) if spec.diagnosis else set()
        names |= dict.fromkeys(own, problem)
    return names


def test_no_file_under_grader_names_a_challenge_a_probe_or_a_family_of_one():
    names = challenge_names()
    assert {"mlm-forward-tied", "probe_attention_only", "soft_mask", "ignored_class", "AdamW"} <= names.keys()  # the test reads real names
    pattern = re.compile(r"(?<![A-Za-z0-9_-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?![A-Za-z0-9_-])")
    found = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1} names {match.group(1)!r} ({names[match.group(1)]})"
        for path in sorted((ROOT / "grader").rglob("*"))
        if path.suffix in (".py", ".toml")
        for text in [path.read_text(encoding="utf-8")]
        for match in pattern.finditer(text)
    ]
    assert found == []


def test_the_untied_challenge_extends_the_tied_one_and_says_only_what_differs():
    own = tomllib.loads((PROBLEMS / "mlm-forward" / "problem.toml").read_text())
    assert own["extends"] == "mlm-forward-tied" and "limits" not in own and "rules" not in own
    untied, tied = problem_spec("mlm-forward"), problem_spec("mlm-forward-tied")
    assert (untied.limits, untied.tolerances, untied.rules, untied.outputs) == (tied.limits, tied.tolerances, tied.rules, tied.outputs)
    assert "w_head" in untied.parameter_names and untied.public_seed != tied.public_seed and untied.diagnosis is None
    assert not [t for t in untied.templates if t.family == "probes"] and "untied_head" in untied.families
    _, files = read_package(PROBLEMS / "mlm-forward" / "problem.toml")
    assert files == [PROBLEMS / "mlm-forward" / "problem.toml", TIED]


# -- one line for a key that is not right ---------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (('entry_point = "scale_count"', 'entry_pont = "scale_count"'), "[problem] has an unknown key 'entry_pont' (did you mean 'entry_point'?)"),
        (('entry_point = "scale_count"', ""), "[problem] lacks the required key 'entry_point'"),
        (("[limits]", "[limit]"), "the file's top level has an unknown key 'limit' (did you mean 'limits'?)"),
        (
            ("float64 = 1e-12\n\n[tolerance.gradient]", "float64 = 1e-12\n\n[tolerance.gradiant]"),
            "[tolerance] has an unknown key 'gradiant' (did you mean 'gradient'?)",
        ),
        (("case_seconds = 10", 'case_seconds = "10"'), "[limits]: case_seconds must be a number, not str '10'"),
        (("rows = 4\nD = 6", "rowz = 4\nD = 6"), "[[cases]] 'zeros_in_x' has an unknown key 'rowz' (did you mean 'rows'?)"),
        (("keep = false", "kept = false"), "[[families]] 'no_shift' has an unknown key 'kept' (did you mean 'keep'?)"),
    ],
    ids=["typo", "missing", "table", "subtable", "type", "case-setting", "family-setting"],
)
def test_a_key_that_is_unknown_missing_or_mistyped_is_one_line_naming_it_the_file_and_the_nearest(tmp_path, change, said):
    text = FIXTURE.read_text()
    assert change[0] in text
    path = written(tmp_path, text.replace(change[0], change[1], 1))
    message = refusal(path)
    assert said in message and str(path) in message and "\n" not in message, message


def test_a_setting_no_default_declares_is_refused_with_where_to_declare_it(tmp_path):
    path = written(tmp_path, FIXTURE.read_text().replace("rows = 4\nD = 6", "rows = 4\nD = 6\nshape_kind = 2", 1))
    assert "[[cases]] 'zeros_in_x' has an unknown key 'shape_kind' (a generator setting must first be declared in [defaults])" in refusal(path)


def test_a_package_that_extends_an_unknown_one_is_told_the_nearest_installed(tmp_path):
    path = written(tmp_path, 'extends = "mlm-forwrd-tied"\n[problem]\nid = "x"\nentry_point = "f"\n')
    assert "extends 'mlm-forwrd-tied', which is no installed problem (did you mean 'mlm-forward-tied'?)" in refusal(path)


def test_an_extending_package_may_drop_only_what_it_inherits(tmp_path):
    path = written(tmp_path, 'extends = "mlm-forward-tied"\ndrop = ["probez"]\n[problem]\nid = "x"\nentry_point = "f"\n')
    assert "drop names 'probez', which is no inherited family or case (did you mean 'probes'?)" in refusal(path)


def test_an_extending_package_overlays_a_family_by_name_and_adds_its_own(tmp_path):
    text = (
        'extends = "mlm-forward-tied"\n[problem]\nid = "tied-variant"\nentry_point = "mlm_forward_tied"\n'
        '[[families]]\nname = "soft_mask"\ncount = 5\n'
        '[[families]]\nname = "extra"\ndescription = "more"\ncount = 2\n'
    )
    load_spec.cache_clear()
    spec = load_spec(written(tmp_path, text))
    tied = problem_spec("mlm-forward-tied")
    assert spec.families["soft_mask"].count == 5 and spec.families["soft_mask"].hint == tied.families["soft_mask"].hint
    assert spec.families["extra"].count == 2 and spec.module == "reference.tied_variant"  # [problem] module is never inherited


def test_every_key_of_the_format_is_specified_in_the_docs():
    """Each table's section of docs/problem-format.md names each of its keys (in a row of its table)."""
    docs = (ROOT / "docs" / "problem-format.md").read_text()
    sections = re.split(r"^## ", docs, flags=re.MULTILINE)

    def section(table: str) -> str:
        top = table.partition(".")[0]
        if not top:
            return docs
        heading = [text for text in sections if f"`[{top}]`" in text.splitlines()[0] or f"`[[{top}]]`" in text.splitlines()[0]]
        assert heading, f"no section for [{top}]"
        return heading[0]

    missing = [
        f"[{table or 'top level'}] {key}"
        for table, keys in SCHEMA.items()
        for key in keys
        if not any(f"`{form}`" in section(table) for form in (key, f"[{key}]", f"[[{key}]]"))
    ]
    assert missing == []


def test_every_installed_package_reads_without_error_and_has_its_own_module():
    for problem in problem_ids():
        spec = problem_spec(problem)
        assert spec.digest and spec.hidden_folder.is_dir(), problem


# -- one tolerance lookup -------------------------------------------------------------------------


def test_one_tolerance_lookup_family_over_output_over_spec_and_the_table_shows_the_one_applied():
    from grader.formats.text import render_text
    from grader.results import CaseResult, Report, Verdict
    from grader.spec import parse_spec

    data = tomllib.loads(FIXTURE.read_text())
    data["outputs"][0]["tolerance"] = {"float32": 1e-3}
    data["families"][1]["tolerance"] = {"float32": 1e-2}
    spec = parse_spec(data)
    z, count = spec.outputs
    assert spec.tolerance("basic", "float32", z) == 1e-3 and spec.tolerance("no_shift", "float32", z) == 1e-2
    assert spec.tolerance("basic", "float32", count) == spec.tolerances["float32"] and spec.tolerance("basic", "float32") == 1e-3  # None: the first output
    assert spec.tolerance("no_shift", "float32", gradient=True) == spec.gradient_tolerances["float32"]
    row = CaseResult("c", "basic", "float32", True, "rows=1", status=Verdict.WRONG_ANSWER, check="values", max_rel=5e-3, tolerance=1e-3)
    table = render_text(Report(Verdict.WRONG_ANSWER, "case c failed", "s.py", "id", "process", cases=[row]), spec)
    assert "5.0e-03   1.0e-03" in table
