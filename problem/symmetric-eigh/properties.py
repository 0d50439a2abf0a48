"""The properties a result of eigh(a) must have, since the signs of the eigenvectors and the basis of
a repeated eigenvalue are free (the grader runs check() on every case, public and hidden; the kit
runs it on the public ones). With scale = max(1, max|a|):

- the eigenvalues, in ascending order, are those of a: max|w - eigvalsh(a)| <= tolerance * scale;
- each column of V is an eigenvector of its eigenvalue: max|a V - V diag(w)| <= tolerance * scale;
- the columns of V are orthonormal: max|V^T V - I| <= tolerance.

args holds a as a float64 copy, outputs (w, V) as float64 copies of what was returned.
"""

import torch

from grader.case import Property


def check(args: dict, outputs: tuple, tolerance: float) -> list[Property]:
    a = args["a"]
    values, vectors = outputs
    n = a.shape[0]
    scale = max(1.0, a.abs().max().item())
    exact = torch.linalg.eigvalsh(a)  # ascending; LAPACK in float64, within 1e-15 * scale of the truth
    return [
        Property("the eigenvalues, in ascending order, are those of a: max|w - eigenvalues(a)|", _largest(values - exact), tolerance * scale),
        Property("each column of V is a unit eigenvector of its eigenvalue: max|a V - V diag(w)|", _largest(a @ vectors - vectors * values), tolerance * scale),
        Property("the columns of V are orthonormal: max|V^T V - I|", _largest(vectors.T @ vectors - torch.eye(n, dtype=a.dtype)), tolerance),
    ]


def _largest(t: torch.Tensor) -> float:
    """max|t|; NaN when t holds a NaN (the property then fails)."""
    if t.numel() == 0:
        return 0.0
    if not bool(torch.isfinite(t).all()):
        return float("nan")
    return t.abs().max().item()
