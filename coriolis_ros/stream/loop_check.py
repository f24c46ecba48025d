"""Dependent joints of closed loops in joint_states: checked against the closure (ROS-free).

A model with closed loops (:mod:`coriolis_ros.dynamics.loops`) has as coordinates only its
independent joints; the other joints of each loop (the dependent ones) follow from closing
the loops.  Drivers and simulators often publish them too.  They are accepted, never used as
coordinates (the library's Newton starts from its previous solution, which tracks the
mechanism continuously), and :class:`LoopCheck` compares them with the closure so that a
mechanism that left its assembly (a broken linkage, a wrong loop in the URDF, a driver on
another branch) is visible.  When the closure from the previous solution is refused (a jump
beyond continuation's budget), a message that carried every dependent joint gives Newton its
starting point instead (:meth:`LoopCheck.received`; the followers among them, geared rotors
and mimic joints, are not needed: the closure does not move them).  A continuous joint's values are
compared modulo a turn: the library keeps a continuous dependent joint in [-pi, pi], a driver
may count its turns.
"""

from __future__ import annotations

import numpy as np

from .joint_state_buffer import JointStateBuffer


class LoopCheck:
    """Compare a buffer's tracked dependent-joint values with the closure's."""

    def __init__(self, buffer: JointStateBuffer, dependent: tuple[str, ...], tolerance: float,
                 periodic=(), followers=()):  # fmt: skip
        """``dependent``: the loops' dependent joints, in the order the closure gives their
        positions; the buffer tracks exactly them as its ``extra_names``, in any order.
        ``periodic``: those of them that are continuous joints (compared modulo 2 pi).
        ``followers``: those of them that follow a leader (not needed by :meth:`received`)."""
        if sorted(buffer.extra_names) != sorted(dependent):
            raise ValueError("the buffer must track exactly the dependent joints as extra names")
        self.buffer = buffer
        self.tolerance = float(tolerance)
        self.names = tuple(dependent)
        where = {name: i for i, name in enumerate(buffer.extra_names)}
        self._index = np.array([where[name] for name in dependent], dtype=np.intp)
        self._seen = np.zeros(len(dependent))
        self._has = np.zeros(len(dependent), dtype=bool)
        self._diff = np.empty(len(dependent))
        self._turn = np.empty(len(dependent))
        self._bad = np.empty(len(dependent), dtype=bool)
        self._periodic = np.array([name in set(periodic) for name in dependent], dtype=bool)
        self._any_periodic = bool(self._periodic.any())
        self._needed = np.array([name not in set(followers) for name in dependent], dtype=bool)

    def snapshot(self) -> None:
        """Copy the received values (call under the buffer's lock)."""
        self.buffer.extra_position.take(self._index, out=self._seen)
        self.buffer.extra_has_position.take(self._index, out=self._has)

    def current(self) -> np.ndarray | None:
        """The buffer's latest values in the order of ``dependent`` if every dependent joint
        that is not a follower has one (NaN for a follower without one), else None (the
        snapshot is left alone; call under the buffer's lock)."""
        has = self.buffer.extra_has_position.take(self._index)
        if has.all():
            return self.buffer.extra_position.take(self._index)
        if not has[self._needed].all():
            return None
        return np.where(has, self.buffer.extra_position.take(self._index), np.nan)

    def received(self) -> np.ndarray | None:
        """The snapshot's values in the order of ``dependent`` if every dependent joint that
        is not a follower was received (NaN for a follower not received), else None."""
        if self._has.all():
            return self._seen.copy()
        if not self._has[self._needed].all():
            return None
        return np.where(self._has, self._seen, np.nan)

    def compare_received(self, seen: np.ndarray, closure: np.ndarray) -> list:
        """:meth:`compare` of the values ``seen`` (every dependent joint, in the order of
        ``dependent``: a recorded row's, NaN for a follower not received) instead of the
        snapshot's."""
        self._seen[:] = seen
        np.logical_not(np.isnan(seen), out=self._has)
        return self.compare(closure)

    def compare(self, closure: np.ndarray) -> list[tuple[str, float, float]]:
        """[(dependent joint, value received, value the closure gives)] beyond the tolerance,
        ``closure`` in the order of ``dependent``."""
        diff, bad = self._diff, self._bad
        np.subtract(self._seen, closure, out=diff)
        if self._any_periodic:  # the difference into [-pi, pi) for continuous joints
            turn = self._turn
            np.add(diff, np.pi, out=turn)
            np.remainder(turn, 2.0 * np.pi, out=turn)
            turn -= np.pi
            np.copyto(diff, turn, where=self._periodic)
        np.abs(diff, out=diff)
        np.greater(diff, self.tolerance, out=bad)
        bad &= self._has
        if not bad.any():
            return []
        return [
            (self.names[k], float(self._seen[k]), float(closure[k])) for k in np.flatnonzero(bad)
        ]
