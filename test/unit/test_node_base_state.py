"""BaseStateBuffer: odometry -> the base coordinates of a floating or planar model (ROS-free)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from coriolis_ros.stream.base_state import BaseStateBuffer

S = 1_000_000_000  # ns per second


def odom(buf, *, child="base_link", pos=(1.0, 2.0, 3.0), quat=(0.0, 0.0, 0.0, 1.0),
         lin=(0.1, 0.2, 0.3), ang=(0.4, 0.5, 0.6), stamp=10 * S):  # fmt: skip
    return buf.update(child, "odom", pos, quat, lin, ang, stamp)


def test_floating_copies_pose_and_body_frame_twist():
    buf = BaseStateBuffer("floating", "base_link", timeout=0.1)
    half = math.sqrt(0.5)
    ok, note = odom(buf, quat=(0.0, half, 0.0, half))
    assert ok and note == ""
    q, v = np.full(10, -1.0), np.full(9, -1.0)
    assert buf.fill(q, v, 10 * S) == ""
    assert np.allclose(q[:7], [1, 2, 3, 0, half, 0, half], atol=0, rtol=1e-15)
    assert v[:6].tolist() == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    assert (q[7:] == -1).all() and (v[6:] == -1).all()  # joints untouched
    assert buf.frame_id == "odom"


def test_non_unit_quaternion_is_normalized_with_a_note():
    buf = BaseStateBuffer("floating", "base_link", timeout=0.1)
    ok, note = odom(buf, quat=(0.0, 0.0, 0.0, 2.0))
    assert ok and "norm 2" in note and "normalized" in note
    q, v = np.zeros(7), np.zeros(6)
    buf.fill(q, v, 10 * S)
    assert q[3:7].tolist() == [0.0, 0.0, 0.0, 1.0]
    # within the tolerance: silent
    ok, note = odom(buf, quat=(0.0, 0.0, 0.0, 1.0005))
    assert ok and note == ""


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"child": "trunk"}, "child_frame_id 'trunk' is not the URDF's root link 'base_link'"),
        ({"quat": (0.0, 0.0, 0.0, 0.0)}, "zero quaternion"),
        ({"quat": (0.0, 0.0, 0.0, 1e-11)}, "zero quaternion"),
        ({"pos": (math.nan, 0.0, 0.0)}, "NaN"),
        ({"lin": (0.0, math.inf, 0.0)}, "NaN"),
        ({"ang": (0.0, 0.0, 1e51)}, "huge"),
    ],
)
def test_bad_odometry_is_rejected_and_the_last_good_one_kept(kwargs, needle):
    buf = BaseStateBuffer("floating", "base_link", timeout=0.1)
    assert odom(buf)[0]
    ok, reason = odom(buf, **{**kwargs, "stamp": 11 * S})
    assert not ok and needle in reason
    q, v = np.zeros(7), np.zeros(6)
    assert buf.fill(q, v, 10 * S) == ""  # the first message, stamped 10 s
    assert q[:3].tolist() == [1.0, 2.0, 3.0]
    assert (buf.received, buf.rejected) == (2, 1)


def test_limits_just_inside_are_accepted():
    buf = BaseStateBuffer("floating", "base_link", timeout=0.1)
    assert odom(buf, quat=(0.0, 0.0, 0.0, 1.001e-10), pos=(1e50, -1e50, 0.0))[0]


def test_quaternion_norm_bound_both_sides():
    # sqrt(x * x) == x for a double x (no underflow): the norm is exactly 1e-10 here
    buf = BaseStateBuffer("floating", "base_link", timeout=0.1)
    assert odom(buf, quat=(0.0, 0.0, 0.0, 1e-10))[0]
    ok, reason = odom(buf, quat=(0.0, 0.0, 0.0, float(np.nextafter(1e-10, 0.0))))
    assert not ok and "zero quaternion" in reason


@pytest.mark.parametrize("w,noted", [(1.0011, True), (1.0009, False), (0.9989, True),
                                     (0.9991, False)])  # fmt: skip
def test_unit_tolerance_both_sides(w, noted):
    buf = BaseStateBuffer("floating", "base_link", timeout=0.1)
    ok, note = odom(buf, quat=(0.0, 0.0, 0.0, w))
    assert ok and ("used normalized" in note) == noted


def _quat_mul(a, b):
    """Hamilton product of (x, y, z, w) quaternions."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    x = aw * bx + ax * bw + ay * bz - az * by
    y = aw * by - ax * bz + ay * bw + az * bx
    z = aw * bz + ax * by - ay * bx + az * bw
    return x, y, z, aw * bw - ax * bx - ay * by - az * bz


def _zyx(yaw, pitch, roll):
    """The rotation yaw about z, then pitch about the new y, then roll about the new x."""
    qz = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
    qy = (0.0, math.sin(pitch / 2), 0.0, math.cos(pitch / 2))
    qx = (math.sin(roll / 2), 0.0, 0.0, math.cos(roll / 2))
    return _quat_mul(_quat_mul(qz, qy), qx)


def test_non_unit_quaternion_with_every_component_is_normalized():
    buf = BaseStateBuffer("floating", "base_link", timeout=0.1)
    unit = _zyx(0.6, 0.7, 0.8)
    assert all(abs(c) > 0.05 for c in unit)
    ok, note = odom(buf, quat=tuple(3.0 * c for c in unit))
    assert ok and "norm 3" in note
    q, v = np.zeros(7), np.zeros(6)
    assert buf.fill(q, v, 10 * S) == ""
    np.testing.assert_allclose(q[3:7], unit, rtol=1e-15, atol=1e-16)


@pytest.mark.parametrize("yaw", [0.7, -2.5, 3.0])
@pytest.mark.parametrize("pitch,roll,scale", [(0.3, -0.2, 1.0), (-1.2, 2.5, 1.0), (0.5, 0.4, 2.5)])
def test_planar_yaw_of_a_tilted_base_drops_roll_and_pitch(yaw, pitch, roll, scale):
    """The quaternion of yaw-pitch-roll (z-y-x) gives back the yaw, whatever the tilt."""
    buf = BaseStateBuffer("planar", "base_link", timeout=0.1)
    assert odom(buf, quat=tuple(scale * c for c in _zyx(yaw, pitch, roll)))[0]
    q, v = np.full(5, -1.0), np.full(5, -1.0)
    assert buf.fill(q, v, 10 * S) == ""
    assert math.isclose(q[2], yaw, abs_tol=1e-12)
    assert q[3:].tolist() == [-1.0, -1.0] and v[3:].tolist() == [-1.0, -1.0]  # joints untouched


def test_seed_from_takes_over_the_same_root_only():
    old = BaseStateBuffer("floating", "base_link", timeout=0.1)
    odom(old, stamp=7 * S)
    new = BaseStateBuffer("floating", "base_link", timeout=0.5)
    new.seed_from(old)
    assert new.q.tolist() == [1, 2, 3, 0, 0, 0, 1] and new.v.tolist() == [
        0.1,
        0.2,
        0.3,
        0.4,
        0.5,
        0.6,
    ]
    assert (new.stamp_ns, new.frame_id) == (7 * S, "odom")
    for other in (
        BaseStateBuffer("floating", "trunk", 0.1),
        BaseStateBuffer("planar", "base_link", 0.1),
    ):
        other.seed_from(old)
        assert other.stamp_ns is None and other.frame_id == "" and not other.q.any()


def test_no_odometry_yet_means_waiting():
    buf = BaseStateBuffer("planar", "base", timeout=0.1)
    assert buf.fill(np.zeros(3), np.zeros(3), 0) == "waiting for odometry of 'base'"


@pytest.mark.parametrize(
    "offset,fresh",
    [(0.0999, True), (0.1, True), (-0.1, True), (0.1001, False), (-0.1001, False)],
)
def test_odometry_pairs_only_within_the_timeout_either_way(offset, fresh):
    buf = BaseStateBuffer("floating", "base_link", timeout=0.1)
    odom(buf, stamp=10 * S)
    reason = buf.fill(np.zeros(7), np.zeros(6), 10 * S + int(offset * S))
    assert (reason == "") == fresh
    if not fresh:
        assert "0.100 s apart" in reason and "base_state_timeout 0.1 s" in reason


@pytest.mark.parametrize("yaw", [0.0, 0.7, -2.5, math.pi - 1e-9])
def test_planar_takes_yaw_and_in_plane_twist(yaw):
    buf = BaseStateBuffer("planar", "base_link", timeout=0.1)
    quat = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
    assert odom(buf, quat=quat)[0]
    q, v = np.zeros(5), np.zeros(5)
    assert buf.fill(q, v, 10 * S) == ""
    assert q[:2].tolist() == [1.0, 2.0] and math.isclose(q[2], yaw, abs_tol=1e-12)
    assert v[:3].tolist() == [0.1, 0.2, 0.6]  # vx, vy, wz


@pytest.mark.parametrize("root", ["fixed", "floating", "planar"])
def test_base_sizes_are_the_library_s(root):
    """BASE_SIZES: the rows a root joint adds to the library's q and v (arm7: 7 joints)."""
    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.robots import robot_urdf
    from coriolis_ros.stream.base_state import BASE_SIZES

    dyn = Dynamics.from_urdf(robot_urdf("arm7"), root_joint=root)
    assert BASE_SIZES[root] == (dyn.nq - 7, dyn.nv - 7)


def test_fixed_root_has_no_base_state():
    with pytest.raises(ValueError, match="floating or planar"):
        BaseStateBuffer("fixed", "base_link", timeout=0.1)


# ----------------------------------------------------------------------------- service requests


def test_request_base_takes_the_newest_odometry_when_empty():
    from coriolis_ros.stream.base_state import request_base

    buf = BaseStateBuffer("floating", "base_link", timeout=0.1)
    assert "no base state" in request_base("floating", [], [], True, buf)
    assert "no base state" in request_base("floating", [], [], True, None)
    odom(buf)
    q, v = request_base("floating", [], [], True, buf)
    assert q.tolist() == [1, 2, 3, 0, 0, 0, 1] and v.tolist() == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    q[0] = 99.0  # a copy: the buffer is not touched
    assert buf.q[0] == 1.0


@pytest.mark.parametrize(
    "root,position,velocity,need,needle",
    [
        ("floating", [0.0] * 6, [0.0] * 6, True, "needs 7 values (x, y, z, qx, qy, qz, qw), got 6"),
        ("floating", [0.0] * 8, [0.0] * 6, True, "base_position needs 7 values"),
        ("floating", [0, 0, 0, 0, 0, 0, 1.0], [0.0] * 5, True, "base_velocity needs 6 values"),
        ("floating", [0, 0, 0, 0, 0, 0, 1.0], [0.0] * 7, True, "base_velocity needs 6 values"),
        ("floating", [0, 0, 0, 0, 0, 0, 1.0], [], True, "base_velocity needs 6 values"),
        ("floating", [0, 0, 0, 0, 0, 0, 1.0], [0.0] * 2, False, "6 values or none"),
        ("floating", [0.0] * 7, [0.0] * 6, True, "zero quaternion"),
        ("floating", [0, 0, math.nan, 0, 0, 0, 1.0], [0.0] * 6, True, "base_position has a NaN"),
        ("floating", [0, 0, 0, 0, 0, 0, 1.0], [0, 0, 0, 0, 0, 1e51], True, "base_velocity"),
        ("planar", [0.0] * 2, [0.0] * 3, True, "base_position needs 3 values (x, y, theta)"),
        ("planar", [0.0] * 3, [0.0] * 6, True, "base_velocity needs 3 values"),
    ],
)
def test_request_base_rejects_bad_fields(root, position, velocity, need, needle):
    from coriolis_ros.stream.base_state import request_base

    reason = request_base(root, position, velocity, need, None)
    assert isinstance(reason, str) and needle in reason, reason


def test_request_base_normalizes_and_allows_no_velocity_when_not_needed():
    from coriolis_ros.stream.base_state import request_base

    q, v = request_base("floating", [1, 2, 3, 0, 0, 0, 4.0], [], False, None)
    assert q.tolist() == [1, 2, 3, 0, 0, 0, 1] and v.tolist() == [0.0] * 6
    q, v = request_base("planar", [1, 2, 3.0], [4, 5, 6.0], True, None)
    assert q.tolist() == [1, 2, 3] and v.tolist() == [4, 5, 6]
    # every quaternion component: |(1, 2, 2, 4)| = 5
    q, v = request_base("floating", [1, 2, 3, 1, 2, 2, 4.0], [0.0] * 6, True, None)
    assert q.tolist() == [1, 2, 3, 0.2, 0.4, 0.4, 0.8]


def test_request_base_bounds_both_sides():
    from coriolis_ros.stream.base_state import request_base

    beyond = float(np.nextafter(1e50, math.inf))
    q, v = request_base("planar", [1e50, -1e50, 0.0], [0.0, 1e50, -1e50], True, None)
    assert q.tolist() == [1e50, -1e50, 0.0] and v.tolist() == [0.0, 1e50, -1e50]
    assert "base_position has a NaN" in request_base("planar", [beyond, 0, 0], [0] * 3, True, None)
    assert "base_velocity has a NaN" in request_base("planar", [0] * 3, [0, -beyond, 0], True, None)
    # the quaternion's norm: exactly 1e-10 is a rotation, the next double below is not
    q, _ = request_base("floating", [0, 0, 0, 0, 0, 0, 1e-10], [], False, None)
    assert q.tolist() == [0, 0, 0, 0, 0, 0, 1.0]
    tiny = float(np.nextafter(1e-10, 0.0))
    assert "zero quaternion" in request_base("floating", [0] * 6 + [tiny], [], False, None)
