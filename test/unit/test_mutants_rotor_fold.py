"""dynamics.rotor_fold, piece by piece: what "balanced" means, as docs/rotors.md states it
(products of inertia and the transverse moments' difference within 1e-12 of the largest
moment, the centre within 1e-12 m of the spin axis z), on both sides of each bound. The
literal values are the documented ones, not the module's constants, so a changed constant
fails here."""

from __future__ import annotations

import math

import numpy as np

from coriolis_ros.dynamics.model import MF_C, MF_I, MF_M, MF_WIDTH
from coriolis_ros.dynamics.rotor_fold import balanced

DOCUMENTED = 1e-12  # docs/rotors.md: relative to the largest moment, and metres for the centre


def body(mass=0.5, moments=(0.5, 0.5, 1.0), centre=(0.0, 0.0, 0.0)) -> np.ndarray:
    row = np.zeros(MF_WIDTH)
    row[MF_M] = mass
    row[MF_C : MF_C + 3] = centre
    row[MF_I : MF_I + 9] = np.diag(moments).reshape(-1)
    return row


def last_within(start: float, limit: float, measure) -> float:
    """The largest double x >= start with measure(x) <= limit (the boundary of the spec)."""
    x = start + limit
    while measure(x) > limit:
        x = math.nextafter(x, -math.inf)
    while measure(math.nextafter(x, math.inf)) <= limit:
        x = math.nextafter(x, math.inf)
    return x


def test_a_round_rotor_gives_its_axial_moment():
    assert balanced(body()) == 1.0
    assert balanced(body(moments=(2.0, 2.0, 0.25))) == 0.25  # the largest moment is transverse


def test_each_product_of_inertia_alone_at_and_beyond_the_documented_tolerance():
    """Every one of the six off-diagonal entries is checked, each alone (largest moment 1:
    the tolerance is 1e-12 itself); sign does not matter."""
    for i in range(3):
        for j in range(3):
            if i == j:
                continue
            for sign in (1.0, -1.0):
                at = body()
                at[MF_I + 3 * i + j] = sign * DOCUMENTED
                assert balanced(at) == 1.0, (i, j, sign)
                beyond = body()
                beyond[MF_I + 3 * i + j] = sign * math.nextafter(DOCUMENTED, math.inf)
                assert balanced(beyond) is None, (i, j, sign)


def test_the_tolerance_scales_with_the_largest_moment():
    """Largest moment 4: a product of 4e-12 is within, the next double is not; 1.5e-12, beyond
    1e-12 but within 4e-12, is within."""
    moments = (2.0, 2.0, 4.0)
    at = body(moments=moments)
    at[MF_I + 1] = 4 * DOCUMENTED
    assert balanced(at) == 4.0
    at[MF_I + 1] = 1.5 * DOCUMENTED
    assert balanced(at) == 4.0
    at[MF_I + 1] = math.nextafter(4 * DOCUMENTED, math.inf)
    assert balanced(at) is None


def test_transverse_moments_differing_at_and_beyond_the_tolerance_either_way():
    """I_xx - I_yy and I_yy - I_xx: within 1e-12 (largest moment 1) balanced, the next double
    beyond it not."""
    for index in (MF_I + 0, MF_I + 4):  # I_xx, then I_yy, raised above the other
        at = body()
        at[index] = last_within(0.5, DOCUMENTED, lambda x: abs(x - 0.5))
        assert balanced(at) == 1.0, index
        beyond = body()
        beyond[index] = math.nextafter(at[index], math.inf)
        assert balanced(beyond) is None, index
        lower = body()
        lower[index] = 0.5 - 3 * DOCUMENTED  # lowered well beyond the tolerance
        assert balanced(lower) is None, index


def test_the_centre_off_the_axis_in_x_or_y_at_and_beyond_a_picometre():
    for axis in (0, 1):
        for sign in (1.0, -1.0):
            centre = [0.0, 0.0, 0.0]
            centre[axis] = sign * DOCUMENTED
            assert balanced(body(centre=centre)) == 1.0, (axis, sign)
            centre[axis] = sign * math.nextafter(DOCUMENTED, math.inf)
            assert balanced(body(centre=centre)) is None, (axis, sign)
    # the distance from the axis, not each coordinate: 0.8e-12 and 0.8e-12 is 1.13e-12
    assert balanced(body(centre=(0.8 * DOCUMENTED, 0.8 * DOCUMENTED, 0.0))) is None
    assert balanced(body(centre=(0.0, 0.0, 5.0))) == 1.0  # along the axis: fine


def test_a_massless_body_has_no_centre_to_check():
    """Without mass the centre means nothing: balanced wherever it is; with any mass (light
    or heavy) the same centre is refused."""
    assert balanced(body(mass=0.0, centre=(0.3, -0.2, 0.0))) == 1.0
    for mass in (1e-9, 0.5, 1.0, 3.0):
        assert balanced(body(mass=mass, centre=(0.3, -0.2, 0.0))) is None, mass
