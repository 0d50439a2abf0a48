"""template-id: one case's arguments from its settings (problem.toml's [defaults], overlaid by the
family's and then the case's own; a range [a, b] has already been drawn into a number).

Settings this generator reads:
  lead        how many leading dimensions x has (0: x is (D,))
  size_max    each leading dimension's size is drawn in [1, size_max]
  D           the last dimension
  scale       x = scale * N(0, 1)
  eps         the eps argument

draw() returns grader.case.Drawn: every parameter by name (tensors in the case's dtype, Python
scalars), the sizes a report shows, and, because problem.toml checks gradients, one upstream
gradient per output (its shape is the output's). Draw only from `rng`: the same seed must give
the same case.
"""

import numpy as np
import torch

from grader.case import Drawn


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    dtype = np.dtype(settings["dtype"])
    d = int(settings["D"])
    shape = (*(int(n) for n in rng.integers(1, int(settings["size_max"]) + 1, int(settings["lead"]))), d)

    def tensor(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array.astype(dtype)))

    x = settings["scale"] * rng.standard_normal(shape)
    weight = 1.0 + 0.5 * rng.standard_normal(d)
    upstream = rng.standard_normal(shape)
    return Drawn(
        args={"x": tensor(x), "weight": tensor(weight), "eps": float(settings["eps"])},
        shape={"rows": int(np.prod(shape[:-1])), "D": d},  # what a report shows of the case's size: "rows=6 D=4"
        upstream=(tensor(upstream),),
    )
