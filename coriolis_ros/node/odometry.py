"""nav_msgs/Odometry from its serialized bytes in the node: the ROS-free little-endian reader
(:mod:`coriolis_ros.stream.odometry_wire`) first, rclpy's deserialisation for anything else."""

from __future__ import annotations

from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message

from coriolis_ros.stream.odometry_wire import parse_little_endian


def parse_odometry(raw: bytes):
    """(stamp_ns, frame_id, child_frame_id, pose (7,), twist (6,)) of a serialised Odometry."""
    fields = parse_little_endian(raw)
    return _slow(raw) if fields is None else fields


def _slow(raw: bytes):
    msg = deserialize_message(raw, Odometry)
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
    pose = (p.x, p.y, p.z, q.x, q.y, q.z, q.w)
    return (
        stamp,
        msg.header.frame_id,
        msg.child_frame_id,
        pose,
        (lin.x, lin.y, lin.z, ang.x, ang.y, ang.z),
    )
