"""How closeness is judged, and the torch.testing-style explanation of a mismatch.

An element passes when |got - expected| <= tolerance * max|expected| and got is finite. Expected
values are float64; the scale is the largest expected magnitude of the whole tensor, so the test
does not depend on how the weights happened to be scaled, and tiny entries of a large tensor are
judged at the tensor's precision (an absolute error in units of the output's size).
"""

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Closeness:
    passed: bool
    max_abs: float  # greatest |got - expected| (inf when got has a non-finite value)
    max_rel: float  # max_abs / max|expected|: the error as a fraction of the tensor's scale
    message: str  # empty when passed
    ratio: float = 0.0  # max_abs over what the tolerance allows (inf for a non-finite value)


def _index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat_index % size)
        flat_index //= size
    return tuple(reversed(index))


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def value_digits(dtype: torch.dtype) -> int:
    """Significant digits that tell two values of `dtype` apart: 9 round-trip a float32, 17 a float64."""
    return 17 if dtype == torch.float64 else 9


def compare_values(expected: Tensor, got: Tensor, tolerance: float, show_values: bool, scale_floor: float = 0.0) -> Closeness:
    """expected and got must have the same shape; show_values adds the two numbers at the worst
    index (only for cases whose data the candidate may see). The scale is max|expected|, or
    scale_floor where that is larger (an output whose exact values may all be 0 or tiny)."""
    digits = value_digits(got.dtype)
    expected = expected.detach().to(torch.float64).cpu()
    got = got.detach().to(torch.float64).cpu()
    total = expected.numel()
    if total == 0:
        return Closeness(True, 0.0, 0.0, "", 0.0)
    largest = expected.abs().max().item()
    scale = max(largest, scale_floor)
    allowed = tolerance * scale
    # The common case in a few operations: every difference within the tolerance (a NaN or an
    # infinity makes the greatest difference NaN or inf, which fails the test and takes the long way).
    difference = (got - expected).abs()
    max_abs = difference.max().item()
    if max_abs <= allowed:
        max_rel = max_abs / scale if scale > 0 else 0.0
        return Closeness(True, max_abs, max_rel, "", max_abs / allowed if allowed > 0 else 0.0)
    finite = torch.isfinite(got)
    diff = torch.where(finite, difference, torch.full_like(got, math.inf))
    mismatched = diff > allowed
    count = int(mismatched.sum())
    worst = int(diff.argmax())
    max_abs = diff.reshape(-1)[worst].item()
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    ratio = max_abs / allowed if allowed > 0 else (0.0 if max_abs == 0 else math.inf)
    if count == 0:
        return Closeness(True, max_abs, max_rel, "", ratio)

    relative = torch.where(diff == 0, 0.0, diff / expected.abs())  # inf where only expected is 0
    worst_rel = int(relative.argmax())
    shape = tuple(expected.shape)
    lines = [f"Mismatched elements: {count} / {total} ({100 * count / total:.1f}%)"]
    nonfinite = int((~finite).sum())
    if nonfinite:
        lines.append(f"Non-finite values returned: {nonfinite} (NaN and inf never pass; the expected values are all finite)")
    lines.append(
        f"Greatest absolute difference: {_fmt(max_abs)} at index {_index(worst, shape)} "
        f"(up to {_fmt(allowed)} allowed = {tolerance:g} x {'max|expected|' if scale == largest else 'the scale floor'} {_fmt(scale)})"
    )
    lines.append(
        f"Greatest per-element relative difference (|got - expected| / |expected| of one element): "
        f"{_fmt(relative.reshape(-1)[worst_rel].item())} at index {_index(worst_rel, shape)}"
    )
    if show_values:
        at = _index(worst, shape)
        want, have = expected[at].item(), got[at].item()
        lines.append(f"At index {at}: expected {want:.{digits}g}, got {have:.{digits}g} (got - expected = {have - want:.3g})")
    return Closeness(False, max_abs, max_rel, "\n".join(lines), ratio)


HIDDEN_ERROR = "hidden case: how far off it is goes to the course staff only"


def error_to_tolerance(closeness: Closeness) -> str:
    """A hidden case's failure as staff read it: how far off the result is, relative to the
    tolerance, at two significant digits. The candidate reads HIDDEN_ERROR instead: the size of
    the error is the submission's to choose (it can compute the right answer and add any multiple
    of the tolerance), so it could spell out the case's inputs."""
    if math.isinf(closeness.max_abs):
        return "non-finite values returned (NaN and inf never pass)"
    ratio = closeness.ratio
    shown = "more than 1000x" if ratio > 1000 else f"{float(f'{ratio:.2g}'):g}x"
    return f"error {shown} the tolerance"


def bitwise_equal(a: Tensor, b: Tensor) -> bool:
    """True when a and b have the same dtype, shape and bytes (so -0.0 differs from 0.0)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return a.contiguous().numpy().tobytes() == b.contiguous().numpy().tobytes()
