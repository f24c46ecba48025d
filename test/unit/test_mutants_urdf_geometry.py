"""dynamics.urdf_geometry against Pinocchio's rotations and the definitions.

* ``rpy_matrix`` is URDF's fixed-axis roll-pitch-yaw, Rz(yaw) Ry(pitch) Rx(roll):
  ``pin.rpy.rpyToMatrix``, and the product of the three elementary rotations written here.
* ``axis_rotation`` is Rodrigues' rotation: ``pin.exp3(angle * axis)``.
* ``align_z`` returns a proper rotation (R^T R = I, det R = 1) whose third column is the axis
  itself, for every unit axis: along ±z, off z by the smallest tilt a unit vector can have,
  around |axis_x| = 0.9 (where its helper vector changes) and at random.
* ``joint_axis`` normalises; an axis of norm 1e-12 is kept, the next double below refused.
* A joint whose axis is 4e-8 rad off z gives Pinocchio's M and C (to 1e-10).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest
from support.oracle import PinOracle, assert_close
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import Dynamics, URDFError
from coriolis_ros.dynamics import urdf_geometry as geo


def elementary(axis: int, angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def test_rpy_is_rz_ry_rx_and_pinocchios():
    rng = np.random.default_rng(0)
    for rpy in [*rng.uniform(-4, 4, (20, 3)), (0.3, 0, 0), (0, 0.3, 0), (0, 0, 0.3), (0, 0, 0)]:
        r, p, y = rpy
        R = geo.rpy_matrix(rpy)
        want = elementary(2, y) @ elementary(1, p) @ elementary(0, r)
        np.testing.assert_allclose(R, want, rtol=0, atol=1e-15)
        np.testing.assert_allclose(R, pin.rpy.rpyToMatrix(*rpy), rtol=0, atol=1e-15)


def test_axis_rotation_is_rodrigues_pinocchios_exp3():
    rng = np.random.default_rng(1)
    axes = [np.eye(3)[k] for k in range(3)] + list(rng.normal(size=(10, 3)))
    for axis in axes:
        axis = axis / np.linalg.norm(axis)
        for angle in (0.0, 0.4, -1.3, math.pi, 5.0):
            R = geo.axis_rotation(axis, angle)
            np.testing.assert_allclose(R, pin.exp3(angle * axis), rtol=0, atol=1e-15)


def proper_rotation_with_axis(R, axis):
    np.testing.assert_allclose(R.T @ R, np.eye(3), rtol=0, atol=1e-15)
    assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-15)
    assert np.array_equal(R[:, 2], axis)


def unit(x, y, z):
    v = np.array([x, y, z], dtype=np.float64)
    return v / np.linalg.norm(v)


def test_align_z_is_a_rotation_whose_third_column_is_the_axis():
    rng = np.random.default_rng(2)
    tilt = math.sqrt(2e-15)  # a unit axis with z = 1 - 1e-15: 4.5e-8 rad off z
    axes = [
        unit(0, 0, 1), unit(0, 0, -1), unit(1, 0, 0), unit(-1, 0, 0), unit(0, 1, 0),
        unit(tilt, 0, 1), unit(tilt, 0, -1), unit(0, tilt, 1), unit(-tilt, tilt, -1),
        unit(1e-300, 0, 1), unit(0.9, math.sqrt(1 - 0.81), 0), unit(-0.9, 0, math.sqrt(0.19)),
        unit(1, 1, 0), unit(1, 0, 1), unit(1, -1, 1),
        *(unit(*x) for x in rng.normal(size=(20, 3))),
    ]  # fmt: skip
    for axis in axes:
        proper_rotation_with_axis(geo.align_z(axis), axis)
    np.testing.assert_array_equal(geo.align_z(unit(0, 0, 1)), np.eye(3))
    np.testing.assert_array_equal(geo.align_z(unit(0, 0, -1)), np.diag([1.0, -1.0, -1.0]))


def test_the_first_column_is_x_or_near_x_y_made_orthogonal_to_the_axis():
    """As documented: x made orthogonal to the axis, y when |axis_x| >= 0.9 (just below, at and
    just above 0.9, and at random; the dynamics do not depend on this choice, align_z's
    contract does)."""
    rng = np.random.default_rng(4)
    axes = [unit(*x) for x in rng.normal(size=(20, 3))]
    for x in (math.nextafter(0.9, 0.0), 0.9, math.nextafter(0.9, 1.0)):
        c = math.sqrt(1.0 - x * x)
        axes += [np.array([x, c, 0.0]), np.array([-x, 0.0, c]), np.array([x, -c, 0.0])]
    for axis in axes:
        R = geo.align_z(axis)
        proper_rotation_with_axis(R, axis)
        helper = np.array([1.0, 0.0, 0.0] if abs(axis[0]) < 0.9 else [0.0, 1.0, 0.0])
        first = helper - helper.dot(axis) * axis
        np.testing.assert_allclose(R[:, 0], first / np.linalg.norm(first), rtol=0, atol=1e-15)


def test_an_axis_a_few_1e_8_off_z_is_pinocchios():
    """A revolute joint whose axis is 4e-8 rad off z, with a body off its axis: M, C and g are
    Pinocchio's to 1e-10 (the axis is not rounded to z)."""
    text = robot(
        link("base", None), link("l1"), link("l2"),
        joint("j1", "base", "l1", axis="4e-8 0 1"),
        joint("j2", "l1", "l2", axis="0 -4e-8 -1"),
        name="nearly_z",
    )  # fmt: skip
    dyn = Dynamics.from_urdf(text)
    oracle = PinOracle(text, order=dyn.joint_names)
    q, v = np.array([0.3, -0.8]), np.array([1.1, 0.6])
    M, _, C = dyn.coriolis(q, v)
    assert_close(M, oracle.M(q), 1e-10, "M")
    assert_close(C, oracle.C(q, v), 1e-10, "C")
    assert_close(dyn.gravity(q), oracle.g(q), 1e-10, "g")


def test_joint_axis_normalises_defaults_to_x_and_refuses_a_zero_axis():
    def j(axis):
        return SimpleNamespace(name="j", axis=axis)

    np.testing.assert_array_equal(geo.joint_axis(j(None)), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(geo.joint_axis(j([0.0, 3.0, 4.0])), [0, 0.6, 0.8], atol=1e-16)
    np.testing.assert_array_equal(geo.joint_axis(j([0.0, 0.0, 1e-12])), [0.0, 0.0, 1.0])
    tiny = math.nextafter(1e-12, 0.0)
    for bad in ([0.0, 0.0, tiny], [0.0, 0.0, 0.0], [1.0, math.nan, 0.0], [math.inf, 0, 0],
                [1.0, 0.0], [1.0, 0.0, 0.0, 0.0]):  # fmt: skip
        with pytest.raises(URDFError, match=r"^/robot/joint\[@name='j'\]/axis: invalid axis"):
            geo.joint_axis(j(bad))


def test_pose_defaults_and_refusals():
    R, t = geo.pose(None, "w")
    np.testing.assert_array_equal(R, np.eye(3))
    np.testing.assert_array_equal(t, np.zeros(3))
    R, t = geo.pose(SimpleNamespace(xyz=None, rpy=None), "w")
    np.testing.assert_array_equal(R, np.eye(3))
    np.testing.assert_array_equal(t, np.zeros(3))
    R, t = geo.pose(SimpleNamespace(xyz=[1.0, 2.0, 3.0], rpy=[0.1, 0.2, 0.3]), "w")
    np.testing.assert_array_equal(t, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(R, pin.rpy.rpyToMatrix(0.1, 0.2, 0.3), rtol=0, atol=1e-15)
    R, t = geo.pose(SimpleNamespace(xyz=None, rpy=[0.0, 0.0, 0.5]), "w")
    np.testing.assert_array_equal(t, np.zeros(3))
    R, t = geo.pose(SimpleNamespace(xyz=[0.0, 0.0, 0.5], rpy=None), "w")
    np.testing.assert_array_equal(R, np.eye(3))
    for xyz, rpy in (([1.0, 2.0], [0, 0, 0]), ([1.0, 2.0, 3.0], [0, 0]),
                     ([1.0, math.nan, 3.0], [0, 0, 0]), ([0, 0, 0], [0, math.inf, 0])):  # fmt: skip
        with pytest.raises(URDFError, match=r"^w/origin: non-finite or malformed <origin>"):
            geo.pose(SimpleNamespace(xyz=xyz, rpy=rpy), "w")


def test_compose_and_locked_poses():
    """compose(a, b) = (Ra Rb, Ra tb + ta); a revolute joint welded at an angle turns by
    Rodrigues' rotation after its origin, a prismatic one slides along its axis."""
    rng = np.random.default_rng(3)
    Ra, Rb = pin.exp3(rng.normal(size=3)), pin.exp3(rng.normal(size=3))
    ta, tb = rng.normal(size=3), rng.normal(size=3)
    R, t = geo.compose((Ra, ta), (Rb, tb))
    np.testing.assert_allclose(R, Ra @ Rb, rtol=0, atol=1e-15)
    np.testing.assert_allclose(t, Ra @ tb + ta, rtol=0, atol=1e-15)
    origin = SimpleNamespace(xyz=[0.1, -0.2, 0.3], rpy=[0.2, -0.1, 0.4])
    R0 = pin.rpy.rpyToMatrix(0.2, -0.1, 0.4)
    axis = [0.0, 3.0, 4.0]
    unit_axis = np.array([0.0, 0.6, 0.8])
    revolute = SimpleNamespace(name="r", type="revolute", origin=origin, axis=axis)
    R, t = geo.locked_pose(revolute, 0.7)
    np.testing.assert_allclose(R, R0 @ pin.exp3(0.7 * unit_axis), rtol=0, atol=1e-15)
    np.testing.assert_allclose(t, [0.1, -0.2, 0.3], rtol=0, atol=0)
    prismatic = SimpleNamespace(name="p", type="prismatic", origin=origin, axis=axis)
    R, t = geo.locked_pose(prismatic, 0.7)
    np.testing.assert_allclose(R, R0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(t, R0 @ (0.7 * unit_axis) + [0.1, -0.2, 0.3], rtol=0, atol=1e-15)
