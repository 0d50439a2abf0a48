"""The Python API for pipelines: grade source text held in memory.

    from grader import grade_source, grade_many
    report = grade_source(text)                      # one submission
    for report in grade_many({"a": text_a, "b": text_b}, jobs=2):
        print(report.id, report.verdict, report.score)

The source never runs in the caller's process: it is written to a private temporary file and
graded exactly as `python -m grader FILE` would, in its own sandboxed child, and grade_many goes
through the same pool as `python -m grader batch`.
"""

import dataclasses
import functools
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from grader import batch, judge, results
from grader.formats.json import to_json
from grader.seeding import SeedRefused, secret_from
from grader.spec import Spec, load_spec

SOURCE_NAME = "submission.py"  # the file name the submission is graded under


@dataclasses.dataclass
class Report(results.Report):
    """A grading report (verdict, score, message, cases...) with the id it was given and to_dict().

    to_dict lives here, not on grader.results.Report, so that the deciding layer never imports an
    output format, not even lazily."""

    id: str = ""

    def to_dict(self, staff: bool = False) -> dict[str, Any]:
        """Exactly the object `python -m grader FILE --json` prints (with staff=True, `--json --staff`:
        plus `staff_only`, what the candidate's report withholds)."""
        return to_json(self, staff)

    @classmethod
    def of(cls, report: results.Report, report_id: str) -> "Report":
        fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(results.Report)}
        return cls(**fields, id=report_id)


@functools.cache
def _spec() -> Spec:
    return load_spec()


@functools.lru_cache(maxsize=4)
def _prepared(seed: str, public_only: bool) -> judge.Prepared:
    """Cases and expected outputs, computed once per seed for every later call in this process."""
    return judge.prepare(_spec(), seed, public_only)


def _pool(seed: str | None, public_only: bool, jobs: int) -> batch.Pool:
    try:
        secret = secret_from(_spec(), seed)
    except SeedRefused as error:
        raise ValueError(str(error)) from None
    resolved = secret or _spec().default_hidden_seed  # reports then carry the spec's warning about it
    return batch.Pool(_spec(), resolved, jobs=jobs, public_only=public_only, prepared=_prepared(resolved, public_only))


def _write(folder: Path, source: str | bytes) -> Path:
    path = folder / SOURCE_NAME
    path.write_bytes(source.encode() if isinstance(source, str) else source)
    return path


def grade_source(source: str | bytes, *, seed: str | None = None, public_only: bool = False) -> Report:
    """Grade one submission's source text. seed: the secret seed (default: MLM_GRADER_SEED, else the
    fixed local seed); public_only: run only the public cases, as `--public` does."""
    pool = _pool(seed, public_only, jobs=1)
    with tempfile.TemporaryDirectory(prefix="mlm-grader-source-") as folder:  # mode 0700: private
        report = pool.grade_file(_write(Path(folder), source))
    report.submission = "<source>"
    return Report.of(report, "")


def grade_many(sources: Iterable[str | bytes] | Mapping[str, str | bytes], *, jobs: int | None = None, seed: str | None = None) -> Iterator[Report]:
    """Grade many sources `jobs` at a time (default: the number of CPU cores); yields each report
    as soon as it is ready, so not in the order given. report.id is the source's key when
    `sources` is a mapping, else its position ("0", "1", ...). Sources are read from `sources`
    only as a job frees up; stopping the iteration early ends the running gradings."""
    pool = _pool(seed, False, jobs or batch.default_jobs())
    keyed = sources.items() if isinstance(sources, Mapping) else ((str(i), s) for i, s in enumerate(sources))
    with tempfile.TemporaryDirectory(prefix="mlm-grader-sources-") as folder:

        def files() -> Iterator[tuple[tuple[str, Path], Path]]:
            for number, (key, source) in enumerate(keyed):
                own = Path(folder) / str(number)
                own.mkdir()
                yield (str(key), own), _write(own, source)

        for (key, own), report in pool.map(files()):
            shutil.rmtree(own)  # only the sources being graded are on disk
            report.submission = f"<source {key}>"
            yield Report.of(report, key)
