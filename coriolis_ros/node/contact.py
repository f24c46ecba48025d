"""Collision detection and contact wrenches from the momentum observer's residual (ROS-free).

The residual r of the momentum observer estimates the external joint torque. Two questions a
robot arm's user asks of it:

* **Was the robot hit?** A collision is declared when some joint's |r_i| exceeds its
  threshold, or the force at one of the watched frames exceeds the force threshold; it is
  released only when every joint is below ``release_ratio`` times its threshold and every
  force below ``release_ratio`` times the force threshold (hysteresis: a residual hovering
  at a threshold does not make the flag chatter).
* **Where, and with what wrench?** For each watched frame, the wrench w that best explains r,
  the least-squares solution of Jᵀ w = r over the frame's Jacobian
  (:meth:`coriolis_ros.dynamics.Dynamics.external_wrench`: force, then moment about the frame
  origin, world-aligned axes), with the condition number of J. A frame where the wrench is not
  observable (J rank-deficient: a singular pose, fewer joints than six below the frame) gives
  no wrench for that state, and says why.

A threshold of 0 (or an empty list) switches that test off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class ContactResult:
    wrenches: dict = field(default_factory=dict)  # frame -> (w (6,), condition number)
    unobservable: dict = field(default_factory=dict)  # frame -> why no wrench this state
    in_collision: bool = False
    changed: bool = False  # in_collision differs from the previous state's
    reason: str = ""  # what exceeded its threshold (when a collision starts)


def thresholds(value, n: int, what: str) -> np.ndarray:
    """Per-joint thresholds from a parameter: [] (off), one value for all, or n values; each
    finite and >= 0 (0: that joint is not watched)."""
    arr = np.array(value, dtype=np.float64).reshape(-1)
    if arr.size == 0:
        return np.zeros(n)
    if arr.size == 1:
        arr = np.full(n, arr[0])
    if arr.shape != (n,):
        raise ValueError(f"{what} has {arr.size} values but the model has {n} joints")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{what} must be finite and >= 0 (0: off), got {arr.tolist()}")
    return arr


class ContactMonitor:
    """Collision flag with hysteresis and per-frame wrenches, one residual at a time."""

    def __init__(self, dyn, frames, joint_threshold=(), force_threshold: float = 0.0,
                 release_ratio: float = 0.5):  # fmt: skip
        unknown = [f for f in frames if f not in dyn.frame_names]
        if unknown:
            raise ValueError(f"wrench_frames: unknown frame(s) {', '.join(unknown)}")
        if not (math.isfinite(force_threshold) and force_threshold >= 0):
            raise ValueError(f"collision_force_threshold must be >= 0 N, got {force_threshold}")
        if not (0.0 < release_ratio <= 1.0):
            raise ValueError(f"collision_release_ratio must be in (0, 1], got {release_ratio}")
        self.dyn = dyn
        self.frames = tuple(frames)
        self.joint_threshold = thresholds(joint_threshold, dyn.nv, "collision_joint_threshold")
        self.force_threshold = float(force_threshold)
        self.release_ratio = float(release_ratio)
        self._watched = self.joint_threshold > 0
        self._any_watched = bool(self._watched.any())
        # |r_i| above these starts a collision (enter) / keeps one going (release)
        self._enter = np.where(self._watched, self.joint_threshold, np.inf)
        self._release = np.where(self._watched, self.release_ratio * self.joint_threshold, np.inf)
        self._abs = np.empty(dyn.nv)
        self._over = np.empty(dyn.nv, dtype=bool)
        self.in_collision = False

    def update(self, q, residual) -> ContactResult:
        out = ContactResult()
        forces = {}
        for frame in self.frames:
            try:
                w, cond = self.dyn.external_wrench(q, residual, frame)
            except ValueError as exc:
                out.unobservable[frame] = str(exc)
                continue
            out.wrenches[frame] = (w, cond)
            fx, fy, fz = float(w[0]), float(w[1]), float(w[2])
            forces[frame] = math.sqrt(fx * fx + fy * fy + fz * fz)
        ratio = self.release_ratio if self.in_collision else 1.0
        over = self._over
        joint_hit = False
        if self._any_watched:
            np.abs(residual, out=self._abs)
            np.greater(self._abs, self._release if self.in_collision else self._enter, out=over)
            joint_hit = bool(over.any())
        hot = [f for f, force in forces.items()
               if self.force_threshold > 0 and force > ratio * self.force_threshold]  # fmt: skip
        now = joint_hit or bool(hot)
        if now and not self.in_collision:
            names = self.dyn.joint_names
            parts = [f"|r| of {names[i]} = {self._abs[i]:.3g} > {self.joint_threshold[i]:g}"
                     for i in (np.flatnonzero(over)[:5] if joint_hit else ())]  # fmt: skip
            parts += [f"force at {f} = {forces[f]:.3g} N > {self.force_threshold:g} N"
                      for f in hot]  # fmt: skip
            out.reason = "; ".join(parts)
        out.changed = now != self.in_collision
        self.in_collision = out.in_collision = now
        return out


# The parameters make_contact reads: setting one rebuilds the monitor.
CONTACT_PARAMS = frozenset(
    ("wrench_frames", "collision_joint_threshold", "collision_force_threshold",
     "collision_release_ratio", "observer_enabled")
)  # fmt: skip


def make_contact(model, params: dict, log):
    """The contact monitor of ``model`` from the node's parameters (None when no frame and
    no threshold is set, or, with a log line, when they do not fit the model)."""
    frames = list(params["wrench_frames"])
    joint = list(params["collision_joint_threshold"])
    force = float(params["collision_force_threshold"])
    if not frames and not joint and force == 0.0:
        return None
    try:
        monitor = ContactMonitor(
            model.dyn, frames, joint, force, float(params["collision_release_ratio"])
        )
    except ValueError as exc:
        log.error(f"contact wrenches and collision flag not running: {exc}")
        return None
    if not params["observer_enabled"]:
        log.warning("wrench_frames / collision thresholds are set but observer_enabled is "
                    "false: nothing to estimate them from")  # fmt: skip
    return monitor
