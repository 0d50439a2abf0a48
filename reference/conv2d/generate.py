"""2-D convolution: one case's arguments from its settings.

Settings: N, C_in, C_out, H, W (the input), kH, kW (the kernel), stride, padding, dilation (ranges or
numbers); x, weight, bias and the upstream gradient are N(0, 1), weight scaled by
1 / sqrt(C_in * kH * kW) so that y is of order 1. A draw whose output would be empty (H_out < 1)
grows the input until it is not.
"""

import numpy as np
import torch

from grader.case import Drawn


def out_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    n, c_in, c_out = (int(settings[k]) for k in ("N", "C_in", "C_out"))
    kh, kw, stride, padding, dilation = (int(settings[k]) for k in ("kH", "kW", "stride", "padding", "dilation"))
    h, w = int(settings["H"]), int(settings["W"])
    h = max(h, dilation * (kh - 1) + 1 - 2 * padding)  # at least one output row and column
    w = max(w, dilation * (kw - 1) + 1 - 2 * padding)
    h_out, w_out = out_size(h, kh, stride, padding, dilation), out_size(w, kw, stride, padding, dilation)
    dtype = np.dtype(settings["dtype"])

    def tensor(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array.astype(dtype)))

    x = rng.standard_normal((n, c_in, h, w))
    weight = rng.standard_normal((c_out, c_in, kh, kw)) / np.sqrt(c_in * kh * kw)
    bias = rng.standard_normal(c_out)
    upstream = rng.standard_normal((n, c_out, h_out, w_out))
    return Drawn(
        args={"x": tensor(x), "weight": tensor(weight), "bias": tensor(bias), "stride": stride, "padding": padding, "dilation": dilation},
        shape={"N": n, "C_in": c_in, "C_out": c_out, "H": h, "W": w, "kH": kh, "kW": kw, "s": stride, "p": padding, "d": dilation},
        upstream=(tensor(upstream),),
    )
