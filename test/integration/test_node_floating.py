"""The node on a floating base: joint states + odometry in, output against Pinocchio's free flyer.

Solo12 (example-robot-data) with ``root_joint: floating``; the base state comes from
nav_msgs/Odometry on ``odom`` (REP 105: pose of child_frame_id in header.frame_id, twist in
child_frame_id), which is the library's (and Pinocchio's) free-flyer convention.  Covered:
output before any odometry (none, with a message), paired output against Pinocchio, stale
odometry, odometry for the wrong frame, services with and without an explicit base state, and a
fixed-base node that ignores odometry.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import (  # noqa: E402
    NodeProcess,
    Peer,
    example_robot_urdf,
    stamp_ns,
    write_params_file,
)
from support.floating import MultiDofOracle  # noqa: E402
from support.oracle import assert_close  # noqa: E402

from coriolis_ros.dynamics import Dynamics  # noqa: E402

S = 1_000_000_000


def solo_urdf() -> str:
    return example_robot_urdf("solo_description/robots/solo12.urdf").read_text()


def odometry(q_base, v_base, stamp_ns_: int, child: str, frame: str = "odom"):
    from nav_msgs.msg import Odometry

    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns_, S)
    msg.header.frame_id = frame
    msg.child_frame_id = child
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = (float(x) for x in q_base[:3])
    o.x, o.y, o.z, o.w = (float(x) for x in q_base[3:7])
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z = (float(x) for x in v_base[:3])
    t.angular.x, t.angular.y, t.angular.z = (float(x) for x in v_base[3:6])
    return msg


def odom_publisher(peer: Peer):
    from nav_msgs.msg import Odometry

    return peer.node.create_publisher(Odometry, "odom", peer.qos(True, 100))


def test_floating_base_node(ros_domain_env, tmp_path):
    from coriolis_ros.srv import ComputeDynamics, GetChristoffelSymbols

    domain_id, env = ros_domain_env
    urdf = solo_urdf()
    dyn = Dynamics.from_urdf(urdf, root_joint="floating")
    oracle = MultiDofOracle(urdf, dyn, "floating")
    joints = list(dyn.joint_names[6:])
    root = dyn.root_link
    rng = np.random.default_rng(12)
    q = rng.uniform(-1, 1, dyn.nq)
    q[3:7] /= np.linalg.norm(q[3:7])
    v = rng.normal(size=dyn.nv)
    params = write_params_file(
        tmp_path / "p.yaml",
        {"robot_description": urdf, "root_joint": "floating", "base_state_timeout": 0.05},
    )
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params_file=params)
        try:
            ready = node.wait_ready("solo")
            assert f"root link '{root}' on a floating joint" in ready.string[ready.start() :]
            peer.collect_states()
            js_pub, odom_pub = peer.joint_state_publisher(), odom_publisher(peer)
            peer.wait_matched(js_pub, odom_pub)

            # Joint states alone: no output, a message that says what is missing.
            js = peer.joint_state(joints, q[7:], v[6:], stamp_ns=5 * S)
            peer.publish_until(js_pub, js, lambda: node.has_log(
                f"waiting for odometry of '{root}'"), what="waiting message")  # fmt: skip
            assert not peer.received()

            # Odometry within base_state_timeout of the joint state: output, against Pinocchio.
            odom_pub.publish(odometry(q[:7], v[:6], 5 * S + 20_000_000, root))
            js = peer.joint_state(joints, q[7:], v[6:], stamp_ns=5 * S + 1)
            msg = peer.send_until_state(js_pub, js)
            assert list(msg.joint_names) == list(dyn.joint_names)
            assert list(msg.position_names) == list(dyn.position_names)
            assert_close(msg.position, q, 1e-15, "position")
            assert_close(msg.velocity, v, 0.0, "velocity")
            n = dyn.nv
            C_ref, M_ref = oracle.C(q, v), oracle.M(q)
            assert_close(np.reshape(msg.coriolis_matrix, (n, n)), C_ref, 1e-10, "C")
            assert_close(np.reshape(msg.mass_matrix, (n, n)), M_ref, 1e-10, "M")
            assert_close(msg.gravity_force, oracle.g(q), 1e-10, "g")
            assert_close(msg.coriolis_transpose_force, C_ref.T @ v, 1e-10, "C^T v")

            # Joint states 0.2 s after the odometry (timeout 0.05 s): output stops, says why.
            count = len(peer.received())
            js = peer.joint_state(joints, q[7:], v[6:], stamp_ns=5 * S + 200_000_000)
            stale = r"odometry is 0\.18\d s apart from the joint state"
            peer.publish_until(js_pub, js, lambda: node.has_log(stale), what="stale message")
            assert len(peer.received()) == count

            # Odometry of another frame is rejected; the old one stays.
            bad = odometry(q[:7], v[:6], 5 * S + 200_000_000, "trunk")
            peer.publish_until(odom_pub, bad, lambda: node.has_log(
                f"child_frame_id 'trunk' is not the URDF's root link '{root}'"),
                what="wrong frame message")  # fmt: skip

            # Services: explicit base state, and the newest odometry when omitted.
            dyn_client = peer.client(ComputeDynamics, "compute_dynamics")
            q2 = rng.uniform(-1, 1, dyn.nq)
            q2[3:7] *= 3.0  # not normalized: used normalized
            v2 = rng.normal(size=dyn.nv)
            r = peer.call(dyn_client, ComputeDynamics.Request(
                joint_names=joints, position=q2[7:].tolist(), velocity=v2[6:].tolist(),
                base_position=q2[:7].tolist(), base_velocity=v2[:6].tolist()))  # fmt: skip
            assert r.success, r.message
            assert list(r.position_names) == list(dyn.position_names)
            assert_close(np.reshape(r.coriolis_matrix, (n, n)), oracle.C(q2, v2), 1e-10, "srv C")
            r = peer.call(dyn_client, ComputeDynamics.Request(
                joint_names=joints, position=q[7:].tolist(), velocity=v[6:].tolist()))  # fmt: skip
            assert r.success, r.message
            assert_close(r.position[:7], q[:7], 1e-15, "newest odometry used")
            assert_close(np.reshape(r.coriolis_matrix, (n, n)), C_ref, 1e-10, "srv C (odom)")
            for extra, words in [
                (dict(base_position=[0.0] * 6, base_velocity=[0.0] * 6), "7 values"),
                (dict(base_position=[0.0] * 7, base_velocity=[0.0] * 6), "zero quaternion"),
                (dict(base_position=q2[:7].tolist()), "base_velocity needs 6 values"),
                (dict(base_position=q2[:7].tolist(), base_velocity=[math.nan] * 6), "NaN"),
            ]:
                r = peer.call(dyn_client, ComputeDynamics.Request(
                    joint_names=joints, position=q[7:].tolist(), velocity=v[6:].tolist(),
                    **extra))  # fmt: skip
                assert not r.success and words in r.message, (extra, r.message)
            # No velocity at all: every velocity zero, the base's too (as for the joints).
            r = peer.call(
                dyn_client,
                ComputeDynamics.Request(
                    joint_names=joints, position=q[7:].tolist(), base_position=q2[:7].tolist()
                ),
            )
            assert r.success and not np.any(r.velocity) and len(r.velocity) == n, r.message
            gamma_client = peer.client(GetChristoffelSymbols, "get_christoffel_symbols")
            r = peer.call(
                gamma_client,
                GetChristoffelSymbols.Request(
                    joint_names=joints, position=q2[7:].tolist(), base_position=q2[:7].tolist()
                ),
            )
            assert r.success, r.message
            gamma = np.reshape(r.symbols, (n, n, n))
            assert_close(gamma[:, :, 4], oracle.C(q2, np.eye(n)[4]), 1e-10, "Gamma[:, :, 4]")
            assert node.alive()
        finally:
            assert node.stop() == 0, node.log()


def test_fixed_base_node_ignores_odometry(ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    urdf = solo_urdf()
    dyn = Dynamics.from_urdf(urdf)
    params = write_params_file(tmp_path / "p.yaml", {"robot_description": urdf})
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params_file=params)
        try:
            ready = node.wait_ready("solo")
            assert (
                f"root link '{dyn.root_link}' fixed to the world" in ready.string[ready.start() :]
            )
            peer.collect_states()
            js_pub, odom_pub = peer.joint_state_publisher(), odom_publisher(peer)
            peer.wait_matched(js_pub)
            odom_pub.publish(odometry([0, 0, 0, 0, 0, 0, 0], [math.nan] * 6, 0, "nowhere"))
            q = np.linspace(-1, 1, dyn.nv)
            msg = peer.send_until_state(js_pub, peer.joint_state(dyn.joint_names, q, stamp_ns=7))
            assert stamp_ns(msg.header.stamp) == 7 and len(msg.position_names) == 0
            assert "odometry" not in node.log()
        finally:
            assert node.stop() == 0, node.log()
