"""Join the results files of a batch's shards: `python -m grader merge SHARD.jsonl... --out results.jsonl`.

Each shard file is what `python -m grader batch --shard I/N --out FILE` wrote: one JSON line per
graded submission, the last line of an id counting. The merged file holds the line that counts for
each submission, unchanged, sorted by id: the same format, so a later `batch --out` of it resumes
as usual. Shards that cannot belong to one batch are refused before anything is written: lines
graded with another seed, spec file or grader version, a submission in two files, a line that is
not a result of the grader. Then the batch's own summary, and its exit status.
"""

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from grader.batch.exits import EXIT_USAGE, UsageError
from grader.batch.gradebook import CSV_COLUMNS, Counting
from grader.batch.store import kept
from grader.batch.summary import Gradebook, conclude
from grader.formats.points import DEFAULT_POINTS, points_value
from grader.results import Verdict
from grader.spec import DEFAULT_PROBLEM, SetupError, Spec, UnknownProblem, add_problem_arguments, problem_spec, spec_of_arguments

# What must agree across the shards of one batch, with what to say when it does not.
SAME = {"problem": "problems", "seed_id": "seeds", "grader_version": "grader versions", "spec_sha256": "problem packages"}
VERDICTS = {v.value for v in Verdict}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader merge",
        description="Merge the results files of a batch's shards (python -m grader batch --shard I/N --out FILE) into one, "
        "sorted by submission id, and print the batch's summary. Shards graded with different seeds, spec files or grader "
        "versions, a submission in two files and a line that is not a result of the grader are refused. Exit status: 0, or "
        "2 on a usage error or when a submission ended in grader_error (rerun its shard's batch, then merge again).",
    )
    parser.add_argument("shards", type=Path, nargs="+", metavar="SHARD.jsonl", help="the results file of each shard")
    parser.add_argument("--out", type=Path, required=True, help="the merged JSON-lines file (replaced whole if it exists)")
    parser.add_argument("--csv", type=Path, metavar="FILE", help=f"also write the gradebook to FILE: {', '.join(CSV_COLUMNS)} of every submission")
    parser.add_argument(
        "--points", type=points_value, default=DEFAULT_POINTS, metavar="P", help=f"the points of a submission, as for batch (default {DEFAULT_POINTS:g})"
    )
    add_problem_arguments(parser)  # the problem the shards were graded for, whose [scoring] counts the points
    return parser.parse_args(argv)


def result_of(text: str, where: str) -> dict[str, Any]:
    """One line of a shard file as a result, or UsageError naming file:line and what is wrong."""
    try:
        line = json.loads(text)
    except ValueError:
        raise UsageError(f"{where}: not a JSON line (a file written by `python -m grader batch --out` holds one result per line)") from None
    if not isinstance(line, dict):
        raise UsageError(f"{where}: not a result of the grader (a JSON object per line)")
    problems = [key for key in ("id", *SAME) if not isinstance(line.get(key), str) or not line[key]]
    if line.get("verdict") not in VERDICTS:
        problems.append("verdict")
    score = line.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        problems.append("score")
    if problems:
        raise UsageError(f"{where}: not a result of the grader (missing or invalid: {', '.join(problems)})")
    return line


def read_shard(path: Path) -> dict[str, tuple[str, dict[str, Any], int]]:
    """id -> (the line as written, the result, its line number), the last line of an id counting."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
    latest: dict[str, tuple[str, dict[str, Any], int]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            line = result_of(raw, f"{path}:{number}")
            latest[line["id"]] = (raw, line, number)
    return latest


def merge(shards: list[Path], out: Path, csv_path: Path | None, log: TextIO, spec: Spec | None = None, points: float = DEFAULT_POINTS) -> int:
    """spec: the problem the shards were graded for (the default problem's when None)."""
    seen: set[Path] = set()
    for path in shards:
        if path.resolve() in seen:
            raise UsageError(f"{path} is given twice")
        seen.add(path.resolve())
    if out.resolve() in seen:
        raise UsageError(f"--out {out} is one of the shard files; write the merge to a new file")
    for target, option in ((out, "--out"), (csv_path, "--csv")):
        if target is not None and not target.resolve().parent.is_dir():
            raise UsageError(f"{option} {target}: no such folder {target.parent}")

    spec = spec or problem_spec()
    spec_sha256, counting = spec.digest, Counting(spec.scoring, points)

    merged: dict[str, tuple[str, dict[str, Any], str]] = {}  # id -> (line as written, result, file:line)
    first: tuple[dict[str, Any], str] | None = None  # a result to compare every other with, and where it is
    for path in shards:
        latest = read_shard(path)
        print(f"{path}: {len(latest)} submissions", file=log)
        for submission_id, (raw, line, number) in latest.items():
            where = f"{path}:{number}"
            if submission_id in merged:
                raise UsageError(
                    f"submission {submission_id!r} is in two files ({merged[submission_id][2]} and {where}); each submission belongs to one "
                    "shard: merge the shard files of one batch only"
                )
            if first is None:
                first = (line, where)
            for key, what in SAME.items():
                if line.get(key) != first[0].get(key):
                    raise UsageError(
                        f"different {what}: {where} has {key} {line.get(key)!r} but {first[1]} has {first[0].get(key)!r}; the shards of one "
                        "batch are graded with one problem, seed, package and grader version (rerun the odd shard's batch with the others' settings)"
                    )
            merged[submission_id] = (raw, line, where)

    if first is not None and first[0]["spec_sha256"] != spec_sha256:
        raise UsageError(
            f"the shards were graded with another problem package than {spec.id} as installed here ({first[1]} has problem "
            f"{first[0].get('problem') or DEFAULT_PROBLEM}, spec_sha256 {first[0]['spec_sha256']}); pass the problem they were graded for "
            "as --problem, with the package they were graded with, so that the points are counted by its [scoring]"
        )
    ordered = sorted(merged)
    temporary = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text("".join(merged[i][0] + "\n" for i in ordered), encoding="utf-8")
        os.replace(temporary, out)
    finally:
        temporary.unlink(missing_ok=True)
    done = {i: kept(merged[i][1]) for i in ordered}
    where = f"merged {len(shards)} shard files: {len(done)} submissions in {out}"
    gradebook = Gradebook(csv_path) if csv_path else None
    return conclude(done, where, gradebook, log, counting, retry="rerun the batch of their shard to retry them, then merge again")


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        return merge(args.shards, args.out, args.csv, sys.stdout, spec_of_arguments(args), args.points)
    except (UsageError, UnknownProblem, SetupError) as error:
        print(f"grader merge: {error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"grader merge: cannot write {error.filename or args.out}: {error.strerror}", file=sys.stderr)
        return EXIT_USAGE
