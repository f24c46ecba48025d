"""Mimic joints in joint_states: tracked by the buffer, checked against the leader (ROS-free)."""

from __future__ import annotations

import array
import tracemalloc

import numpy as np
import pytest

from coriolis_ros.stream.joint_state_buffer import ACCEPTED, JointStateBuffer
from coriolis_ros.stream.mimic_check import MimicCheck

JOINTS = ["a", "b", "f1"]
MIMIC = {"f2": ("f1", 1.0, 0.0), "g": ("a", -2.0, 0.5)}


def make(tolerance=1e-3):
    buf = JointStateBuffer(JOINTS, extra_names=list(MIMIC))
    return buf, MimicCheck(buf, MIMIC, tolerance)


def d(*values):
    return array.array("d", values)


def test_without_mimic_joints_in_the_message_the_state_is_complete_and_nothing_is_checked():
    buf, check = make()
    assert buf.update(JOINTS, d(0.1, 0.2, 0.03), d(1, 2, 3), 0, 5, 0.0).status == ACCEPTED
    assert buf.complete and not buf.extra_pending
    q, qd = np.zeros(3), np.zeros(3)
    take = buf.take(q, qd)
    assert not take.missing and q.tolist() == [0.1, 0.2, 0.03]
    assert check.check() == []


def test_mimic_values_are_tracked_not_used_and_checked():
    buf, check = make()
    names = JOINTS + ["f2", "g"]
    # consistent: f2 = f1, g = -2 a + 0.5
    assert buf.update(names, d(0.1, 0.2, 0.03, 0.03, 0.3), d(), 0, 5, 0.0).status == ACCEPTED
    assert buf.extra_pending
    q, qd = np.zeros(3), np.zeros(3)
    buf.take(q, qd)
    assert q.tolist() == [0.1, 0.2, 0.03] and not buf.extra_pending  # mimic values not in q
    assert check.check() == []
    # f2 off by 0.0011 (beyond 1e-3), g off by 0.0009 (within)
    buf.update(names, d(0.1, 0.2, 0.03, 0.0311, 0.3009), d(), 0, 6, 0.0)
    bad = check.check()
    assert [b[0] for b in bad] == ["f2"]
    assert bad[0][1] == pytest.approx(0.0311) and bad[0][2] == pytest.approx(0.03)


def test_unknown_names_stay_unknown_and_mimic_names_are_not_warned_about():
    buf, _ = make()
    result = buf.update(JOINTS + ["f2", "ghost"], d(0, 0, 0, 0, 0), d(), 0, 5, 0.0)
    assert result.status == ACCEPTED and result.new_unknown == ["ghost"]


def test_check_is_allocation_free_when_consistent():
    """1000 checks of 500 mimic joints: no temporary array (one would be 4 KB)."""
    n = 500
    joints = [f"j{k}" for k in range(n)]
    mimic = {f"m{k}": (f"j{k}", 0.5, 0.1) for k in range(n)}
    buf = JointStateBuffer(joints, extra_names=list(mimic))
    check = MimicCheck(buf, mimic, 1e-6)
    q = np.linspace(-1, 1, n)
    values = array.array("d", np.r_[q, 0.5 * q + 0.1].tobytes())
    assert buf.update(joints + list(mimic), values, d(), 0, 5, 0.0).status == ACCEPTED
    for _ in range(10):
        assert check.check() == []
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    for _ in range(1000):
        check.check()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    assert peak < 8 * n, f"{peak} bytes"


def test_buffer_must_track_exactly_the_mimic_joints():
    buf = JointStateBuffer(JOINTS, extra_names=["f2"])
    with pytest.raises(ValueError, match="exactly the mimic joints"):
        MimicCheck(buf, MIMIC, 1e-3)


def test_a_continuous_follower_is_compared_modulo_a_turn():
    """A rotor geared 100:1 on 'a' (continuous: its encoder gives [-pi, pi)) and the same on a
    revolute follower: at a = 1 the rotor is at 100 rad, reported as 100 - 16 * 2 pi."""
    mimic = {"rotor": ("a", 100.0, 0.0), "stop": ("a", 100.0, 0.0)}
    buf = JointStateBuffer(JOINTS, extra_names=list(mimic))
    check = MimicCheck(buf, mimic, 1e-3, periodic=("rotor",))
    wrapped = 100.0 - 16 * 2 * np.pi
    assert -np.pi <= wrapped < np.pi
    names = JOINTS + ["rotor", "stop"]
    for rotor, stop, off in (
        (wrapped, 100.0, []),  # the encoder's angle: the rotor agrees, modulo a turn
        (100.0 - 15 * 2 * np.pi, 100.0, []),  # an odd number of turns: the period is one turn
        (wrapped + 9e-4, 100.0 - 9e-4, []),  # within the tolerance on both
        (wrapped + 2e-3, 100.0, ["rotor"]),  # beyond it, modulo a turn too
        (wrapped, wrapped, ["stop"]),  # a revolute follower is compared as it is
    ):
        buf.update(names, d(1.0, 0.0, 0.0, rotor, stop), d(), 0, 5, 0.0)
        assert [name for name, _, _ in check.check()] == off


def test_continuous_joints_are_those_the_urdf_says():
    """Reference: the URDF's joint types, read with ElementTree (rotor joints included)."""
    import xml.etree.ElementTree as ET

    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.robots import robot_path
    from coriolis_ros.stream.mimic_check import continuous_joints

    path = robot_path("arm7_rotors")
    dyn = Dynamics.from_urdf(path)
    types = {j.get("name"): j.get("type") for j in ET.parse(path).getroot().iter("joint")}
    want = {name for name, kind in types.items() if kind == "continuous"}
    assert want and set(types) - want  # the premise: some are continuous, some not
    assert set(continuous_joints(dyn)) == want
