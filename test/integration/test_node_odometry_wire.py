"""parse_odometry reads the node's fields of a serialised nav_msgs/Odometry like rclpy does."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for the wire format")

from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402

from coriolis_ros.node.odometry import parse_odometry  # noqa: E402
from coriolis_ros.stream.odometry_wire import parse_little_endian  # noqa: E402


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


# ----------------------------------------------------------------------------- the reader itself
# parse_odometry falls back to rclpy whenever the little-endian reader gives None, so the tests
# above pass even if the reader refused everything: these call it directly.


def _fields(msg):
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    t = msg.twist.twist
    return (
        msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec,
        msg.header.frame_id,
        msg.child_frame_id,
        (p.x, p.y, p.z, q.x, q.y, q.z, q.w),
        (t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z),
    )


@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("child", FRAMES)
def test_little_endian_reader_reads_rclpy_s_bytes_itself(frame, child):
    rng = np.random.default_rng(len(frame) * 17 + len(child))
    msg = _message(rng, frame, child)
    assert parse_little_endian(serialize_message(msg)) == _fields(msg)


@pytest.mark.parametrize("frame,child", [("", ""), ("odom", "base_link"), ("map_1234", "trunk")])
def test_truncated_bytes_give_none_until_the_twist_is_complete(frame, child):
    msg = _message(np.random.default_rng(7), frame, child)
    raw = serialize_message(msg)
    # nav_msgs/Odometry ends with the twist's 36 covariance doubles (288 bytes): the reader
    # needs every byte before them and none of them
    end = len(raw) - 36 * 8
    want = _fields(msg)
    for cut in range(len(raw) + 1):
        assert parse_little_endian(raw[:cut]) == (want if cut >= end else None), cut


@pytest.mark.parametrize("encoding", [0, 2, 3])  # CDR_BE, PL_CDR_BE, PL_CDR_LE
def test_other_encodings_give_none(encoding):
    raw = bytearray(serialize_message(_message(np.random.default_rng(3), "odom", "base")))
    assert raw[:2] == b"\x00\x01"  # CDR_LE, as rclpy writes on this machine
    raw[1] = encoding
    assert parse_little_endian(bytes(raw)) is None


def test_bad_string_lengths_give_none():
    msg = _message(np.random.default_rng(5), "odom", "base")
    raw = bytearray(serialize_message(msg))
    # header (4) + stamp (8): frame_id's length, 5 = "odom" + NUL
    assert raw[12:16] == (5).to_bytes(4, "little") and raw[16:21] == b"odom\x00"
    for length in (0, len(raw) - 16 + 1, 2**32 - 1):  # empty (no NUL), past the end
        bad = bytearray(raw)
        bad[12:16] = length.to_bytes(4, "little")
        assert parse_little_endian(bytes(bad)) is None, length
    bad = bytearray(raw)
    bad[16:20] = b"\xff\xfe\xfd\xfc"  # not UTF-8
    assert parse_little_endian(bytes(bad)) is None
    # a zero length (a CDR string always holds its NUL) where the bytes after it would still
    # read as a layout: empty frame ids, the first one's length 1 -> 0
    msg = _message(np.random.default_rng(6), "", "")
    raw = bytearray(serialize_message(msg))
    assert raw[12:17] == b"\x01\x00\x00\x00\x00"
    raw[17:20] = bytes(3)  # zero padding (its value is free)
    assert parse_little_endian(bytes(raw)) == _fields(msg)
    raw[12:16] = bytes(4)
    assert parse_little_endian(bytes(raw)) is None
    # the string reaching exactly the end of the bytes is read; then the rest is missing
    bad = bytearray(raw)
    bad[12:16] = (len(raw) - 16).to_bytes(4, "little")
    assert parse_little_endian(bytes(bad)) is None
