"""The four-bar's closure to the last digit where its inputs allow it: a crank at a huge angle
(the loops see the angle less whole turns, the tree the value as given), and a rocker next to
a dead point (where a residual below Newton's tolerance still leaves the joints far off).

Reference: the bundled four-bar in the plane, written out from its URDF (crank 0.2 m on the
ground at the origin, coupler 0.6 m, rocker 0.4 m on the ground at (0.5, 0); the coupler's
zero is 1.2 rad from the crank, the rocker's -1.9 rad): its loop equation and, for a given
rocker angle, its closure by intersecting two circles (law of cosines), and the dead point
where the two circles touch, found by bisection on that formula."""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path

FOUR_BAR = robot_path("four_bar")
CRANK, COUPLER, ROCKER, GROUND = 0.2, 0.6, 0.4, np.array([0.5, 0.0])


def _u(angle):
    return np.array([np.cos(angle), -np.sin(angle)])


def loop_gap(q) -> float:
    """|crank + coupler - ground - rocker| (m) at tree positions q = (crank, coupler, rocker)."""
    crank, coupler, rocker = q
    # cos and sin of the crank as given (exact at any size), then sums of small angles: the
    # crank's link points along crank - pi/2, the coupler along crank + 1.2 + coupler - pi/2
    c, s = np.cos(crank), np.sin(crank)
    b = 1.2 + coupler - np.pi / 2
    crank_tip = CRANK * np.array([s, c])
    coupler_dir = np.array([c * np.cos(b) - s * np.sin(b), -(s * np.cos(b) + c * np.sin(b))])
    rocker_tip = GROUND + ROCKER * _u(-1.9 + rocker)
    return float(np.abs(crank_tip + COUPLER * coupler_dir - rocker_tip).max())


def _circles(rocker):
    """(distance from the crank's pivot to the rocker's tip B, its direction, the foot a of the
    crank tip's projection on it, h^2 = crank^2 - a^2: < 0 when the circles do not meet)."""
    tip = GROUND + ROCKER * _u(-1.9 + rocker)
    d = np.linalg.norm(tip)
    a = (CRANK**2 - COUPLER**2 + d * d) / (2 * d)
    return tip, d, a, CRANK**2 - a * a


def closed_by_rocker(rocker) -> np.ndarray:
    """Tree positions (crank, coupler, rocker) closing the loop, on the bundled assembly."""
    tip, d, a, h2 = _circles(rocker)
    e = tip / d
    p = a * e + np.sqrt(h2) * np.array([-e[1], e[0]])  # the crank's tip
    f1 = np.arctan2(-p[1], p[0])
    far = tip - p
    f2 = np.arctan2(-far[1], far[0])
    return np.array([f1 + np.pi / 2, f2 - f1 - 1.2, rocker])


def dead_point() -> float:
    """The rocker angle above 0.9 where crank and coupler line up (h^2 = 0)."""
    lo, hi = 0.9, 0.95
    assert _circles(lo)[3] > 0 > _circles(hi)[3]
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _circles(mid)[3] > 0 else (lo, mid)
    return lo


def test_the_reference_closes_the_bundled_four_bar():
    dyn = Dynamics.from_urdf(FOUR_BAR, independent_joints=["rocker"])
    for rocker in (0.2, 0.6):
        q = dyn.close_loops([rocker], guess=closed_by_rocker(rocker) + 0.01)
        assert loop_gap(q) < 1e-14
        assert np.abs(q - closed_by_rocker(rocker)).max() < 1e-12


@pytest.mark.parametrize("path", [(1e15, 1e15 + 5.0), (1e15, 1e20, 1e40, 3e45), (7.0, 1e16 + 4.0)])
def test_a_crank_many_turns_away_closes_at_the_angle_the_tree_sees(path):
    """Continuation from a huge crank value: the tree's kernels take cos and sin of the value as
    given, so the loop must close at that angle, not at the value plus a rounded short way."""
    dyn = Dynamics.from_urdf(FOUR_BAR)
    for y in path:
        M = dyn.mass_matrix([y])
        q = dyn.full_position([y])
        assert q[0] == y  # the crank's value as given
        assert loop_gap(q) < 1e-13, f"crank {y:g}: the loop is open by {loop_gap(q):.1e} m"
        turned = np.arctan2(np.sin(y), np.cos(y))
        fresh = Dynamics.from_urdf(FOUR_BAR).mass_matrix([turned])
        assert abs(M[0, 0] / fresh[0, 0] - 1) < 1e-11


def test_next_to_a_dead_point_the_joints_are_placed_not_only_the_residual():
    star = dead_point()
    start = star - 0.05
    for delta, placed in ((1e-5, 1e-12), (1e-7, 1e-11), (1e-9, 1e-10)):
        dyn = Dynamics.from_urdf(FOUR_BAR, independent_joints=["rocker"])
        dyn.close_loops([start], guess=closed_by_rocker(start))
        q = dyn.full_position([star - delta])
        error = np.abs(q - closed_by_rocker(star - delta)).max()
        assert error < placed, f"{delta:g} from the dead point: joints off by {error:.1e}"
    # closer, the loops' Jacobian has lost rank (pivot ratio below 1e-6), from either start
    for guess in (closed_by_rocker(start), closed_by_rocker(star - 1e-11)):
        dyn = Dynamics.from_urdf(FOUR_BAR, independent_joints=["rocker"])
        dyn.close_loops([start], guess=closed_by_rocker(start))
        with pytest.raises(ValueError, match=r"singular configuration: .*\(crank, coupler; "):
            dyn.close_loops([star - 1e-11], guess=guess)
        with pytest.raises(ValueError, match=r"singular configuration: .*\(crank, coupler; "):
            dyn.coriolis([star - 1e-11], [1.0])


def test_rates_beyond_the_bound_in_the_tree_name_the_joint_not_an_internal_error():
    """qd within ±1e50 whose tree velocity A(q) qd is not (the coupler turns 2.46 times as fast
    as the rocker at 0.8): a ValueError naming the joint, from every method; half as fast, an
    answer."""
    dyn = Dynamics.from_urdf(FOUR_BAR, independent_joints=["rocker"])
    A, _ = dyn.velocity_map([0.8])
    coupler = dyn.tree_joint_names.index("coupler")
    assert 2.4 < abs(A[coupler, 0]) < 2.5 and np.abs(A).max() == abs(A[coupler, 0])
    fast, slow = 5e49, 1e49  # |A qd| = 1.2e50 and 2.5e49 (Slotine-Li: Adot qd_ref 6.7e49)
    named = r"moves tree joint 'coupler' at -1.2\de\+50, beyond ±1e\+50"
    calls = {
        "coriolis": lambda v: dyn.coriolis([0.8], [v]),
        "coriolis_vectors": lambda v: dyn.coriolis_vectors([0.8], [v]),
        "coriolis_times": lambda v: dyn.coriolis_times([0.8], [1.0], [v]),
        "slotine_li": lambda v: dyn.slotine_li([0.8], [1.0], [v], [0.0]),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=named):
            call(fast)
    for name in ("coriolis_vectors", "coriolis_times", "slotine_li"):
        assert all(np.all(np.isfinite(x)) for x in np.atleast_1d(calls[name](slow))), name
    M, Mdot, C = dyn.coriolis([0.8], [1e-3])  # finite at a small rate, and after the refusal
    assert np.all(np.isfinite(C))
    with pytest.raises(ValueError, match=r"A\(q\) qdd \+ Adot qd \(from qd and qdd\) moves"):
        dyn.inverse_dynamics([0.8], [1e49], [0.0])  # Adot qd ~ 1e98 though qdd = 0


def test_outputs_that_share_memory_are_refused():
    dyn = Dynamics.from_urdf(FOUR_BAR)
    x = np.empty(1)
    with pytest.raises(ValueError, match="out arrays must not share memory"):
        dyn.coriolis_vectors([0.5], [1.0], out=(x, np.empty(1), x))
    apart = np.empty(3)
    out = (apart[0:1], apart[1:2], apart[2:3])
    dyn.coriolis_vectors([0.5], [1.0], out=out)
    assert_ref = dyn.coriolis([0.5], [1.0])
    assert abs(out[2][0] - assert_ref[0][0, 0]) < 1e-15  # M qd with qd = 1


def test_a_clone_keeps_the_assembly_branch():
    """The four-bar closes in two ways at crank 0.3; a clone continues on the one its
    original was put on, checked on the loop equation with the coupler's sign."""
    dyn = Dynamics.from_urdf(FOUR_BAR)
    default = dyn.full_position([0.3])
    other = dyn.close_loops([0.3], guess=[0.3, 1.2, -2.3])
    assert loop_gap(other) < 1e-13 and abs(other[1] - default[1]) > 0.5  # two assemblies
    twin = dyn.clone()
    assert np.abs(twin.full_position([0.3]) - other).max() < 1e-15
    assert np.array_equal(twin.coriolis([0.3], [1.0])[0], dyn.coriolis([0.3], [1.0])[0])
