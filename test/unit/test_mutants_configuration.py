"""dynamics.configuration against references that do not use it: the four series of the
exponential map against their Taylor series summed in 40-digit decimal arithmetic, the
rotation of a quaternion against Rodrigues' formula for its axis and angle, and q (+) v dt
against Pinocchio's integrate for small (series) and large steps, either sign, on a free
flyer, a planar joint and a free flyer after a revolute and a prismatic joint."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from support.floating import MultiDofOracle

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.configuration import _series, quaternion_matrix


def _taylor(x: Decimal, first: int) -> Decimal:
    """sum_k (-1)^k x^(2k) / (2k + first)! in the current decimal context."""
    total, power = Decimal(0), Decimal(1)
    for k in range(60):
        total += (-1) ** k * power / math.factorial(2 * k + first)
        power *= x * x
    return total


def _reference_series(a: float) -> tuple[float, float, float, float]:
    """sin(a)/a, (1 - cos a)/a^2, (a - sin a)/a^3, (1 - cos a)/a from their Taylor series,
    term by term, in 40 digits (no cancellation: each is a sum of its own terms)."""
    with localcontext() as ctx:
        ctx.prec = 40
        x = Decimal(a)
        sums = (_taylor(x, 1), _taylor(x, 2), _taylor(x, 3), x * _taylor(x, 2))
        return tuple(float(s) for s in sums)


@pytest.mark.parametrize("a", [0.0, 1e-9, 3e-6, 2e-5, 6e-5, 9.99e-5])
def test_series_near_zero_to_the_last_bits(a):
    """Below 1e-4 the series branch: each value within 2 ulp of the true one."""
    got = _series(a)
    want = _reference_series(a)
    for k in range(4):
        assert abs(got[k] - want[k]) <= 2 * math.ulp(want[k]), (k, a, got[k], want[k])


@pytest.mark.parametrize("a", [0.05, 0.3, 1.0, 2.5, 3.1, 6.0])
def test_series_away_from_zero(a):
    """The closed forms (some cancellation for a small a: 1e-12 relative at a = 0.05)."""
    got = _series(a)
    want = _reference_series(a)
    for k in range(4):
        assert abs(got[k] - want[k]) <= 1e-12 * abs(want[k]), (k, a, got[k], want[k])


def _rodrigues(axis, angle) -> np.ndarray:
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * (K @ K)


def test_quaternion_matrix_is_rodrigues_for_any_scale_of_the_quaternion():
    """q = (k sin(t/2), cos(t/2)) rotates by t about k; 2.5 q and -0.1 q are the same rotation
    (the quaternion is normalized first)."""
    rng = np.random.default_rng(11)
    for _ in range(5):
        axis, angle = rng.normal(size=3), rng.uniform(-3, 3)
        k = axis / np.linalg.norm(axis)
        q = np.r_[k * math.sin(angle / 2), math.cos(angle / 2)]
        want = _rodrigues(axis, angle)
        for scale in (1.0, 2.5, -0.1):
            np.testing.assert_allclose(quaternion_matrix(scale * q), want, rtol=0, atol=1e-14)


FLYER = """<robot name="flyer">
  <link name="world"/><link name="a"/><link name="b"/>
  <link name="body"><inertial><mass value="2"/><origin xyz="0.1 0.2 0.3"/>
    <inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="turn" type="revolute"><parent link="world"/><child link="a"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="slide" type="prismatic"><parent link="a"/><child link="b"/>
    <origin xyz="0.5 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="free" type="floating"><parent link="b"/><child link="body"/>
    <origin xyz="0 0.4 0"/></joint>
</robot>"""


def test_neutral_puts_the_identity_quaternion_after_the_other_joints():
    """Coordinates turn, slide, then (x, y, z, qx, qy, qz, qw) of the inner free joint."""
    dyn = Dynamics.from_urdf(FLYER)
    assert dyn.nq == 9 and dyn.nv == 8
    np.testing.assert_array_equal(dyn.neutral(), [0, 0, 0, 0, 0, 0, 0, 0, 1.0])
    solo = Dynamics.from_urdf(FLYER, root_joint="floating")  # a root's quaternion first
    np.testing.assert_array_equal(solo.neutral()[:7], [0, 0, 0, 0, 0, 0, 1.0])
    np.testing.assert_array_equal(solo.neutral()[7:], [0, 0, 0, 0, 0, 0, 0, 0, 1.0])


@pytest.mark.parametrize("rotation", [0.0, 4e-5, -7e-5, 3e-4, 0.8, -2.9])
def test_integrate_a_free_joint_after_others_against_pinocchio(rotation):
    """Steps whose rotation angle |w dt| is below the series' switch, just above it, and
    large; the translation of the step moves the position through V (Lynch & Park)."""
    dyn = Dynamics.from_urdf(FLYER)
    oracle = MultiDofOracle(FLYER, dyn)
    rng = np.random.default_rng(3)
    q = np.r_[0.4, -0.3, 0.7, -1.2, 0.5, rng.normal(size=4)]
    for _ in range(3):
        w = rng.normal(size=3)
        w *= rotation / np.linalg.norm(w) if rotation else 0.0
        v = np.r_[1.3, -0.6, rng.normal(size=3), w]
        for dt in (1.0, 0.25):
            got = dyn.integrate(q, v / dt, dt)
            oracle.same_configuration(got, oracle.integrate(q, v), f"free {rotation} dt {dt}")
            assert abs(np.linalg.norm(got[5:9]) - 1.0) < 1e-15


def _planar_reference(q, v) -> np.ndarray:
    """(x, y, theta) after the body twist (vx, vy, f) for unit time, by integrating
    d(x, y)/ds = R(theta + f s) (vx, vy) over s in [0, 1] in closed form, in 40 digits:
    the integrals of cos and sin of theta + f s are differences of sines and cosines over f."""
    with localcontext() as ctx:
        ctx.prec = 40
        x, y, th = (Decimal(float(c)) for c in q)
        vx, vy, f = (Decimal(float(c)) for c in v)

        def sin(t):
            return t * _taylor(t, 1)

        def cos(t):
            return 1 - t * t * _taylor(t, 2)

        if f == 0:
            ic, is_ = cos(th), sin(th)
        else:
            ic, is_ = (sin(th + f) - sin(th)) / f, (cos(th) - cos(th + f)) / f
        return np.array([float(x + vx * ic - vy * is_), float(y + vx * is_ + vy * ic),
                         float(th + f)])  # fmt: skip


@pytest.mark.parametrize("turn", [0.0, 3e-5, -8e-5, 2e-4, -0.6, 2.2])
def test_integrate_a_planar_root_against_the_twist_integrated_exactly(turn):
    """A planar root: theta + f, the position through V2 (left and right turns, small ones on
    the series branch). Pinocchio's planar integrate is not the reference here: at f = 3e-5
    its (1 - cos f) / f loses 1e-12 of the step; the twist integrated in decimals does not.
    Just above the series' switch (1e-4) the closed form cancels too: 3e-13 of the step at
    f = 2e-4, allowed there (1e-12); 2e-15 on the series branch and for large turns."""
    dyn = Dynamics.from_urdf(FLYER.replace('type="floating"', 'type="fixed"'),
                             root_joint="planar")  # fmt: skip
    assert dyn.nq == 5
    for theta in (0.0, 0.9, -2.0):
        q = np.r_[0.3, -0.8, theta, 0.2, 0.1]
        for vx, vy in ((1.0, 0.0), (0.0, 1.0), (-0.7, 2.1)):
            v = np.r_[vx, vy, turn, 0.5, -0.25]
            got = dyn.integrate(q, v * 4.0, 0.25)
            want = np.r_[_planar_reference(q[:3], v[:3]), q[3:] + v[3:]]
            tol = 1e-12 if 1e-4 <= abs(turn) < 0.1 else 2e-15
            np.testing.assert_allclose(got, want, rtol=0, atol=tol, err_msg=f"{turn} {theta}")


def test_integrate_from_half_turns_about_each_axis_against_pinocchio():
    """Quaternions with a single nonzero component, (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0)
    (half turns about x, y, z) and a scaled identity: every component enters the norm."""
    dyn = Dynamics.from_urdf(FLYER)
    oracle = MultiDofOracle(FLYER, dyn)
    for k in range(4):
        quat = np.zeros(4)
        quat[k] = 3.0 if k == 3 else 1.0
        q = np.r_[0.4, -0.3, 0.7, -1.2, 0.5, quat]
        v = np.r_[1.3, -0.6, 0.2, 0.1, -0.3, 0.4, -0.5, 0.25]
        got = dyn.integrate(q, v, 0.5)
        oracle.same_configuration(got, oracle.integrate(q, 0.5 * v), f"half turn {k}")
