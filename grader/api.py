"""The Python API for pipelines: grade source text held in memory.

    from grader import Grader, grade_source, grade_many
    with Grader(jobs=2) as grader:                   # cases, expected outputs and the pool kept warm
        report = grader.grade(text)                  # one submission, as often as you like
        for report in grader.grade_many({"a": text_a, "b": text_b}):
            print(report.id, report.verdict, report.score)
    report = grade_source(text)                      # one-off: a Grader for one call
    Grader(problem="ID")                             # another challenge (python -m grader problems)

The source never runs in the caller's process: it is written to a private temporary file and
graded exactly as `python -m grader FILE` would, in its own sandboxed child; a Grader's children
come from the same warm pool as `python -m grader batch`.
"""

import dataclasses
import functools
import itertools
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from grader import judge, results
from grader.batch.schedule import Workers, default_jobs, start_warm_pool
from grader.faults import internal_error
from grader.formats.json import to_json
from grader.seeding import SeedRefused, secret_from
from grader.spec import DEFAULT_PROBLEM, problem_spec, setup_fault

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


@functools.lru_cache(maxsize=8)
def _prepared(problem: str, seed: str, public_only: bool) -> judge.Prepared:
    """Cases and expected outputs, computed once per problem and seed for every later call in this process."""
    return judge.prepare(problem_spec(problem), seed, public_only)


def _workers(problem: str, seed: str | None, public_only: bool, jobs: int) -> Workers:
    spec = problem_spec(problem)
    try:
        secret = secret_from(spec, seed)
    except SeedRefused as error:
        raise ValueError(str(error)) from None
    resolved = secret or spec.default_hidden_seed  # reports then carry the spec's warning about it
    return Workers(spec, resolved, jobs=jobs, public_only=public_only, prepared=_prepared(problem, resolved, public_only))


def _write(folder: Path, source: str | bytes) -> Path:
    path = folder / SOURCE_NAME
    path.write_bytes(source.encode() if isinstance(source, str) else source)
    return path


class Grader:
    """A grader kept warm between calls: the cases and expected outputs are computed once, and the
    children come from one warm pool (grader/sandbox/zygote.py) that stays up until close() or the end of
    the `with` block. Use one for a pipeline that grades sources one at a time or in groups.

    jobs: gradings at once in grade_many (default: the number of CPU cores); seed: the secret seed
    (default: MLM_GRADER_SEED, else the fixed local seed); public_only: only the public cases, as
    `--public` does; warm: False grades each source in a child of its own (what a single
    grade_source call does: starting the pool's server costs more than one child); problem: the
    challenge's id (default: problem/DEFAULT's; an unknown one is a ValueError naming those there are)."""

    def __init__(
        self, *, jobs: int | None = None, seed: str | None = None, public_only: bool = False, warm: bool = True, problem: str = DEFAULT_PROBLEM
    ) -> None:
        # A broken set-up (the spec file, the reference, the grader's packages) is no caller's mistake and no
        # submission's: every report is then a grader_error saying so (setup_fault), never an exception here.
        self.setup_fault = ""
        self._workers: Workers | None = None
        try:
            self._workers = _workers(problem, seed, public_only, jobs or default_jobs())
        except Exception as error:
            if not setup_fault(error):
                raise
            self.setup_fault = internal_error(error)
        self._warm, self.warm_note = start_warm_pool(self._workers.spec, self._workers.backend) if warm and self._workers else (None, "")
        self._folder = tempfile.TemporaryDirectory(prefix="mlm-grader-sources-")  # mode 0700: private
        self._numbers = itertools.count()  # each source its own folder, so that calls may overlap

    def __enter__(self) -> "Grader":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """End the warm pool and remove the sources' folder; grading after this is an error."""
        if self._warm:
            self._warm.close()
            self._warm = None
        self._folder.cleanup()

    def _fault(self, submission: str) -> results.Report:
        return results.Report(results.Verdict.GRADER_ERROR, self.setup_fault, submission, "", "")

    def _own_folder(self) -> Path:
        folder = Path(self._folder.name)
        if not folder.is_dir():
            raise RuntimeError("this Grader is closed: make a new one (or grade inside its `with` block)")
        own = folder / str(next(self._numbers))
        own.mkdir()
        return own

    def grade(self, source: str | bytes) -> Report:
        """The report of one submission's source text (report.submission is "<source>")."""
        own = self._own_folder()
        if self._workers is None:
            shutil.rmtree(own, ignore_errors=True)
            return Report.of(self._fault("<source>"), "")
        try:
            report = self._workers.grade_file(_write(own, source), warm=self._warm)
        finally:
            shutil.rmtree(own, ignore_errors=True)
        report.submission = "<source>"
        return Report.of(report, "")

    def grade_many(self, sources: Iterable[str | bytes] | Mapping[str, str | bytes]) -> Iterator[Report]:
        """Grade many sources `jobs` at a time; yields each report as soon as it is ready, so not in
        the order given. report.id is the source's key when `sources` is a mapping, else its
        position ("0", "1", ...). Sources are read from `sources` only as a job frees up; stopping
        the iteration early ends the running gradings."""
        keyed = sources.items() if isinstance(sources, Mapping) else ((str(i), s) for i, s in enumerate(sources))
        if self._workers is None:
            for key, _ in keyed:
                yield Report.of(self._fault(f"<source {key}>"), str(key))
            return
        workers = self._workers

        def files() -> Iterator[tuple[tuple[str, Path], Path]]:
            for key, source in keyed:
                own = self._own_folder()
                yield (str(key), own), _write(own, source)

        for (key, own), report in workers.map(files(), warm=self._warm):
            shutil.rmtree(own, ignore_errors=True)  # only the sources being graded are on disk
            report.submission = f"<source {key}>"
            yield Report.of(report, key)


def grade_source(source: str | bytes, *, seed: str | None = None, public_only: bool = False, problem: str = DEFAULT_PROBLEM) -> Report:
    """Grade one submission's source text. seed: the secret seed (default: MLM_GRADER_SEED, else the
    fixed local seed); public_only: run only the public cases, as `--public` does; problem: the
    challenge. For many calls, keep a Grader instead: it keeps its pool warm between them."""
    with Grader(jobs=1, seed=seed, public_only=public_only, warm=False, problem=problem) as grader:
        return grader.grade(source)


def grade_many(
    sources: Iterable[str | bytes] | Mapping[str, str | bytes],
    *,
    jobs: int | None = None,
    seed: str | None = None,
    public_only: bool = False,
    problem: str = DEFAULT_PROBLEM,
) -> Iterator[Report]:
    """Grade many sources through one Grader (see Grader.grade_many), closed when the iteration ends."""
    with Grader(jobs=jobs, seed=seed, public_only=public_only, problem=problem) as grader:
        yield from grader.grade_many(sources)
