"""Build the candidate's kit of a challenge: `make kit` writes dist/mlm-tied-head-kit.zip (the default
problem's); `make kit PROBLEM=ID` dist/ID-kit.zip.

    .venv/bin/python deploy/kit/build.py [--problem ID] [--out dist/<kit>.zip]

The kit is everything a candidate receives, in one folder (mlm-tied-head-kit/): the statement
(README.md), the stub (solution.py), the public cases in full (cases/<name>.pt, exactly what
`python -m grader --save-public` writes: inputs, num_heads, the upstream gradient, the expected
logits and gradients; load one with torch.load(path, weights_only=True)), the contract's public part
(spec.json) and the self-check (check.py, from deploy/kit/check.py).

check.py runs the grader's own modules, copied here unchanged (the static policy check, the child
and its runtime guard, the protocol, the comparison, the diagnosis, the hints, the text report), so
nothing in the kit can drift from the grader. Two modules are written for the kit instead: the two
package __init__ files (the grader's import the command line and every output format). The
diagnosis localises a wrong answer from the probe cases, which are public (their .pt files are in
cases/); its known mistakes are twins of the reference, which the kit does not hold, so the kit
names the part but never a known mistake. The kit holds no reference, no hidden case and no seed but
the public one; the build refuses to write a kit in which the hidden seed or a hidden case's name appears.
"""

import argparse
import contextlib
import io
import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch import __version__ as torch_version  # noqa: E402

from grader import __version__  # noqa: E402
from grader.cli import save_public_cases  # noqa: E402
from grader.expected import PROPERTIES_FILE  # noqa: E402
from grader.spec import DEFAULT_PROBLEM, PROBLEMS, Spec, UnknownProblem, parse_spec, problem_spec, read_package  # noqa: E402


def kit_name(problem: str) -> str:
    """The folder the zip unpacks to (and the zip's name): the default problem's kit keeps its first name."""
    return "mlm-tied-head-kit" if problem == DEFAULT_PROBLEM else f"{problem}-kit"


# The grader's modules check.py runs, copied byte for byte.
COPIED = (
    "grader/case.py",
    "grader/cases.py",
    "grader/compare.py",
    "grader/diagnosis.py",
    "grader/expected.py",
    "grader/judge.py",
    "grader/policy.py",
    "grader/protocol.py",
    "grader/report.py",
    "grader/results.py",
    # The sandbox the kit runs (bubblewrap, else a plain process): not the uid or docker backends, nor the zygote.
    "grader/sandbox/__init__.py",
    "grader/sandbox/backends.py",
    "grader/sandbox/boxes.py",
    "grader/sandbox/bubblewrap.py",
    "grader/sandbox/child.py",
    "grader/sandbox/limits.py",
    "grader/sandbox/output.py",
    "grader/sandbox/process.py",
    "grader/sandbox/seccomp.py",
    "grader/sandbox/workdir.py",
    "grader/spec.py",
    "grader/rules.py",
    "grader/rules.toml",
    "grader/allowlist.py",
    "grader/package_format.py",
    "grader/child/__init__.py",
    "grader/child/guard.py",
    "grader/child/capabilities/__init__.py",
    "grader/child/capabilities/allowed.py",
    "grader/child/capabilities/arrays.py",
    "grader/child/capabilities/callers.py",
    "grader/child/capabilities/builtins.py",
    "grader/child/capabilities/checks.py",
    "grader/child/capabilities/classes.py",
    "grader/child/capabilities/relays.py",
    "grader/child/capabilities/rewrite.py",
    "grader/child/capabilities/slots.py",
    "grader/child/capabilities/standins.py",
    "grader/child/vjp.py",
    "grader/child/runner.py",
    "grader/child/walls.py",
    "grader/child/wire.py",
    "grader/formats/text.py",
    "grader/formats/points.py",
    "grader/formats/safe.py",
)


def package_files(problem: str) -> dict[str, Path]:
    """The files the kit takes from the package (problem/<id>/, which holds nothing hidden) and
    check.py; a package judged by properties gives its properties.py too (check.py runs it)."""
    files = {"README.md": PROBLEMS / problem / "README.md", "solution.py": PROBLEMS / problem / "stub.py", "check.py": ROOT / "deploy" / "kit" / "check.py"}
    if (PROBLEMS / problem / PROPERTIES_FILE).is_file():
        files[PROPERTIES_FILE] = PROBLEMS / problem / PROPERTIES_FILE
    return files


PACKAGE_INIT = f'''"""The grader's own modules, copied unchanged when this kit was built; check.py runs them. Do not edit
them: the grader that judges your submission runs the same code."""

__version__ = {__version__!r}
GRADER_TORCH = {torch_version.split("+")[0]!r}  # the torch the grader runs (its local build tag aside)
'''
FORMATS_INIT = '''"""The grader's report formats; the kit holds the text report only."""
'''
GENERATED = {"grader/__init__.py": PACKAGE_INIT, "grader/formats/__init__.py": FORMATS_INIT}


def kit_spec(data: dict[str, Any]) -> dict[str, Any]:
    """The spec's public part, in the shape grader/spec.py reads: the problem, limits, tolerances and
    rules, the public cases and their families. No hidden case, no family that only hidden cases
    belong to, and no hidden seed: the public seed stands in for it (the kit runs the public cases only)."""
    names = {t.name for t in parse_spec(data).templates if t.settings["visibility"] == "public"}  # a family may make its cases public
    public = [case | {"visibility": "public"} for case in data["cases"] if case["name"] in names]
    families = {case["family"] for case in public}
    kept = ("name", "description", "hint", "hint_checks", "tolerance", "gradient_tolerance")
    return {
        "problem": data["problem"],
        "parameters": data["parameters"],
        **({"step_parameters": data["step_parameters"]} if "step_parameters" in data else {}),
        "outputs": data["outputs"],
        "hints": data.get("hints", {}),
        "limits": data["limits"],
        "tolerance": data["tolerance"],
        "report": {"hidden_case_details": False},
        "diagnosis": data.get("diagnosis", {}) | {"known_mistakes": False},  # the probes are public cases: the kit localises as the grader does
        "seeds": {"public": data["seeds"]["public"], "default_hidden": data["seeds"]["public"], "env_var": data["seeds"]["env_var"]},
        "defaults": {"count": 0, "hint": "", "visibility": "public"},
        "families": [{key: family[key] for key in kept if key in family} for family in data["families"] if family["name"] in families],
        "cases": public,
        "rules": data.get("rules", {}),
    }


def public_case_files(spec: Spec) -> dict[str, bytes]:
    """cases/<name>.pt for every public case, as `python -m grader --save-public` writes them."""
    torch.set_num_threads(1)  # as the grader's batch and the tests: float64 sums in one order, so the files are the same bytes on every machine
    with tempfile.TemporaryDirectory(prefix="mlm-kit-") as folder, contextlib.redirect_stdout(io.StringIO()):
        save_public_cases(spec, Path(folder))
        return {f"cases/{path.name}": path.read_bytes() for path in sorted(Path(folder).glob("*.pt"))}


def entries(problem: str = DEFAULT_PROBLEM) -> dict[str, bytes]:
    """Every file of the kit by its path inside the kit folder."""
    data, _ = read_package(PROBLEMS / problem / "problem.toml")  # with what it extends merged in
    found = {name: path.read_bytes() for name, path in package_files(problem).items()}
    found |= {name: (ROOT / name).read_bytes() for name in COPIED}
    found |= {name: text.encode() for name, text in GENERATED.items()}
    found["spec.json"] = (json.dumps(kit_spec(data), indent=2) + "\n").encode()
    found |= public_case_files(problem_spec(problem))
    return found


def leaks(files: dict[str, bytes], problem: str = DEFAULT_PROBLEM) -> list[str]:
    """What must never be in the kit: the reference, the hidden seed, a hidden case's name."""
    spec = problem_spec(problem)
    secret = {spec.default_hidden_seed} | {t.name for t in spec.templates if t.settings["visibility"] != "public"}
    found = [f"{name}: part of the reference" for name in files if name.startswith("reference/")]
    for name, content in files.items():
        found += [f"{name} mentions {word!r}" for word in sorted(secret) if word.encode() in content]
    return found


def build(out: Path, problem: str = DEFAULT_PROBLEM) -> list[str]:
    kit = kit_name(problem)
    files = entries(problem)
    if problems := leaks(files, problem):
        raise SystemExit("build.py: refusing to write a kit that gives away hidden information:\n  " + "\n  ".join(problems))
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(f"{kit}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16  # a regular file, readable by all
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[name])
    temporary.replace(out)
    return sorted(files)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Build the candidate's kit (statement, stub, public cases, check.py).")
    parser.add_argument(
        "--problem", default=DEFAULT_PROBLEM, metavar="ID", help=f"the challenge (default {DEFAULT_PROBLEM}; python -m grader problems lists them)"
    )
    parser.add_argument("--out", type=Path, help="the zip to write (default dist/<kit>.zip: dist/mlm-tied-head-kit.zip for the default problem)")
    args = parser.parse_args(argv)
    try:
        problem_spec(args.problem)
    except UnknownProblem as error:
        parser.error(str(error))
    args.out = args.out or ROOT / "dist" / f"{kit_name(args.problem)}.zip"
    names = build(args.out, args.problem)
    print(f"{args.out}: {len(names)} files, {args.out.stat().st_size // 1024} KiB; unzip it and run: python check.py solution.py")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
