"""What a candidate with only the kit learns about the bugs of reference/mlm_forward_tied/submissions/wrong_answer and the
known mistakes of reference/mlm_forward_tied/mistakes.py: how many fail at least one public case, and for how many
the kit's diagnosis (public cases only, no known mistakes) names exactly the part a file declares on
its `# diagnosis:` line (and, of the known mistakes, for how many it names the part
tests/test_diagnosis.py expects). The files run in this process (they are our own). Usage:

    .venv/bin/python bench/kit_study.py
"""

import dataclasses
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.diagnosis import analyse  # noqa: E402
from grader.spec import load_spec  # noqa: E402
from reference.mlm_forward_tied.mistakes import MISTAKES  # noqa: E402
from tests import in_process  # noqa: E402
from tests.grading import ordinary_files  # noqa: E402
from tests.test_diagnosis import TWIN_PARTS  # noqa: E402 - where the probes must locate each known mistake


def main() -> None:
    torch.set_num_threads(1)  # as the grader
    kit = dataclasses.replace(load_spec(), known_mistakes=False)  # the kit's spec.json: no known mistakes
    conclusions = set(kit.diagnosis.parts)  # the parts the package's probes can name
    files = {
        p.stem: (in_process.entry_point(p), set(re.search(r"^# diagnosis: (.+)$", p.read_text(), re.M).group(1).split()))
        for p in ordinary_files("wrong_answer")
    }
    caught, named, with_part, unnamed = 0, 0, 0, []
    for stem, (fn, keys) in files.items():
        cases, results, received = in_process.judge(fn, kit, public_only=True)
        caught += any(not r.passed for r in results)
        parts = keys & conclusions
        if parts:
            with_part += 1
            found = set(analyse(cases, results, received, kit).parts)
            named += found == parts
            if found != parts:
                unnamed.append(f"{stem} (declares {' '.join(sorted(parts))}, kit names {' '.join(sorted(found)) or 'nothing'})")
    twins, twins_named = 0, 0
    for twin in MISTAKES:
        cases, results, received = in_process.judge(twin, kit, public_only=True)
        twins += any(not r.passed for r in results)
        twins_named += TWIN_PARTS[twin.name] is not None and analyse(cases, results, received, kit).parts == (TWIN_PARTS[twin.name],)
    print(f"wrong files failing at least one public case: {caught} of {len(files)}; known mistakes: {twins} of {len(MISTAKES)}")
    print(f"wrong files whose declared part the kit names (public cases, no known mistakes): {named} of {with_part} that declare a part")
    print(f"known mistakes whose part the kit names: {twins_named} of {sum(part is not None for part in TWIN_PARTS.values())} that have one")
    for line in unnamed:
        print(f"  not named: {line}")


if __name__ == "__main__":
    main()
