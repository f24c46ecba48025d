"""The dynamics of a closed-chain model in its independent coordinates (spanning-tree method).

A model with ``<loop>`` elements (:mod:`.loops`), or with joints coupled to a sum of joints
(:mod:`.couplings`: a constant A whose rows have several entries), is computed on its
spanning tree by the
tree's kernels and reduced with qdot = A(q) ydot (Wensing & Slotine, Section VI-C1, with the
induced factorization of their Theorem V.1 / eq. 20):

    Mbar = A^T M A                       Cbar = A^T C A + A^T M Adot
    gbar = A^T g                         taubar = A^T tau(q, A ydot, A yddot + Adot ydot)
    Mbardot = Adot^T M A + A^T Mdot A + A^T M Adot
    Gammabar_ijk = A_ai A_bj A_ck Gamma_abc + A_ai M_ab dA_bj/dy_k

with Adot = sum_k dA/dy_k ydot_k.  Because y are coordinates of the closed mechanism,
dA_bj/dy_k = d2q_b/dy_j dy_k is symmetric in j, k, and Cbar_ij = sum_k Gammabar_ijk ydot_k.
If C is the tree's Christoffel-consistent factorization, Cbar is the closed chain's:
Mbardot = Cbar + Cbar^T.

Every call first closes the loops (Newton from the previous call's solution: continuity along
a trajectory; :meth:`ClosedChain.close_loops` sets the starting point), unless they were
closed at the same y by the last call. ``coriolis`` and ``christoffel`` are one compiled call
each (closure, A, dA/dy, the tree's terms and the reduction, over packed arrays:
:mod:`.kernels.closed_entry`); the other terms reduce the tree's with numpy.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .batch import RowByRowBatches, outputs
from .coordinates import ReducedModel
from .engine import as_vector
from .loops import LoopClosure
from .model import MF_Q, Model

# neutral()'s step (rad or m) off a dead point: the loops' independent joints move by it, one
# way then the other, when the tree's neutral assembly is a dead point; the dependent joints
# move by it when Newton cannot start from the neutral configuration.
NEUTRAL_STEP = 0.1
# Methods of Dynamics that a closed-chain model answers through this module (bound on the
# instance at construction, so the tree path pays nothing for them).
METHODS = (
    "coriolis",
    "christoffel",
    "coriolis_christoffel",
    "mass_matrix",
    "gravity",
    "inverse_dynamics",
    "coriolis_vectors",
    "coriolis_times",
    "slotine_li",
    "neutral",
    "integrate",
    "full_position",
    "full_velocity",
    "warmup",
    "coriolis_batch",
    "christoffel_batch",
    "coriolis_vectors_batch",
    "inverse_dynamics_batch",
    "slotine_li_batch",
    "gravity_batch",
    "warmup_batch",
    "frame_placement",
    "frame_jacobian",
    "frame_jacobian_dot",
    "frame_jacobians",
    "frame_acceleration_bias",
)


def spanning_tree(model: Model) -> Model:
    """The closed chain's spanning tree: the model without its loops, every joint a coordinate
    (its mimic joints and coupled joints too: the closure makes them follow)."""
    return dataclasses.replace(model, loops=(), mimic=(), couplings=(), sums=())


class _Names:
    def __init__(self, joint_names, position_names):
        self.joint_names = joint_names
        self.position_names = position_names


class ClosedChain(RowByRowBatches):
    """Closed-chain versions of :class:`~.api.Dynamics`' methods, over a tree ``Dynamics``."""

    def __init__(self, model: Model, tree_dynamics, independent_joints=None):
        # The spanning tree: every joint a coordinate, followers (mimic joints, geared rotors)
        # included; the closure makes them follow (dynamics.loops).
        tree = spanning_tree(model)
        self.tree_dynamics = tree_dynamics
        self.followers = (*model.mimic, *model.couplings)  # (name, leader, ratio, offset)
        self.sums = model.sums  # (name, ((leader, coefficient), ...), offset)
        terms = [(name, ((leader, ratio),), offset) for name, leader, ratio, offset in
                 self.followers]  # fmt: skip
        engine = tree_dynamics.engine
        self.closure = c = LoopClosure(
            tree, model.loops, independent_joints, dict(model.independent_flags),
            followers=(*terms, *model.sums), scratch=engine.ws.size,
            gamma_budget=tree_dynamics.max_christoffel_bytes,
        )  # fmt: skip
        self._christoffel_refusal = c.gamma_refusal
        names = tuple(tree.joint_names[i] for i in c.independent)
        positions = tuple(tree.position_names[i] for i in c.keep)
        self.model = ReducedModel.of(tree, _Names(names, positions))
        self.tree = tree
        self.nq, self.nv = len(positions), len(names)
        self.n = tree.nv
        # the tree's model arrays, and after the closure's arrays a workspace of the size of
        # the tree's own (:func:`.kernels.closed_entry.unpack`)
        self._mf, self._packed = engine.mf, c.packed
        self._mat = (self.nv, self.nv)
        kernels = c._k
        self._update_kernel = kernels["update"]
        self._coriolis_kernel = kernels["coriolis"]
        self._christoffel_kernel = kernels["christoffel"]
        self._both_kernel = kernels["coriolis_christoffel"]
        self._both_shapes = [self._mat] * 3 + [(self.nv,) * 3]
        c.last[:] = tree_dynamics.neutral()  # Newton's first starting point
        # which of the dependent joints (not_coordinates) are followers
        self._follows = np.isin(c.not_coordinates, c.follow[:, 0])

    # ------------------------------------------------------------------ coordinates

    def check_vector(self, x, size: int, name: str) -> np.ndarray:
        """x as a new finite float64 vector of ``size`` entries; ValueError naming ``name``."""
        arr = as_vector(x, size, name)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} has a NaN or infinite entry")
        return arr

    def _fail(self, status: int, q=None, qd=None, out=None, shapes=None) -> None:
        """Raise the ValueError of a :mod:`.kernels.closed_entry` status (q, qd: the inputs,
        out and shapes: the outputs and their shapes, which a size status names)."""
        from .kernels import closed_entry as ce
        from .kernels.kinematics import BAD_Q, BAD_QD, MAX_ABS, OVERLAP, SIZE_OUT, SIZE_Q, SIZE_QD

        names = ("q", "qd")
        if status == SIZE_Q:
            self.check_vector(q, self.nq, "q")
        if status == SIZE_QD:
            self.check_vector(qd, self.nv, "qd")
        if status in (BAD_Q, BAD_QD):
            raise ValueError(
                f"{names[status - BAD_Q]} has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) "
                "entry"
            )
        if status == SIZE_OUT:
            self._out(out, shapes)  # names the array
            raise ValueError("out arrays have the wrong shape")
        if status == OVERLAP:
            raise ValueError("out arrays must not share memory")
        if ce.CLOSURE < status < ce.NOT_FINITE_OUT:  # the closure's outcomes
            self.closure.fail(status)
        if status == ce.NOT_FINITE_OUT:
            self._finite(np.array([np.nan]))
        if status == ce.NO_GAMMA:  # christoffel refuses before the kernel runs
            raise ValueError(self._christoffel_refusal or "no room for Gamma")
        if status == ce.TREE + BAD_QD:  # qd in range, A(q) qd not: the tree's kernel refused
            self._tree_rates(self._state(q)[1] @ qd, "qd", "A(q) qd")
        raise RuntimeError(f"internal error: closed-chain kernel status {status}")

    def _state(self, q):
        """(closed tree configuration, A, dA) at the independent configuration q, views of
        the workspace; the loops are closed only if q differs from the last call's."""
        c = self.closure
        try:
            status = self._update_kernel(c.ci, c.cf, c.cw, q)
        except TypeError:
            status = self._update_kernel(c.ci, c.cf, c.cw, self.check_vector(q, self.nq, "q"))
        if status:
            self._fail(status, q)
        return c.last, c.A, c.dA

    def close_loops(self, y, guess=None, dependent=None) -> np.ndarray:
        """The tree configuration (every tree joint, dependent ones included) that closes every
        loop at the independent configuration ``y``, by Newton from ``guess`` (a tree
        configuration), or from the last solution with the :attr:`dependent_joints` at the
        positions ``dependent`` (what a joint state brought; the entries of the
        :attr:`follower_joints` are not used, and may be NaN: they follow their leaders after
        the closure); default: continuation from the last solution. Later calls start from
        the result."""
        y = self.check_vector(y, self.nq, "y")
        c = self.closure
        if guess is not None and dependent is not None:
            raise ValueError("give guess or dependent, not both")
        if guess is not None:
            full = self.check_vector(guess, self.tree.nq, "guess")
        else:
            full = c.last.copy()
            if dependent is not None:
                values = as_vector(dependent, c.dependent_q.size, "dependent")
                used = ~self._follows
                if not np.all(np.isfinite(values[used])):
                    raise ValueError("dependent has a NaN or infinite entry (not a follower's)")
                full[c.dependent_q[used]] = values[used]
        full[c.keep] = y
        return c.close(full, continuation=guess is None and dependent is None).copy()

    def full_position(self, q) -> np.ndarray:
        """The closed tree configuration at the independent configuration q."""
        return self._state(q)[0].copy()

    def full_velocity(self, v, q=None) -> np.ndarray:
        """A(q) v, at q (default: the last configuration computed)."""
        v = self.check_vector(v, self.nv, "qd")
        if q is None:
            q = self.closure.last[self.closure.keep]
        return self._state(q)[1] @ v

    @property
    def dependent_joints(self) -> tuple[str, ...]:
        """Every tree joint that is not a coordinate: the loops' dependent joints and the
        joints that follow a leader (mimic joints, geared rotors), in tree order."""
        return tuple(self.tree.joint_names[i] for i in self.closure.not_coordinates)

    @property
    def follower_joints(self) -> tuple[str, ...]:
        """Those of :attr:`dependent_joints` that follow a leader at a constant ratio (mimic
        joints, geared rotors): the closure does not move them, their leaders do."""
        return tuple(n for n, f in zip(self.dependent_joints, self._follows, strict=True) if f)

    def dependent_positions(self) -> np.ndarray:
        """The dependent joints' positions in the last closed configuration (a new array)."""
        return self.closure.last[self.closure.dependent_q]

    def velocity_map(self, q):
        """(A, dA/dy) at q: qdot_tree = A ydot, dA[:, j, k] = dA[:, j]/dy_k."""
        _, A, dA = self._state(q)
        return A.copy(), dA.copy()

    def neutral(self) -> np.ndarray:
        """The assembly nearest the tree's neutral configuration, in independent coordinates.

        Newton starts from the tree's neutral configuration.  Where that fails (the guess
        itself a dead point of the dependent joints, every link of a chain in a line, so
        Newton cannot move along it) it starts again with the dependent joints moved by
        NEUTRAL_STEP.  Where the assembly found is a dead point (A not defined), the loops'
        independent joints move by NEUTRAL_STEP, then by -NEUTRAL_STEP.  If nothing closes,
        the error is that of Newton from the tree's neutral configuration."""
        c = self.closure
        base = self.tree_dynamics.neutral()
        qi = c.tree.mf[:, MF_Q].astype(np.int64)
        lead, dependent = qi[c.lead_rows], qi[c.dependent]
        for offset in (0.0, NEUTRAL_STEP, -NEUTRAL_STEP):
            for nudge in (0.0, NEUTRAL_STEP):
                q = base.copy()
                q[lead] += offset
                q[dependent] += nudge
                status = c.try_close(q, continuation=False)
                if status == 0:
                    return c.last[c.keep].copy()
                if c.singular(status):
                    break  # closed, at a dead point: move the independent joints
        c.fail(c.try_close(base, continuation=False))
        raise AssertionError("unreachable: fail raises")

    def integrate(self, q, v, dt: float = 1.0) -> np.ndarray:
        full, A, _ = self._state(q)
        dt = float(dt)
        if not np.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt}")
        v = self.check_vector(v, self.nv, "v")
        moved = self.tree_dynamics.integrate(full, A @ v, dt)
        return moved[self.closure.keep]

    # ------------------------------------------------------------------ outputs

    @staticmethod
    def _out(out, shapes):
        return outputs(out, shapes)

    @staticmethod
    def _finite(*arrays) -> None:
        for arr in arrays:
            if not np.all(np.isfinite(arr)):
                raise ValueError("the result is not finite (inputs too large for this model)")

    def _rates(self, q, qd):
        full, A, dA = self._state(q)
        qd = self.check_vector(qd, self.nv, "qd")
        self._tree_rates(A @ qd, "qd", "A(q) qd")
        return full, A, dA, qd, dA @ qd

    def _tree_rates(self, x, name: str, what: str):
        """x, the tree's rates from ``name``; ValueError naming the tree joint where ``what``
        is beyond the kernels' bound (the dependent joints of a mechanism near a dead point
        move many times faster than its coordinates)."""
        from .kernels.kinematics import MAX_ABS

        big = np.abs(x)
        if np.all(big <= MAX_ABS):
            return x
        i = int(np.argmax(np.where(np.isnan(big), np.inf, big)))
        raise ValueError(
            f"{what} (from {name}) moves tree joint '{self.tree.joint_names[i]}' at "
            f"{x[i]:.3g}, beyond ±{MAX_ABS:g}: too large for this closed chain"
        )

    # ------------------------------------------------------------------ algorithms

    def coriolis(self, q, qd, out=None):
        """(Mbar, Mbardot, Cbar) at (q, qd) in the independent coordinates: one compiled call
        (:func:`.kernels.closed_entry.closed_coriolis`)."""
        if out is None:
            out = (np.empty(self._mat), np.empty(self._mat), np.empty(self._mat))
        try:
            a, b, d = out
            status = self._coriolis_kernel(self._mf, self._packed, q, qd, a, b, d)
        except (TypeError, ValueError):
            out = self._out(out, [self._mat] * 3)
            q, qd = self.check_vector(q, self.nq, "q"), self.check_vector(qd, self.nv, "qd")
            status = self._coriolis_kernel(self._mf, self._packed, q, qd, *out)
        if status:
            self._fail(status, q, qd, out, [self._mat] * 3)
        return out

    def christoffel(self, q, out=None, method: str = "algorithm2"):
        """Gammabar (n, n, n): Gammabar[i, j, k] = dCbar_ij/dydot_k, with the dA/dy terms: one
        compiled call (:func:`.kernels.closed_entry.closed_christoffel`).  ``method="safeea"``
        computes the tree's Gamma by Safeea's recursion (serial chains) instead."""
        if self._christoffel_refusal:
            raise ValueError(self._christoffel_refusal)
        n = self.nv
        if out is None:
            out = np.empty((n, n, n))
        if method != "algorithm2":
            (out,) = self._out(out, [(n, n, n)])
            full, A, dA = self._state(q)
            G = self.tree_dynamics.christoffel(full, method=method)
            M = self.tree_dynamics.mass_matrix(full)
            out[...] = np.einsum("ai,bj,ck,abc->ijk", A, A, A, G, optimize=True)
            out += np.einsum("ai,ab,bjk->ijk", A, M, dA, optimize=True)
            self._finite(out)
            return out
        try:
            status = self._christoffel_kernel(self._mf, self._packed, q, out)
        except (TypeError, ValueError):
            (out,) = self._out(out, [(n, n, n)])
            q = self.check_vector(q, self.nq, "q")
            status = self._christoffel_kernel(self._mf, self._packed, q, out)
        if status:
            self._fail(status, q, None, (out,), [(n, n, n)])
        return out

    def coriolis_christoffel(self, q, qd, out=None):
        """(Mbar, Mbardot, Cbar, Gammabar) at (q, qd), the loops closed once, Cbar from
        Gammabar: one compiled call (:func:`.kernels.closed_entry.closed_coriolis_christoffel`,
        which refuses, NO_GAMMA, before the closure when Gamma is over the memory budget)."""
        if out is None:
            out = tuple(np.empty(shape) for shape in self._both_shapes)
        try:
            a, b, d, e = out
            status = self._both_kernel(self._mf, self._packed, q, qd, a, b, d, e)
        except (TypeError, ValueError):
            out = self._out(out, self._both_shapes)
            q, qd = self.check_vector(q, self.nq, "q"), self.check_vector(qd, self.nv, "qd")
            status = self._both_kernel(self._mf, self._packed, q, qd, *out)
        if status:
            self._fail(status, q, qd, out, self._both_shapes)
        return out

    def mass_matrix(self, q, out=None):
        (out,) = self._out(out, [(self.nv, self.nv)])
        full, A, _ = self._state(q)
        out[...] = A.T @ self.tree_dynamics.mass_matrix(full) @ A
        self._finite(out)
        return out

    def gravity(self, q, out=None):
        (out,) = self._out(out, [(self.nv,)])
        full, A, _ = self._state(q)
        out[...] = A.T @ self.tree_dynamics.gravity(full)
        self._finite(out)
        return out

    def inverse_dynamics(self, q, qd, qdd, out=None):
        (out,) = self._out(out, [(self.nv,)])
        full, A, _, qd, Adot = self._rates(q, qd)
        qdd = self.check_vector(qdd, self.nv, "qdd")
        acc = self._tree_rates(A @ qdd + Adot @ qd, "qd and qdd", "A(q) qdd + Adot qd")
        out[...] = A.T @ self.tree_dynamics.inverse_dynamics(full, A @ qd, acc)
        self._finite(out)
        return out

    def coriolis_vectors(self, q, qd, out=None):
        """(Cbar qd, Cbar^T qd, Mbar qd)."""
        out = self._out(out, [(self.nv,)] * 3)
        full, A, _, qd, Adot = self._rates(q, qd)
        v = A @ qd
        c, ct, p = self.tree_dynamics.coriolis_vectors(full, v)
        Mw = self.tree_dynamics.mass_matrix(full) @ (Adot @ qd)
        out[0][...] = A.T @ (c + Mw)
        out[1][...] = A.T @ ct + Adot.T @ p
        out[2][...] = A.T @ p
        self._finite(*out)
        return out

    def coriolis_times(self, q, qd, x, out=None):
        """Cbar(q, qd) x = A^T (C A x + M Adot x)."""
        (out,) = self._out(out, [(self.nv,)])
        full, A, _, qd, Adot = self._rates(q, qd)
        x = self.check_vector(x, self.nv, "x")
        cx = self.tree_dynamics.coriolis_times(full, A @ qd, self._tree_rates(A @ x, "x", "A(q) x"))
        out[...] = A.T @ (cx + self.tree_dynamics.mass_matrix(full) @ (Adot @ x))
        self._finite(out)
        return out

    def slotine_li(self, q, qd, qd_ref, qdd_ref, out=None):
        """Mbar qdd_ref + Cbar(q, qd) qd_ref + gbar."""
        (out,) = self._out(out, [(self.nv,)])
        full, A, _, qd, Adot = self._rates(q, qd)
        qd_ref = self.check_vector(qd_ref, self.nv, "qd_ref")
        qdd_ref = self.check_vector(qdd_ref, self.nv, "qdd_ref")
        v_ref = self._tree_rates(A @ qd_ref, "qd_ref", "A(q) qd_ref")
        a_ref = self._tree_rates(
            A @ qdd_ref + Adot @ qd_ref, "qd_ref and qdd_ref", "A(q) qdd_ref + Adot qd_ref"
        )
        tau = self.tree_dynamics.slotine_li(full, A @ qd, v_ref, a_ref)
        out[...] = A.T @ tau
        self._finite(out)
        return out

    def warmup(self) -> None:
        self.tree_dynamics.warmup()

    # ------------------------------------------------------------------ frames
    #
    # The tree's frame terms at the closed configuration, in the independent coordinates:
    # J = J_tree A, Jdot = Jdot_tree A + J_tree Adot, Jdot ydot = (Jdot_tree qd + J_tree Adot ydot).

    def frame_placement(self, q, frame: str, out=None):
        full, _, _ = self._state(q)
        return self.tree_dynamics.frame_placement(full, frame, out)

    def frame_jacobian(self, q, frame: str, reference: str = "local_world_aligned", out=None):
        (out,) = self._out(out, [(6, self.nv)])
        full, A, _ = self._state(q)
        out[...] = self.tree_dynamics.frame_jacobian(full, frame, reference) @ A
        return out

    def frame_jacobians(self, q, qd, frame: str, reference: str = "local_world_aligned",
                        out=None):  # fmt: skip
        out = self._out(out, [(6, self.nv)] * 2)
        full, A, _, qd, Adot = self._rates(q, qd)
        J, Jd = self.tree_dynamics.frame_jacobians(full, A @ qd, frame, reference)
        out[0][...] = J @ A
        out[1][...] = Jd @ A + J @ Adot
        self._finite(*out)
        return out

    def frame_jacobian_dot(self, q, qd, frame: str, reference: str = "local_world_aligned",
                           out=None):  # fmt: skip
        (out,) = self._out(out, [(6, self.nv)])
        out[...] = self.frame_jacobians(q, qd, frame, reference)[1]
        return out

    def frame_acceleration_bias(self, q, qd, frame: str,
                                reference: str = "local_world_aligned", out=None):  # fmt: skip
        (out,) = self._out(out, [(6,)])
        full, A, _, qd, Adot = self._rates(q, qd)
        bias = self.tree_dynamics.frame_acceleration_bias(full, A @ qd, frame, reference)
        J = self.tree_dynamics.frame_jacobian(full, frame, reference)
        out[...] = bias + J @ (Adot @ qd)
        self._finite(out)
        return out

    # ------------------------------------------------------------------ batches

    def warmup_batch(self) -> None:
        self.tree_dynamics.warmup_batch()
