"""What a relay costs (grader/child/capabilities/relays.py): the same loops run through the capability
layer's rewrite and checks, a callable of someone else's called through its relay beside the same
work without one, side by side in one run, alternately, REPEATS times each (the fastest kept).

- `sorted(xs, key=abs)`: the relay of `abs`, called by CPython's C code (it reads the native stack)
  against `key=lambda v: abs(v)`, a function of the file's, which makes the same check;
- a loop calling `f = abs; f(v)`: the relay called by the file's code, against `abs(v)`.

Usage:

    .venv/bin/python bench/relay_cost.py [REPEATS]
"""

import hashlib
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.child.capabilities.checks import Capabilities  # noqa: E402
from grader.child.capabilities.rewrite import compile_submission  # noqa: E402
from grader.spec import load_spec  # noqa: E402

ITEMS = 40_000
PRELUDE = f"xs = list(range(-{ITEMS // 2}, {ITEMS // 2}))\n"
PAIRS = [
    ("sorted, key=abs (a relay, called by CPython's C code)", "ys = sorted(xs, key=abs)", "ys = sorted(xs, key=lambda v: abs(v))", "key=lambda (the file's)"),
    ("f = abs; f(v) in a loop (a relay, called by the file)", "f = abs\nfor v in xs:\n    f(v)", "for v in xs:\n    abs(v)", "abs(v) in a loop"),
]


def _refuse(what: str) -> None:
    raise RuntimeError(what)


def timed(source: str) -> float:
    """Seconds one run of `source` takes under the capability layer (its compile and set-up excluded)."""
    filename = f"bench_{hashlib.sha256(source.encode()).hexdigest()[:8]}.py"
    capabilities = Capabilities({"rules": load_spec().rules.child_config(), "submission": filename}, _refuse)
    namespace = capabilities.namespace("candidate_submission")
    code = compile_submission(PRELUDE + textwrap.dedent(source), filename)
    capabilities.trust(code)
    start = time.perf_counter()
    exec(code, namespace)  # noqa: S102
    return time.perf_counter() - start


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(f"µs per item over {ITEMS} items, fastest of {repeats} runs each, alternating")
    for label, relayed, plain, plain_label in PAIRS:
        with_relay, without = [], []
        for _ in range(repeats):
            with_relay.append(timed(relayed))
            without.append(timed(plain))
        a, b = min(with_relay) / ITEMS * 1e6, min(without) / ITEMS * 1e6
        print(f"{label}: {a:.2f} µs | {plain_label}: {b:.2f} µs | ratio {a / b:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
