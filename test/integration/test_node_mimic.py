"""The node on a robot with mimic joints (Panda with its hand, mimic: follow by default).

joint_state_publisher leaves mimic joints out of /joint_states: the node must publish anyway
(before, it waited forever for panda_finger_joint2), over the independent joints. Publishers
that include the mimic joint are fine too: its value is checked against the leader, never used.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import (  # noqa: E402
    NodeProcess,
    Peer,
    as_matrix,
    close,
    library_terms,
    panda_urdf,
)

from coriolis_ros.dynamics import Dynamics  # noqa: E402

MIMIC = "panda_finger_joint2"
LEADER = "panda_finger_joint1"


def test_panda_with_hand_publishes_over_the_independent_joints(ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    urdf = panda_urdf()
    dyn = Dynamics.from_urdf(urdf)  # mimic follow, the library's default too
    names = list(dyn.joint_names)
    assert MIMIC not in names and LEADER in names and dyn.nv == 8
    n = dyn.nv
    q = np.linspace(-0.7, 0.7, n)
    q[names.index(LEADER)] = 0.02
    qd = np.linspace(0.5, -0.5, n)
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params={"robot_description": urdf})
        try:
            ready = node.wait_ready("panda")
            assert (
                "1 mimic or coupled joint(s) follow their leader" in ready.string[ready.start() :]
            )
            peer.collect_states()
            js = peer.joint_state_publisher()
            peer.wait_matched(js)

            # As joint_state_publisher publishes it: no mimic joint.
            msg = peer.send_until_state(js, peer.joint_state(names, q, qd, stamp_ns=1001))
            assert list(msg.joint_names) == names
            expected = library_terms(dyn, q, qd)
            for key, want in expected.items():
                got = np.asarray(getattr(msg, key))
                got = as_matrix(got, n) if want.ndim == 2 else got
                assert close(got, want, rtol=1e-12), key

            # With the mimic joint, consistent (= leader): same output, no warning.
            msg = peer.send_until_state(
                js, peer.joint_state(names + [MIMIC], np.r_[q, 0.02], np.r_[qd, 0.0],
                                     stamp_ns=1002))  # fmt: skip
            assert close(np.asarray(msg.position), q, rtol=0.0)
            assert "off their leader" not in node.log()

            # Inconsistent: warned about, never used (the output stays the leader's model).
            msg = peer.send_until_state(
                js, peer.joint_state(names + [MIMIC], np.r_[q, 0.035], np.r_[qd, 0.0],
                                     stamp_ns=1003))  # fmt: skip
            node.wait_for_log(
                rf"mimic joint\(s\) off their leader by more than mimic_tolerance 0\.001: "
                rf"'{MIMIC}' = 0\.035 \(its leader implies 0\.02\)"
            )
            mass = as_matrix(np.asarray(msg.mass_matrix), n)
            assert close(mass, expected["mass_matrix"], rtol=1e-12)
            assert node.alive()
        finally:
            assert node.stop() == 0, node.log()


def test_locked_gripper_that_never_publishes(ros_domain_env, tmp_path):
    """locked_joints / locked_positions weld the hand: the arm's joint states suffice."""
    domain_id, env = ros_domain_env
    urdf = panda_urdf()
    dyn = Dynamics.from_urdf(urdf, locked_joints={LEADER: 0.02})  # its mimic is locked too
    names = list(dyn.joint_names)
    assert LEADER not in names and MIMIC not in names and dyn.nv == 7
    q, qd = np.linspace(-0.6, 0.6, 7), np.linspace(0.4, -0.4, 7)
    params = {"robot_description": urdf, "locked_joints": [LEADER], "locked_positions": [0.02]}
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params=params)
        try:
            node.wait_ready("panda")
            peer.collect_states()
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            msg = peer.send_until_state(js, peer.joint_state(names, q, qd, stamp_ns=77))
            assert list(msg.joint_names) == names
            for key, want in library_terms(dyn, q, qd).items():
                got = np.asarray(getattr(msg, key))
                got = as_matrix(got, 7) if want.ndim == 2 else got
                assert close(got, want, rtol=1e-12), key
        finally:
            assert node.stop() == 0, node.log()


@pytest.mark.parametrize(
    "params,needle",
    [
        ({"locked_joints": ["a", "b"], "locked_positions": [0.0]}, "2 names but"),
        ({"locked_joints": ["a"], "locked_positions": [0.0, 1.0]}, "1 names but"),
        ({"locked_joints": ["a", "a"], "locked_positions": [0.0, 0.0]}, "twice"),
    ],
)
def test_bad_locked_parameters_exit_2_with_one_line(ros_domain_env, tmp_path, params, needle):
    _, env = ros_domain_env
    node = NodeProcess(env, tmp_path / "node.log", params=params)
    try:
        node.proc.wait(60)
    finally:
        node.stop()
    assert node.proc.returncode == 2, node.log()
    assert needle in node.log() and "Traceback" not in node.log()


def test_locking_a_joint_the_urdf_lacks_is_a_rejected_description(ros_domain_env, tmp_path):
    _, env = ros_domain_env
    params = {"robot_description": panda_urdf(), "locked_joints": ["ghost"],
              "locked_positions": [0.0]}  # fmt: skip
    node = NodeProcess(env, tmp_path / "node.log", params=params)
    try:
        node.wait_for_log(r"robot_description from .* rejected \(still no robot model\): .*ghost")
        assert node.alive()
    finally:
        assert node.stop() == 0, node.log()
