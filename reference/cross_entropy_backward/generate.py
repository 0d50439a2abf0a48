"""Cross-entropy forward and backward: one case's arguments from its settings.

Settings (problem.toml's [defaults], overlaid by the family's and the case's):
  N, C         rows and classes
  scale        logits = scale * N(0, 1)
  ignore       "none": no row ignored, ignore_index = -100; "some": each row ignored (target -100)
               with probability ignore_prob, at least one kept; "class": ignore_index is a class that
               occurs (rows whose target is that class are ignored), at least one row kept;
               "all_but_one": every row but one ignored
  ignore_prob  see ignore
  smoothing    label_smoothing (a number in [0, 1), or a range)
  confident    true: each target is its row's largest logit, by a margin of `margin` (a tiny loss)
  margin       see confident
"""

import numpy as np
import torch

from grader.case import Drawn

IGNORE_INDEX = -100  # torch's default, the usual choice


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    n, c = int(settings["N"]), int(settings["C"])
    logits = settings["scale"] * rng.standard_normal((n, c))
    targets = rng.integers(0, c, n)
    if settings["confident"]:
        targets = logits.argmax(axis=1)
        logits[np.arange(n), targets] = logits.max(axis=1) + settings["margin"]
    ignore_index = IGNORE_INDEX
    kind = settings["ignore"]
    if kind == "some":
        dropped = rng.random(n) < settings["ignore_prob"]
        dropped[rng.integers(n)] = False  # at least one row is kept
        targets = np.where(dropped, IGNORE_INDEX, targets)
    elif kind == "all_but_one":
        kept = rng.integers(n)
        targets = np.where(np.arange(n) == kept, targets, IGNORE_INDEX)
    elif kind == "class":
        ignore_index = int(rng.integers(0, c))
        other = (ignore_index + 1 + rng.integers(0, c - 1)) % c
        rows = rng.permutation(n)  # n >= 2
        targets[rows[0]] = ignore_index  # the class occurs ...
        if (targets == ignore_index).all():  # ... and at least one row is kept
            targets[rows[1]] = other
    dtype = np.dtype(settings["dtype"])
    return Drawn(
        args={
            "logits": torch.from_numpy(np.ascontiguousarray(logits.astype(dtype))),
            "targets": torch.from_numpy(targets.astype(np.int64)),
            "ignore_index": ignore_index,
            "label_smoothing": float(settings["smoothing"]),
        },
        shape={"N": n, "C": c, "kept": int((targets != ignore_index).sum())},
        output_shapes=((), (n, c)),  # loss, grad_logits
    )
