"""The public entry point: :class:`Dynamics`, a model plus its preallocated workspace."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numba
import numpy as np

from .kernels.christoffel import christoffel as _christoffel
from .kernels.coriolis_matrix import coriolis_matrix as _coriolis_matrix
from .kernels.coriolis_vectors import coriolis_vectors as _coriolis_vectors
from .kernels.crba import mass_matrix as _mass_matrix
from .kernels.rnea import generalized_gravity as _generalized_gravity
from .kernels.rnea import inverse_dynamics as _inverse_dynamics
from .kernels.spatial import WS_WIDTH
from .model import Model
from .urdf_model import DEFAULT_GRAVITY, model_from_urdf

_F64 = np.dtype(np.float64)
_NAMES = ("q", "qd", "qdd")


class Dynamics:
    """Rigid-body dynamics of one robot: M, Mdot, C (Algorithm 1), Gamma (Algorithm 2), g, RNEA.

    Joint-space quantities follow :attr:`joint_names`.  Every method validates its
    inputs (shape, finite values: ``ValueError`` naming the problem) and returns
    new arrays that belong to the caller; pass ``out=`` (arrays in the order the
    method returns them: float64, C-contiguous, the right shape) to have them
    filled in place without allocating, e.g. ``dyn.coriolis(q, qd, out=(M, Mdot, C))``.

    An instance owns one workspace, so it is not safe to call one instance from
    several threads at once; :meth:`clone` gives another instance of the same
    model with its own workspace.  The kernels release the GIL.
    """

    def __init__(self, model: Model):
        self.model = model
        n = model.nv
        self._mi = model.mi
        self._mf = model.mf
        self._gravity = model.gravity
        self._ws = np.zeros((max(n, 1), WS_WIDTH))
        self._vec = (n,)
        self._mat = (n, n)
        self._ten = (n, n, n)
        self._run = {name: _Runner(k, None, name) for name, k in _KERNELS.items()}
        for runner in self._run.values():
            runner.table = self._run

    @classmethod
    def from_urdf(
        cls, urdf: str | os.PathLike, gravity: Sequence[float] = DEFAULT_GRAVITY
    ) -> Dynamics:
        """Build from a URDF XML string or a file path; ``URDFError`` if it is unusable."""
        return cls(model_from_urdf(urdf, gravity))

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
    def nv(self) -> int:
        return self.model.nv

    @property
    def tree_depth(self) -> int:
        return self.model.tree_depth

    @property
    def gravity_vector(self) -> np.ndarray:
        """The world gravity acceleration used by :meth:`gravity` and :meth:`inverse_dynamics`."""
        return self.model.gravity.copy()

    def __repr__(self) -> str:
        return f"Dynamics({self.name!r}, nv={self.nv}, tree_depth={self.tree_depth})"

    # ------------------------------------------------------------------ algorithms

    def coriolis(self, q, qd, out=None):
        """(M, Mdot, C) at (q, qd), Algorithm 1; C is Christoffel-consistent: Mdot = C + C^T."""
        q = self._input(q, 0)
        qd = self._input(qd, 1)
        M, Mdot, C = self._outputs(out, 3, self._mat)
        self._check(self._run["coriolis"](self._mi, self._mf, q, qd, self._ws, M, Mdot, C))
        return M, Mdot, C

    def christoffel(self, q, out=None):
        """Gamma (n, n, n) at q, Algorithm 2: Gamma[i, j, k] = dC_ij/dqd_k = Gamma[i, k, j]."""
        q = self._input(q, 0)
        (Gamma,) = self._outputs(out, 1, self._ten)
        self._check(self._run["christoffel"](self._mi, self._mf, q, self._ws, Gamma))
        return Gamma

    def mass_matrix(self, q, out=None):
        """M(q), composite-rigid-body algorithm."""
        q = self._input(q, 0)
        (M,) = self._outputs(out, 1, self._mat)
        self._check(self._run["mass_matrix"](self._mi, self._mf, q, self._ws, M))
        return M

    def gravity(self, q, out=None):
        """g(q), the generalized gravity force (the tau that holds the robot still)."""
        q = self._input(q, 0)
        (g,) = self._outputs(out, 1, self._vec)
        self._check(self._run["gravity"](self._mi, self._mf, self._gravity, q, self._ws, g))
        return g

    def inverse_dynamics(self, q, qd, qdd, out=None):
        """tau = M qdd + C qd + g, recursive Newton-Euler."""
        q = self._input(q, 0)
        qd = self._input(qd, 1)
        qdd = self._input(qdd, 2)
        (tau,) = self._outputs(out, 1, self._vec)
        run = self._run["inverse_dynamics"]
        self._check(run(self._mi, self._mf, self._gravity, q, qd, qdd, self._ws, tau))
        return tau

    def coriolis_vectors(self, q, qd, out=None):
        """(C qd, C^T qd, M qd) in O(N) without forming C."""
        q = self._input(q, 0)
        qd = self._input(qd, 1)
        Cqd, CTqd, p = self._outputs(out, 3, self._vec)
        run = self._run["coriolis_vectors"]
        self._check(run(self._mi, self._mf, q, qd, self._ws, Cqd, CTqd, p))
        return Cqd, CTqd, p

    def warmup(self) -> None:
        """Compile, or load from Numba's on-disk cache, every kernel, so no later call compiles."""
        q = np.zeros(self.nv)
        self.coriolis(q, q)
        self.christoffel(q)
        self.mass_matrix(q)
        self.gravity(q)
        self.inverse_dynamics(q, q, q)
        self.coriolis_vectors(q, q)

    # ------------------------------------------------------------------ validation

    def _input(self, x, which: int) -> np.ndarray:
        # Fast path: exactly the array type the kernels are compiled for.
        if type(x) is np.ndarray and x.dtype is _F64 and x.shape == self._vec and x.flags.carray:
            return x
        name = _NAMES[which]
        try:
            arr = np.array(x, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a sequence of {self.nv} numbers: {exc}") from None
        if arr.shape != self._vec:
            raise ValueError(f"{name} must have shape ({self.nv},), got {arr.shape}")
        return arr

    @staticmethod
    def _outputs(out, count: int, shape: tuple) -> tuple:
        if out is None:
            return tuple(np.empty(shape) for _ in range(count))
        if count == 1 and not isinstance(out, tuple):
            out = (out,)
        if not isinstance(out, tuple) or len(out) != count:
            raise ValueError(f"out must be a tuple of {count} arrays")
        for arr in out:
            if not (
                type(arr) is np.ndarray
                and arr.dtype is _F64
                and arr.shape == shape
                and arr.flags.carray
            ):
                got = (
                    f"{type(arr).__name__} {getattr(arr, 'dtype', '')} {getattr(arr, 'shape', '')}"
                )
                raise ValueError(
                    f"out arrays must be writeable C-contiguous float64 of shape {shape}, got {got}"
                )
        if count == 3 and (out[0] is out[1] or out[0] is out[2] or out[1] is out[2]):
            raise ValueError("out arrays must be distinct")
        return out

    def _check(self, status: int) -> None:
        if status:
            raise ValueError(f"{_NAMES[status - 1]} has a NaN or infinite entry")


class _Runner:
    """Calls a kernel, then binds the compiled entry point to skip Numba's type dispatch.

    Every call site passes arrays of one type signature (validated above), so
    after the first call the specialised machine-code wrapper can be called
    directly; this saves about a microsecond a call.  Falls back to the
    dispatcher if Numba does not expose the entry point.
    """

    def __init__(self, dispatcher, table: dict, name: str):
        self.dispatcher, self.table, self.name = dispatcher, table, name

    def __call__(self, *args):
        status = self.dispatcher(*args)
        try:
            sig = tuple(numba.typeof(a) for a in args)
            self.table[self.name] = self.dispatcher.overloads[sig].entry_point
        except (AttributeError, KeyError):
            self.table[self.name] = self.dispatcher
        return status


_KERNELS = {
    "coriolis": _coriolis_matrix,
    "christoffel": _christoffel,
    "mass_matrix": _mass_matrix,
    "gravity": _generalized_gravity,
    "inverse_dynamics": _inverse_dynamics,
    "coriolis_vectors": _coriolis_vectors,
}
