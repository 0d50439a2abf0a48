"""How well the diagnosis names the bugs of reference/mlm_forward_tied/submissions/wrong_answer, and what it costs.

Each non-hostile wrong file declares on a `# diagnosis:` line what its diagnosis must find: the
part of the computation the probe cases point at (a part of the package's [diagnosis.parts]) and the
known mistake (a twin of reference/mlm_forward_tied/mistakes.py). For SEEDS seeds this prints how many files the
probes alone localise correctly, how many the known mistakes name exactly, how many get a
diagnosis with exactly the declared findings, and the time the diagnosis adds (the probe cases'
share of a run, and the diagnosis itself on wrong and on correct files). The files run in this
process (they are our own). Usage:

    .venv/bin/python bench/diagnosis_study.py [SEEDS]
"""

import re
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.diagnosis import analyse, localise, probe_outcomes  # noqa: E402
from grader.spec import load_spec  # noqa: E402
from reference.mlm_forward_tied.mistakes import MISTAKES  # noqa: E402
from tests import in_process  # noqa: E402
from tests.grading import ordinary_files  # noqa: E402

TWINS = {twin.name for twin in MISTAKES}


def declared(path: Path) -> set[str]:
    return set(re.search(r"^# diagnosis: (.+)$", path.read_text(), flags=re.MULTILINE).group(1).split())


def timed(fn, *args):
    started = time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - started


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    torch.set_num_threads(1)  # as the grader
    spec = load_spec()
    model = spec.diagnosis  # the package's probes and parts ([diagnosis] in its problem.toml)
    conclusions, probes = set(model.parts), set(model.probes)
    wrong = {p.stem: (in_process.entry_point(p), declared(p)) for p in ordinary_files("wrong_answer")}
    correct = {p.stem: in_process.entry_point(p) for p in ordinary_files("accepted")}
    with_part = sorted(stem for stem, (_, keys) in wrong.items() if keys & conclusions)
    with_twin = sorted(stem for stem, (_, keys) in wrong.items() if keys & TWINS)
    localised, named, exact = {s: 0 for s in wrong}, {s: 0 for s in wrong}, {s: 0 for s in wrong}
    wrong_seconds, correct_seconds, probe_seconds, probe_share = [], [], [], []
    for seed in range(seeds):
        seed_name = f"diagnosis-{seed}"
        for stem, (fn, keys) in wrong.items():
            cases, results, received = in_process.judge(fn, spec, seed_name)
            finding, seconds = timed(analyse, cases, results, received, spec)
            wrong_seconds.append(seconds)
            localised[stem] += set(localise(probe_outcomes(results, model, received), model)) == keys & conclusions
            named[stem] += finding.mistake is not None and {finding.mistake} == keys & TWINS
            exact[stem] += finding.keys() == keys
        for fn in correct.values():
            cases, results, received = in_process.judge(fn, spec, seed_name)
            finding, seconds = timed(analyse, cases, results, received, spec)
            assert not finding.sentences, "a correct file got a diagnosis"
            correct_seconds.append(seconds)
            # The probe cases' share of the time spent in the submission's two calls per case.
            probe_seconds.append(sum(r.seconds for r in results if r.name in probes))
            probe_share.append(probe_seconds[-1] / sum(r.seconds for r in results))

    def count(scores: dict[str, int], among: list[str]) -> str:
        full = sum(scores[s] == seeds for s in among)
        return f"{full} of {len(among)}"

    print(f"{len(wrong)} wrong files (non-hostile), {seeds} seed(s); a file counts when it is right on every seed")
    print(f"  probes alone localise the declared part:      {count(localised, with_part)} files that declare a part")
    print(f"  known mistakes name the declared mistake:     {count(named, with_twin)} files that declare a known mistake")
    print(f"  diagnosis finds exactly what is declared:     {count(exact, sorted(wrong))} files")
    others = sorted(set(wrong) - set(with_part) - set(with_twin))
    print(f"  files with neither a part nor a known mistake (named by a check or by precision): {', '.join(others) or '-'}")
    for label, scores, among in (("localised by the probes alone", localised, with_part), ("named", named, with_twin), ("exact", exact, sorted(wrong))):
        if misses := [s for s in among if scores[s] < seeds]:
            print(f"  not {label} on some seed: {', '.join(misses)}")
    ms = [1000 * s for s in wrong_seconds]
    print(f"\nTime of the diagnosis itself (in the grader, after the run): wrong files median {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms;")
    print(f"  correct files max {1000 * max(correct_seconds):.3f} ms (nothing fails: nothing to diagnose)")
    print(
        f"Probe cases ({len(probes)} of {len(results)}): {1000 * statistics.median(probe_seconds):.0f} ms of calls on a correct file, "
        f"{100 * statistics.median(probe_share):.0f}% of its call time (medians)"
    )


if __name__ == "__main__":
    main()
