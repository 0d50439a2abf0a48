"""What a batch shows while it grades: one update per finished submission, its verdict and points."""

import sys
from collections import Counter
from typing import Any, TextIO

from grader.batch.gradebook import Counting, shown_points
from grader.formats.safe import printable


class Progress:
    """A bar on a terminal (tqdm: elapsed, rate, ETA, verdicts so far); elsewhere one line per submission."""

    def __init__(self, total: int, out: TextIO, counting: Counting) -> None:
        self.total, self.out, self.done, self.counting = total, out, 0, counting
        self.verdicts: Counter[str] = Counter()
        self.bar = None
        if total and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="sub", dynamic_ncols=True, file=sys.stderr)

    def update(self, submission_id: str, line: dict[str, Any]) -> None:
        self.done += 1
        self.verdicts[line["verdict"]] += 1
        if self.bar is not None:
            self.bar.set_postfix_str(" ".join(f"{v}={n}" for v, n in sorted(self.verdicts.items())), refresh=False)
            self.bar.update()
        else:
            shown = printable(submission_id)  # a file's name: no terminal control sequence, no lone surrogate
            result = self.counting.marks(line)
            points = "points not known" if result is None else f"{shown_points(result.total)} of {shown_points(result.maximum)} points"
            print(f"[{self.done}/{self.total}] {shown}: {line['verdict']}, {points}, {line['seconds']:.1f}s", file=self.out, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
