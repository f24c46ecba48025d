"""parse_odometry reads the node's fields of a serialised nav_msgs/Odometry like rclpy does."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for the wire format")

from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402

from coriolis_ros.node.odometry import parse_odometry  # noqa: E402


def _message(rng, frame: str, child: str) -> Odometry:
    msg = Odometry()
    msg.header.stamp.sec = int(rng.integers(-(2**31), 2**31 - 1))
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9))
    msg.header.frame_id, msg.child_frame_id = frame, child
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z, q.x, q.y, q.z, q.w = (float(x) for x in rng.normal(size=7))
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = (
        float(x) for x in rng.normal(size=6)
    )
    msg.pose.covariance = rng.normal(size=36)
    msg.twist.covariance = rng.normal(size=36)
    return msg


# Frame ids of every length mod 8 (the CDR padding before the doubles depends on it), UTF-8.
FRAMES = ["", "o", "od", "odo", "odom", "odom1", "world_", "map_1234", "carte_é", "x" * 37]


@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("child", FRAMES[:6] + ["base_link", "trunk"])
def test_parse_equals_rclpy(frame, child):
    rng = np.random.default_rng(len(frame) * 31 + len(child))
    msg = _message(rng, frame, child)
    stamp, f, c, pose, twist = parse_odometry(serialize_message(msg))
    assert stamp == msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
    assert (f, c) == (frame, child)
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    assert pose == (p.x, p.y, p.z, q.x, q.y, q.z, q.w)
    t = msg.twist.twist
    assert twist == (t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z)


def test_truncated_bytes_fall_back_to_rclpy_and_fail_there():
    raw = serialize_message(_message(np.random.default_rng(1), "odom", "base_link"))
    with pytest.raises(Exception):  # noqa: B017 -- rclpy's own error for bad bytes
        parse_odometry(raw[: len(raw) // 2])
