"""Replacing the robot model at run time: a new robot_description swaps names and values."""

import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import (  # noqa: E402
    NodeProcess,
    Peer,
    PinReference,
    as_matrix,
    close,
    diag_values,
    panda_urdf,
    small_robot_urdf,
)

from coriolis_ros.dynamics import Dynamics  # noqa: E402


def test_model_replacement(ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    tiny, panda = small_robot_urdf("tiny", "tj"), panda_urdf()
    tiny_names = list(Dynamics.from_urdf(tiny).joint_names)
    panda_names = list(Dynamics.from_urdf(panda, mimic="independent").joint_names)
    refs = {"tiny": (PinReference(tiny), tiny_names), "panda": (PinReference(panda), panda_names)}
    all_names = tiny_names + panda_names
    rng = np.random.default_rng(11)
    q_all = rng.uniform(-1.0, 1.0, len(all_names))
    q_all[-2:] = [0.01, 0.02]
    qd_all = rng.uniform(-1.0, 1.0, len(all_names))
    with Peer(domain_id) as peer:
        desc = peer.description_publisher()
        peer.publish_description(desc, tiny)
        peer.collect_states()
        node = NodeProcess(env, tmp_path / "node.log", params={"mimic": "independent"})
        stop = threading.Event()
        try:
            node.wait_ready("tiny")
            js = peer.joint_state_publisher()
            peer.wait_matched(js)

            def stream():  # one message naming the joints of both robots, ~100 Hz
                k = 0
                while not stop.is_set():
                    js.publish(peer.joint_state(all_names, q_all, qd_all, stamp_ns=k))
                    k += 1
                    time.sleep(0.01)

            thread = threading.Thread(target=stream, daemon=True)
            thread.start()
            first = peer.wait_for_state(lambda m: list(m.joint_names) == tiny_names)
            mark = len(peer.received())
            peer.publish_description(desc, panda)
            node.wait_ready("panda")
            node.wait_for_log(r"robot model replaced: tiny \(4 DoF\) -> panda \(9 DoF\)")
            second = peer.wait_for_state(lambda m: list(m.joint_names) == panda_names, after=mark)
            stop.set()
            thread.join(5)
            # Both robots' outputs hold the right values for their joints.
            for msg in (first, second):
                ref, names = refs["tiny" if msg is first else "panda"]
                idx = [all_names.index(name) for name in names]
                q, qd = q_all[idx], qd_all[idx]
                np.testing.assert_array_equal(msg.position, q)
                expected = ref.evaluate(names, q, qd)
                n = len(names)
                assert close(
                    as_matrix(msg.coriolis_matrix, n), expected["coriolis_matrix"], rtol=1e-8
                )
                assert close(as_matrix(msg.mass_matrix, n), expected["mass_matrix"], rtol=1e-8)
                assert close(msg.gravity_force, expected["gravity_force"], rtol=1e-8)
            # After the swap only panda states come out.
            states = peer.received()
            k = next(i for i, (m, _) in enumerate(states) if m is second)
            assert all(list(m.joint_names) == panda_names for m, _ in states[k:])
        finally:
            stop.set()
            assert node.stop() == 0, node.log()


FLOATING = (
    '<robot name="floaty"><link name="base"/><link name="body"><inertial><mass value="1"/>'
    '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
    '<joint name="free" type="floating"><parent link="base"/><child link="body"/>'
    "</joint></robot>"
)


def test_republished_model_clears_an_earlier_rejection(ros_domain_env, tmp_path):
    """good URDF -> rejected URDF -> the same good URDF again: the error is no longer reported."""
    domain_id, env = ros_domain_env
    tiny = small_robot_urdf("tiny", "tj")
    with Peer(domain_id) as peer:
        peer.collect_diagnostics()
        desc = peer.description_publisher()
        peer.publish_description(desc, tiny)
        node = NodeProcess(env, tmp_path / "node.log", params={"diagnostics_period": 0.2})
        try:
            node.wait_ready("tiny")
            peer.publish_description(desc, FLOATING)
            m = node.wait_for_log(r"rejected \(keeping model tiny\): .*floating")
            peer.wait_for_diagnostic(
                lambda d: "floating" in diag_values(d)["last_rejected_description"]
            )
            peer.publish_description(desc, tiny)
            node.wait_for_log(r"robot_description from .* unchanged, model kept", start=m.end())
            peer.clear()
            d = peer.wait_for_diagnostic(lambda d: d.message, what="a fresh diagnostic")
            peer.clear()
            d = peer.wait_for_diagnostic(lambda d: d.message, what="a fresh diagnostic")
            assert diag_values(d)["last_rejected_description"] == "", d
            assert "rejected" not in d.message, d.message
        finally:
            assert node.stop() == 0, node.log()
