"""Mimic joints in joint_states: checked against their leader, never used (ROS-free).

A model built with ``mimic="follow"`` has no mimic joints among its coordinates: each follows
its (independent) leader, q_mimic = multiplier * q_leader + offset.  Publishers differ:
joint_state_publisher leaves mimic joints out, robot drivers and simulators often publish them.
Both are fine.  When a mimic joint's value does arrive, :class:`MimicCheck` compares it with
the value its leader implies and reports the joints that disagree by more than a tolerance,
so a misconfigured gripper (a broken coupling, a wrong multiplier in the URDF) is visible; a
continuous follower (a geared rotor's encoder) is compared modulo a turn.
The check runs on the buffer's latest values in preallocated arrays: no allocation unless a
disagreement is found.

A :class:`MimicCheck` also tells its buffer the followers
(:meth:`~.joint_state_buffer.JointStateBuffer.bound_followers`), so the buffer refuses a message
whose leader would put a follower beyond the range the library accepts: the node and the bag
reader, which both build one for a model with followers, reject such a message up front,
naming the follower, instead of failing on the state later.
"""

from __future__ import annotations

import numpy as np

from .joint_state_buffer import JointStateBuffer


class MimicCheck:
    """Compare a buffer's tracked mimic values with m * q_leader + o."""

    def __init__(self, buffer: JointStateBuffer, mimic: dict, tolerance: float, periodic=()):
        """``mimic``: name -> (leader, multiplier, offset), the leader an independent joint of
        the buffer; the buffer tracks the mimic names as its ``extra_names``, in any order, and
        is told to bound them (:meth:`JointStateBuffer.bound_followers`).  ``periodic``: the
        followers that are continuous joints, compared modulo a turn (a geared rotor turns
        N times per turn of its link; its encoder may give the angle in [-pi, pi))."""
        self.buffer = buffer
        self.tolerance = float(tolerance)
        order = buffer.extra_names
        if sorted(order) != sorted(mimic):
            raise ValueError("the buffer must track exactly the mimic joints as extra names")
        index = {name: i for i, name in enumerate(buffer.joint_names)}
        self.names = order
        self.leader = np.array([index[mimic[name][0]] for name in order], dtype=np.intp)
        self.multiplier = np.array([float(mimic[name][1]) for name in order])
        self.offset = np.array([float(mimic[name][2]) for name in order])
        self._expected = np.empty(len(order))
        self._bad = np.empty(len(order), dtype=bool)
        self._periodic = np.array([name in set(periodic) for name in order], dtype=bool)
        self._any_periodic = bool(self._periodic.any())
        self._turn = np.empty(len(order))
        buffer.bound_followers(mimic)

    def check(self) -> list[tuple[str, float, float]]:
        """[(mimic joint, value received, value its leader implies)] beyond the tolerance."""
        buf = self.buffer
        expected, bad = self._expected, self._bad
        buf.position.take(self.leader, out=expected, mode="clip")  # "raise" buffers out
        expected *= self.multiplier
        expected += self.offset
        np.subtract(buf.extra_position, expected, out=expected)  # now the differences
        if self._any_periodic:  # into [-pi, pi) for continuous followers
            turn = self._turn
            np.add(expected, np.pi, out=turn)
            np.remainder(turn, 2.0 * np.pi, out=turn)
            turn -= np.pi
            np.copyto(expected, turn, where=self._periodic)
        np.abs(expected, out=expected)
        np.greater(expected, self.tolerance, out=bad)
        bad &= buf.extra_has_position
        if not bad.any():
            return []
        out = []
        for k in np.flatnonzero(bad):
            value = float(buf.extra_position[k])
            implied = float(self.multiplier[k] * buf.position[self.leader[k]] + self.offset[k])
            out.append((self.names[k], value, implied))
        return out


def continuous_joints(dyn) -> tuple[str, ...]:
    """The continuous joints of the tree a Dynamics' kernels run on (compared modulo a turn)."""
    return tuple(
        name
        for name, kind in zip(dyn.tree_joint_names, dyn.tree.joint_types, strict=True)
        if kind == "continuous"
    )
