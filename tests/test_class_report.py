"""The class at a glance (--class-report): which pairs of submissions share unusually much code (and
that the starter code does not make every pair alike), and the page as a real browser shows it:
Debian's headless Chromium, which `make test` installs."""

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from grader.batch.class_report import write_class_report
from grader.batch.gradebook import Counting
from grader.batch.similarity import SIMILAR, compare, normalised
from grader.spec import problem_spec
from tests.lms_downloads import example, near_copy, notebook

SPEC = problem_spec()
STUB = (SPEC.folder / "stub.py").read_text()
UNRELATED = ["accepted/einsum_everywhere", "accepted/loops_over_heads", "accepted/flat_rows_var_mean", "accepted/port_annotated_transformer"]


def test_a_renamed_reformatted_copy_is_a_pair_and_independent_solutions_are_not():
    codes = [normalised("original", example("accepted/plain_helpers")), normalised("copy", near_copy(example("accepted/plain_helpers")))]
    codes += [normalised(name, example(name)) for name in UNRELATED]
    result = compare(codes, STUB)
    assert [(p.a.id, p.b.id) for p in result.pairs] == [("original", "copy")]
    assert result.pairs[0].similarity > 0.9 > SIMILAR


def test_the_starter_code_does_not_make_every_pair_alike():
    # Every student kept the stub's lines and wrote their own code below them: alike only in the stub.
    codes = [normalised(f"s{i}", STUB + "\n" + example(name)) for i, name in enumerate(UNRELATED)]
    codes += [normalised(f"stub{i}", STUB) for i in range(3)]  # three students handed in the stub itself
    assert compare(codes, STUB).pairs == []
    assert compare(codes, "").pairs != []  # without removing the stub, they would all look copied


def test_a_page_that_lists_only_the_most_similar_pairs_says_how_many_there_are(monkeypatch):
    from grader.batch import similarity
    from grader.batch.class_report import _pairs_section

    monkeypatch.setattr(similarity, "MOST_PAIRS", 1)  # two copied pairs, one listed
    codes = [normalised(f"{name}-{who}", source) for name in UNRELATED[:2] for who, source in (("a", example(name)), ("b", near_copy(example(name))))]
    result = compare(codes, STUB)
    assert result.found == 2 and len(result.pairs) == 1
    assert '<p id="pair-count">the 1 most similar of 2 pairs (the others are less similar).</p>' in _pairs_section(result, {})


def results_line(student: str, name: str, verdict: str, failing: dict[str, str], diagnosis: str = "") -> dict:
    cases = [{"name": f"{family}_{i}", "family": family, "status": "passed", "check": ""} for i, family in enumerate(["basic", "soft_mask", "float64"])]
    for case in cases:
        if case["family"] in failing:
            case["status"], case["check"] = verdict, failing[case["family"]]
    return {"id": student, "name": name, "verdict": verdict, "message": f"{verdict} message", "cases": cases, "diagnosis": [diagnosis] if diagnosis else []}


def a_class(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    lines = [
        results_line("1001", "smithbob", "accepted", {}),
        results_line("1002", "doejane", "accepted", {}),
        results_line("1003", "leeann", "wrong_answer", {"soft_mask": "values"}, "The mask is applied as a hard threshold."),
        results_line("1004", "kimmin", "wrong_answer", {"soft_mask": "values", "float64": "gradient"}, "The mask is applied as a hard threshold."),
        results_line("1005", "parkjo", "runtime_error", {"basic": "exception", "soft_mask": "exception", "float64": "exception"}),
        {
            "id": "notes",
            "name": "",
            "verdict": "invalid_submission",
            "message": "notes.txt is not graded",
            "cases": [],
            "not_graded": "notes.txt is not graded",
        },
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    sources = {"1001": example("accepted/plain_helpers"), "1002": near_copy(example("accepted/plain_helpers"))}
    sources |= dict(zip(["1003", "1005"], [example(name) for name in UNRELATED[:2]], strict=True))
    paths = {}
    for student, text in sources.items():
        paths[student] = tmp_path / f"{student}.py"
        paths[student].write_text(text)
    paths["1004"] = tmp_path / "1004.ipynb"
    paths["1004"].write_text(notebook(example(UNRELATED[2])))  # a notebook: compared by its code cells
    return results, paths


def chromium(*arguments: str, profile: Path) -> subprocess.CompletedProcess:
    """Debian's Chromium, headless, offline and throwaway (as root it needs --no-sandbox)."""
    browser = shutil.which("chromium")
    assert browser, "chromium is not installed: make test installs it (tools/system-packages), or apt-get install chromium"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update"]
    flags += ["--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=2000"]
    return subprocess.run([browser, *flags, *arguments], capture_output=True, text=True, timeout=120)


@pytest.mark.sandbox
def test_the_class_page_shows_the_scores_verdicts_failures_and_the_copied_pair_in_a_real_browser(tmp_path):
    results, paths = a_class(tmp_path)
    page = tmp_path / "class.html"
    said = write_class_report(page, results, SPEC, Counting(SPEC.scoring, 10), paths)
    assert "6 submissions; 1 pairs of unusually similar code among the 5 of this run" in said
    source = page.read_text(encoding="utf-8")
    assert not re.search(r"(src|href)\s*=|https?://(?!www\.w3\.org/2000/svg)|<script", source)  # nothing to fetch, nothing to run

    done = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile")
    dom = html.unescape(done.stdout)
    assert "<svg" in dom, done.stderr[-2000:]
    assert "6 submissions in" in dom and "points out of 10" in dom and "mean 3.33" in dom  # 2 accepted of 6, 10 points each
    counts = [int(n) for n in re.findall(r'class="bin" data-count="(\d+)"', dom)]
    assert len(counts) == 10 and counts[0] == 4 and counts[-1] == 2  # four at 0 (the entry not graded too), two at 10
    assert re.search(r"<td>wrong_answer</td><td class=\"n\">2</td>", dom) and re.search(r"<td>accepted</td><td class=\"n\">2</td>", dom)
    assert re.search(r"<td>values</td><td class=\"n\">2</td>", dom)  # the check most failed
    assert "soft_mask (3 of 5 cases failed)" in dom  # the family most failed: leeann's, kimmin's, parkjo's
    assert re.search(r"The mask is applied as a hard threshold\.</td><td class=\"n\">2</td>", dom)
    pairs = re.findall(r'class="pair" data-a="(\w+)" data-b="(\w+)"', dom)
    assert pairs == [("1001", "1002")]  # the copy, and no pair of unrelated solutions
    assert "1001 (smithbob) and 1002 (doejane)" in dom and dom.count("<mark>") > 10  # the shared code marked, side by side

    shot = tmp_path / "class.png"
    done = chromium(f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri(), profile=tmp_path / "profile2")
    assert shot.exists() and shot.stat().st_size > 20_000, done.stderr[-2000:]
