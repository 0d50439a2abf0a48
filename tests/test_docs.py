"""The documentation holds together: README.md is a short front door with no dated measurement,
every relative link of README.md and docs/*.md reaches a file (and its #anchor a heading there),
every docs page is in mkdocs.yml's nav and one click from the README, and every test, hostile file
and repository path the pages name exists. Pure text: no network, no mkdocs (`make docs` builds
the site strictly, which checks the same links again)."""

import re
import unicodedata
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
DOCUMENTS = [README, ROOT / "CHANGELOG.md", *PAGES]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
REPOSITORY_FOLDERS = ("grader/", "tests/", "deploy/", "bench/", "problem/", "reference/", "tools/", "docs/")


def prose(path: Path) -> str:
    """The text outside fenced code blocks, where links and headings are Markdown."""
    return FENCE.sub("", path.read_text())


def slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc extension (and so mkdocs) makes it."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").replace("**", "").replace("*", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for _, heading in HEADING.findall(prose(path)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}_{count}")
    return found


def links(path: Path) -> list[str]:
    return [target for target in LINK.findall(CODE_SPAN.sub("", prose(path))) if not re.match(r"[a-z]+:", target)]


def test_the_slugs_are_those_of_the_site():
    assert slug("Why the `chown` line") == "why-the-chown-line"
    assert slug("`python -m grader verify ID`: the author's gate") == "python-m-grader-verify-id-the-authors-gate"
    assert slug("Many machines: a Kubernetes Indexed Job") == "many-machines-a-kubernetes-indexed-job"


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_its_anchor(path):
    broken = []
    for target in links(path):
        name, _, anchor = target.partition("#")
        goal = (path.parent / name).resolve() if name else path
        if not goal.exists():
            broken.append(f"{target}: no such file")
        elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
            broken.append(f"{target}: no heading makes the anchor #{anchor}")
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_pages_of_the_site_link_only_to_pages_of_the_site():
    """mkdocs cannot follow a link out of docs/: code paths are written as code, not as links."""
    outside = []
    for page in PAGES:
        for target in links(page):
            name = target.split("#")[0]
            if name and not (page.parent / name).resolve().is_relative_to(DOCS):
                outside.append(f"{page.name}: {target}")
    assert not outside, outside


def test_the_readme_is_a_short_front_door_without_dated_measurements():
    text = README.read_text()
    assert len(text.splitlines()) <= 300, "README.md is over 300 lines: move the detail to a page of docs/"
    assert len(text.encode()) <= 20 * 1024, "README.md is over 20 KB: move the detail to a page of docs/"
    dated = re.findall(r"\b20\d\d-\d\d-\d\d\b", text)
    assert not dated, f"README.md holds dates {dated}: current figures go to docs/performance.md, history to CHANGELOG.md"


def test_every_page_is_in_the_sites_nav_and_one_click_from_the_readme():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["docs_dir"] == "docs" and config["strict"] is True

    def pages(entry: object) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, dict):
            return [page for value in entry.values() for page in pages(value)]
        return [page for item in entry for page in pages(item)] if isinstance(entry, list) else []

    listed = pages(config["nav"])
    assert len(listed) == len(set(listed))
    assert sorted(listed) == [page.name for page in PAGES]
    from_readme = {Path(target.split("#")[0]).name for target in links(README) if target.startswith("docs/")}
    assert {page.name for page in PAGES} <= from_readme


def test_the_tests_hostile_files_and_paths_the_docs_name_exist():
    defined = set(re.findall(r"^def (test_\w+)", "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py")), re.MULTILINE))
    submissions = {p.name for p in [*ROOT.glob("reference/*/submissions/*/*.py"), *ROOT.glob("tests/submissions/*/*.py")]}
    missing = []
    for path in [README, *PAGES]:
        for span in CODE_SPAN.findall(path.read_text()):
            words = span.split()
            for word in words:
                if re.fullmatch(r"test_\w+", word) and word not in defined:
                    missing.append(f"{path.name}: test {word}")
            if len(words) != 1:
                continue
            file, _, function = span.partition("::")
            if re.fullmatch(r"(\w+/)?hostile_\w+\.py", file) and Path(file).name not in submissions:
                missing.append(f"{path.name}: hostile file {file}")
            elif file.startswith(REPOSITORY_FOLDERS) and not re.search(r"[<>*$]", file) and not (ROOT / file).exists():
                missing.append(f"{path.name}: path {file}")
            if function and file.startswith("tests/") and function not in defined:
                missing.append(f"{path.name}: test {span}")
    assert not missing, missing


def test_the_docs_requirements_pin_what_the_others_pin_alike():
    """make docs installs requirements-docs.txt into the venv that holds the others."""

    def pins(name: str) -> dict[str, str]:
        lines = (ROOT / name).read_text().splitlines()
        return {re.sub(r"[-_.]+", "-", m[1]).lower(): m[2] for line in lines if (m := re.match(r"([A-Za-z0-9_.-]+)==(\S+)", line))}

    docs = pins("requirements-docs.txt")
    assert {"mkdocs", "mkdocs-material"} <= docs.keys()
    others = pins("requirements.txt") | pins("requirements-dev.txt")
    assert {name: (version, others[name]) for name, version in docs.items() if name in others and others[name] != version} == {}
