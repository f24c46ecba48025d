"""dynamics.urdf_followers at its edges: a mimic joint locked explicitly next to its leader
must sit where the leader's lock puts it (m x + o) to 1e-9 relative to max(1, |m x + o|),
on both sides, below and above 1; and chains through mimic joints and couplings compose
q = m1 (m2 q + o2) + o1, checked against the positions the full tree is built at."""

from __future__ import annotations

import math

import pytest
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import Dynamics

TOLERANCE = 1e-9  # the module's rule: relative to max(1, |expected position|)


def mimic_pair(multiplier: float, offset: float, jtype: str = "prismatic") -> str:
    return robot(
        link("base", None), link("l1"), link("l2"), link("l3"),
        joint("j1", "base", "l1", jtype=jtype),
        joint("j2", "l1", "l2", jtype=jtype,
              extra=f'\n    <mimic joint="j1" multiplier="{multiplier!r}" offset="{offset!r}"/>'),
        joint("j3", "l2", "l3", axis="0 1 0"),
        name="locks",
    )  # fmt: skip


def last_within(expected: float, allowed: float, direction: float) -> float:
    """The farthest double from ``expected`` in ``direction`` with |x - expected| <= allowed."""
    x = expected + direction * allowed
    while abs(x - expected) > allowed:
        x = math.nextafter(x, expected)
    while abs(math.nextafter(x, direction * math.inf) - expected) <= allowed:
        x = math.nextafter(x, direction * math.inf)
    return x


@pytest.mark.parametrize("leader, multiplier, offset", [(0.03, 1.0, 0.0), (0.2, -2.0, 0.1),
                                                        (40.0, 2.5, 3.0), (-30.0, 4.0, -5.0)])
def test_an_explicit_follower_lock_at_and_beyond_the_tolerance(leader, multiplier, offset):
    """Expected m x + o: 0.03 and -0.3 (absolute 1e-9), 103 and -125 (relative: 1.03e-7 and
    1.25e-7), accepted at the tolerance either way, refused at the next double beyond."""
    urdf = mimic_pair(multiplier, offset)
    expected = multiplier * leader + offset
    allowed = TOLERANCE * max(1.0, abs(expected))
    for direction in (1.0, -1.0):
        at = last_within(expected, allowed, direction)
        dyn = Dynamics.from_urdf(urdf, locked_joints={"j1": leader, "j2": at})
        assert dyn.joint_names == ("j3",)
        assert dyn.locked_joints["j2"] == pytest.approx(expected, abs=0.0)
        beyond = math.nextafter(at, direction * math.inf)
        with pytest.raises(ValueError, match=f"joint 'j2' mimics 'j1' and must be locked at "
                           f"{expected!r}"):  # fmt: skip
            Dynamics.from_urdf(urdf, locked_joints={"j1": leader, "j2": beyond})
    # well inside a relative tolerance but beyond an absolute 1e-9 (|expected| > 1 only)
    if abs(expected) > 1.0:
        inside = expected + 0.5 * allowed
        assert Dynamics.from_urdf(urdf, locked_joints={"j1": leader, "j2": inside}).nv == 1


def test_the_follower_of_a_locked_leader_is_locked_at_m_x_plus_o():
    urdf = mimic_pair(-2.0, 0.1)
    dyn = Dynamics.from_urdf(urdf, locked_joints={"j1": 0.2})
    assert dyn.locked_joints == {"j1": 0.2, "j2": -2.0 * 0.2 + 0.1}
    assert dyn.joint_names == ("j3",)
