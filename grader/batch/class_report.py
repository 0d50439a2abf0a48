"""The class at a glance (--class-report FILE.html): one self-contained page, no script and nothing
fetched (inline CSS and SVG; a Content-Security-Policy that forbids any load), built from the whole
results file: the points' histogram, the verdicts, the checks and case families the class fails
most, the commonest diagnoses and messages, and the pairs of submissions whose code is unusually
similar (grader/batch/similarity.py), each with its two files side by side."""

import html
import json
from collections import Counter
from pathlib import Path
from typing import Any

from grader.batch.gradebook import Counting
from grader.batch.similarity import SIMILAR, Code, Comparison, compare, normalised
from grader.batch.store import kept, message_line
from grader.formats.points import shown_points
from grader.formats.safe import printable
from grader.notebook import NOTEBOOK_SUFFIX, NotebookError, convert
from grader.results import PASSED, Verdict
from grader.spec import Spec

BINS = 10
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{padding:.2em .6em;text-align:left;vertical-align:top;border-bottom:1px solid #eee}
td.n{text-align:right;font-variant-numeric:tabular-nums}.bar{background:#4a78b5;height:.8em;display:inline-block}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1em}.side>div{min-width:0}pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:12px;margin:0}
mark{background:#ffd36b}details{margin:.4em 0}summary{cursor:pointer}.muted{color:#666}
"""


def _e(text: Any) -> str:
    return html.escape(printable(str(text)))


def _latest_lines(results: Path) -> dict[str, dict[str, Any]]:
    """The last line of each id of the results file, whole (the class page reads what kept() drops)."""
    lines: dict[str, dict[str, Any]] = {}
    with open(results, encoding="utf-8", errors="surrogateescape") as f:
        for raw in f:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and isinstance(line.get("id"), str) and line.get("verdict"):
                lines[line["id"]] = line
    return dict(sorted(lines.items()))


def _histogram(points: list[float], top: float) -> str:
    """An SVG bar chart of the points in BINS bins from 0 to top (the last bin holds top)."""
    counts = [0] * BINS
    for p in points:
        counts[min(BINS - 1, int(p / top * BINS)) if top else 0] += 1
    tallest = max(counts) or 1
    width, height, bar = 560, 180, 50
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 40}" role="img" aria-label="points histogram">']
    for i, n in enumerate(counts):
        h = round(n / tallest * height)
        x = 10 + i * (bar + 4)
        low, high = top * i / BINS, top * (i + 1) / BINS
        label = f"[{shown_points(low)}, {shown_points(high)}{']' if i == BINS - 1 else ')'}"
        parts.append(
            f'<rect class="bin" data-count="{n}" x="{x}" y="{height - h + 10}" width="{bar}" height="{h}" fill="#4a78b5"><title>{label}: {n}</title></rect>'
        )
        parts.append(f'<text x="{x + bar / 2}" y="{height + 5}" font-size="11" text-anchor="middle">{n}</text>')
        parts.append(f'<text x="{x + bar / 2}" y="{height + 25}" font-size="10" text-anchor="middle">{shown_points(low)}-{shown_points(high)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _bars(rows: list[tuple[str, int]], total: int, head: str) -> str:
    """A table of (label, count) with a bar per row, as a share of `total`."""
    if not rows:
        return '<p class="muted">none</p>'
    body = "".join(
        f'<tr><td>{_e(label)}</td><td class="n">{n}</td><td><span class="bar" style="width:{round(300 * n / max(1, total))}px"></span></td></tr>'
        for label, n in rows
    )
    return f"<table><tr><th>{head}</th><th>students</th><th></th></tr>{body}</table>"


def _marked(code: Code, marked: frozenset[int]) -> str:
    """The code as HTML, the characters of the marked tokens in <mark>."""
    lines = code.text.splitlines()
    marks: dict[int, list[tuple[int, int]]] = {}
    for index in marked:
        if index < len(code.spans):
            (l1, c1), (l2, c2) = code.spans[index]
            for line in range(l1, l2 + 1):
                start = c1 if line == l1 else 0
                end = c2 if line == l2 else len(lines[line - 1]) if line - 1 < len(lines) else 0
                marks.setdefault(line, []).append((start, end))
    out = []
    for number, text in enumerate(lines, start=1):
        flags = [False] * len(text)
        for start, end in marks.get(number, []):
            for i in range(max(0, start), min(len(text), end)):
                flags[i] = True
        piece, inside = [], False
        for char, flag in zip(text, flags, strict=True):
            if flag != inside:
                piece.append("<mark>" if flag else "</mark>")
                inside = flag
            piece.append(_e(char))
        if inside:
            piece.append("</mark>")
        out.append(f'<span class="muted">{number:4} </span>{"".join(piece)}')
    return "\n".join(out)


def _code_of(path: Path) -> str:
    """The code compared for a submission: the file's text, a notebook's joined code cells."""
    data = path.read_bytes()[: 4 << 20]
    if path.suffix == NOTEBOOK_SUFFIX:
        try:
            return convert(data, path.name).source
        except NotebookError:
            return ""
    return data.decode("utf-8-sig", errors="replace")


def similar_pairs(sources: dict[str, Path], starter: str) -> Comparison:
    codes = []
    for submission_id, path in sorted(sources.items()):
        try:
            codes.append(normalised(submission_id, _code_of(path)))
        except OSError:
            continue
    return compare(codes, starter)


def _pairs_section(comparison: Comparison, names: dict[str, str]) -> str:
    def who(code_id: str) -> str:
        return _e(code_id + (f" ({names[code_id]})" if names.get(code_id) else ""))

    intro = (
        f"<p>{comparison.compared} submissions compared (this run's files): normalised tokens (names, numbers and strings "
        f"replaced, comments and layout dropped), the starter code's fingerprints removed ({comparison.starter_removed}), and "
        f"{comparison.ignored_common} fingerprints common to much of the class ignored. A pair is listed when each of the two "
        f"shares at least {round(SIMILAR * 100)}% of its code with the other; the shared code is marked. A listed pair is a "
        "reason to read both files, not a verdict.</p>"
    )
    if not comparison.pairs:
        return intro + '<p id="no-pairs">No pair of submissions is unusually similar.</p>'
    rows = []
    for index, pair in enumerate(comparison.pairs):
        shown = " open" if index == 0 else ""  # the most similar pair side by side at once; the others a click away
        rows.append(
            f'<details class="pair" data-a="{_e(pair.a.id)}" data-b="{_e(pair.b.id)}"{shown}><summary><b>{round(pair.similarity * 100)}%</b> '
            f'{who(pair.a.id)} and {who(pair.b.id)} <span class="muted">({round(pair.share_a * 100)}% of the first\'s code, '
            f"{round(pair.share_b * 100)}% of the second's)</span></summary>"
            f'<div class="side"><div><b>{who(pair.a.id)}</b><pre>{_marked(pair.a, pair.marked_a)}</pre></div>'
            f"<div><b>{who(pair.b.id)}</b><pre>{_marked(pair.b, pair.marked_b)}</pre></div></div></details>"
        )
    listed = len(comparison.pairs)
    count = f"{listed} pairs." if comparison.found <= listed else f"the {listed} most similar of {comparison.found} pairs (the others are less similar)."
    return intro + f'<p id="pair-count">{count}</p>' + "".join(rows)


def build(lines: dict[str, dict[str, Any]], spec: Spec, counting: Counting, comparison: Comparison, source: str) -> str:
    """The page's HTML."""
    students = len(lines)
    verdicts = Counter(line["verdict"] for line in lines.values())
    points = [m.total for m in map(counting.marks, map(kept, lines.values())) if m is not None]
    checks: Counter[str] = Counter()
    families: Counter[str] = Counter()
    family_cases: Counter[str] = Counter()
    family_failed: Counter[str] = Counter()
    diagnoses: Counter[str] = Counter()
    messages: Counter[str] = Counter()
    for line in lines.values():
        cases = [c for c in line.get("cases") or [] if isinstance(c, dict)]
        failing = [c for c in cases if c.get("status") not in (PASSED, "not_run")]
        checks.update({str(c.get("check") or c.get("status")) for c in failing})
        families.update({str(c.get("family")) for c in failing})
        for c in cases:
            family_cases[str(c.get("family"))] += 1
            family_failed[str(c.get("family"))] += c.get("status") not in (PASSED, "not_run")
        if line.get("diagnosis"):
            diagnoses[str(line["diagnosis"][0])] += 1
        if line["verdict"] not in (Verdict.ACCEPTED,):
            said = line.get("not_graded") or message_line(str(line.get("message") or ""))
            messages[said.split("): ", 1)[-1] if said.startswith("case ") else said] += 1
    names = {i: str(line.get("name") or "") for i, line in lines.items()}
    mean = f"{shown_points(sum(points) / len(points))}" if points else "-"
    family_rows = [(f"{family} ({family_failed[family]} of {family_cases[family]} cases failed)", n) for family, n in families.most_common()]
    body = [
        f"<h1>Class report: {_e(spec.id)}</h1>",
        f'<p id="summary">{students} submissions in <code>{_e(source)}</code>; points out of {shown_points(counting.maximum)} '
        f"(scoring {_e(counting.scoring.mode)}): mean {mean}; {len(points)} with points known.</p>",
        "<h2>Points</h2>",
        _histogram(points, counting.maximum),
        "<h2>Verdicts</h2>",
        _bars([(v, n) for v, n in verdicts.most_common()], students, "verdict"),
        "<h2>Checks the class fails most</h2>",
        '<p class="muted">Students with at least one case failing the check (values, gradient, shape, an exception...).</p>',
        _bars(checks.most_common(), students, "check"),
        "<h2>Case families the class fails most</h2>",
        _bars(family_rows, students, "family"),
        "<h2>Commonest diagnoses</h2>",
        _bars(diagnoses.most_common(10), students, "diagnosis (its first sentence)"),
        "<h2>Commonest messages</h2>",
        _bars(messages.most_common(10), students, "message (of what was not accepted)"),
        '<h2 id="pairs">Unusually similar submissions</h2>',
        _pairs_section(comparison, names),
    ]
    head = f'<meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{CSP}"><title>Class report: {_e(spec.id)}</title><style>{STYLE}</style>'
    return f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head><body>{"".join(body)}</body></html>\n'


def write_class_report(path: Path, results: Path, spec: Spec, counting: Counting, sources: dict[str, Path]) -> str:
    """Write the page (replaced whole) and return the line the batch prints about it."""
    lines = _latest_lines(results)
    stub = spec.folder / "stub.py"  # the starter code every student began from (python -m grader verify checks it is there)
    starter = stub.read_text(encoding="utf-8") if stub.is_file() else ""
    comparison = similar_pairs(sources, starter)
    page = build(lines, spec, counting, comparison, str(results))
    partial = path.with_name(path.name + ".partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(path)
    return (
        f"class report: {path} ({len(lines)} submissions; {len(comparison.pairs)} pairs of unusually similar code among the {comparison.compared} of this run)"
    )
