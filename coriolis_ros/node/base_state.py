"""The base state of a floating or planar robot from odometry (ROS-free).

Legged-robot state estimators publish nav_msgs/Odometry (REP 105): the pose of
``child_frame_id`` in ``header.frame_id`` (the world: odom or map, taken as gravity-aligned,
z up) and the twist of ``child_frame_id`` expressed in ``child_frame_id``.  That is exactly the
library's convention for a free flyer's coordinates, so the conversion is a copy:

* floating: q_base = (x, y, z, qx, qy, qz, qw), v_base = (linear, angular), both in the base
  frame;
* planar: q_base = (x, y, yaw) with yaw taken from the orientation (the base is assumed to stay
  in the x-y plane: roll and pitch are dropped), v_base = (vx, vy, wz) in the base frame.

:class:`BaseStateBuffer` validates and keeps the newest odometry (preallocated arrays, no
allocation per message) and writes it into a model-order configuration and velocity when the
node ticks, or says why it cannot: nothing received yet, or too old for the joint state it
would be paired with.
"""

from __future__ import annotations

import math

import numpy as np

from .joint_state_buffer import MAX_ABS

# A quaternion farther than this from unit norm is used normalized, with a warning.
UNIT_TOLERANCE = 1e-3
MIN_NORM = 1e-10  # the library's limit: a shorter quaternion is no rotation


class BaseStateBuffer:
    """Newest validated odometry of the root link of a floating or planar model."""

    def __init__(self, root_joint: str, root_link: str, timeout: float):
        if root_joint not in ("floating", "planar"):
            raise ValueError(f"root_joint must be floating or planar, got {root_joint!r}")
        self.root_joint = root_joint
        self.root_link = root_link
        self.timeout = float(timeout)
        self.nq = 7 if root_joint == "floating" else 3
        self.nv = 6 if root_joint == "floating" else 3
        self.q = np.zeros(self.nq)
        self.v = np.zeros(self.nv)
        self.stamp_ns: int | None = None  # header stamp of the odometry held
        self.frame_id = ""  # its header.frame_id (the world frame)
        self.received = 0
        self.rejected = 0

    def update(self, child_frame_id: str, frame_id: str, position, orientation, linear,
               angular, stamp_ns: int) -> tuple[bool, str]:  # fmt: skip
        """Validate and keep one odometry; (accepted, warning or rejection reason).

        ``orientation`` is (x, y, z, w).  A non-unit quaternion is normalized (the reason then
        says how far it was); a zero, NaN or huge one, or odometry for another frame than the
        root link, is rejected and the previous odometry is kept.
        """
        self.received += 1
        if child_frame_id != self.root_link:
            self.rejected += 1
            return False, (
                f"odometry child_frame_id '{child_frame_id}' is not the URDF's root link "
                f"'{self.root_link}' (the twist must be of, and in, the root link's frame)"
            )
        px, py, pz = position
        ox, oy, oz, ow = orientation
        lx, ly, lz = linear
        ax, ay, az = angular
        values = (px, py, pz, ox, oy, oz, ow, lx, ly, lz, ax, ay, az)
        if not all(abs(x) <= MAX_ABS for x in values):
            self.rejected += 1
            return False, "odometry has a NaN, infinite or huge (beyond ±1e50) value"
        norm = math.sqrt(ox * ox + oy * oy + oz * oz + ow * ow)
        if not norm >= MIN_NORM:
            self.rejected += 1
            return False, "odometry orientation is a zero quaternion"
        ox, oy, oz, ow = ox / norm, oy / norm, oz / norm, ow / norm
        q, v = self.q, self.v
        if self.root_joint == "floating":
            q[0], q[1], q[2], q[3], q[4], q[5], q[6] = px, py, pz, ox, oy, oz, ow
            v[0], v[1], v[2], v[3], v[4], v[5] = lx, ly, lz, ax, ay, az
        else:
            q[0], q[1] = px, py
            q[2] = math.atan2(2.0 * (ow * oz + ox * oy), 1.0 - 2.0 * (oy * oy + oz * oz))
            v[0], v[1], v[2] = lx, ly, az
        self.stamp_ns = int(stamp_ns)
        self.frame_id = frame_id
        if abs(norm - 1.0) > UNIT_TOLERANCE:
            return True, f"odometry orientation has norm {norm:.6g}; used normalized"
        return True, ""

    def fill(self, q: np.ndarray, v: np.ndarray, joint_stamp_ns: int) -> str:
        """Write the base coordinates into q[:nq] and v[:nv]; '' or why output must wait.

        The odometry is paired with the joint state stamped ``joint_stamp_ns``: their stamps
        may differ by at most ``timeout`` seconds, either way.
        """
        if self.stamp_ns is None:
            return f"waiting for odometry of '{self.root_link}'"
        age = abs(joint_stamp_ns - self.stamp_ns) * 1e-9
        if age > self.timeout:
            return (
                f"odometry is {age:.3f} s apart from the joint state "
                f"(base_state_timeout {self.timeout:g} s): no output until it is fresh"
            )
        q[: self.nq] = self.q
        v[: self.nv] = self.v
        return ""

    def clear(self) -> None:
        self.stamp_ns = None
