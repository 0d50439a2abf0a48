"""Layer norm backward by hand: one case's arguments from its settings (docs/challenges.md, "A challenge package").

Settings the generator reads (problem.toml's [defaults], overlaid by the family's and the case's):
  D           features, the normalised last dimension
  leading     "random": `lead` leading dimensions, each of a size drawn in [size_min, size_max];
              otherwise the leading shape itself, comma-separated ("3,0" is x of shape (3, 0, D),
              "" is x of shape (D,))
  lead        number of leading dimensions when leading = "random" (0: x is (D,))
  size_min, size_max
  mean, std   x = mean + std * N(0, 1), element by element
  weight_mean, weight_std
              weight = weight_mean + weight_std * N(0, 1); bias and grad_output are N(0, 1)
  eps         a number, or a string holding one (a list of strings is how a family draws one of
              several values: the harness draws uniformly from a list of two numbers)
"""

import numpy as np
import torch

from grader.case import Drawn


def leading_shape(settings: dict, rng: np.random.Generator) -> tuple[int, ...]:
    leading = str(settings["leading"]).strip()
    if leading != "random":
        return tuple(int(size) for size in leading.split(",") if size.strip())
    low, high = int(settings["size_min"]), int(settings["size_max"])
    return tuple(int(size) for size in rng.integers(low, high + 1, int(settings["lead"])))


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    dtype = np.dtype(settings["dtype"])
    d = int(settings["D"])
    shape = (*leading_shape(settings, rng), d)

    x = settings["mean"] + settings["std"] * rng.standard_normal(shape)
    weight = settings["weight_mean"] + settings["weight_std"] * rng.standard_normal(d)
    bias = rng.standard_normal(d)
    grad_output = rng.standard_normal(shape)

    def tensor(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array.astype(dtype)))

    return Drawn(
        args={
            "x": tensor(x),
            "weight": tensor(weight),
            "bias": tensor(bias),
            "grad_output": tensor(grad_output),
            "eps": float(settings["eps"]),
        },
        shape={**{f"N{i + 1}": size for i, size in enumerate(shape[:-1])}, "D": d},  # "N1=3 N2=0 D=5"; "D=5" for x of shape (D,)
        output_shapes=(shape, (d,), (d,)),  # grad_x, grad_weight, grad_bias
    )
