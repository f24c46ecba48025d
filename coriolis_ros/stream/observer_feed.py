"""The node's momentum observer bookkeeping (ROS-free): every joint state in, r out.

:class:`ObserverFeed` wraps the library's :class:`~coriolis_ros.dynamics.MomentumObserver`
with what a stream of JointState messages needs:

* stamps in integer nanoseconds, made relative to the first one integrated (float64 seconds
  since 1970 would resolve only about 0.24 µs);
* **effort missing** for some joints (NaN, infinite or beyond ±1e50 in the model-order effort
  array: the message had no effort for them, or NaN there) **pauses** it: nothing is
  integrated and :attr:`valid` is False (the node publishes an empty external_effort) until
  every joint has an effort again;
  the next update then bridges the pause like any other interval between stamps, or resets
  when that interval is longer than ``max_gap``;
* a **stamp gap** longer than ``max_gap`` seconds, or a stamp going **backwards** (a replayed
  bag, a restarted simulation), **resets** it: the estimate restarts from r = 0 at that state;
* a **repeated stamp** (partial messages of several publishers with the same stamp) is not
  integrated again (no time has passed) and changes nothing;
* a closed chain's **jump** that continuation refuses (beyond its budget) fails the update
  and resets the observer (no estimate until it runs again); with the dependent joints
  received at that state, the loops are closed from them, as the node's tick does, and the
  observer restarts from r = 0 there: momentum cannot be integrated across a jump.

On a floating or planar base the observer runs on the whole model: :meth:`ObserverFeed.
update_measured` puts the base state from odometry (paired by stamp, as for the output) before
the joints', with zero applied effort on the base's rows (it has no actuator), so the
estimate's base rows are the external wrench on the base. No odometry for a state pauses it.

Every update is O(N) (``coriolis_vectors``, ``gravity`` and the observer step) and
allocation-free on the normal path; the events tell the node what to log.
"""

from __future__ import annotations

import math

import numpy as np

from coriolis_ros.dynamics import MomentumObserver

from .base_state import BASE_SIZES
from .joint_state_buffer import MAX_ABS

# Events returned by ObserverFeed.update (the node logs the non-OK ones).
OK = "ok"
PAUSED = "paused"  # some joints have no effort: feed.missing_names() says which
PAUSED_BASE = "paused_base"  # floating/planar base without odometry for this state: feed.base_wait
DUPLICATE = "duplicate"  # same stamp as the last state integrated: nothing to do
RESET_GAP = "reset_gap"  # gap > max_gap: restarted from this state (feed.last_gap)
RESET_BACKWARDS = "reset_backwards"  # stamp older than the last one: restarted (feed.last_gap < 0)
# a closed chain's jump, closed from the dependent joints received: restarted from this state
RESET_JUMP = "reset_jump"


def observer_gains(value, n: int) -> np.ndarray:
    """K_O per joint from a parameter value: one positive number or n of them (ValueError)."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"observer_gain must be a positive number or {n} of them, got {value!r}")
    arr = np.array(value, dtype=np.float64).ravel()
    if arr.size == 1:
        arr = np.full(n, arr[0])
    if arr.shape != (n,):
        raise ValueError(
            f"observer_gain has {arr.size} values but the model has {n} joints (give one value "
            f"for all, or one per joint)"
        )
    bad = [k for k in arr if not (math.isfinite(k) and k > 0)]
    if bad:
        raise ValueError(f"observer_gain must be positive and finite (1/s), got {float(bad[0])!r}")
    return arr


class ObserverFeed:
    """Momentum observer over a stream of joint states (module docstring).

    ``dyn``: the model (:class:`~coriolis_ros.dynamics.Dynamics`; the observer clones it);
    ``gain``: K_O (1/s), one or one per joint; ``max_gap``: seconds (> 0).
    """

    def __init__(self, dyn, gain, max_gap: float):
        n = dyn.nv
        # Whole-model state for a floating or planar base: base from odometry, then joints.
        self._nqb, self._nvb = BASE_SIZES[dyn.root_joint]
        self._q = dyn.neutral()
        self._qd = np.zeros(n)
        self._effort = np.zeros(n)  # the base's rows stay zero: no actuator
        self.base_wait = ""
        self.joint_names = tuple(dyn.joint_names)
        self.gain = observer_gains(gain, n)
        self.set_max_gap(max_gap)
        self._observer = MomentumObserver(dyn, self.gain)
        self._closed = dyn.closed is not None
        self.estimate = np.zeros(n)
        self._abs = np.zeros(n)
        self._usable = np.zeros(n, dtype=bool)
        self.valid = False
        self._origin_ns: int | None = None
        self._last_ns: int | None = None
        self.last_gap = 0.0
        self.counts = {
            OK: 0, PAUSED: 0, PAUSED_BASE: 0, DUPLICATE: 0, RESET_GAP: 0, RESET_BACKWARDS: 0,
            RESET_JUMP: 0,
        }  # fmt: skip
        # Load the kernels now (never on the update path): one update at rest, then forget it.
        z = np.zeros(n)
        self._observer.update(0.0, dyn.neutral(), z, z)
        self._observer.reset()

    @property
    def stamp_ns(self) -> int | None:
        """Stamp of the last state integrated (None before the first and after a reset)."""
        return self._last_ns

    def set_max_gap(self, max_gap: float) -> None:
        self.max_gap = _positive_seconds(max_gap)
        self._max_gap_ns = round(self.max_gap * 1e9)  # compared in integer ns: exact bound

    def reset(self) -> None:
        """Forget the history: the next state with efforts starts from r = 0."""
        self._observer.reset()
        self._origin_ns = self._last_ns = None
        self.valid = False
        self.estimate[:] = 0.0

    def missing_names(self, effort) -> list[str]:
        """The joints whose effort is missing (NaN), infinite or beyond ±1e50."""
        return [name for name, x in zip(self.joint_names, effort) if not abs(x) <= MAX_ABS]

    def update_measured(self, stamp_ns: int, base, position, velocity, effort,
                        received=None) -> str:  # fmt: skip
        """:meth:`update` from the joints' state (the measured joints, model order) and, on a
        floating or planar base, `base` (a BaseStateBuffer) for the base's coordinates:
        PAUSED_BASE (``base_wait`` says why) when it has no odometry for this stamp."""
        if base is None:
            return self.update(stamp_ns, position, velocity, effort, received)
        wait = base.fill(self._q, self._qd, stamp_ns)
        if wait:
            self.valid = False
            self.base_wait = wait
            self.counts[PAUSED_BASE] += 1
            return PAUSED_BASE
        self._q[self._nqb :] = position
        self._qd[self._nvb :] = velocity
        self._effort[self._nvb :] = effort
        return self.update(stamp_ns, self._q, self._qd, self._effort, received)

    def update(self, stamp_ns: int, q, qd, effort, received=None) -> str:
        """Integrate one joint state (stamp in ns; q, qd, effort: float64 arrays in model
        order, effort NaN where missing); returns the event (OK, PAUSED, DUPLICATE, RESET_GAP,
        RESET_BACKWARDS).  ValueError for a state the library rejects (q or qd non-finite or
        beyond ±1e50, which the node has checked; a closed chain's loops that do not close
        from the last state): then the observer is reset (no estimate is valid until it
        starts again) and nothing is integrated.  ``received``: a closed chain's dependent
        joints measured at this state (LoopCheck.current), from which the loops are closed
        when closing them from the last state is refused (a jump), as the node's tick does."""
        np.abs(effort, out=self._abs)
        np.less_equal(self._abs, MAX_ABS, out=self._usable)  # NaN compares False
        if not self._usable.all():
            self.valid = False
            self.counts[PAUSED] += 1
            return PAUSED
        event = OK
        last = self._last_ns
        if last is not None:
            if stamp_ns == last:
                self.counts[DUPLICATE] += 1
                return DUPLICATE
            gap_ns = stamp_ns - last
            if gap_ns < 0 or gap_ns > self._max_gap_ns:
                self.last_gap = gap_ns * 1e-9
                event = RESET_BACKWARDS if gap_ns < 0 else RESET_GAP
                self.reset()
        if self._origin_ns is None:
            self._origin_ns = stamp_ns
        t = (stamp_ns - self._origin_ns) * 1e-9
        try:
            try:
                r = self._observer.update(t, q, qd, effort)
            except ValueError:
                if received is None or not self._closed:
                    raise
                self._observer.close_loops(q, received)
                self.reset()
                self._origin_ns, event, t = stamp_ns, RESET_JUMP, 0.0
                r = self._observer.update(t, q, qd, effort)
        except ValueError:
            self.reset()  # the last estimate is not this state's: publish none
            raise
        self.estimate[:] = r
        self._last_ns = stamp_ns
        self.valid = True
        self.counts[event] += 1
        return event


def _positive_seconds(value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"observer_max_gap must be a positive number of seconds, got {value!r}")
    return value
