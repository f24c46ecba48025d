"""The rows of a bag: the node's JointState semantics over recorded messages (no ROS needed).

:class:`RowStream` runs each recorded message through the same stream objects the node runs
it through (:mod:`coriolis_ros.stream`), in recording order, so the bag reader and the node
cannot drift apart:

* :class:`~coriolis_ros.stream.joint_state_buffer.JointStateBuffer` maps names (one layout per
  exact name list), rejects a message as a whole (lengths of positions, velocities or efforts
  differing from the names, duplicate names, NaN/inf or values beyond ±1e50), merges partial
  messages, keeps the last velocity when a message has none, and forgets a joint's effort when
  a message names it without one (an effort belongs to the state it came with);
* joints that follow a leader (mimic joints with ``mimic="follow"``, geared rotors) and a
  closed chain's dependent joints are tracked, never used; mimic and rotor values are checked
  against their leader (:class:`~coriolis_ros.stream.mimic_check.MimicCheck`), a closed
  chain's against the closure (:class:`~coriolis_ros.stream.loop_check.LoopCheck`, once the
  row is computed: :mod:`.bag_closed`), and a row that brought them keeps them as Newton's
  starting point where the closure from the previous row is refused (a jump), as the node's
  tick does;
* the momentum observer is :class:`~coriolis_ros.stream.observer_feed.ObserverFeed`, fed on
  every accepted message as the node feeds it (pauses without efforts, resets after a gap or a
  stamp going back, repeated stamps not integrated again);
* a floating or planar base's state is the newest odometry
  (:class:`~coriolis_ros.stream.base_state.BaseStateBuffer`), paired at each row.

A row is produced for every message that brings a new state once every joint has a position,
as the node publishes one per tick.  Everything else is counted by reason (``skipped``); with
``strict`` a bad message (undecodable, or rejected) is a :class:`BagError` instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from coriolis_ros.stream.base_state import BASE_SIZES, UNIT_TOLERANCE
from coriolis_ros.stream.joint_state_buffer import (
    ACCEPTED,
    FOLLOWERS_ONLY,
    FUTURE_STAMP,
    IGNORED,
    REJECTED,
    ZERO_STAMP,
    JointStateBuffer,
    name_list,
    stamp_problem,
)
from coriolis_ros.stream.loop_check import LoopCheck
from coriolis_ros.stream.mimic_check import MimicCheck, continuous_joints
from coriolis_ros.stream.observer_feed import ObserverFeed

from .bag_storage import BagError

BEFORE_COMPLETE = "before every joint had a position"
NO_MODEL_JOINT = "no joint of the model"
FOLLOWERS = "only joints that follow a leader (checked against it, no new state)"


@dataclass
class Recording:
    """Joint states of one bag in model order."""

    urdf: str
    urdf_source: str  # "--urdf" or the topic it was recorded on
    joint_names: tuple[str, ...]
    stamp: np.ndarray  # (T,) int64 ns, header.stamp
    log_time: np.ndarray  # (T,) int64 ns, bag receive time
    position: np.ndarray  # (T, nq): a floating or planar base's pose first
    velocity: np.ndarray  # (T, n)
    effort: np.ndarray | None  # (T, n), NaN where unknown; None if no effort at all
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    unknown_joints: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    position_names: tuple[str, ...] = ()  # the nq coordinates; only with a floating/planar base
    # The momentum observer's estimate per row (T, n), NaN where it has none; None without
    # efforts in the bag or without an observer.
    external_effort: np.ndarray | None = None
    # A closed chain: per row, the dependent joints received since the last row (in the order
    # of Dynamics.dependent_joints) or None, and the check that compares them with the closure.
    received: list = field(default_factory=list)
    loop_check: LoopCheck | None = None


class RowStream:
    """The node's intake and tick over recorded messages (module docstring).

    ``observer``: (gain, max_gap) for the momentum observer, or None for none.
    """

    def __init__(self, dyn, base=None, observer=None, mimic_tolerance: float = 1e-3,
                 strict: bool = False, where: str = ""):  # fmt: skip
        self.dyn = dyn
        self.base = base
        self.strict = strict
        self.where = where  # the bag, for messages
        self.nqb, self.nvb = BASE_SIZES[dyn.root_joint]
        self.measured = tuple(dyn.joint_names[self.nvb :])
        # a closed chain's followers are among its dependent joints, checked by the closure
        coupled = dict(dyn.coupled_joints) if dyn.closed is None else {}
        extra = tuple(coupled) + tuple(dyn.dependent_joints)
        self.buffer = JointStateBuffer(self.measured, extra_names=extra)
        self.mimic_check = (
            MimicCheck(self.buffer, coupled, mimic_tolerance, continuous_joints(dyn))
            if coupled
            else None
        )
        self.loop_check = (
            LoopCheck(self.buffer, dyn.dependent_joints, mimic_tolerance, continuous_joints(dyn),
                      dyn.closed.follower_joints)
            if dyn.closed is not None
            else None
        )
        self.feed = ObserverFeed(dyn, *observer) if observer is not None else None
        n = len(self.measured)
        self._q, self._qd = np.zeros(self.nqb + n), np.zeros(self.nvb + n)
        self._tau = np.full(self.nvb + n, math.nan)  # a base's efforts stay unknown
        self.rows: dict[str, list] = {
            k: [] for k in ("stamp", "log", "q", "qd", "tau", "r", "received")
        }
        self.any_effort = False
        self.skipped: dict[str, int] = {}
        self.unknown: set[str] = set()
        self.seen_names: set[str] = set()
        self.mimic_off = 0
        self.mimic_worst: tuple = ()
        self.stamps = {ZERO_STAMP: 0, FUTURE_STAMP: 0}
        self.normalized = 0
        self.messages = 0
        self.observer_failed = 0
        self.observer_failure = ""  # the first refusal's reason
        self.no_velocity = 0  # rows with joints that never had a velocity (0 used)
        self.no_velocity_names: set[str] = set()

    # ---------------------------------------------------------------- bookkeeping

    def skip(self, reason: str, bad: bool = False) -> None:
        """Count a message not turned into a row; a bad one is fatal with ``strict``."""
        if bad and self.strict:
            raise BagError(
                f"{self.where}: message {self.messages} of the bag is bad: {reason} (--strict)"
            )
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    # ---------------------------------------------------------------- messages

    def odometry(self, fields) -> None:
        stamp, frame, child, pose, twist = fields
        ok, why = self.base.update(child, frame, pose[:3], pose[3:], twist[:3], twist[3:], stamp)
        if not ok:
            self.skip(f"odometry rejected: {why}", bad=True)
        elif why:
            self.normalized += 1

    def joint_state(self, sec: int, nanosec: int, names, position, velocity, effort,
                    log_time: int) -> None:  # fmt: skip
        """One JointState (decoded fields); a row when it brings a new complete state."""
        names = list(names)
        buffer = self.buffer
        result = buffer.update(
            names, position, velocity, len(effort), (sec, nanosec), log_time * 1e-9, effort
        )
        status = result.status
        if status == REJECTED:
            self.skip(f"rejected: {result.reason}", bad=True)
            return
        self.seen_names.update(names)
        self.unknown.update(result.new_unknown)
        if status == IGNORED:
            self.skip(NO_MODEL_JOINT)
            return
        stamp_ns = sec * 1_000_000_000 + nanosec
        if status == ACCEPTED:
            problem = stamp_problem(sec, nanosec, log_time)
            if problem is not None:
                self.stamps[problem] += 1
            if self.feed is not None and buffer.complete:
                received = self.loop_check.current() if self.loop_check is not None else None
                try:
                    self.feed.update_measured(
                        stamp_ns, self.base, buffer.position, buffer.velocity, buffer.effort,
                        received,
                    )  # fmt: skip
                except ValueError as exc:  # a state the model refuses: reported, as by the node
                    self.observer_failed += 1
                    self.observer_failure = self.observer_failure or str(exc)
        if self.mimic_check is not None and buffer.extra_pending:
            off = self.mimic_check.check()
            if off:
                self.mimic_off += 1
                self.mimic_worst = self.mimic_worst or tuple(off[:3])
            buffer.extra_pending = False
        if status == FOLLOWERS_ONLY:
            self.skip(FOLLOWERS)
            return
        nqb, nvb = self.nqb, self.nvb
        extras = self.loop_check is not None and buffer.extra_pending  # take() clears it
        take = buffer.take(self._q[nqb:], self._qd[nvb:])
        buffer.extra_pending = extras  # kept for the next row until a row takes them
        if take.missing:
            self.skip(BEFORE_COMPLETE)
            return
        if take.no_velocity:  # the node warns likewise, and uses 0
            self.no_velocity += 1
            self.no_velocity_names.update(take.no_velocity)
        if self.base is not None:
            if self.base.fill(self._q, self._qd, stamp_ns):
                self.skip(
                    "before the first accepted odometry"
                    if self.base.stamp_ns is None
                    else f"odometry more than base_state_timeout {self.base.timeout:g} s apart"
                )
                return
        self._tau[nvb:] = buffer.effort
        self.any_effort = self.any_effort or bool(np.isfinite(buffer.effort).any())
        rows = self.rows
        rows["stamp"].append(stamp_ns)
        rows["log"].append(log_time)
        rows["q"].append(self._q.copy())
        rows["qd"].append(self._qd.copy())
        rows["tau"].append(self._tau.copy())
        feed = self.feed
        rows["r"].append(feed.estimate.copy() if feed is not None and feed.valid else None)
        # the dependent joints received since the last row, compared with this row's closure
        rows["received"].append(self.loop_check.current() if extras else None)
        buffer.extra_pending = False

    # ---------------------------------------------------------------- result

    def no_rows_reason(self) -> str:
        """Why the bag gave no row (the joints it lacks, named)."""
        missing = self.buffer.missing()
        model = self.dyn.name
        if missing:
            text = (
                f"no rows: the joint states never gave a position to {len(missing)} of the "
                f"{len(self.measured)} joints of model {model}: {name_list(missing)}"
            )
            if not self.seen_names & set(self.measured):
                seen = sorted(self.seen_names)
                text += (
                    f"; the bag's joint states name {name_list(seen) if seen else 'no joint'}"
                    " (is the URDF the robot recorded? --urdf chooses it)"
                )
            return text
        counts = ", ".join(f"{reason}: {count}" for reason, count in sorted(self.skipped.items()))
        return f"no rows: every joint state was skipped ({counts or 'none recorded'})"

    def notes(self) -> list[str]:
        notes = []
        if self.normalized:
            notes.append(
                f"odometry orientations off unit norm by more than {UNIT_TOLERANCE:g}, used "
                f"normalized: {self.normalized}"
            )
        if self.stamps[ZERO_STAMP]:
            notes.append(
                f"joint states with a zero header.stamp, used as is: {self.stamps[ZERO_STAMP]}"
            )
        if self.stamps[FUTURE_STAMP]:
            notes.append(
                "joint states stamped more than 0.5 s after the bag recorded them, used as is: "
                f"{self.stamps[FUTURE_STAMP]}"
            )
        if self.observer_failed:
            notes.append(
                f"momentum observer updates refused by the model: {self.observer_failed}, "
                f"first: {self.observer_failure}"
            )
        if self.no_velocity:
            names = name_list(sorted(self.no_velocity_names))
            notes.append(
                f"rows with joints that never had a velocity (0 used): {self.no_velocity}, "
                f"joints: {names}"
            )
        if self.mimic_off:
            worst = ", ".join(
                f"'{name}' = {value:.6g} (its leader implies {implied:.6g})"
                for name, value, implied in self.mimic_worst
            )
            notes.append(
                f"joint states with joints off their leader by more than "
                f"{self.mimic_check.tolerance:g} (not used; the leader's value is): "
                f"{self.mimic_off}, first: {worst}"
            )
        return notes

    def recording(self) -> Recording:
        rows, dyn = self.rows, self.dyn
        T, nq, nv = len(rows["stamp"]), dyn.nq, dyn.nv

        def stack(values, width):
            return np.array(values, dtype=np.float64).reshape(T, width)

        estimate = None
        if self.feed is not None and self.any_effort:
            estimate = np.full((T, nv), math.nan)
            for t, r in enumerate(rows["r"]):
                if r is not None:
                    estimate[t] = r
        return Recording(
            urdf="",
            urdf_source="",
            joint_names=tuple(dyn.joint_names),
            stamp=np.array(rows["stamp"], dtype=np.int64),
            log_time=np.array(rows["log"], dtype=np.int64),
            position=stack(rows["q"], nq),
            velocity=stack(rows["qd"], nv),
            effort=stack(rows["tau"], nv) if self.any_effort else None,
            skipped=dict(self.skipped),
            unknown_joints=tuple(sorted(self.unknown)),
            notes=self.notes(),
            position_names=tuple(dyn.position_names) if self.base is not None else (),
            external_effort=estimate,
            received=list(rows["received"]) if self.loop_check is not None else [],
            loop_check=self.loop_check,
        )
