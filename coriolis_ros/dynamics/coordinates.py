"""Independent coordinates of a tree whose coupled joints follow others.

A URDF ``<mimic joint="L" multiplier="m" offset="o">`` on joint ``a`` makes
q_a = m q_L + o (chains resolved by :mod:`.urdf_model`).  The model keeps the full
tree; a :class:`~.api.Dynamics` of it runs the ``COUPLED`` kernels
(:mod:`.kernel_table`), which map every quantity to the independent coordinates qbar
(``joint_names`` without the coupled joints) with the constant Jacobian
A = dq/dqbar (:mod:`.kernels.coordinate_change`):

    Mbar = A^T M A,  Cbar = A^T C A,  Mdotbar = A^T Mdot A,  gbar = A^T g,
    Gammabar_ijk = sum A_ai A_bj A_ck Gamma_abc,  taubar = A^T tau(q(qbar), A qbardot, A qbarddot),
    (Cbar qbardot, Cbar^T qbardot, pbar) = A^T (C qd, C^T qd, M qd).

Cbar is the Christoffel-consistent factorization in qbar (Echeandia & Wensing,
journal version, Theorem 1; Adot = 0), so Mdotbar = Cbar + Cbar^T.

A follower's coordinate is bounded like every other (±MAX_ABS): the kernels run on the full
tree, so q = phi(qbar) and A qbardot are what must stay within the range whose outputs are
known to be finite, not only qbar.  The kernels refuse a follower beyond it with the status
of the input it came from; :meth:`CoordinateMap.refusal` says which follower, its leader
and the values.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .kernels.kinematics import MAX_ABS
from .model import Model


A_COL, A_MUL = 0, 1  # CoordinateMap.A: per full velocity row, reduced column and multiplier
PHI_SRC, PHI_MUL, PHI_OFF = 0, 1, 2  # CoordinateMap.phi: per full coordinate


class CoordinateMap:
    """q = phi(qbar), qdot = A qbardot for a model's mimic and coupled joints; A as (column,
    multiplier) per full row."""

    def __init__(self, model: Model):
        mimic = {name: (leader, m, o) for name, leader, m, o in (*model.mimic, *model.couplings)}
        self.joint_names = tuple(n for n in model.joint_names if n not in mimic)
        self.position_names = tuple(n for n in model.position_names if n not in mimic)
        col = {n: k for k, n in enumerate(self.joint_names)}
        src = {n: k for k, n in enumerate(self.position_names)}
        A = np.zeros((model.nv, 2))
        for r, name in enumerate(model.joint_names):
            leader, m, _ = mimic.get(name, (name, 1.0, None))  # the offset is phi's alone
            A[r, A_COL], A[r, A_MUL] = col[leader], m
        phi = np.zeros((model.nq, 3))
        for r, name in enumerate(model.position_names):
            leader, m, o = mimic.get(name, (name, 1.0, 0.0))
            phi[r, PHI_SRC], phi[r, PHI_MUL], phi[r, PHI_OFF] = src[leader], m, o
        A.setflags(write=False)
        phi.setflags(write=False)
        self.A = A
        self.phi = phi
        # Per independent velocity column, the largest |multiplier| of its rows (1 for its own):
        # |x_j| scale_j <= MAX_ABS for all j exactly when every entry of A x is (the rounding
        # of |m| |x_j| is monotone in |m|).
        scale = np.ones(len(self.joint_names))
        np.maximum.at(scale, A[:, A_COL].astype(np.int64), np.abs(A[:, A_MUL]))
        scale.setflags(write=False)
        self.scale = scale
        # (full position row, full velocity row, follower, leader, multiplier, offset)
        self.followers = tuple(
            (model.position_names.index(name), model.joint_names.index(name), name, *mimic[name])
            for name in model.joint_names
            if name in mimic
        )

    def position(self, qbar: np.ndarray) -> np.ndarray:
        """The full tree's configuration phi(qbar) (a new array)."""
        src = self.phi[:, PHI_SRC].astype(np.int64)
        return self.phi[:, PHI_MUL] * qbar[src] + self.phi[:, PHI_OFF]

    def velocity(self, vbar: np.ndarray) -> np.ndarray:
        """The full tree's velocity A vbar (a new array)."""
        return self.A[:, A_MUL] * vbar[self.A[:, A_COL].astype(np.int64)]

    def refusal(self, x, what: str, position: bool) -> str | None:
        """Why x (qbar if ``position``, else a vector of velocity rows such as qbardot or
        qbarddot) is refused for a follower: the first follower that phi(x), or A x, puts
        beyond ±MAX_ABS (or makes non-finite), named with its leader and the values, prefixed
        by ``what``; None when there is none, or when x itself is of the wrong size or out of
        range (the caller's usual message covers that)."""
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            return None
        size = len(self.position_names if position else self.joint_names)
        if x.shape != (size,) or not np.all(np.abs(x) <= MAX_ABS):
            return None
        full = self.position(x) if position else self.velocity(x)
        for iq, iv, name, leader, m, o in self.followers:
            value = float(full[iq if position else iv])
            if not abs(value) <= MAX_ABS:
                col = int(self.phi[iq, PHI_SRC] if position else self.A[iv, A_COL])
                rule = f"{float(m)!r} × {leader!r}" + (f" + {float(o)!r}" if position else "")
                return (
                    f"{what}: follower joint {name!r} = {rule} = {value!r} is beyond "
                    f"±{MAX_ABS:g} (its leader {leader!r} is {float(x[col])!r}; a follower's "
                    "coordinate is bounded like every other)"
                )
        return None

    def independent_positions(self, tree: Model, q: np.ndarray) -> np.ndarray:
        """The independent entries of a full configuration q."""
        keep = [tree.position_names.index(n) for n in self.position_names]
        return q[keep]

    def matrix(self) -> np.ndarray:
        """A as a dense (nv, nvbar) array (for tests and users; never on a call path)."""
        out = np.zeros((self.A.shape[0], len(self.joint_names)))
        out[np.arange(self.A.shape[0]), self.A[:, A_COL].astype(int)] = self.A[:, A_MUL]
        return out


@dataclass(frozen=True)
class ReducedModel(Model):
    """A model's description in the independent coordinates (``Dynamics.model``).

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


__all__ = ["CoordinateMap", "ReducedModel"]
