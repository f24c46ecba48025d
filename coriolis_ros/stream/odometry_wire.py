"""The fields of a serialised nav_msgs/Odometry the node needs, read from its CDR bytes.

rclpy turns every incoming message into Python objects (two 36-entry covariance arrays
included) before a callback sees it: for odometry arriving with every joint state at 1 kHz
that conversion costs as much as the tick itself. The node subscribes to raw bytes instead
and reads the few fields it uses here (stamp, frame ids, pose, twist). The layout is plain
CDR (XCDR1, the RMW's encoding): a 4-byte encapsulation header, then the fields in order,
each aligned to its size relative to the end of that header. Big-endian data, or bytes too
short for the layout, give None: the node then falls back to rclpy's own deserialisation
(:mod:`coriolis_ros.node.odometry`), the bag reader to rosbags'. test_node_odometry_wire.py
checks the result against rclpy's serialisation of random messages.
"""

from __future__ import annotations

import struct

_STAMP = struct.Struct("<iI")
_U32 = struct.Struct("<I")
_POSE = struct.Struct("<7d")  # position x, y, z, orientation x, y, z, w
_TWIST = struct.Struct("<6d")  # linear x, y, z, angular x, y, z
_COVARIANCE = 36 * 8


def parse_little_endian(raw: bytes):
    """The node's Odometry fields (stamp_ns, frame_id, child_frame_id, pose (7,), twist (6,))
    from little-endian CDR, or None for anything else
    (big-endian data, bytes too short for the layout). Needs no ROS: the bag tool uses it."""
    if raw[1:2] != b"\x01":  # CDR little-endian (and fewer than two bytes: None too)
        return None
    try:
        o = 4
        sec, nanosec = _STAMP.unpack_from(raw, o)
        o += 8
        frame_id, o = _string(raw, o)
        o += -o % 4  # aligned after the 4-byte header: o - 4 and o have the same residue
        child, o = _string(raw, o)
        o += (4 - o) % 8  # aligned after the 4-byte header
        pose = _POSE.unpack_from(raw, o)
        o += _POSE.size + _COVARIANCE
        twist = _TWIST.unpack_from(raw, o)
    except (struct.error, UnicodeDecodeError, ValueError):
        return None
    return sec * 1_000_000_000 + nanosec, frame_id, child, pose, twist


def _string(raw: bytes, o: int) -> tuple[str, int]:
    (length,) = _U32.unpack_from(raw, o)  # including the terminating NUL
    o += 4
    if length == 0:  # a string past the end needs no check: the read after it fails
        raise ValueError("bad string length")
    return raw[o : o + length - 1].decode("utf-8"), o + length
