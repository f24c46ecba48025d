"""Sine and cosine of a joint angle, inlined into the kinematics.

libm's ``sin`` and ``cos`` took 25 ns a pair here, this 11 ns (medians of 3 runs), and as a
call it spilled the sweep's live values around it; :func:`kinematics.joint_angles` takes
every angle's sine and cosine in a loop of its own, before the forward pass.

Method (Cody & Waite, *Software Manual for the Elementary Functions*, 1980): write
x = k pi/2 + r with k the nearest integer to x 2/pi and |r| <= pi/4, the product k pi/2
taken in three parts ``PIO2_1 + PIO2_2 + PIO2_3`` whose first two have 33 significant
bits, so that k PIO2_1 and k PIO2_2 are exact for |k| < 2^20; then sin r and cos r from
their Taylor series, through the r^17 and r^16 terms (the first omitted terms are below
1e-19 for |r| <= pi/4), and the quadrant k mod 4 picks and signs them.  The constants are
pi/2 rounded to 33 bits, the rest rounded to 33 bits, and the rest to 53 bits; their sum
differs from pi/2 by 1e-37.  Arguments beyond REDUCTION_LIMIT (|x| > 8e5 rad, no joint's
angle in practice) go to libm, which reduces them exactly.

Accuracy (tested against libm on dense grids and at multiples of pi/4): within 1 ulp for
|x| <= 1e3, 2 ulp up to the limit; sin(-0) is +0 (no joint cares).
"""

import math

from .spatial import body_step

PIO2_1 = 1.5707963267341256  # pi/2 to 33 bits
PIO2_2 = 6.077100506303966e-11  # (pi/2 - PIO2_1) to 33 bits
PIO2_3 = 2.0222662487959506e-21  # the rest
TWO_OVER_PI = 0.6366197723675814
REDUCTION_LIMIT = 8e5  # |k| < 2^19

# Taylor coefficients (-1)^m / (2m+1)! and (-1)^m / (2m)!: 1/n! is exact enough, n! < 2^53.
S1, S2, S3, S4 = -1 / 6, 1 / 120, -1 / 5040, 1 / 362880
S5, S6, S7, S8 = -1 / 39916800, 1 / 6227020800, -1 / 1307674368000, 1 / 355687428096000
C1, C2, C3, C4 = -1 / 2, 1 / 24, -1 / 720, 1 / 40320
C5, C6, C7, C8 = -1 / 3628800, 1 / 479001600, -1 / 87178291200, 1 / 20922789888000


@body_step
def sincos(x):
    """(cos x, sin x) for a finite x."""
    if not abs(x) <= REDUCTION_LIMIT:
        return math.cos(x), math.sin(x)
    k = math.floor(x * TWO_OVER_PI + 0.5)
    c, s = reduced(x, k)
    # quadrant k mod 4: (cos x, sin x) = (c, s), (-s, c), (-c, -s), (s, -c); chosen without
    # branches (random angles would mispredict them), the signs exact products with +-1
    quadrant = int(k) & 3
    odd = quadrant & 1
    cos_sign = 1.0 - 2.0 * (((quadrant + 1) >> 1) & 1)
    sin_sign = 1.0 - 2.0 * (quadrant >> 1)
    u = s if odd else c
    w = c if odd else s
    return cos_sign * u, sin_sign * w


@body_step
def reduced(x, k):
    """(cos r, sin r) for r = x - k pi/2 (Cody-Waite, then Taylor): arithmetic only, so the
    lane kernels (:func:`.lanes.sincos_at`) run this very code on four angles at once."""
    r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3
    z = r * r
    s = r + r * z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * (S6 + z * (S7 + z * S8)))))))
    c = 1.0 + z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * (C6 + z * (C7 + z * C8)))))))
    return c, s
