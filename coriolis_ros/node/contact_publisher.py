"""Publishes the contact monitor's results (coriolis_ros.node.contact) on ROS topics.

``external_wrench/<frame>`` (geometry_msgs/WrenchStamped, header.frame_id "world": the
wrench's axes are world-aligned; force, then moment about the frame's origin) for each frame
whose wrench is observable at that state, and ``collision`` (std_msgs/Bool, latched) each time
the flag changes (and once, False, when the first result arrives).
"""

from __future__ import annotations

from geometry_msgs.msg import WrenchStamped
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from .wire import WireWrench

_LATCHED = QoSProfile(
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
    history=HistoryPolicy.KEEP_LAST,
)


class ContactPublisher:
    """Callable (stamp, ContactResult); publishers made on first use."""

    def __init__(self, node):
        self._node = node
        self._wrench = {}  # frame -> (publisher, serialised message: node.wire.WireWrench)
        self._collision = None

    def __call__(self, stamp, result) -> None:
        for frame, (w, _cond) in result.wrenches.items():
            entry = self._wrench.get(frame)
            if entry is None:
                pub = self._node.create_publisher(WrenchStamped, f"external_wrench/{frame}", 10)
                entry = self._wrench[frame] = (pub, WireWrench("world"))
            pub, wire = entry
            wire.fill(w, stamp.sec, stamp.nanosec)
            pub.publish(wire.payload())
        first = self._collision is None
        if first:
            self._collision = self._node.create_publisher(Bool, "collision", _LATCHED)
        if first or result.changed:
            self._collision.publish(Bool(data=bool(result.in_collision)))
