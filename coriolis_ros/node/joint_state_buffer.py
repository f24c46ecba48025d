"""Merge and validate joint states (ROS-free).

`JointStateBuffer` keeps the latest position and velocity of every model joint, merged from
partial messages of several publishers. Messages are validated as a whole: if anything is wrong
(array lengths, duplicate names, NaN/inf) nothing of the message is applied.

`resolve_request` turns a service request (names in any order + values) into model-order
arrays, or an error message naming the problem.
"""

from __future__ import annotations

import array
import math
from dataclasses import dataclass, field

import numpy as np

ACCEPTED = "accepted"
REJECTED = "rejected"
IGNORED = "ignored"  # well-formed, but names no joint of the model
_MAX_LAYOUTS = 64
_MAX_WARNED = 1000  # unknown names remembered for "warn once" (bounded against floods)
# Largest |position| or |velocity| accepted. Far beyond anything physical; larger values (e.g. a
# DBL_MAX "no value" sentinel) overflow the terms quadratic in q̇ (C q̇, Cᵀ q̇) or in a prismatic
# q (M) to inf/NaN, which would then be published as numbers.
MAX_ABS = 1e50


def as_float64(values) -> np.ndarray:
    """A float64 ndarray over `values`; zero-copy for array.array('d') and float64 ndarrays."""
    if isinstance(values, array.array) and values.typecode == "d":
        return np.frombuffer(values, dtype=np.float64) if len(values) else np.empty(0)
    return np.asarray(values, dtype=np.float64)


def name_list(names, limit: int = 10) -> str:
    """'a, b, c' for up to `limit` names, then '... and N more'."""
    names = list(names)
    text = ", ".join(names[:limit])
    if len(names) > limit:
        text += f" ... and {len(names) - limit} more"
    return text


def _nonfinite_names(values: np.ndarray, names) -> list[str]:
    bad = np.flatnonzero(~np.isfinite(values))
    return [str(names[i]) for i in bad]


def _bad_values(values: np.ndarray, names, what: str) -> str | None:
    """None if every value is finite and within ±MAX_ABS, else the reason."""
    if (np.abs(values) <= MAX_ABS).all():
        return None
    nonfinite = _nonfinite_names(values, names)
    if nonfinite:
        return f"non-finite {what} (NaN/inf) for {name_list(nonfinite)}"
    huge = [str(names[i]) for i in np.flatnonzero(np.abs(values) > MAX_ABS)]
    return f"{what} beyond ±{MAX_ABS:g} for {name_list(huge)}"


def check_arrays(names, position, velocity, effort_len: int = 0) -> str | None:
    """Validate a JointState-like triple; None when fine, else the reason it is rejected.

    `position` and `velocity` are float64 ndarrays; an empty `velocity` (or effort) is allowed.
    """
    n = len(names)
    if len(position) != n:
        return f"{n} joint names but {len(position)} positions"
    if len(velocity) and len(velocity) != n:
        return f"{n} joint names but {len(velocity)} velocities"
    if effort_len and effort_len != n:
        return f"{n} joint names but {effort_len} efforts"
    if len(set(names)) != n:
        seen, dup = set(), []
        for name in names:
            if name in seen and name not in dup:
                dup.append(name)
            seen.add(name)
        return f"duplicate joint names: {name_list(dup)}"
    if n:
        reason = _bad_values(position, names, "position")
        if reason is None and len(velocity):
            reason = _bad_values(velocity, names, "velocity")
        return reason
    return None


@dataclass
class UpdateResult:
    status: str
    reason: str = ""
    new_unknown: list = field(default_factory=list)  # unknown names seen for the first time


@dataclass
class TakeResult:
    stamp: object  # stamp of the newest message merged in (opaque to this module)
    pending: int  # messages merged since the previous take
    receive_time: float  # when the newest of them arrived (caller's clock)
    missing: tuple = ()  # model joints without any position yet (non-empty: do not compute)
    no_velocity: tuple = ()  # model joints with no velocity ever received (0 is used)


class JointStateBuffer:
    """Latest position/velocity per model joint, merged from (partial) JointState messages.

    Not thread-safe: the caller serialises `update`, `take` and `stale` (one short lock).
    """

    def __init__(self, joint_names):
        self.joint_names = tuple(joint_names)
        self.n = len(self.joint_names)
        self._index = {name: i for i, name in enumerate(self.joint_names)}
        self.position = np.zeros(self.n)
        self.velocity = np.zeros(self.n)
        self.has_position = np.zeros(self.n, dtype=bool)
        self.has_velocity = np.zeros(self.n, dtype=bool)
        self.updated = np.full(self.n, math.inf)  # receive time of each joint's last value
        self._complete = self.n == 0
        self._all_velocity = self.n == 0
        self.stamp = None
        self.receive_time = -math.inf
        self.pending = 0
        self._warned_unknown: set[str] = set()
        # Message layouts seen (several publishers alternate): names -> (model indices,
        # message indices, unknown names). Bounded: cleared when it grows past _MAX_LAYOUTS.
        self._layouts: dict[tuple, tuple] = {}

    @property
    def complete(self) -> bool:
        return self._complete

    def _layout_for(self, names):
        key = tuple(names)
        layout = self._layouts.get(key)
        if layout is None:
            model_idx, msg_idx, unknown = [], [], []
            for k, name in enumerate(key):
                i = self._index.get(name)
                if i is None:
                    unknown.append(name)
                else:
                    model_idx.append(i)
                    msg_idx.append(k)
            if len(self._layouts) >= _MAX_LAYOUTS:
                self._layouts.clear()
            layout = self._layouts[key] = (
                np.array(model_idx, dtype=np.intp),
                np.array(msg_idx, dtype=np.intp),
                unknown,
            )
        return layout

    def update(self, names, position, velocity, effort_len: int, stamp, now: float) -> UpdateResult:
        """Merge one message. Nothing is applied unless the whole message is valid."""
        position = as_float64(position)
        velocity = as_float64(velocity)
        reason = check_arrays(names, position, velocity, effort_len)
        if reason is not None:
            return UpdateResult(REJECTED, reason)
        model_idx, msg_idx, unknown = self._layout_for(names)
        new_unknown = []
        if unknown and len(self._warned_unknown) < _MAX_WARNED:
            new_unknown = [u for u in unknown if u not in self._warned_unknown]
            self._warned_unknown.update(new_unknown)
        if not len(model_idx):
            return UpdateResult(IGNORED, "no joint of the model in this message", new_unknown)
        self.position[model_idx] = position[msg_idx]
        self.has_position[model_idx] = True
        if len(velocity):
            self.velocity[model_idx] = velocity[msg_idx]
            self.has_velocity[model_idx] = True
        self.updated[model_idx] = now
        if not self._complete:
            self._complete = bool(self.has_position.all())
        if not self._all_velocity:
            self._all_velocity = bool(self.has_velocity.all())
        self.stamp = stamp
        self.receive_time = now
        self.pending += 1
        return UpdateResult(ACCEPTED, "", new_unknown)

    def missing(self) -> tuple:
        return tuple(self.joint_names[i] for i in np.flatnonzero(~self.has_position))

    def take(self, q_out: np.ndarray, qd_out: np.ndarray) -> TakeResult:
        """Copy the merged state into q_out/qd_out (model order) and reset the pending count.

        When some joint has no position yet, nothing is copied and `missing` names them.
        """
        pending, self.pending = self.pending, 0
        if not self._complete:
            return TakeResult(self.stamp, pending, self.receive_time, missing=self.missing())
        q_out[:] = self.position
        qd_out[:] = self.velocity  # zero where no velocity was ever received
        no_velocity = ()
        if not self._all_velocity:
            no_velocity = tuple(self.joint_names[i] for i in np.flatnonzero(~self.has_velocity))
        return TakeResult(self.stamp, pending, self.receive_time, no_velocity=no_velocity)

    def stale(self, now: float, timeout: float) -> tuple:
        """Joints whose last value is older than `timeout` (never received: missing, not stale)."""
        if timeout <= 0.0 or not self.n:
            return ()
        if now - self.updated.min() <= timeout:
            return ()
        return tuple(self.joint_names[i] for i in np.flatnonzero(now - self.updated > timeout))

    def seed_from(self, other: JointStateBuffer) -> None:
        """Take over the values of joints this model shares with `other` (model replacement)."""
        for name, j in other._index.items():
            i = self._index.get(name)
            if i is None:
                continue
            self.position[i] = other.position[j]
            self.velocity[i] = other.velocity[j]
            self.has_position[i] = other.has_position[j]
            self.has_velocity[i] = other.has_velocity[j]
            self.updated[i] = other.updated[j]
        self._complete = bool(self.has_position.all())
        self._all_velocity = bool(self.has_velocity.all())
        self.stamp = other.stamp
        self.receive_time = other.receive_time


def resolve_request(
    model_names, names, position, velocity=None, *, what: str = "request"
) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """Map a service request (names in any order) to model-order q (and q̇).

    Returns (q, qd, '') on success or (None, None, reason). `velocity` None means "no velocity
    field"; an empty velocity means zeros. Every model joint must be named exactly once.
    """
    names = list(names)
    position = as_float64(position)
    velocity = np.empty(0) if velocity is None else as_float64(velocity)
    reason = check_arrays(names, position, velocity)
    if reason is not None:
        return None, None, f"{what}: {reason}"
    index = {name: i for i, name in enumerate(model_names)}
    unknown = [name for name in names if name not in index]
    if unknown:
        return None, None, f"{what}: unknown joint names: {name_list(unknown)}"
    given = set(names)
    missing = [name for name in model_names if name not in given]
    if missing:
        return None, None, f"{what}: missing joint names: {name_list(missing)}"
    order = np.array([index[name] for name in names], dtype=np.intp)
    q = np.empty(len(model_names))
    q[order] = position
    qd = np.zeros(len(model_names))
    if len(velocity):
        qd[order] = velocity
    return q, qd, ""
