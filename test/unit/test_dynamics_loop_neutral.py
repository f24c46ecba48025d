"""Closed chains whose neutral (all-zero) configuration is special.

Models written for GRBDA often draw a linkage stretched out along a line: every joint at zero
puts the links in a row, a dead point where the loops' Jacobian loses rank.  The degrees of
freedom are counted at regular configurations, not there; ``neutral()`` (and so ``warmup()``
and the node's first tick) gives a regular assembly near it; Newton started at a guess where
the dependent joints' Jacobian is singular starts again off it.

References: the parallelogram's closed form (q2 = -q1, q3 = q1: A constant, dA/dy zero),
Pinocchio's mass matrix of the spanning tree reduced by it, and the loop points placed by
planar trigonometry.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from support.oracle import PinOracle, assert_close

from coriolis_ros.dynamics import Dynamics

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)


def _link(name, length, mass):
    """A rod along x of the given length, its centre halfway."""
    i = mass * length * length / 12.0
    return (
        f'<link name="{name}"><inertial><origin xyz="{length / 2} 0 0"/>'
        f'<mass value="{mass}"/><inertia ixx="1e-5" ixy="0" ixz="0" iyy="{i + 1e-5}" '
        f'iyz="0" izz="{i + 1e-5}"/></inertial></link>'
    )


def _joint(name, parent, child, x, flag=""):
    return (
        f'<joint name="{name}" type="continuous"{flag}><parent link="{parent}"/>'
        f'<child link="{child}"/><origin xyz="{x} 0 0"/><axis xyz="0 0 1"/></joint>'
    )


def _loop(pred, xp, succ, xs):
    return (
        f'<loop name="closure" type="revolute"><predecessor link="{pred}"><origin '
        f'xyz="{xp} 0 0"/></predecessor><successor link="{succ}"><origin xyz="{xs} 0 0"/>'
        '</successor><axis xyz="0 0 1"/></loop>'
    )


# A parallelogram drawn stretched out: crank 0.4 and coupler 1.0 from the origin, rocker 0.4
# from a pivot at 1.0, all along x at zero (the loop's two points meet at x = 1.4).
PARALLELOGRAM = (
    '<robot name="stretched">' + '<link name="ground"/>' + _link("crank", 0.4, 0.3)
    + _link("coupler", 1.0, 0.8) + _link("rocker", 0.4, 0.3)
    + _joint("j_crank", "ground", "crank", 0.0, ' independent="true"')
    + _joint("j_coupler", "crank", "coupler", 0.4, ' independent="false"')
    + _joint("j_rocker", "ground", "rocker", 1.0, ' independent="false"')
    + _loop("coupler", 1.0, "rocker", 0.4) + "</robot>"
)  # fmt: skip


def test_the_stretched_parallelogram_has_one_degree_of_freedom():
    """K has rank 1 at zero (all links on x: no loop motion along x), 2 elsewhere."""
    dyn = Dynamics.from_urdf(PARALLELOGRAM)
    assert dyn.nv == 1 and dyn.joint_names == ("j_crank",)
    assert dyn.dependent_joints == ("j_coupler", "j_rocker")


def test_neutral_is_a_regular_assembly_next_to_the_dead_point():
    dyn = Dynamics.from_urdf(PARALLELOGRAM)
    y = dyn.neutral()
    assert y.tolist() == [0.1]  # zero is the dead point; the first offset tried is +0.1
    np.testing.assert_allclose(dyn.closed.full_position(y), [0.1, -0.1, 0.1], atol=1e-12)
    dyn.warmup()  # every method at neutral: refused at the dead point before


@pytest.mark.parametrize("crank", [0.3, 1.2, 2.5, -0.7])
def test_the_parallelogram_moves_as_its_closed_form(crank):
    dyn = Dynamics.from_urdf(PARALLELOGRAM)
    dyn.neutral()
    y = np.array([crank])
    q = dyn.closed.full_position(y)
    np.testing.assert_allclose(q, [crank, -crank, crank], atol=1e-11)
    A, dA = dyn.velocity_map(y)
    np.testing.assert_allclose(A[:, 0], [1.0, -1.0, 1.0], atol=1e-11)
    assert np.abs(dA).max() < 1e-11
    oracle = PinOracle(PARALLELOGRAM, order=dyn.tree_joint_names)
    a = np.array([[1.0], [-1.0], [1.0]])
    Mbar = dyn.mass_matrix(y)
    assert_close(Mbar, a.T @ oracle.M(q) @ a, 1e-10, f"Mbar at {crank}")
    M, Mdot, C = dyn.coriolis(y, np.array([1.3]))
    assert_close(Mdot, C + C.T, 1e-10, "Mbardot = Cbar + Cbar^T")


def _five_bar(a_point, b1, b2):
    """Chain a: links 0.15 and 0.25, then its loop point at a_point on the third link; chain
    b: links b1 and b2, its loop point at b2's end; both from the origin, all about z."""
    return (
        '<robot name="five">' + '<link name="ground"/>' + _link("a1", 0.15, 0.2)
        + _link("a2", 0.25, 0.2) + _link("a3", 0.2, 0.2) + _link("b1", b1, 0.3)
        + _link("b2", b2, 0.3)
        + _joint("ja1", "ground", "a1", 0.0) + _joint("ja2", "a1", "a2", 0.15)
        + _joint("ja3", "a2", "a3", 0.25)
        + _joint("jb1", "ground", "b1", 0.0, ' independent="false"')
        + _joint("jb2", "b1", "b2", b1, ' independent="false"')
        + _loop("a3", a_point, "b2", b2) + "</robot>"
    )  # fmt: skip


# A five-bar: a chain of three links (0.15, 0.25, then 0.2 to the loop's point) and one of two
# (0.35, then 0.45) from the same origin; at zero the two-link chain is straight (its end at
# 0.8, the other's at 0.6), so its joints' Jacobian is singular there and Newton cannot start.
FIVE_BAR = _five_bar(0.2, 0.35, 0.45)


def _tip(angles_lengths):
    x = y = th = 0.0
    for angle, length in angles_lengths:
        th += angle
        x, y = x + length * math.cos(th), y + length * math.sin(th)
    return np.array([x, y])


def test_newton_starts_off_a_straight_dependent_chain():
    dyn = Dynamics.from_urdf(FIVE_BAR)
    assert dyn.joint_names == ("ja1", "ja2", "ja3")
    y = dyn.neutral()
    assert y.tolist() == [0.0, 0.0, 0.0]  # the assembly at zero, found from a nudged guess
    q = dict(zip(dyn.tree_joint_names, dyn.closed.full_position(y), strict=True))
    p = _tip([(q["ja1"], 0.15), (q["ja2"], 0.25), (q["ja3"], 0.2)])
    s = _tip([(q["jb1"], 0.35), (q["jb2"], 0.45)])
    assert np.abs(p - s).max() < 1e-12
    # Newton restarted from chain b bent by +0.1 at both joints: the assembly bent that way
    assert q["jb2"] > 0.5 and q["jb1"] < 0.0
    dyn.warmup()


# A four-bar with its crank just beyond its range at zero: crank 0.3 from the origin, rocker
# 0.3 from a pivot at (1.0, -0.4), coupler 0.4962 (coupler and rocker 0.01 shorter than the
# crank's tip is from the pivot at zero, sqrt(0.65)).  Turning the crank by +0.1 takes its tip
# further from the pivot (0.823: no assembly), by -0.1 nearer (0.793: a regular one).
REACH = math.sqrt(0.65) - 0.3 - 0.01
LIMIT = (
    '<robot name="limit">' + '<link name="ground"/>' + _link("crank", 0.3, 0.3)
    + _link("coupler", REACH, 0.5) + _link("rocker", 0.3, 0.3)
    + _joint("j_crank", "ground", "crank", 0.0)
    + _joint("j_coupler", "crank", "coupler", 0.3, ' independent="false"')
    + '<joint name="j_rocker" type="continuous" independent="false"><parent link="ground"/>'
    '<child link="rocker"/><origin xyz="1.0 -0.4 0"/><axis xyz="0 0 1"/></joint>'
    + _loop("coupler", REACH, "rocker", 0.3) + "</robot>"
)  # fmt: skip


def test_neutral_steps_the_other_way_when_one_way_has_no_assembly():
    dyn = Dynamics.from_urdf(LIMIT)
    assert dyn.neutral().tolist() == [-0.1]
    q = dict(zip(dyn.tree_joint_names, dyn.closed.full_position([-0.1]), strict=True))
    p = _tip([(q["j_crank"], 0.3), (q["j_coupler"], REACH)])
    s = np.array([1.0, -0.4]) + _tip([(q["j_rocker"], 0.3)])
    assert np.abs(p - s).max() < 1e-12


# The five-bar with chain a folded back at zero (its loop point 0.2 from the origin) and chain
# b unable to come nearer than 0.5 (0.65 and 0.15): no assembly near zero; with a's last joint
# half a turn round, a reaches 0.6 and the mechanism assembles.
FOLDED = _five_bar(-0.2, 0.65, 0.15)


def test_without_an_assembly_near_zero_neutral_gives_newtons_error_from_zero():
    """The error is the one of Newton from the tree's neutral configuration (closed from that
    guess in another instance), even after the instance has closed elsewhere."""
    dyn = Dynamics.from_urdf(FOLDED)
    dyn.close_loops([0.0, 0.0, math.pi], guess=np.array([0.0, 0.0, math.pi, 0.5, 1.0]))
    with pytest.raises(ValueError) as info:
        dyn.neutral()
    fresh = Dynamics.from_urdf(FOLDED)
    with pytest.raises(ValueError) as want:
        fresh.close_loops([0.0, 0.0, 0.0], guess=np.zeros(5))
    assert str(info.value) == str(want.value)
    assert str(info.value).startswith("loop 'closure' does not close from the starting guess")
