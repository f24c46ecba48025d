"""SIGINT and SIGTERM end the node with exit code 0; names are relative (namespace, remap)."""

import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import NodeProcess, Peer, small_robot_urdf  # noqa: E402

from coriolis_ros.dynamics import Dynamics  # noqa: E402


def test_signals_exit_zero_and_names_are_relative(ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    urdf = small_robot_urdf()
    names = list(Dynamics.from_urdf(urdf).joint_names)
    with Peer(domain_id) as peer:
        # Node A: namespace /a, joint_states remapped to /a_joints (relative names resolve in
        # the namespace, remapping applies). Node B: namespace /b, default names.
        desc_a = peer.description_publisher("/a/robot_description")
        desc_b = peer.description_publisher("/b/robot_description")
        peer.publish_description(desc_a, urdf)
        peer.publish_description(desc_b, urdf)
        peer.collect_states("/a/coriolis_state")
        node_a = NodeProcess(
            env, tmp_path / "a.log", ros_args=("-r", "__ns:=/a", "-r", "joint_states:=/a_joints")
        )
        node_b = NodeProcess(env, tmp_path / "b.log", ros_args=("-r", "__ns:=/b"))
        stop = threading.Event()
        try:
            node_a.wait_ready("tiny")
            node_b.wait_ready("tiny")
            js_a = peer.joint_state_publisher("/a_joints")
            js_b = peer.joint_state_publisher("/b/joint_states")
            peer.wait_matched(js_a, js_b)
            msg = peer.send_until_state(
                js_a, peer.joint_state(names, np.full(4, 0.2), np.zeros(4), stamp_ns=77)
            )
            assert list(msg.joint_names) == names

            # SIGINT while idle.
            assert node_a.stop(signal.SIGINT) == 0, node_a.log()

            # SIGTERM while joint states stream in at ~500 Hz.
            def stream():
                k = 0
                while not stop.is_set():
                    js_b.publish(peer.joint_state(names, np.full(4, k * 1e-3), np.zeros(4)))
                    k += 1
                    time.sleep(0.002)

            thread = threading.Thread(target=stream, daemon=True)
            thread.start()
            time.sleep(1.0)
            assert node_b.alive()
            assert node_b.stop(signal.SIGTERM) == 0, node_b.log()
            stop.set()
            thread.join(5)
            for node in (node_a, node_b):
                assert "Traceback" not in node.log(), node.log()
        finally:
            stop.set()
            node_a.stop(signal.SIGKILL)
            node_b.stop(signal.SIGKILL)
