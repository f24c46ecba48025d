"""URDF geometry: roll-pitch-yaw, origins, joint axes and poses of welded joints."""

from __future__ import annotations

import math

import numpy as np

from . import urdf_checks
from .errors import URDFError


def rpy_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (
        math.cos(r),
        math.sin(r),
        math.cos(p),
        math.sin(p),
        math.cos(y),
        math.sin(y),
    )
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def align_z(axis: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit vector ``axis`` (the identity for z, diag(1,
    -1, -1) for -z).  Its first column is x made orthogonal to the axis (y when the axis is
    within about 26 degrees of ±x); an axis off ±z by however little is kept as it is."""
    helper = np.eye(3)[0 if abs(axis[0]) < 0.9 else 1]  # x, or y near ±x
    x = helper - helper.dot(axis) * axis
    x /= np.linalg.norm(x)
    y = np.cross(axis, x)
    return np.column_stack([x, y, axis])


def pose(origin, what: str) -> tuple[np.ndarray, np.ndarray]:
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = np.array(origin.xyz if origin.xyz is not None else (0, 0, 0), dtype=float)
    rpy = np.array(origin.rpy if origin.rpy is not None else (0, 0, 0), dtype=float)
    if xyz.shape != (3,) or rpy.shape != (3,) or not np.all(np.isfinite(np.r_[xyz, rpy])):
        raise URDFError(f"{what}/origin: non-finite or malformed <origin> (xyz={xyz}, rpy={rpy})")
    return rpy_matrix(rpy), xyz


def compose(a: tuple, b: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Pose composition a * b of (rotation, translation) pairs."""
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def joint_axis(joint) -> np.ndarray:
    axis = np.array(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), dtype=float)
    norm = float(np.linalg.norm(axis)) if np.all(np.isfinite(axis)) else float("nan")
    if axis.shape != (3,) or not math.isfinite(norm) or norm < 1e-12:
        raise URDFError(f"{urdf_checks.joint_path(joint.name, 'axis')}: invalid axis {axis}")
    return axis / norm


def locked_pose(joint, position: float) -> tuple[np.ndarray, np.ndarray]:
    """The fixed pose parent -> child of a joint welded at ``position``."""
    origin = pose(joint.origin, f"joint '{joint.name}'")
    axis = joint_axis(joint)
    if joint.type == "prismatic":
        return compose(origin, (np.eye(3), axis * position))
    return compose(origin, (axis_rotation(axis, position), np.zeros(3)))


def axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues: rotation by ``angle`` about the unit vector ``axis``."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)
