"""Frames and task space: the :class:`~.api.Dynamics` methods about link frames."""

from __future__ import annotations

import contextlib
from functools import cached_property

import numpy as np

from .frames import FrameAlgorithms


class FrameMethods:
    """Frame placements, Jacobians and their rates, task-space terms, external wrenches
    (a part of :class:`~.api.Dynamics`; it reads the engine the constructor sets)."""

    # ------------------------------------------------------------------ frames and task space
    #
    # Every URDF link is a frame (fixed-joint children included).  Jacobians are 6 x nv,
    # linear rows first, in Pinocchio's reference frames: "local_world_aligned" (the velocity
    # of the frame origin and the angular velocity, world axes), "local" (the same in the
    # frame's axes) or "world" (the spatial velocity at the world origin).  See
    # coriolis_ros.dynamics.frames and docs/task_space.md.

    @cached_property
    def _frame_algorithms(self) -> FrameAlgorithms:
        return FrameAlgorithms(self.engine)

    @property
    def frame_names(self) -> tuple[str, ...]:
        """Every URDF link, the root first, then depth-first in the order of the joints."""
        return self.tree.frame_names

    def frame_placement(self, q, frame: str, out=None):
        """The world pose (4 x 4 homogeneous matrix) of ``frame`` at q, in O(depth)."""
        return self._frame_algorithms.placement(q, frame, out)

    def frame_jacobian(self, q, frame: str, reference: str = "local_world_aligned", out=None):
        """J (6 x nv) of ``frame`` at q, linear rows first: J qd is the frame's velocity in
        ``reference`` ("local_world_aligned", "local" or "world", as Pinocchio's
        ``computeFrameJacobian``).  With coupled joints, J A (independent coordinates)."""
        return self._frame_algorithms.jacobian(q, frame, reference, out)

    def frame_jacobian_dot(
        self, q, qd, frame: str, reference: str = "local_world_aligned", out=None
    ):
        """dJ/dt (6 x nv) of :meth:`frame_jacobian` at (q, qd), as Pinocchio's
        ``getFrameJacobianTimeVariation``."""
        return self._frame_algorithms.jacobian_dot(q, qd, frame, reference, out)

    def frame_jacobians(self, q, qd, frame: str, reference: str = "local_world_aligned", out=None):
        """(J, Jdot) of :meth:`frame_jacobian` and :meth:`frame_jacobian_dot` in one pass."""
        return self._frame_algorithms.jacobians(q, qd, frame, reference, out)

    def frame_acceleration_bias(
        self, q, qd, frame: str, reference: str = "local_world_aligned", out=None
    ):
        """Jdot qd (6,): the frame's acceleration at zero joint acceleration.  In
        "local_world_aligned" the classical acceleration of the frame origin and the angular
        acceleration (Pinocchio's ``getFrameClassicalAcceleration``); in "local" and "world"
        the spatial acceleration (``getFrameAcceleration``)."""
        return self._frame_algorithms.bias(q, qd, frame, reference, out)

    def task_space(
        self,
        q,
        qd,
        frame: str,
        reference: str = "local_world_aligned",
        rows=None,
        damping: float = 0.0,
        out=None,
    ):
        """(Lambda, mu, J, Jdot) of the task ``rows`` (default all six; 0-2 linear, 3-5
        angular) of ``frame``: Lambda = (J M^-1 J^T + damping 1)^-1 (m x m), the task-space
        Coriolis matrix mu = Lambda (J M^-1 C - Jdot) M^-1 J^T Lambda (m x m, Remark 8 of
        Wensing & Slotine: d/dt Lambda = mu + mu^T), J and Jdot (m x nv).  M^-1 is applied
        through the tree-sparse factorization M = L^T L, never formed.  ValueError naming
        the frame if the task is singular (rank-deficient) and damping is 0."""
        self._tree_only("task_space")
        return self._frame_algorithms.task_space(q, qd, frame, reference, rows, damping, out)

    def external_wrench(
        self, q, residual, frame: str, reference: str = "local_world_aligned", rows=None
    ):
        """(w, condition number): the wrench w at ``frame`` (in ``reference``, linear rows
        first: force, then moment about the frame origin, for the default) that best explains
        a joint-space ``residual`` (e.g. the momentum observer's), the least-squares solution
        of J^T w = residual over the frame Jacobian's ``rows``, and the condition number of
        those rows of J.  ValueError if they are rank-deficient (the wrench is not observable)."""
        self._tree_only("external_wrench")
        return self._frame_algorithms.external_wrench(q, residual, frame, reference, rows)

    def warmup_frames(self) -> None:
        """Compile, or load from the on-disk cache, the frame and task-space kernels."""
        q, v = self.neutral(), np.zeros(self.nv)
        frame = self.frame_names[-1]
        self.frame_placement(q, frame)
        self.frame_jacobian(q, frame)
        self.frame_jacobian_dot(q, v, frame)
        self.frame_jacobians(q, v, frame)
        self.frame_acceleration_bias(q, v, frame)
        with contextlib.suppress(ValueError):  # compiled before any singular M is found
            self.task_space(q, v, frame, rows=(0,), damping=1.0)
        with contextlib.suppress(ValueError):  # compiled even when the frame is not observable
            self.external_wrench(q, np.zeros(self.nv), frame)
