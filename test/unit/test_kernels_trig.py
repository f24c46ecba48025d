"""The kinematics' inlined sine and cosine against libm, and its reduction constants against pi."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from numba import njit

from coriolis_ros.dynamics.kernels import trig


@njit(cache=False)
def _sincos_all(x, c, s):
    for i in range(x.shape[0]):
        c[i], s[i] = trig.sincos(x[i])


def _ulps(got, want):
    return np.abs(got - want) / np.spacing(np.maximum(np.abs(want), np.finfo(float).tiny))


def _pi(digits: int) -> Decimal:
    """pi by Machin's formula, 4 (4 atan 1/5 - atan 1/239), in `digits` decimal digits."""
    with localcontext() as ctx:
        ctx.prec = digits + 10

        def atan_inv(n):
            total, term, k, sign = Decimal(0), Decimal(1) / n, 0, 1
            while term != 0:
                total += sign * term / (2 * k + 1)
                term /= n * n
                k, sign = k + 1, -sign
            return total

        return 4 * (4 * atan_inv(5) - atan_inv(239))


@pytest.mark.parametrize(
    "x, ulps",
    [
        (np.random.default_rng(0).uniform(-2 * np.pi, 2 * np.pi, 200_000), 1),
        (np.random.default_rng(1).uniform(-1e3, 1e3, 100_000), 1),
        # large k: the rounding of k PIO2_3 and of r adds up
        (np.random.default_rng(2).uniform(-trig.REDUCTION_LIMIT, trig.REDUCTION_LIMIT, 10**5), 2),
        (np.arange(-4000, 4001) * (np.pi / 4), 1),  # quadrant boundaries, and near them
        (np.nextafter(np.arange(-400, 401) * (np.pi / 2), np.inf), 1),
        (np.array([0.0, -0.0, 5e-324, 1e-300, -1e-10, 1e-8, np.pi, -np.pi, np.pi / 4]), 1),
    ],
    ids=["2pi", "1e3", "limit", "pi/4-grid", "pi/2+ulp", "special"],
)
def test_within_an_ulp_or_two_of_libm(x, ulps):
    c, s = np.empty_like(x), np.empty_like(x)
    _sincos_all(x, c, s)
    cr = np.array([math.cos(v) for v in x])
    sr = np.array([math.sin(v) for v in x])
    # 1 ulp of the value, or 1 ulp of 1 in absolute terms where the value is tiny (a zero
    # of sin or cos: the reduced argument there carries the rounding of k pi/2, ~1e-32)
    assert np.all((_ulps(c, cr) <= ulps) | (np.abs(c - cr) <= 1e-30))
    assert np.all((_ulps(s, sr) <= ulps) | (np.abs(s - sr) <= 1e-30))


def test_beyond_the_reduction_limit_is_libm():
    x = np.array([np.nextafter(trig.REDUCTION_LIMIT, np.inf), 1e6, -3e9, 1e20, 1e50, -1e300])
    c, s = np.empty_like(x), np.empty_like(x)
    _sincos_all(x, c, s)
    assert np.array_equal(c, [math.cos(v) for v in x])
    assert np.array_equal(s, [math.sin(v) for v in x])


def test_reduction_constants():
    with localcontext() as ctx:
        ctx.prec = 60
        half_pi = _pi(50) / 2
        total = Decimal(trig.PIO2_1) + Decimal(trig.PIO2_2) + Decimal(trig.PIO2_3)
        assert abs(total - half_pi) < Decimal("1e-36")
        assert abs(Decimal(trig.TWO_OVER_PI) - 1 / half_pi) <= Decimal(2.0**-53)
    for part in (trig.PIO2_1, trig.PIO2_2):  # k * part exact for |k| < 2^20: <= 33 bits
        mantissa, _ = math.frexp(part)
        assert (mantissa * 2.0**33).is_integer(), part
    k_max = trig.REDUCTION_LIMIT * trig.TWO_OVER_PI + 1
    assert k_max < 2**20
