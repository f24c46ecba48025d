"""Merge and validate joint states (ROS-free).

`JointStateBuffer` keeps the latest position, velocity and effort of every model joint, merged
from partial messages of several publishers (a message without effort leaves its joints'
effort unknown, NaN: an effort belongs to the state it came with). Messages are validated as
a whole: if anything is wrong (array lengths, duplicate names, NaN/inf positions or
velocities) nothing of the message is applied.

Joints that follow a leader (mimic joints, geared rotors: q = m q_leader + o) are bounded like
every joint: once told about them (:meth:`JointStateBuffer.bound_followers`, which
:class:`~.mimic_check.MimicCheck` calls), the buffer refuses a message whose leader value puts
a follower beyond ±MAX_ABS (its position m q + o or velocity m qd), and names the follower and
its leader when a follower's own value is out of range; the library would refuse that state.

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
# Well-formed, names only joints that follow a leader (mimic or coupled joints): their values
# are kept for the check against the leader, but the state is unchanged (no new stamp).
FOLLOWERS_ONLY = "followers_only"
_MAX_LAYOUTS = 64
_MAX_WARNED = 1000  # unknown names remembered for "warn once" (bounded against floods)
# Largest |position| or |velocity| accepted. Far beyond anything physical; larger values (e.g. a
# DBL_MAX "no value" sentinel) overflow the terms quadratic in q̇ (C q̇, Cᵀ q̇) or in a prismatic
# q (M) to inf/NaN, which would then be published as numbers.
MAX_ABS = 1e50
# Largest |offset| of a follower (q = m q_leader + o) bound_followers takes: the library's
# bound on URDF offsets, far below half a unit in the last place of any double beyond 1e49
# (6e32), so adding it never moves a value across ±MAX_ABS.
MAX_FOLLOWER_OFFSET = 1e6


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


def _bad_values(values: np.ndarray, names, what: str, leader_of=None) -> str | None:
    """None if every value is finite and within ±MAX_ABS, else the reason (a follower named
    in `leader_of`, follower -> leader, is shown with its leader and its value)."""
    if (np.abs(values) <= MAX_ABS).all():
        return None
    finite = np.isfinite(values)
    bad = np.flatnonzero(~finite) if not finite.all() else np.flatnonzero(np.abs(values) > MAX_ABS)
    shown = []
    for i in bad:
        name = str(names[i])
        leader = None if leader_of is None else leader_of.get(name)
        value = float(values[i])
        shown.append(name if leader is None else f"{name} (follows {leader}) = {value!r}")
    if not finite.all():
        return f"non-finite {what} (NaN/inf) for {name_list(shown)}"
    return f"{what} beyond ±{MAX_ABS:g} for {name_list(shown)}"


def check_arrays(names, position, velocity, effort_len: int = 0, leader_of=None) -> str | None:
    """Validate a JointState-like triple; None when fine, else the reason it is rejected.

    `position` and `velocity` are float64 ndarrays; an empty `velocity` (or effort) is allowed.
    `leader_of` (follower -> leader) names the leader of a follower whose value is refused.
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
        reason = _bad_values(position, names, "position", leader_of)
        if reason is None and len(velocity):
            reason = _bad_values(velocity, names, "velocity", leader_of)
        return reason
    return None


ZERO_STAMP = "zero"
FUTURE_STAMP = "future"
# A stamp this far ahead of the node's clock counts as future-dated (clock skew between hosts
# of a few ms is normal; a stamp seconds ahead is a wrong clock or a wrong unit).
FUTURE_STAMP_TOLERANCE_NS = 500_000_000


def stamp_problem(sec: int, nanosec: int, now_ns: int) -> str | None:
    """ZERO_STAMP, FUTURE_STAMP (beyond the tolerance ahead of `now_ns`) or None.

    `now_ns` <= 0 (a simulated clock that has not started) disables the future check.
    """
    if sec == 0 and nanosec == 0:
        return ZERO_STAMP
    if now_ns > 0 and sec * 1_000_000_000 + nanosec > now_ns + FUTURE_STAMP_TOLERANCE_NS:
        return FUTURE_STAMP
    return None


def _largest_within(scale: float) -> float:
    """The largest x with scale * x <= MAX_ABS in double arithmetic (MAX_ABS for scale <= 1)."""
    if scale <= 1.0:
        return MAX_ABS
    x = MAX_ABS / scale
    while scale * x <= MAX_ABS:
        x = math.nextafter(x, math.inf)
    while not scale * x <= MAX_ABS:
        x = math.nextafter(x, 0.0)
    return x


@dataclass
class UpdateResult:
    status: str
    reason: str = ""
    new_unknown: list = field(default_factory=list)  # unknown names seen for the first time


_ACCEPTED = UpdateResult(ACCEPTED)  # shared by every accepted message without news (read-only)


@dataclass
class TakeResult:
    stamp: object  # stamp of the newest message merged in (opaque to this module)
    pending: int  # messages merged since the previous take
    receive_time: float  # when the newest of them arrived (caller's clock)
    missing: tuple = ()  # model joints without any position yet (non-empty: do not compute)
    no_velocity: tuple = ()  # model joints with no velocity ever received (0 is used)


class _Layout:
    """Where the values of one (validated, duplicate-free) name list go in model order.

    Holds preallocated scratch so a message with this layout is checked and merged without
    allocating arrays and without Python loops over its joints.
    """

    __slots__ = ("names", "model_idx", "msg_idx", "unknown", "identity", "scratch", "gather",
                 "unknown_warned", "has_extra", "followers_only", "limit", "leads")

    def __init__(self, names: list, index: dict, n_model: int, lead_limit: np.ndarray,
                 follower_leaders: np.ndarray):  # fmt: skip
        model_idx, msg_idx, unknown = [], [], []
        for k, name in enumerate(names):
            i = index.get(name)
            if i is None:
                unknown.append(name)
            else:
                model_idx.append(i)
                msg_idx.append(k)
        self.names = names
        self.model_idx = np.array(model_idx, dtype=np.intp)
        self.msg_idx = np.array(msg_idx, dtype=np.intp)
        self.unknown = unknown
        self.unknown_warned = not unknown
        # The message lists exactly the model's joints in model order: copy as a whole.
        self.identity = len(names) == n_model and model_idx == list(range(n_model))
        self.has_extra = any(i >= n_model for i in model_idx)  # tracked extra names
        self.followers_only = bool(model_idx) and all(i >= n_model for i in model_idx)
        self.scratch = np.empty(len(names))  # |values| for the range check
        self.gather = np.empty(len(model_idx))  # message values of model joints
        # The largest |value| of each entry: MAX_ABS, or less for a leader whose follower
        # would otherwise leave the range (None: no such leader here, the plain check).
        # leads: (follower, message index of its leader), for the reason when it fails.
        limit = np.full(len(names), MAX_ABS)
        limit[self.msg_idx] = lead_limit[self.model_idx]
        self.limit = limit if (limit != MAX_ABS).any() else None
        at = dict(zip(model_idx, msg_idx, strict=True))
        self.leads = [(f, at[int(i)]) for f, i in enumerate(follower_leaders) if int(i) in at]


class JointStateBuffer:
    """Latest position/velocity per model joint, merged from (partial) JointState messages.

    Not thread-safe: the caller serialises `update`, `take` and `stale` (one short lock).

    Hot path: a message whose name list equals one seen before (compared as a list, no tuple
    or set built) reuses that layout's index arrays and scratch, so it is validated and merged
    with a handful of numpy calls and no new arrays. Only a new name list is checked name by
    name (duplicates) and gets a layout (bounded: cleared past _MAX_LAYOUTS).
    """

    def __init__(self, joint_names, extra_names=()):
        self.joint_names = tuple(joint_names)
        self.extra_names = tuple(extra_names)
        self.n = len(self.joint_names)
        names = self.joint_names + self.extra_names
        self._index = {name: i for i, name in enumerate(names)}
        # Storage for the model's joints, then the extra names (e.g. mimic joints: tracked to be
        # checked, never part of the state); the model's part is a view of the first n entries.
        m = len(names)
        self._position, self._velocity = np.zeros(m), np.zeros(m)
        self._has_position, self._has_velocity = np.zeros(m, dtype=bool), np.zeros(m, dtype=bool)
        self._updated, self._velocity_updated = np.full(m, math.inf), np.full(m, math.inf)
        self.position, self.velocity = self._position[: self.n], self._velocity[: self.n]
        self.has_position = self._has_position[: self.n]
        self.has_velocity = self._has_velocity[: self.n]
        self.updated = self._updated[: self.n]  # receive time of each joint's last value
        self.velocity_updated = self._velocity_updated[: self.n]  # ... of its last velocity
        # Effort of each joint from the newest message naming it; NaN when that message had
        # none (or NaN there). effort_complete: every model joint has a finite one.
        self._effort = np.full(m, math.nan)
        self.effort = self._effort[: self.n]
        self.effort_complete = False
        self._effort_finite = np.zeros(self.n, dtype=bool)
        self.extra_position = self._position[self.n :]
        self.extra_has_position = self._has_position[self.n :]
        self.extra_pending = False  # an extra name's value arrived since the last take
        self._complete = self.n == 0
        self._all_velocity = self.n == 0
        self.stamp = None
        self.receive_time = -math.inf
        self.pending = 0
        self._warned_unknown: set[str] = set()
        # Layouts of the name lists seen (several publishers alternate), most recent first.
        self._layouts: list[_Layout] = []
        # Followers of the model's joints (bound_followers): none until told.
        self._lead_limit = np.full(m, MAX_ABS)  # the largest |value| of each joint
        self._followers: list[tuple[str, str, float, float]] = []  # (name, leader, m, o)
        self._follower_leaders = np.zeros(0, dtype=np.intp)  # model index of each leader
        self.leader_of: dict[str, str] = {}

    def bound_followers(self, followers: dict) -> None:
        """Bound the joints that follow a leader: ``followers`` maps each (mimic joint, rotor)
        to (leader, multiplier, offset), q = multiplier q_leader + offset, the leader a joint
        of the model.  From now on a message is rejected when a leader's position puts a
        follower beyond ±MAX_ABS (or its velocity, multiplier qd), with a reason naming both,
        and a follower's own refused value is shown with its leader.

        Exact: a leader value x passes when every |multiplier x + offset| does, as the library
        computes it: |x| <= the largest double L with |s L| <= MAX_ABS in double arithmetic,
        s the largest |multiplier| (the rounding of |m| |x| is monotone in |m| and |x|;
        |offset| <= 1e6, the library's bound, is below half a unit in the last place of any
        value near ±MAX_ABS, so it never moves one across)."""
        index = {name: i for i, name in enumerate(self.joint_names)}
        rows = []
        for name, (leader, multiplier, offset) in followers.items():
            if leader not in index:
                raise ValueError(f"follower {name}: its leader {leader} is not a model joint")
            multiplier, offset = float(multiplier), float(offset)
            if not (math.isfinite(multiplier) and abs(offset) <= MAX_FOLLOWER_OFFSET):
                raise ValueError(
                    f"follower {name}: multiplier {multiplier!r} must be finite and offset "
                    f"{offset!r} within ±{MAX_FOLLOWER_OFFSET:g}"
                )
            rows.append((str(name), leader, multiplier, offset))
        self._followers = rows
        self._follower_leaders = np.array([index[r[1]] for r in rows], dtype=np.intp)
        self.leader_of = {r[0]: r[1] for r in rows}
        scale = np.ones(len(self._lead_limit))
        for (_, _, multiplier, _), i in zip(rows, self._follower_leaders, strict=True):
            scale[i] = max(scale[i], abs(multiplier))
        self._lead_limit[:] = [_largest_within(s) for s in scale]
        self._layouts.clear()  # layouts carry the limits

    @property
    def complete(self) -> bool:
        return self._complete

    def _find_layout(self, names) -> _Layout | None:
        layouts = self._layouts
        for k, layout in enumerate(layouts):
            if layout.names == names:
                if k:  # most recent first: alternating publishers find theirs in 1-2 steps
                    layouts[k], layouts[0] = layouts[0], layouts[k]
                return layout
        return None

    def _add_layout(self, names) -> _Layout:
        if len(self._layouts) >= _MAX_LAYOUTS:
            self._layouts.clear()
        layout = _Layout(
            list(names), self._index, self.n, self._lead_limit, self._follower_leaders
        )
        self._layouts.insert(0, layout)
        return layout

    def _check_known(self, layout: _Layout, position, velocity, effort_len: int) -> str | None:
        """check_arrays for a known (duplicate-free) name list, without allocating; with the
        followers' bound on the leaders in it."""
        n = len(layout.names)
        if len(position) != n or (len(velocity) and len(velocity) != n) or (
            effort_len and effort_len != n
        ):
            return check_arrays(layout.names, position, velocity, effort_len, self.leader_of)
        if not n:
            return None
        scratch, limit, top = layout.scratch, layout.limit, MAX_ABS
        np.abs(position, out=scratch)
        if limit is not None:  # leaders of followers: within their own limits
            np.subtract(scratch, limit, out=scratch)  # exact in sign, and no overflow
            top = 0.0
        if not scratch.max() <= top:  # NaN compares False: rejected too
            return self._reason(layout, position, "position")
        if len(velocity):
            np.abs(velocity, out=scratch)
            if limit is not None:
                np.subtract(scratch, limit, out=scratch)
            if not scratch.max() <= top:
                return self._reason(layout, velocity, "velocity")
        return None

    def _reason(self, layout: _Layout, values: np.ndarray, what: str) -> str:
        """Why values failed _check_known: out of range themselves, or a follower's."""
        reason = _bad_values(values, layout.names, what, self.leader_of)
        if reason is not None:
            return reason
        for f, k in layout.leads:
            name, leader, multiplier, offset = self._followers[f]
            lead = float(values[k])
            if what == "position":
                value, rule = multiplier * lead + offset, f"{multiplier!r} × {lead!r} + {offset!r}"
            else:
                value, rule = multiplier * lead, f"{multiplier!r} × {lead!r}"
            if not abs(value) <= MAX_ABS:
                return (
                    f"{what} {lead!r} of {leader} puts its follower {name} at {rule} = "
                    f"{value!r}, beyond ±{MAX_ABS:g}"
                )
        # unreachable: within ±MAX_ABS, a leader fails its limit only through a follower above
        return f"{what} puts a follower beyond ±{MAX_ABS:g}"  # pragma: no mutate

    def update(
        self, names, position, velocity, effort_len: int, stamp, now: float, effort=None
    ) -> UpdateResult:
        """Merge one message. Nothing is applied unless the whole message is valid.

        `effort` (the message's values; None or empty: none) is merged like the positions;
        joints named without effort get NaN. Efforts are not range-checked here (NaN means
        "not given" in JointState): users of `effort` decide what they accept."""
        if type(names) is not list:
            names = list(names)
        position = as_float64(position)
        velocity = as_float64(velocity)
        layout = self._find_layout(names)
        if layout is None:
            reason = check_arrays(names, position, velocity, effort_len, self.leader_of)
            if reason is not None:
                return UpdateResult(REJECTED, reason)
            layout = self._add_layout(names)
            if layout.limit is not None:  # leaders of followers: their bound too
                reason = self._check_known(layout, position, velocity, effort_len)
        else:
            reason = self._check_known(layout, position, velocity, effort_len)
        if reason is not None:
            return UpdateResult(REJECTED, reason)
        result = _ACCEPTED
        if not layout.unknown_warned:
            new_unknown = []
            if len(self._warned_unknown) < _MAX_WARNED:
                new_unknown = [u for u in layout.unknown if u not in self._warned_unknown]
                self._warned_unknown.update(new_unknown)
            layout.unknown_warned = True
            result = UpdateResult(ACCEPTED, "", new_unknown)
        model_idx = layout.model_idx
        if not len(model_idx):
            reason = "no joint of the model in this message"
            return UpdateResult(IGNORED, reason, result.new_unknown)
        if layout.followers_only:
            gather = layout.gather
            np.take(position, layout.msg_idx, out=gather, mode="clip")
            self._position[model_idx] = gather
            self._has_position[model_idx] = True
            self._updated[model_idx] = now
            self.extra_pending = True
            reason = "only joints that follow a leader: checked against it, no new state"
            return UpdateResult(FOLLOWERS_ONLY, reason, result.new_unknown)
        has_effort = effort is not None and effort_len > 0
        if has_effort:
            effort = as_float64(effort)
        if layout.identity:
            if has_effort:
                np.copyto(self.effort, effort)
            else:
                self.effort.fill(math.nan)
            np.copyto(self.position, position)
            if len(velocity):
                np.copyto(self.velocity, velocity)
                if not self._all_velocity:
                    self.has_velocity.fill(True)
                self.velocity_updated.fill(now)
            if not self._complete:
                self.has_position.fill(True)
            self.updated.fill(now)
        else:
            gather = layout.gather
            if has_effort:
                np.take(effort, layout.msg_idx, out=gather, mode="clip")
                self._effort[model_idx] = gather
            else:
                self._effort[model_idx] = math.nan
            np.take(position, layout.msg_idx, out=gather, mode="clip")
            self._position[model_idx] = gather
            if len(velocity):
                np.take(velocity, layout.msg_idx, out=gather, mode="clip")
                self._velocity[model_idx] = gather
                if not self._all_velocity or layout.has_extra:
                    self._has_velocity[model_idx] = True
                self._velocity_updated[model_idx] = now
            if not self._complete or layout.has_extra:
                self._has_position[model_idx] = True
            self._updated[model_idx] = now
            if layout.has_extra:
                self.extra_pending = True
        if not self._complete:
            self._complete = bool(self.has_position.all())
        if not self._all_velocity:
            self._all_velocity = bool(self.has_velocity.all())
        np.isfinite(self.effort, out=self._effort_finite)
        self.effort_complete = bool(self._effort_finite.all())
        self.stamp = stamp
        self.receive_time = now
        self.pending += 1
        return result

    def missing(self) -> tuple:
        return tuple(self.joint_names[i] for i in np.flatnonzero(~self.has_position))

    def take(self, q_out: np.ndarray, qd_out: np.ndarray) -> TakeResult:
        """Copy the merged state into q_out/qd_out (model order) and reset the pending count.

        When some joint has no position yet, nothing is copied and `missing` names them.
        """
        pending, self.pending = self.pending, 0
        self.extra_pending = False
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

    def stale_velocity(self, now: float, timeout: float) -> tuple:
        """Joints whose velocity in use is older than `timeout` while their position is newer.

        Messages without velocity keep each joint's last velocity; once that is older than
        `timeout` it is still used, and these joints are reported (never silently). Joints
        stale altogether are reported by `stale`, joints that never had a velocity by `take`.
        """
        if timeout <= 0.0 or not self.n:
            return ()
        oldest = self.velocity_updated.min()
        if oldest == math.inf or now - oldest <= timeout:
            return ()
        old = (now - self.velocity_updated > timeout) & (now - self.updated <= timeout)
        return tuple(self.joint_names[i] for i in np.flatnonzero(old))

    def seed_from(self, other: JointStateBuffer) -> None:
        """Take over the values of joints this model shares with `other` (model replacement)."""
        for name, j in other._index.items():
            i = self._index.get(name)
            if i is None:
                continue
            self._position[i] = other._position[j]
            self._velocity[i] = other._velocity[j]
            self._has_position[i] = other._has_position[j]
            self._has_velocity[i] = other._has_velocity[j]
            self._effort[i] = other._effort[j]
            self._updated[i] = other._updated[j]
            self._velocity_updated[i] = other._velocity_updated[j]
        self._complete = bool(self.has_position.all())
        self._all_velocity = bool(self.has_velocity.all())
        self.effort_complete = bool(np.isfinite(self.effort).all())
        self.stamp = other.stamp
        self.receive_time = other.receive_time


def resolve_request(
    model_names, names, position, velocity=None, *, what: str = "request", followers=()
) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """Map a service request (names in any order) to model-order q (and q̇).

    Returns (q, qd, '') on success or (None, None, reason). `velocity` None means "no velocity
    field"; an empty velocity means zeros. Every model joint must be named exactly once.
    ``followers``: joints of the model that are not coordinates (mimic joints, geared rotors,
    a closed chain's dependent joints): named, the reason says to leave them out.
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
        following = set(followers)
        follow = [name for name in unknown if name in following]
        other = [name for name in unknown if name not in following]
        reasons = [f"unknown joint names: {name_list(other)}"] if other else []
        if follow:
            reasons.append(
                f"{name_list(follow)} follow other joints (mimic joints, geared rotors, joints "
                "of closed loops): not coordinates, leave them out"
            )
        return None, None, f"{what}: {'; '.join(reasons)}"
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
