"""AdamW: one case's arguments from its settings.

Settings (problem.toml's [defaults], overlaid by the family's and the case's):
  params       how many parameter tensors (1 to 4)
  rank_min, rank_max   each tensor's number of dimensions is drawn in [rank_min, rank_max] (0 to 3),
               each size in [1, size_max]
  size_max     see rank
  steps        S, how many calls of step (1 to 20)
  lr, beta1, beta2, eps, weight_decay   the constructor's numbers (ranges or numbers)
  p_scale      the parameters' initial values are p_scale * N(0, 1)
  g_scale      the gradients are g_scale * N(0, 1), new ones each step
  zero_grad    the probability that a parameter's gradient is all zeros at a step
"""

import numpy as np
import torch

from grader.case import Drawn


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    dtype = np.dtype(settings["dtype"])
    low, high = int(settings["rank_min"]), int(settings["rank_max"])
    shapes = [tuple(int(n) for n in rng.integers(1, int(settings["size_max"]) + 1, int(rng.integers(low, high + 1)))) for _ in range(int(settings["params"]))]

    def tensor(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(np.asarray(array).astype(dtype)))

    params = [tensor(settings["p_scale"] * rng.standard_normal(shape)) for shape in shapes]
    steps = []
    for _ in range(int(settings["steps"])):
        grads = []
        for shape in shapes:
            zero = rng.random() < settings["zero_grad"]
            grads.append(tensor(np.zeros(shape) if zero else settings["g_scale"] * rng.standard_normal(shape)))
        steps.append({"grads": grads})
    return Drawn(
        args={
            "params": params,
            "lr": float(settings["lr"]),
            "betas": (float(settings["beta1"]), float(settings["beta2"])),
            "eps": float(settings["eps"]),
            "weight_decay": float(settings["weight_decay"]),
        },
        shape={"params": len(shapes), "elements": sum(int(np.prod(s)) for s in shapes), "steps": len(steps)},
        steps=tuple(steps),
    )
