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

# (configuration, velocity) sizes of the base's coordinates, per root_joint.
BASE_SIZES = {"fixed": (0, 0), "floating": (7, 6), "planar": (3, 3)}

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
        self.nq, self.nv = BASE_SIZES[root_joint]
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

    def seed_from(self, other: BaseStateBuffer) -> None:
        """Take over another buffer's odometry (a new model of the same robot)."""
        if (other.root_joint, other.root_link) == (self.root_joint, self.root_link):
            self.q[:], self.v[:] = other.q, other.v
            self.stamp_ns, self.frame_id = other.stamp_ns, other.frame_id


def request_base(
    root_joint: str,
    base_position,
    base_velocity,
    need_velocity: bool,
    newest: BaseStateBuffer | None,
) -> tuple[np.ndarray, np.ndarray] | str:
    """The base state for a service request: (q_base, v_base), or why the request fails.

    Both fields empty: the newest odometry (``newest``).  Otherwise base_position must have 7
    (floating: x, y, z, qx, qy, qz, qw) or 3 (planar: x, y, theta) finite values, a floating
    quaternion is normalized (zero is refused), and base_velocity 6 or 3 values; base_velocity
    may be left empty only when the request needs no velocity (``need_velocity`` False).
    """
    nq, nv = (7, 6) if root_joint == "floating" else (3, 3)
    position = np.asarray(base_position, dtype=np.float64)
    velocity = np.asarray(base_velocity, dtype=np.float64)
    if not len(position) and not len(velocity):
        if newest is None or newest.stamp_ns is None:
            return "no base state: give base_position (and base_velocity) or publish odometry"
        return newest.q.copy(), newest.v.copy()
    layout = "x, y, z, qx, qy, qz, qw" if nq == 7 else "x, y, theta"
    if len(position) != nq:
        return f"base_position needs {nq} values ({layout}), got {len(position)}"
    if need_velocity and len(velocity) != nv:
        return (
            f"base_velocity needs {nv} values (linear, angular in the base frame), "
            f"got {len(velocity)}"
        )
    if not need_velocity and len(velocity) not in (0, nv):
        return f"base_velocity needs {nv} values or none, got {len(velocity)}"
    for what, values in (("base_position", position), ("base_velocity", velocity)):
        if not (np.abs(values) <= MAX_ABS).all():
            return f"{what} has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) value"
    if nq == 7:
        norm = float(np.linalg.norm(position[3:]))
        if not norm >= MIN_NORM:
            return "base_position has a zero quaternion"
        position = position.copy()
        position[3:] /= norm
    return position, velocity if len(velocity) else np.zeros(nv)
