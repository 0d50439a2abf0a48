"""How closeness is judged, at the edges, and how a mismatch is explained."""

import math
import re

import pytest
import torch

from grader.compare import bitwise_equal, compare_values, error_to_tolerance

EXPECTED = torch.tensor([[1.0, -2.0, 4.0], [0.5, 0.0, -4.0]], dtype=torch.float64)
TOL = 1e-3  # allowed absolute error: 1e-3 * max|expected| = 4e-3


def test_identical_values_pass_with_zero_error():
    result = compare_values(EXPECTED, EXPECTED.float(), TOL, show_values=False)
    assert result.passed and result.max_abs == 0 and result.message == ""


def test_error_exactly_at_the_tolerance_passes_and_just_above_fails():
    tolerance = 2.0**-8  # allowed: 2**-8 * 4 = 2**-6, exactly representable
    at_edge = EXPECTED.clone()
    at_edge[0, 0] += 2.0**-6
    assert compare_values(EXPECTED, at_edge, tolerance, show_values=False).passed
    above = EXPECTED.clone()
    above[0, 0] += 2.0**-6 + 2.0**-40
    result = compare_values(EXPECTED, above, tolerance, show_values=False)
    assert not result.passed and result.max_rel == (2.0**-6 + 2.0**-40) / 4


def test_tolerance_scales_with_the_largest_expected_value():
    big = EXPECTED * 1e6
    got = big.clone()
    got[1, 1] += 3e3  # tiny next to max|expected| = 4e6, although expected[1, 1] is 0
    assert compare_values(big, got, TOL, show_values=False).passed


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_never_pass(bad):
    got = EXPECTED.clone()
    got[1, 2] = bad
    result = compare_values(EXPECTED, got, 1e9, show_values=False)
    assert not result.passed
    assert "Non-finite values returned: 1" in result.message and result.max_abs == math.inf


def test_message_reads_like_torch_testing():
    got = EXPECTED.clone()
    got[1, 0] += 0.5
    got[0, 2] -= 0.01
    message = compare_values(EXPECTED, got, TOL, show_values=False).message
    assert "Mismatched elements: 2 / 6 (33.3%)" in message
    assert "Greatest absolute difference: 0.5 at index (1, 0)" in message
    assert "Greatest per-element relative difference (|got - expected| / |expected| of one element): 1 at index (1, 0)" in message
    assert "At index" not in message  # values are shown only when asked


def test_values_at_the_worst_index_are_shown_only_when_asked():
    got = EXPECTED.clone()
    got[0, 1] = -1.0
    assert "At index (0, 1): expected -2, got -1 (got - expected = 1)" in compare_values(EXPECTED, got, TOL, show_values=True).message
    assert "At index" not in compare_values(EXPECTED, got, TOL, show_values=False).message


def test_empty_tensors_are_close():
    assert compare_values(torch.zeros(0, 5, dtype=torch.float64), torch.zeros(0, 5), TOL, show_values=True).passed


def test_all_zero_expected_requires_exact_zeros():
    zeros = torch.zeros(3, dtype=torch.float64)
    assert compare_values(zeros, torch.zeros(3), TOL, show_values=False).passed
    assert not compare_values(zeros, torch.tensor([0.0, 1e-30, 0.0]), TOL, show_values=False).passed


def test_bitwise_equal_sees_every_change():
    a = torch.tensor([0.0, 1.0])
    assert bitwise_equal(a, a.clone())
    assert not bitwise_equal(a, torch.tensor([-0.0, 1.0]))  # equal as numbers, different bits
    assert not bitwise_equal(a, a.double())
    assert not bitwise_equal(a, a.reshape(2, 1))


@pytest.mark.parametrize(
    "error, shown",
    [
        (0.0099, "error 2.5x the tolerance"),
        (0.1488, "error 37x the tolerance"),
        (1.5, "error 380x the tolerance"),
        (5.0, "error more than 1000x the tolerance"),
    ],
)
def test_staff_are_told_a_hidden_cases_error_relative_to_the_tolerance(error, shown):
    got = EXPECTED.clone()
    got[1, 0] += error
    message = error_to_tolerance(compare_values(EXPECTED, got, TOL, show_values=False))
    assert message == shown


def test_a_hidden_case_with_non_finite_values_is_told_so_without_a_count():
    got = EXPECTED.clone()
    got[0, 0] = math.nan
    message = error_to_tolerance(compare_values(EXPECTED, got, TOL, show_values=False))
    assert message == "non-finite values returned (NaN and inf never pass)"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_are_shown_with_the_digits_that_tell_them_apart(dtype):
    """Six significant digits showed "expected 2.73798, got 2.73798" for a float64 difference of 2.8e-7:
    the value got is printed so that it reads back as exactly the value returned, and the difference beside."""
    expected = torch.tensor([[2.73798, 1.0]], dtype=torch.float64)
    got = expected.to(dtype).clone()
    got[0, 0] += 2.8e-7
    message = compare_values(expected, got, 1e-10, show_values=True).message
    line = next(line for line in message.splitlines() if line.startswith("At index"))
    want, have, difference = re.fullmatch(r"At index \(0, 0\): expected (\S+), got (\S+) \(got - expected = (\S+)\)", line).groups()
    assert want != have, line
    assert torch.tensor(float(have), dtype=dtype) == got[0, 0], line  # read back, it is the very value returned
    assert float(difference) == pytest.approx(got[0, 0].item() - 2.73798, rel=1e-2), line
