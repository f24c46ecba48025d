"""Frames, frame Jacobians, task-space dynamics and the external wrench at a frame.

The logic behind :class:`~.api.Dynamics`' frame methods (``frame_placement``,
``frame_jacobian``, ``frame_jacobian_dot``, ``frame_acceleration_bias``, ``task_space``,
``external_wrench``): names to indices, argument checks, buffers, and the kernels'
status codes turned into ``ValueError``s naming the frame.  The kernels are
``kernels/frame_jacobian.py``, ``frame_jacobian_dot.py``, ``frame_bias.py`` and
``task_space.py``; see docs/task_space.md for the definitions.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import numpy as np

from .engine import Engine
from .kernels import wrench as kw
from .kernels.kinematics import MAX_ABS
from .kernels.task_space import SINGULAR_MASS, SINGULAR_TASK, TASK_RCOND, task_ws_size

# Pinocchio's ReferenceFrame values (kernels.frame_jacobian)
REFERENCES = {"world": 0, "local": 1, "local_world_aligned": 2}
ALL_ROWS = (0, 1, 2, 3, 4, 5)
ROW_NAMES = ("linear_x", "linear_y", "linear_z", "angular_x", "angular_y", "angular_z")
_WRENCH: list = []


def _wrench_kernel():
    """kernels.wrench.wrench_from_residual, compiled (or loaded from the cache) on first use."""
    if not _WRENCH:
        from numba import types

        from .kernel_table import compile_frozen

        f1, f2 = types.Array(types.float64, 1, "C"), types.Array(types.float64, 2, "C")
        _WRENCH.append(compile_frozen(kw.wrench_from_residual, (f2, f1, f1, f2), types.float64))
    return _WRENCH[0]


def encode_rows(rows: Sequence[int]) -> int:
    """The kernels' encoding of a task's rows: base-8 digits row + 1, the first lowest."""
    code = 0
    for t, r in enumerate(rows):
        code |= (int(r) + 1) << (3 * t)
    return code


class FrameAlgorithms:
    """One :class:`~.api.Dynamics` instance's frame methods (its engine and workspace)."""

    def __init__(self, engine: Engine):
        self._e = engine
        self._wrench_scratch = None  # external_wrench's W, V and squared singular values
        self._k = engine.kernels
        self._mf = engine.mf
        self._ws = engine.ws
        self.names = engine.tree.frame_names
        self._fm = engine.tree.fm
        self._index = {name: f for f, name in enumerate(self.names)}
        self._tw: np.ndarray | None = None  # the task scratch, allocated on first use
        self._rows: dict = {None: (ALL_ROWS, encode_rows(ALL_ROWS))}
        self._nv = engine.nv

    # ------------------------------------------------------------------ arguments

    def frame(self, frame) -> int:
        """The index of ``frame`` (a link name); ValueError naming it if unknown."""
        try:
            return self._index[frame]
        except (KeyError, TypeError):
            pass
        if not isinstance(frame, str):
            raise ValueError(f"frame must be a link name (str), got {type(frame).__name__}")
        near = difflib.get_close_matches(frame, self.names, n=5, cutoff=0.6)
        hint = f"; similar: {', '.join(repr(n) for n in near)}" if near else ""
        raise ValueError(
            f"unknown frame '{frame}': frames are the URDF's links ({len(self.names)}: "
            f"{', '.join(repr(n) for n in self.names[:6])}{', ...' if len(self.names) > 6 else ''})"
            f"{hint}"
        )

    @staticmethod
    def reference(reference) -> int:
        try:
            return REFERENCES[reference]
        except (KeyError, TypeError):
            raise ValueError(
                f"reference must be one of {', '.join(repr(r) for r in REFERENCES)}, "
                f"got {reference!r}"
            ) from None

    def rows(self, rows) -> tuple[tuple[int, ...], int]:
        """(rows, their encoding): distinct task directions 0..5 (0-2 linear, 3-5 angular)."""
        if rows is None or type(rows) is tuple:
            try:
                hit = self._rows.get(rows)
            except TypeError:  # unhashable entries
                hit = None
            if hit is not None:
                return hit
        try:
            values = tuple(int(r) for r in rows)
            exact = all(int(r) == r for r in rows)
        except (TypeError, ValueError):
            raise ValueError(
                f"rows must be a sequence of task directions 0..5, got {rows!r}"
            ) from None
        if not values or not exact or len(set(values)) != len(values) or not all(
            0 <= r <= 5 for r in values
        ):
            raise ValueError(
                "rows must be distinct task directions 0..5 (0-2: linear x, y, z; 3-5: "
                f"angular x, y, z), at least one, got {rows!r}"
            )
        out = (values, encode_rows(values))
        if type(rows) is tuple and len(self._rows) < 64:
            self._rows[rows] = out
        return out

    # ------------------------------------------------------------------ frames

    def placement(self, q, frame, out=None):
        f = self.frame(frame)
        if out is None:
            out = np.empty((4, 4))
        kernel = self._k.frame_placement
        try:
            status = kernel(self._mf, self._fm, f, q, self._ws, out)
        except TypeError:
            args = [self._mf, self._fm, f, q, self._ws, out]
            status = self._e.retry(kernel, args, (3,), (out,))
        if status:
            self._e.fail(status, (q,), (out,))
        return out

    def jacobian(self, q, frame, reference, out=None):
        try:
            f, ref = self._index[frame], REFERENCES[reference]
        except (KeyError, TypeError):
            f, ref = self.frame(frame), self.reference(reference)
        if out is None:
            out = np.empty((6, self._nv))
        kernel = self._k.frame_jacobian
        try:
            status = kernel(self._mf, self._fm, f, ref, q, self._ws, out)
        except TypeError:
            args = [self._mf, self._fm, f, ref, q, self._ws, out]
            status = self._e.retry(kernel, args, (4,), (out,))
        if status:
            self._e.fail(status, (q,), (out,))
        return out

    def jacobian_dot(self, q, qd, frame, reference, out=None):
        try:
            f, ref = self._index[frame], REFERENCES[reference]
        except (KeyError, TypeError):
            f, ref = self.frame(frame), self.reference(reference)
        if out is None:
            out = np.empty((6, self._nv))
        kernel = self._k.frame_jacobian_dot
        try:
            status = kernel(self._mf, self._fm, f, ref, q, qd, self._ws, out)
        except TypeError:
            args = [self._mf, self._fm, f, ref, q, qd, self._ws, out]
            status = self._e.retry(kernel, args, (4, 5), (out,))
        if status:
            self._e.fail(status, (q, qd), (out,))
        return out

    def jacobians(self, q, qd, frame, reference, out=None):
        try:
            f, ref = self._index[frame], REFERENCES[reference]
        except (KeyError, TypeError):
            f, ref = self.frame(frame), self.reference(reference)
        if out is None:
            out = (np.empty((6, self._nv)), np.empty((6, self._nv)))
        try:
            jac, jdot = out
        except (TypeError, ValueError):
            raise ValueError("out must be a tuple of 2 arrays (J, Jdot)") from None
        kernel = self._k.frame_jacobians
        try:
            status = kernel(self._mf, self._fm, f, ref, q, qd, self._ws, jac, jdot)
        except TypeError:
            args = [self._mf, self._fm, f, ref, q, qd, self._ws, jac, jdot]
            status = self._e.retry(kernel, args, (4, 5), out)
        if status:
            self._e.fail(status, (q, qd), out)
        return out

    def bias(self, q, qd, frame, reference, out=None):
        try:
            f, ref = self._index[frame], REFERENCES[reference]
        except (KeyError, TypeError):
            f, ref = self.frame(frame), self.reference(reference)
        if out is None:
            out = np.empty(6)
        kernel = self._k.frame_bias
        try:
            status = kernel(self._mf, self._fm, f, ref, q, qd, self._ws, out)
        except TypeError:
            args = [self._mf, self._fm, f, ref, q, qd, self._ws, out]
            status = self._e.retry(kernel, args, (4, 5), (out,))
        if status:
            self._e.fail(status, (q, qd), (out,))
        return out

    # ------------------------------------------------------------------ task space

    def task_space(self, q, qd, frame, reference, rows, damping, out=None):
        try:
            f, ref = self._index[frame], REFERENCES[reference]
        except (KeyError, TypeError):
            f, ref = self.frame(frame), self.reference(reference)
        values, code = self.rows(rows)
        try:
            damping = float(damping)
        except (TypeError, ValueError):
            raise ValueError(f"damping must be a number, got {damping!r}") from None
        if not 0.0 <= damping <= MAX_ABS:
            raise ValueError(f"damping must be finite and >= 0, got {damping!r}")
        m, n = len(values), self._nv
        if out is None:
            out = (np.empty((m, m)), np.empty((m, m)), np.empty((m, n)), np.empty((m, n)))
        try:
            lam, mu, jac, jdot = out
        except (TypeError, ValueError):
            raise ValueError("out must be a tuple of 4 arrays (Lambda, mu, J, Jdot)") from None
        tw = self._tw
        if tw is None:
            tw = self._tw = np.zeros(task_ws_size.py_func(n))
        kernel = self._k.task_space
        args = [self._mf, self._fm, f, ref, code, damping, q, qd, self._ws, tw, lam, mu, jac, jdot]
        try:
            status = kernel(*args)
        except TypeError:
            status = self._e.retry(kernel, args, (6, 7), out)
        if status == SINGULAR_TASK:
            named = ", ".join(ROW_NAMES[r] for r in values)
            raise ValueError(
                f"the task at frame '{self.names[f]}' is singular: J M^-1 J^T for rows "
                f"({named}) in '{reference}' is rank-deficient (condition number beyond "
                f"{1 / TASK_RCOND:.0e}): fewer than {m} independent directions at this "
                "configuration (too few joints between the root and the frame, or a "
                "kinematic singularity); choose fewer rows or pass damping > 0"
            )
        if status == SINGULAR_MASS:
            raise ValueError(
                "the mass matrix is singular (a massless subtree): the task-space inertia "
                f"of frame '{self.names[f]}' is undefined"
            )
        if status:
            self._e.fail(status, (q, qd), out)
        return out

    # ------------------------------------------------------------------ external wrench

    def external_wrench(self, q, residual, frame, reference, rows):
        values, _ = self.rows(rows)
        J = self.jacobian(q, frame, reference)
        if values != ALL_ROWS:
            J = J[list(values)]
        w = np.empty(len(values))
        if self._wrench_scratch is None:  # W (nv x 6), V (6 x 6), the squared singular values
            self._wrench_scratch = np.empty((self._nv + 8, 6))
        kernel = _wrench_kernel()
        try:
            cond = kernel(J, residual, w, self._wrench_scratch)
        except TypeError:
            r = self._e.coerce(residual, "residual")
            cond = kernel(J, r, w, self._wrench_scratch)
        if cond == kw.SIZE_SCRATCH:
            raise RuntimeError("internal error: external_wrench's scratch is too small")
        if cond == kw.SIZE_RESIDUAL:
            self._e.coerce(residual, "residual")  # names the shape
        if cond == kw.BAD_RESIDUAL:
            raise ValueError(f"residual has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) entry")
        if cond == kw.OVERFLOW:
            raise ValueError(
                f"the wrench at frame '{self.names[self.frame(frame)]}' overflows: the residual "
                f"(largest |entry| {float(np.max(np.abs(residual))):g}) is too large for the "
                "singular values of its Jacobian rows"
            )
        if cond == kw.NOT_OBSERVABLE:
            named = ", ".join(ROW_NAMES[k] for k in values)
            raise ValueError(
                f"the wrench at frame '{self.names[self.frame(frame)]}' is not observable from "
                f"the joint residual: its Jacobian rows ({named}) are rank-deficient at this "
                "configuration (too few joints between the root and the frame, or a kinematic "
                "singularity); choose fewer rows, e.g. rows=(0, 1, 2) for the force alone"
            )
        return w, float(cond)
