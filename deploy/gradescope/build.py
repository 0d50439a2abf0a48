"""Build the Gradescope autograder zip: `make gradescope SEED_FILE=path/to/seed [GRADER_OPTIONS='--points 10']`.

    python3 deploy/gradescope/build.py --seed-file=FILE [--grader-options="OPTIONS"] [--out dist/gradescope-autograder.zip]

The zip holds, at its root, what Gradescope's specification asks for (setup.sh, run_autograder) and
what they run: the grader, the reference, the problem, requirements.txt, deploy/platform_grade.py,
the secret seed (secret_seed) and further grader options (grader_options). The seed makes the zip
a secret: keep it out of version control (dist/ is ignored) and share it only with Gradescope.
The same inputs give the same bytes (sorted entries, fixed timestamps). Standard library only.
"""

import argparse
import shlex
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TREES = ("grader", "reference", "problem")
FILES = {"requirements.txt": ROOT / "requirements.txt", "deploy/platform_grade.py": ROOT / "deploy" / "platform_grade.py"}
SCRIPTS = {"setup.sh": HERE / "setup.sh", "run_autograder": HERE / "run_autograder"}
DEFAULT_SEED = tomllib.loads((ROOT / "problem" / "mlm-forward-tied" / "problem.toml").read_text())["seeds"]["default_hidden"]  # no secret


def entries(seed: str, options: str) -> list[tuple[str, bytes, int]]:
    """(name in the zip, content, mode) for every file, sorted by name."""
    found = [(name, path.read_bytes(), 0o755) for name, path in SCRIPTS.items()]
    found += [(name, path.read_bytes(), 0o644) for name, path in FILES.items()]
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            # A package's example submissions (reference/<module>/submissions/) are for verify, not for grading.
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc" and "submissions" not in path.relative_to(ROOT).parts[2:3]:
                found.append((path.relative_to(ROOT).as_posix(), path.read_bytes(), 0o644))
    if seed:
        found.append(("secret_seed", seed.encode() + b"\n", 0o600))
    if options:
        found.append(("grader_options", options.encode() + b"\n", 0o644))
    return sorted(found)


def build(out: Path, seed: str, options: str) -> list[str]:
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content, mode in entries(seed, options):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16  # a regular file with these permissions
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, content)
        names = archive.namelist()
    temporary.replace(out)
    return names


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Build the Gradescope autograder zip.")
    parser.add_argument("--seed-file", default="", help="a file holding the secret seed (one line)")
    parser.add_argument("--grader-options", default="", help="options for every grading, e.g. '--points 10 --hidden-visibility after_due_date'")
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "gradescope-autograder.zip")
    args = parser.parse_args(argv)
    try:
        options = shlex.split(args.grader_options)
    except ValueError as error:
        print(f"build.py: GRADER_OPTIONS cannot be read as shell words: {error}", file=sys.stderr)
        return 2
    seed = ""
    if args.seed_file:
        try:
            seed = Path(args.seed_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            print(f"build.py: cannot read the seed file {args.seed_file}: {error}", file=sys.stderr)
            return 2
        if not seed or seed == DEFAULT_SEED:
            print(f"build.py: {args.seed_file} holds no secret seed (it is empty or the fixed local seed): put a long random line in it", file=sys.stderr)
            return 2
    elif "--allow-default-seed" not in options:
        print(
            "build.py: a secret seed is needed: make gradescope SEED_FILE=path/to/file (one line, e.g. from `openssl rand -hex 32`), "
            "or GRADER_OPTIONS=--allow-default-seed to grade with the fixed local seed, which anyone can reproduce",
            file=sys.stderr,
        )
        return 2
    names = build(args.out, seed, shlex.join(options))
    print(f"{args.out}: {len(names)} files{', with the secret seed' if seed else ', no secret seed (--allow-default-seed)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
