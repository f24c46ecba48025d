"""The public entry point: :class:`Dynamics`, a model plus its preallocated workspace."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence

import numpy as np
from numba import types

from . import batch as _batch
from .kernels.christoffel import christoffel as _christoffel
from .kernels.coriolis_matrix import coriolis_matrix as _coriolis_matrix
from .kernels.coriolis_times import coriolis_times as _coriolis_times
from .kernels.coriolis_vectors import coriolis_vectors as _coriolis_vectors
from .kernels.crba import mass_matrix as _mass_matrix
from .kernels.kinematics import (
    BAD_Q,
    BAD_QD,
    BAD_QDD,
    BAD_QUATERNION,
    MAX_ABS,
    MIN_QUATERNION_NORM,
    OVERLAP,
    SIZE_OUT,
    SIZE_Q,
    SIZE_QD,
    SIZE_QDD,
    check_position,
)
from .kernels.momentum_observer import observer_step as _observer_step
from .kernels.momentum_observer import observer_update as _observer_update
from .kernels.rnea import generalized_gravity as _generalized_gravity
from .kernels.rnea import inverse_dynamics as _inverse_dynamics
from .kernels.slotine_li import BAD_ARG4, SIZE_ARG4
from .kernels.slotine_li import slotine_li as _slotine_li
from .kernels.safeea import christoffel_safeea as _christoffel_safeea
from .kernels.safeea import is_serial_chain
from .kernels.spatial import WS_WIDTH
from .configuration import integrate as _integrate
from .configuration import neutral as _neutral
from .model import Model
from .urdf_model import DEFAULT_GRAVITY, model_from_urdf

_F64 = np.dtype(np.float64)
_NAMES = ("q", "qd", "qdd")
_TIMES_NAMES = ("q", "qd", "x")
_SLOTINE_LI_NAMES = ("q", "qd", "qd_ref", "qdd_ref")


class Dynamics:
    """Rigid-body dynamics of one robot: M, Mdot, C (Algorithm 1), Gamma (Algorithm 2), g, RNEA;
    in O(N) without forming C: C qd, C^T qd, M qd, C x and the Slotine-Li torque.

    Joint-space quantities follow :attr:`joint_names` (nv velocity DoF), configurations
    :attr:`position_names` (nq coordinates; nq = nv without a free flyer, whose
    orientation is a quaternion: see :mod:`coriolis_ros.dynamics.model` for the
    conventions).  Every method validates its
    inputs (shape, finite values: ``ValueError`` naming the problem) and returns
    new arrays that belong to the caller; pass ``out=`` (arrays in the order the
    method returns them: float64, C-contiguous, the right shape) to have them
    filled in place without allocating, e.g. ``dyn.coriolis(q, qd, out=(M, Mdot, C))``.

    An instance owns one workspace, so it is not safe to call one instance from
    several threads at once; :meth:`clone` gives another instance of the same
    model with its own workspace.  ``coriolis``, ``christoffel`` and ``mass_matrix``
    release the GIL while they run; the O(N) methods keep it (releasing it would cost a
    tenth of their time).
    """

    def __new__(cls, model: Model):
        if cls is Dynamics and model.mimic:  # mimic joints follow: reduce every output
            from .mimic import MimicDynamics

            return super().__new__(MimicDynamics)
        return super().__new__(cls)

    def __init__(self, model: Model):
        self.model = model
        n = model.nv
        self._mf = model.mf
        self._gravity = model.gravity
        self._ws = np.zeros((max(n, 1), WS_WIDTH))
        self._qvec = (model.nq,)
        self._vec = (n,)
        self._mat = (n, n)
        self._ten = (n, n, n)

    @classmethod
    def from_urdf(
        cls,
        urdf: str | os.PathLike,
        gravity: Sequence[float] = DEFAULT_GRAVITY,
        root_joint: str = "fixed",
        mimic: str = "follow",
        locked_joints: Mapping[str, float] | None = None,
    ) -> Dynamics:
        """Build from a URDF XML string or a file path; ``URDFError`` if it is unusable.

        ``root_joint`` attaches the URDF's root link to the world: ``"fixed"`` (welded),
        ``"floating"`` (a free flyer, for legged robots and humanoids) or ``"planar"``
        (moving in the world's x-y plane).  Its coordinates come first in q and v.

        ``mimic="follow"`` (default): URDF mimic joints follow their leader and every
        input and output is over the independent coordinates only (``joint_names``
        leaves the mimic joints out; see :mod:`coriolis_ros.dynamics.mimic`);
        ``mimic="independent"``: mimic joints are DoF of their own.
        ``locked_joints={name: position}`` welds those revolute, continuous or
        prismatic joints at the given position (rad or m), as Pinocchio's
        ``buildReducedModel`` does; ``ValueError`` for an unknown, fixed or
        multi-DoF joint or a non-finite position.
        """
        return Dynamics(model_from_urdf(urdf, gravity, root_joint, mimic, locked_joints))

    def clone(self) -> Dynamics:
        """Another instance on the same (immutable) model, with its own workspace."""
        return Dynamics(self.model)

    # ------------------------------------------------------------------ description

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.model.joint_names

    @property
    def position_names(self) -> tuple[str, ...]:
        """The nq names of the configuration coordinates, the order of q."""
        return self.model.position_names

    @property
    def nv(self) -> int:
        return self.model.nv

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def root_joint(self) -> str:
        """How the URDF's root link is attached to the world: fixed, floating or planar."""
        return self.model.root_joint

    @property
    def root_link(self) -> str:
        return self.model.root_link

    def neutral(self) -> np.ndarray:
        """The neutral configuration: zero joints, identity quaternions."""
        return _neutral(self.model)

    def integrate(self, q, v, dt: float = 1.0) -> np.ndarray:
        """q (+) v dt on the configuration manifold (a new array of nq entries).

        A free flyer moves along the screw exp(v dt) of its body-frame twist, a
        planar joint along the planar one; other joints add v dt.  The quaternion
        is normalized first.
        """
        q = self._coerce(q, "q")
        v = self._coerce(v, "qd")
        status = _K.check_position(self._mf, self._ws, q)
        if status:
            self._fail(status, (q, v), ())
        dt = float(dt)
        if not np.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt}")
        return _integrate(self.model, q, v, dt)

    @property
    def tree_depth(self) -> int:
        return self.model.tree_depth

    @property
    def gravity_vector(self) -> np.ndarray:
        """The world gravity acceleration used by :meth:`gravity` and :meth:`inverse_dynamics`."""
        return self.model.gravity.copy()

    def __repr__(self) -> str:
        nq = f", nq={self.nq}" if self.nq != self.nv else ""
        return f"Dynamics({self.name!r}{nq}, nv={self.nv}, tree_depth={self.tree_depth})"

    # ------------------------------------------------------------------ algorithms

    def coriolis(self, q, qd, out=None):
        """(M, Mdot, C) at (q, qd), Algorithm 1; C is Christoffel-consistent: Mdot = C + C^T."""
        if out is None:
            out = (np.empty(self._mat), np.empty(self._mat), np.empty(self._mat))
        try:
            a, b, c = out
        except (TypeError, ValueError):
            raise ValueError("out must be a tuple of 3 arrays") from None
        try:
            status = _K.coriolis(self._mf, q, qd, self._ws, a, b, c)
        except TypeError:
            status = self._retry(_K.coriolis, [self._mf, q, qd, self._ws, *out], (1, 2), out)
        if status:
            self._fail(status, (q, qd), out)
        return out

    def christoffel(self, q, out=None, method: str = "algorithm2"):
        """Gamma (n, n, n) at q: Gamma[i, j, k] = dC_ij/dqd_k = Gamma[i, k, j].

        ``method="algorithm2"`` (default): Echeandia & Wensing's Algorithm 2, any tree,
        O(Nd^2); ``"safeea"``: Safeea et al.'s recursion, serial chains of revolute
        and prismatic joints only, O(n^3) (:mod:`.kernels.safeea`).
        """
        kernel = _K.christoffel_safeea if self._christoffel_method(method) else _K.christoffel
        if out is None:
            out = np.empty(self._ten)
        try:
            status = kernel(self._mf, q, self._ws, out)
        except TypeError:
            status = self._retry(kernel, [self._mf, q, self._ws, out], (1,), (out,))
        if status:
            self._fail(status, (q,), (out,))
        return out

    def mass_matrix(self, q, out=None):
        """M(q), composite-rigid-body algorithm."""
        if out is None:
            out = np.empty(self._mat)
        try:
            status = _K.mass_matrix(self._mf, q, self._ws, out)
        except TypeError:
            status = self._retry(_K.mass_matrix, [self._mf, q, self._ws, out], (1,), (out,))
        if status:
            self._fail(status, (q,), (out,))
        return out

    def gravity(self, q, out=None):
        """g(q), the generalized gravity force (the tau that holds the robot still)."""
        if out is None:
            out = np.empty(self._vec)
        try:
            status = _K.gravity(self._mf, self._gravity, q, self._ws, out)
        except TypeError:
            args = [self._mf, self._gravity, q, self._ws, out]
            status = self._retry(_K.gravity, args, (2,), (out,))
        if status:
            self._fail(status, (q,), (out,))
        return out

    def inverse_dynamics(self, q, qd, qdd, out=None):
        """tau = M qdd + C qd + g, recursive Newton-Euler."""
        if out is None:
            out = np.empty(self._vec)
        try:
            status = _K.inverse_dynamics(self._mf, self._gravity, q, qd, qdd, self._ws, out)
        except TypeError:
            args = [self._mf, self._gravity, q, qd, qdd, self._ws, out]
            status = self._retry(_K.inverse_dynamics, args, (2, 3, 4), (out,))
        if status:
            self._fail(status, (q, qd, qdd), (out,))
        return out

    def coriolis_vectors(self, q, qd, out=None):
        """(C qd, C^T qd, M qd) in O(N) without forming C."""
        if out is None:
            out = (np.empty(self._vec), np.empty(self._vec), np.empty(self._vec))
        try:
            a, b, c = out
        except (TypeError, ValueError):
            raise ValueError("out must be a tuple of 3 arrays") from None
        try:
            status = _K.coriolis_vectors(self._mf, q, qd, self._ws, a, b, c)
        except TypeError:
            args = [self._mf, q, qd, self._ws, *out]
            status = self._retry(_K.coriolis_vectors, args, (1, 2), out)
        if status:
            self._fail(status, (q, qd), out)
        return out

    def coriolis_times(self, q, qd, x, out=None):
        """C(q, qd) x in O(N) without forming C, for the C of :meth:`coriolis`
        (Christoffel-consistent); with x = qd it is C qd."""
        if out is None:
            out = np.empty(self._vec)
        try:
            status = _K.coriolis_times(self._mf, q, qd, x, self._ws, out)
        except TypeError:
            args = [self._mf, q, qd, x, self._ws, out]
            status = self._retry(_K.coriolis_times, args, (1, 2, 3), (out,), _TIMES_NAMES)
        if status:
            self._fail(status, (q, qd, x), (out,), _TIMES_NAMES)
        return out

    def slotine_li(self, q, qd, qd_ref, qdd_ref, out=None):
        """M(q) qdd_ref + C(q, qd) qd_ref + g(q) in O(N) without forming M or C (the
        Slotine-Li control law's model terms; C as in :meth:`coriolis`)."""
        if out is None:
            out = np.empty(self._vec)
        try:
            status = _K.slotine_li(
                self._mf, self._gravity, q, qd, qd_ref, qdd_ref, self._ws, out
            )
        except TypeError:
            args = [self._mf, self._gravity, q, qd, qd_ref, qdd_ref, self._ws, out]
            status = self._retry(_K.slotine_li, args, (2, 3, 4, 5), (out,), _SLOTINE_LI_NAMES)
        if status:
            self._fail(status, (q, qd, qd_ref, qdd_ref), (out,), _SLOTINE_LI_NAMES)
        return out

    # ------------------------------------------------------------------ mimic / locked joints

    @property
    def mimic_joints(self) -> dict[str, tuple[str, float, float]]:
        """Mimic joints that follow: name -> (independent leader, multiplier, offset)."""
        return {name: (leader, m, o) for name, leader, m, o in self.model.mimic}

    @property
    def locked_joints(self) -> dict[str, float]:
        """Joints welded at build time: name -> position (mimic joints of locked leaders too)."""
        return dict(self.model.locked_joints)

    def full_position(self, q) -> np.ndarray:
        """The full tree's configuration (mimic joints included) of q: q itself here."""
        q = self._coerce(q, "q")
        self._check_q(q)
        return q

    def full_velocity(self, v) -> np.ndarray:
        """The full tree's velocity A v (mimic joints included): v itself here."""
        v = self._coerce(v, "qd")
        if not np.all(np.abs(v) <= MAX_ABS):
            self._fail(BAD_QD, (None, v), ())
        return v

    def _check_q(self, q: np.ndarray) -> None:
        if not np.all(np.abs(q) <= MAX_ABS):
            self._fail(BAD_Q, (q,), ())

    @staticmethod
    def _dt(dt) -> float:
        dt = float(dt)
        if not np.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt}")
        return dt

    def _christoffel_method(self, method) -> int:
        """0: Algorithm 2, 1: Safeea's recursion (ValueError if it does not apply)."""
        if method == "algorithm2":
            return 0
        if method != "safeea":
            raise ValueError(f"method must be 'algorithm2' or 'safeea', got {method!r}")
        if self.model.root_joint != "fixed" or any(
            t in ("floating", "planar") for t in self.model.joint_types
        ):
            raise ValueError(
                "method='safeea' is for fixed-base serial chains of revolute and prismatic "
                "joints; this model has a floating or planar joint (use method='algorithm2')"
            )
        if not is_serial_chain(self._mf):
            raise ValueError(
                "method='safeea' is for serial chains; this model is a branched tree "
                "(use method='algorithm2', or lock the joints of the extra branches)"
            )
        return 1

    def warmup(self) -> None:
        """Compile, or load from Numba's on-disk cache, every kernel, so no later call compiles."""
        q = self.neutral()
        v = np.zeros(self.nv)
        self.coriolis(q, v)
        self.christoffel(q)
        self.mass_matrix(q)
        self.gravity(q)
        self.inverse_dynamics(q, v, v)
        self.coriolis_vectors(q, v)
        self.coriolis_times(q, v, v)
        self.slotine_li(q, v, v, v)
        _K.observer_update  # noqa: B018 - MomentumObserver's kernel: loaded, not run

    # ------------------------------------------------------------------ batches (issue 12)
    #
    # Many states per call: row t of every result equals the single-state call on row t,
    # bitwise.  Configurations are rows of Q (T, nq), velocities and accelerations rows of
    # V and A (T, nv).  See coriolis_ros.dynamics.batch for threads, workspaces and errors.

    def _q_width(self) -> int:
        """Entries per configuration row of a batch (the one place batch shapes read it)."""
        return self.nq

    def coriolis_batch(self, Q, V, out=None):
        """(M, Mdot, C), each (T, n, n): :meth:`coriolis` on every row of Q (T, nq), V (T, nv)."""
        Q = _batch.rows(Q, "Q", self._q_width())
        V = _batch.rows(V, "V", self.nv)
        T, n = _batch.same_rows({"Q": Q, "V": V}), self.nv
        out = _batch.outputs(out, [(T, n, n)] * 3)
        wss, threads = _batch.workspaces(self)
        # four states per pass (kernels.lanes), each lane bitwise the single-state call
        args = [self._mf, Q, V, wss, *_batch.lane_buffers(self), threads, *out]
        _batch.launch("coriolis_lanes", args, ("Q", "V"))
        return out

    def christoffel_batch(self, Q, out=None):
        """Gamma (T, n, n, n): :meth:`christoffel` on every row of Q (T, nq)."""
        Q = _batch.rows(Q, "Q", self._q_width())
        T, n = Q.shape[0], self.nv
        (out,) = _batch.outputs(out, [(T, n, n, n)])
        args = [self._mf, Q, *_batch.workspaces(self), out]
        _batch.launch("christoffel", args, ("Q",))
        return out

    def coriolis_vectors_batch(self, Q, V, out=None):
        """(C qd, C^T qd, M qd), each (T, n): :meth:`coriolis_vectors` on every row."""
        Q = _batch.rows(Q, "Q", self._q_width())
        V = _batch.rows(V, "V", self.nv)
        T, n = _batch.same_rows({"Q": Q, "V": V}), self.nv
        out = _batch.outputs(out, [(T, n)] * 3)
        args = [self._mf, Q, V, *_batch.workspaces(self), *out]
        _batch.launch("coriolis_vectors", args, ("Q", "V"))
        return out

    def inverse_dynamics_batch(self, Q, V, A, out=None):
        """tau (T, n): :meth:`inverse_dynamics` on every row of Q (T, nq), V and A (T, nv)."""
        Q = _batch.rows(Q, "Q", self._q_width())
        V = _batch.rows(V, "V", self.nv)
        A = _batch.rows(A, "A", self.nv)
        T, n = _batch.same_rows({"Q": Q, "V": V, "A": A}), self.nv
        (out,) = _batch.outputs(out, [(T, n)])
        args = [self._mf, self._gravity, Q, V, A, *_batch.workspaces(self), out]
        _batch.launch("inverse_dynamics", args, ("Q", "V", "A"))
        return out

    def slotine_li_batch(self, Q, V, QdR, QddR, out=None):
        """tau (T, n): :meth:`slotine_li` on every row of Q (T, nq), V, QdR and QddR (T, nv)."""
        Q = _batch.rows(Q, "Q", self._q_width())
        V = _batch.rows(V, "V", self.nv)
        QdR = _batch.rows(QdR, "QdR", self.nv)
        QddR = _batch.rows(QddR, "QddR", self.nv)
        T, n = _batch.same_rows({"Q": Q, "V": V, "QdR": QdR, "QddR": QddR}), self.nv
        (out,) = _batch.outputs(out, [(T, n)])
        args = [self._mf, self._gravity, Q, V, QdR, QddR, *_batch.workspaces(self), out]
        _batch.launch("slotine_li", args, ("Q", "V", "QdR", "QddR"))
        return out

    def gravity_batch(self, Q, out=None):
        """g (T, n): :meth:`gravity` on every row of Q (T, nq)."""
        Q = _batch.rows(Q, "Q", self._q_width())
        T, n = Q.shape[0], self.nv
        (out,) = _batch.outputs(out, [(T, n)])
        args = [self._mf, self._gravity, Q, *_batch.workspaces(self), out]
        _batch.launch("gravity", args, ("Q",))
        return out

    def warmup_batch(self) -> None:
        """Compile, or load from the on-disk cache, every batch kernel."""
        Q = self.neutral()[None, :]  # unit quaternions
        V = np.zeros((1, self.nv))
        self.coriolis_batch(Q, V)
        self.christoffel_batch(Q)
        self.coriolis_vectors_batch(Q, V)
        self.inverse_dynamics_batch(Q, V, V)
        self.slotine_li_batch(Q, V, V, V)
        self.gravity_batch(Q)

    # ------------------------------------------------------------------ validation
    #
    # The fast path does no checking in Python: each kernel is compiled for one
    # signature (float64, C-contiguous, writeable arrays) with further
    # compilation disabled, so Numba's C dispatcher rejects any other argument
    # type with a TypeError, and the kernels check lengths and finiteness and
    # return a status code.  Only then does Python look closer.

    def _retry(self, kernel, args: list, inputs: tuple, out: tuple, names=_NAMES) -> int:
        """The arguments are not the compiled types: convert the inputs, explain bad outputs."""
        for position, name in zip(inputs, names, strict=False):
            args[position] = self._coerce(args[position], name)
        for arr in out:
            if not (type(arr) is np.ndarray and arr.dtype == _F64 and arr.flags.carray):
                got = f"{type(arr).__name__} {getattr(arr, 'dtype', '')}"
                raise ValueError(f"out arrays must be writeable C-contiguous float64, got {got}")
        try:
            return kernel(*args)
        except TypeError:
            shapes = ", ".join(str(np.shape(arr)) for arr in out)
            raise ValueError(f"out arrays have the wrong shape: {shapes}") from None

    def _coerce(self, x, name: str) -> np.ndarray:
        try:
            arr = np.array(x, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            size = self.nq if name == "q" else self.nv
            raise ValueError(f"{name} must be a sequence of {size} numbers: {exc}") from None
        expected = self._qvec if name == "q" else self._vec
        if arr.shape != expected:
            raise ValueError(f"{name} must have shape ({expected[0]},), got {arr.shape}")
        return arr

    def _fail(self, status: int, inputs: tuple, out: tuple, names=_NAMES) -> None:
        if status in (BAD_Q, BAD_QD, BAD_QDD, BAD_ARG4):
            raise ValueError(
                f"{names[status - BAD_Q]} has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) entry"
            )
        if status == BAD_QUATERNION:
            raise ValueError(
                f"q has a zero quaternion (norm below {MIN_QUATERNION_NORM:g}) for a floating joint"
            )
        if status in (SIZE_Q, SIZE_QD, SIZE_QDD, SIZE_ARG4):
            which = status - SIZE_Q
            got = np.shape(inputs[which])
            size = self.nq if which == 0 else self.nv
            raise ValueError(f"{names[which]} must have shape ({size},), got {got}")
        if status == OVERLAP:
            raise ValueError("out arrays must not share memory")
        if status == SIZE_OUT:
            shapes = ", ".join(str(np.shape(arr)) for arr in out)
            raise ValueError(f"out arrays have the wrong shape: {shapes}")
        raise RuntimeError(f"internal error: kernel status {status}")


# One signature per kernel: read-only model arrays, writeable C-contiguous float64 data.
_RF1 = types.Array(types.float64, 1, "C", readonly=True)
_RF2 = types.Array(types.float64, 2, "C", readonly=True)
_F1 = types.Array(types.float64, 1, "C")
_F2 = types.Array(types.float64, 2, "C")
_F3 = types.Array(types.float64, 3, "C")
_SIGNATURES_TYPES = {"RF1": _RF1, "RF2": _RF2, "F1": _F1, "F2": _F2, "F3": _F3}
_SIGNATURES = {
    "coriolis": (_coriolis_matrix, (_RF2, _F1, _F1, _F2, _F2, _F2, _F2)),
    "christoffel": (_christoffel, (_RF2, _F1, _F2, _F3)),
    "mass_matrix": (_mass_matrix, (_RF2, _F1, _F2, _F2)),
    "gravity": (_generalized_gravity, (_RF2, _RF1, _F1, _F2, _F1)),
    "inverse_dynamics": (_inverse_dynamics, (_RF2, _RF1, _F1, _F1, _F1, _F2, _F1)),
    "coriolis_vectors": (_coriolis_vectors, (_RF2, _F1, _F1, _F2, _F1, _F1, _F1)),
    "check_position": (check_position, (_RF2, _F2, _F1)),
    "coriolis_times": (_coriolis_times, (_RF2, _F1, _F1, _F1, _F2, _F1)),
    "slotine_li": (_slotine_li, (_RF2, _RF1, _F1, _F1, _F1, _F1, _F2, _F1)),
    # MomentumObserver.update: model, gravity, q, qd, tau, workspace, state, dt
    "observer_update": (_observer_update, (_RF2, _RF1, _F1, _F1, _F1, _F2, _F2, types.float64)),
    # the same step on terms computed elsewhere (mimic joints): p, C^T qd, g, tau, state, dt
    "observer_step": (_observer_step, (_F1, _F1, _F1, _F1, _F2, types.float64)),
    "christoffel_safeea": (_christoffel_safeea, (_RF2, _F1, _F2, _F3)),
}


class _Kernels:
    """Each kernel, compiled (or loaded from the on-disk cache) on first use, then frozen."""

    _lock = threading.Lock()

    def __init__(self, signatures: dict | None = None):
        self._signatures = _SIGNATURES if signatures is None else signatures

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._signatures:
            raise AttributeError(name)
        with self._lock:
            if name not in self.__dict__:
                dispatcher, argtypes = self._signatures[name]
                dispatcher.compile(types.int64(*argtypes))
                dispatcher.disable_compile()
                self.__dict__[name] = dispatcher
        return self.__dict__[name]


_K = _Kernels()
