"""Mimic joints that follow their leader: every output over the independent coordinates.

A URDF ``<mimic joint="L" multiplier="m" offset="o">`` on joint ``a`` makes
q_a = m q_L + o (chains resolved by :mod:`.urdf_model`).  The model keeps the full
tree; :class:`MimicDynamics` runs the kernels on it and maps every quantity to the
independent coordinates qbar (``joint_names`` without the mimic joints) with the
constant Jacobian A = dq/dqbar (:mod:`.kernels.coordinate_change`):

    Mbar = A^T M A,  Cbar = A^T C A,  Mdotbar = A^T Mdot A,  gbar = A^T g,
    Gammabar_ijk = sum A_ai A_bj A_ck Gamma_abc,  taubar = A^T tau(q(qbar), A qbardot, A qbarddot),
    (Cbar qbardot, Cbar^T qbardot, pbar) = A^T (C qd, C^T qd, M qd).

Cbar is the Christoffel-consistent factorization in qbar (Echeandia & Wensing,
journal version, Theorem 1; Adot = 0), so Mdotbar = Cbar + Cbar^T.  The full-size
intermediate arrays are allocated once per instance: with ``out=`` the calls
allocate nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from . import api
from .api import Dynamics
from .configuration import integrate as _integrate
from .configuration import neutral as _neutral
from .kernels.coordinate_change import (
    reduced_christoffel,
    reduced_christoffel_safeea,
    reduced_coriolis,
    reduced_coriolis_times,
    reduced_coriolis_vectors,
    reduced_gravity,
    reduced_inverse_dynamics,
    reduced_mass_matrix,
    reduced_slotine_li,
    write_map,
    ws_rows,
)
from .kernels.spatial import WS_WIDTH
from .kernels.safeea import is_serial_chain
from .model import Model


A_COL, A_MUL = 0, 1  # CoordinateMap.A: per full velocity row, reduced column and multiplier
PHI_SRC, PHI_MUL, PHI_OFF = 0, 1, 2  # CoordinateMap.phi: per full coordinate


class CoordinateMap:
    """q = phi(qbar), qdot = A qbardot for a model's mimic joints; A as (column, multiplier)."""

    def __init__(self, model: Model):
        mimic = {name: (leader, m, o) for name, leader, m, o in model.mimic}
        self.joint_names = tuple(n for n in model.joint_names if n not in mimic)
        self.position_names = tuple(n for n in model.position_names if n not in mimic)
        col = {n: k for k, n in enumerate(self.joint_names)}
        src = {n: k for k, n in enumerate(self.position_names)}
        A = np.zeros((model.nv, 2))
        for r, name in enumerate(model.joint_names):
            leader, m, _ = mimic.get(name, (name, 1.0, 0.0))
            A[r, A_COL], A[r, A_MUL] = col[leader], m
        phi = np.zeros((model.nq, 3))
        for r, name in enumerate(model.position_names):
            leader, m, o = mimic.get(name, (name, 1.0, 0.0))
            phi[r, PHI_SRC], phi[r, PHI_MUL], phi[r, PHI_OFF] = src[leader], m, o
        A.setflags(write=False)
        phi.setflags(write=False)
        self.A = A
        self.phi = phi

    def matrix(self) -> np.ndarray:
        """A as a dense (nv, nvbar) array (for tests and users; never on a call path)."""
        out = np.zeros((self.A.shape[0], len(self.joint_names)))
        out[np.arange(self.A.shape[0]), self.A[:, A_COL].astype(int)] = self.A[:, A_MUL]
        return out


@dataclass(frozen=True)
class ReducedModel(Model):
    """A model's description in the independent coordinates (``MimicDynamics.model``).

    ``joint_names``, ``joint_types``, ``body_links``, ``position_names``, :meth:`joints`
    and :attr:`parent` (nearest independent ancestor) are over the independent rows,
    so code that reads ``dyn.model`` next to ``dyn.joint_names`` stays aligned; ``mf``,
    ``tree_depth`` and ``total_mass`` are the full tree's, which is ``tree``.
    """

    tree: Model | None = None

    @classmethod
    def of(cls, tree: Model, cmap: CoordinateMap) -> ReducedModel:
        keep = [tree.joint_names.index(n) for n in cmap.joint_names]
        fields = {f.name: getattr(tree, f.name) for f in dataclasses.fields(Model)}
        fields.update(
            joint_names=cmap.joint_names,
            joint_types=tuple(tree.joint_types[r] for r in keep),
            body_links=tuple(tree.body_links[r] for r in keep),
            position_names=cmap.position_names,
        )
        return cls(**fields, tree=tree)

    def joints(self) -> list[tuple[int, int, int, int]]:
        out = []
        for kind, first, nv, iq in self.tree.joints():
            name = self.tree.joint_names[first]
            if name in self.joint_names:
                iq_bar = self.position_names.index(self.tree.position_names[iq])
                out.append((kind, self.joint_names.index(name), nv, iq_bar))
        return out

    @property
    def parent(self) -> np.ndarray:
        full = self.tree.parent
        index = {n: k for k, n in enumerate(self.joint_names)}
        out = np.empty(self.nv, dtype=np.int64)
        for k, name in enumerate(self.joint_names):
            p = full[self.tree.joint_names.index(name)]
            while p >= 0 and self.tree.joint_names[p] not in index:
                p = full[p]
            out[k] = -1 if p < 0 else index[self.tree.joint_names[p]]
        return out

    @property
    def tree_depth(self) -> int:
        return self.tree.tree_depth

    @property
    def total_mass(self) -> float:
        return self.tree.total_mass


class MimicDynamics(Dynamics):
    """:class:`Dynamics` over the independent coordinates of a model with mimic joints.

    ``Dynamics(model)`` returns one whenever ``model.mimic`` is not empty.  Every
    method takes and returns reduced quantities (``joint_names``,
    ``position_names``); :meth:`full_position` and :meth:`full_velocity` give the
    full tree's.  ``model`` describes the independent coordinates
    (:class:`ReducedModel`); ``tree`` is the full model the kernels run on.
    """

    def __init__(self, model: Model):
        super().__init__(model)
        self.tree = model
        self.map = CoordinateMap(model)
        self.model = ReducedModel.of(model, self.map)
        self._A, self._phi = self.map.A, self.map.phi
        n, nb, nqb = model.nv, len(self.map.joint_names), len(self.map.position_names)
        self._qvec, self._vec, self._mat, self._ten = (nqb,), (nb,), (nb, nb), (nb, nb, nb)
        # the workspace's rows after the model's hold the map, then every full-size
        # intermediate (kernels.coordinate_change): calls with out= allocate nothing
        self._ws = np.zeros((ws_rows(n, model.nq), WS_WIDTH))
        rows = [model.joint_names.index(name) for name in self.map.joint_names]
        write_map(self._ws[n:].reshape(-1), self._A, self._phi, rows, nqb)

    def clone(self) -> MimicDynamics:
        return MimicDynamics(self.tree)

    # ------------------------------------------------------------------ description

    def neutral(self) -> np.ndarray:
        full = _neutral(self.tree)
        keep = [self.tree.position_names.index(n) for n in self.map.position_names]
        return full[keep]

    def integrate(self, q, v, dt: float = 1.0) -> np.ndarray:
        full = _integrate(self.tree, self.full_position(q), self.full_velocity(v), self._dt(dt))
        keep = [self.tree.position_names.index(n) for n in self.map.position_names]
        return full[keep]

    def full_position(self, q) -> np.ndarray:
        q = self._coerce(q, "q")
        self._check_q(q)
        return (
            self._phi[:, PHI_MUL] * q[self._phi[:, PHI_SRC].astype(np.int64)]
            + self._phi[:, PHI_OFF]
        )

    def full_velocity(self, v) -> np.ndarray:
        v = self._coerce(v, "qd")
        if not np.all(np.abs(v) <= api.MAX_ABS):
            self._fail(api.BAD_QD, (None, v), ())
        return self._A[:, A_MUL] * v[self._A[:, A_COL].astype(np.int64)]

    # ------------------------------------------------------------------ algorithms

    # Same shape as Dynamics' methods (the reduced kernels take the full kernels'
    # arguments), so that the reduction adds no Python overhead per call.

    def coriolis(self, q, qd, out=None):
        if out is None:
            out = (np.empty(self._mat), np.empty(self._mat), np.empty(self._mat))
        try:
            a, b, c = out
        except (TypeError, ValueError):
            raise ValueError("out must be a tuple of 3 arrays") from None
        try:
            status = _K.reduced_coriolis(self._mf, q, qd, self._ws, a, b, c)
        except TypeError:
            args = [self._mf, q, qd, self._ws, *out]
            status = self._retry(_K.reduced_coriolis, args, (1, 2), out)
        if status:
            self._fail(status, (q, qd), out)
        return out

    def christoffel(self, q, out=None, method: str = "algorithm2"):
        kernel = (
            _K.reduced_christoffel_safeea
            if self._christoffel_method(method)
            else (_K.reduced_christoffel)
        )
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
        if out is None:
            out = np.empty(self._mat)
        try:
            status = _K.reduced_mass_matrix(self._mf, q, self._ws, out)
        except TypeError:
            args = [self._mf, q, self._ws, out]
            status = self._retry(_K.reduced_mass_matrix, args, (1,), (out,))
        if status:
            self._fail(status, (q,), (out,))
        return out

    def gravity(self, q, out=None):
        if out is None:
            out = np.empty(self._vec)
        try:
            status = _K.reduced_gravity(self._mf, self._gravity, q, self._ws, out)
        except TypeError:
            args = [self._mf, self._gravity, q, self._ws, out]
            status = self._retry(_K.reduced_gravity, args, (2,), (out,))
        if status:
            self._fail(status, (q,), (out,))
        return out

    def inverse_dynamics(self, q, qd, qdd, out=None):
        if out is None:
            out = np.empty(self._vec)
        try:
            status = _K.reduced_inverse_dynamics(self._mf, self._gravity, q, qd, qdd, self._ws, out)
        except TypeError:
            args = [self._mf, self._gravity, q, qd, qdd, self._ws, out]
            status = self._retry(_K.reduced_inverse_dynamics, args, (2, 3, 4), (out,))
        if status:
            self._fail(status, (q, qd, qdd), (out,))
        return out

    def coriolis_vectors(self, q, qd, out=None):
        if out is None:
            out = (np.empty(self._vec), np.empty(self._vec), np.empty(self._vec))
        try:
            a, b, c = out
        except (TypeError, ValueError):
            raise ValueError("out must be a tuple of 3 arrays") from None
        try:
            status = _K.reduced_coriolis_vectors(self._mf, q, qd, self._ws, a, b, c)
        except TypeError:
            args = [self._mf, q, qd, self._ws, *out]
            status = self._retry(_K.reduced_coriolis_vectors, args, (1, 2), out)
        if status:
            self._fail(status, (q, qd), out)
        return out

    def coriolis_times(self, q, qd, x, out=None):
        if out is None:
            out = np.empty(self._vec)
        try:
            status = _K.reduced_coriolis_times(self._mf, q, qd, x, self._ws, out)
        except TypeError:
            args = [self._mf, q, qd, x, self._ws, out]
            names = api._TIMES_NAMES
            status = self._retry(_K.reduced_coriolis_times, args, (1, 2, 3), (out,), names)
        if status:
            self._fail(status, (q, qd, x), (out,), api._TIMES_NAMES)
        return out

    def slotine_li(self, q, qd, qd_ref, qdd_ref, out=None):
        if out is None:
            out = np.empty(self._vec)
        args = [self._mf, self._gravity, q, qd, qd_ref, qdd_ref, self._ws, out]
        names = api._SLOTINE_LI_NAMES
        try:
            status = _K.reduced_slotine_li(*args)
        except TypeError:
            status = self._retry(_K.reduced_slotine_li, args, (2, 3, 4, 5), (out,), names)
        if status:
            self._fail(status, (q, qd, qd_ref, qdd_ref), (out,), names)
        return out


_T = api._SIGNATURES_TYPES
_RF1, _RF2, _F1, _F2, _F3 = _T["RF1"], _T["RF2"], _T["F1"], _T["F2"], _T["F3"]
_K = api._Kernels(
    {
        "reduced_coriolis": (reduced_coriolis, (_RF2, _F1, _F1, _F2, _F2, _F2, _F2)),
        "reduced_christoffel": (reduced_christoffel, (_RF2, _F1, _F2, _F3)),
        "reduced_christoffel_safeea": (reduced_christoffel_safeea, (_RF2, _F1, _F2, _F3)),
        "reduced_mass_matrix": (reduced_mass_matrix, (_RF2, _F1, _F2, _F2)),
        "reduced_gravity": (reduced_gravity, (_RF2, _RF1, _F1, _F2, _F1)),
        "reduced_inverse_dynamics": (
            reduced_inverse_dynamics,
            (_RF2, _RF1, _F1, _F1, _F1, _F2, _F1),
        ),
        "reduced_coriolis_vectors": (
            reduced_coriolis_vectors,
            (_RF2, _F1, _F1, _F2, _F1, _F1, _F1),
        ),
        "reduced_coriolis_times": (reduced_coriolis_times, (_RF2, _F1, _F1, _F1, _F2, _F1)),
        "reduced_slotine_li": (
            reduced_slotine_li,
            (_RF2, _RF1, _F1, _F1, _F1, _F1, _F2, _F1),
        ),
    }
)

__all__ = ["CoordinateMap", "MimicDynamics", "is_serial_chain"]
