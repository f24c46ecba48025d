"""CoriolisState kept in its serialised (CDR) form, so a tick publishes bytes.

rclpy's `Publisher.publish(msg)` converts the whole Python message to C and lets the RMW
serialise it: about 0.1-0.2 ms for a 44-DoF state, more than the kernels. `publish(bytes)`
hands an already serialised message to the RMW (about 10 µs). The layout of a CoriolisState is
fixed once the joint names, the frame_id and the switched-on fields are fixed: only the stamp
and the float64 values change from tick to tick. So `WireState` serialises one template message
with rclpy itself, finds where each float64 field's values and the stamp sit in those bytes
(each filled with distinct sentinel values first), and afterwards only copies the tick's
arrays into place. test_node_wire.py checks the bytes against rclpy's own serialisation.
"""

from __future__ import annotations

import struct

import numpy as np
from rclpy.serialization import serialize_message

from coriolis_ros.msg import CoriolisState

from .conversions import to_field

_STAMP_SENTINEL = (0x5A5A1234, 0x0ABCDEF1)  # (sec, nanosec)


class WireState:
    """The serialised CoriolisState of one model and one set of output flags.

    `fields` maps each published float64[] field to its (flattened) length. After
    `fill(arrays, stamp)`, `payload()` is what `Publisher.publish` takes.
    """

    def __init__(self, joint_names, fields: dict, frame_id: str = "", position_names=()):
        msg = CoriolisState()
        msg.joint_names = list(joint_names)
        msg.position_names = list(position_names)
        msg.header.frame_id = frame_id
        msg.header.stamp.sec, msg.header.stamp.nanosec = _STAMP_SENTINEL
        rng = np.random.default_rng(20201)
        sentinels = {}
        for name, size in fields.items():
            values = rng.uniform(1.0, 2.0, size) + np.arange(size)  # distinct, never 0
            sentinels[name] = values
            setattr(msg, name, to_field(values))
        raw = serialize_message(msg)
        self._buf = bytearray(raw)
        self._views = {}
        for name, values in sentinels.items():
            if not len(values):
                continue
            offset = _unique_offset(raw, values.tobytes(), name)
            self._views[name] = np.frombuffer(self._buf, dtype=np.float64, count=len(values),
                                              offset=offset)
        stamp_offset = _unique_offset(raw, struct.pack("<iI", *_STAMP_SENTINEL), "stamp")
        self._stamp = np.frombuffer(self._buf, dtype=np.uint32, count=2, offset=stamp_offset)
        self.fields = dict(fields)
        self.size = len(raw)

    def fill(self, arrays: dict, sec: int, nanosec: int) -> None:
        """Copy each published field from `arrays` (name -> ndarray) and set the stamp."""
        for name, view in self._views.items():
            np.copyto(view, arrays[name].reshape(-1))
        self._stamp[0] = sec & 0xFFFFFFFF  # int32 two's complement, little endian
        self._stamp[1] = nanosec

    def payload(self) -> bytes:
        return bytes(self._buf)


class WireWrench:
    """A geometry_msgs/WrenchStamped of one frame_id in its serialised form (as WireState):
    the six values (force, then torque) and the stamp are written into the template's bytes."""

    def __init__(self, frame_id: str):
        from geometry_msgs.msg import WrenchStamped

        msg = WrenchStamped()
        msg.header.frame_id = frame_id
        msg.header.stamp.sec, msg.header.stamp.nanosec = _STAMP_SENTINEL
        sentinels = np.arange(6) + np.array([1.25, 2.375, 3.5625, 4.125, 5.8125, 6.4375])
        f, m = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z = (float(v) for v in sentinels[:3])
        m.x, m.y, m.z = (float(v) for v in sentinels[3:])
        raw = serialize_message(msg)
        self._buf = bytearray(raw)
        offset = _unique_offset(raw, sentinels.tobytes(), "the wrench")
        self._values = np.frombuffer(self._buf, dtype=np.float64, count=6, offset=offset)
        stamp_offset = _unique_offset(raw, struct.pack("<iI", *_STAMP_SENTINEL), "stamp")
        self._stamp = np.frombuffer(self._buf, dtype=np.uint32, count=2, offset=stamp_offset)

    def fill(self, wrench, sec: int, nanosec: int) -> None:
        self._values[:] = wrench
        self._stamp[0] = sec & 0xFFFFFFFF
        self._stamp[1] = nanosec

    def payload(self) -> bytes:
        return bytes(self._buf)


def _unique_offset(raw: bytes, needle: bytes, what: str) -> int:
    offset = raw.find(needle)
    if offset < 0 or raw.find(needle, offset + 1) >= 0:
        raise RuntimeError(f"cannot locate {what} in the serialised message")
    return offset
