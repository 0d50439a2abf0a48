"""Symmetric eigendecomposition: one case's matrix from its settings.

Settings:
  n          the matrix is (n, n), 1 to 12
  spectrum   "random": eigenvalues N(0, 1); "negative": all negative; "repeated": `distinct` values,
             each repeated; "near": clusters of eigenvalues `gap` apart (relative); "zero": the zero
             matrix
  distinct   see spectrum
  gap        see spectrum
  diagonal   true: a = diag(eigenvalues), no rotation (distinct from 1 in magnitude)
  scale      the eigenvalues are scaled so that max|a| is `scale` (>= 0.1)

a = Q diag(eigenvalues) Q^T with Q a random orthogonal matrix (the QR factor of a Gaussian matrix,
its signs fixed), made exactly symmetric in the case's dtype.
"""

import numpy as np
import torch

from grader.case import Drawn


def eigenvalues(settings: dict, n: int, rng: np.random.Generator) -> np.ndarray:
    kind = settings["spectrum"]
    if kind == "zero":
        return np.zeros(n)
    if kind == "repeated":
        distinct = rng.standard_normal(max(1, min(int(settings["distinct"]), n)))
        return distinct[rng.integers(0, len(distinct), n)] if n > len(distinct) else distinct
    if kind == "near":
        centres = rng.standard_normal(max(1, n // 3))
        return centres[rng.integers(0, len(centres), n)] * (1 + settings["gap"] * rng.standard_normal(n))
    values = rng.standard_normal(n)
    return -np.abs(values) - 0.1 if kind == "negative" else values


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    n = int(settings["n"])
    values = eigenvalues(settings, n, rng)
    if settings["diagonal"]:
        a = np.diag(values)
    else:
        q, r = np.linalg.qr(rng.standard_normal((n, n)))
        q = q * np.sign(np.diag(r))
        a = (q * values) @ q.T
    a = (a + a.T) / 2
    largest = np.abs(a).max()
    if largest > 0:
        a = a * (settings["scale"] / largest)
    if settings["diagonal"] and np.any(np.isclose(np.abs(np.diag(a)), 1.0)):  # diag(+-1) would be orthogonal: its own eigenvector matrix
        a = a * 0.75
    matrix = a.astype(np.dtype(settings["dtype"]))
    matrix = np.triu(matrix) + np.triu(matrix, 1).T  # exactly symmetric in the case's dtype
    return Drawn(args={"a": torch.from_numpy(np.ascontiguousarray(matrix))}, shape={"n": n}, output_shapes=((n,), (n, n)))
