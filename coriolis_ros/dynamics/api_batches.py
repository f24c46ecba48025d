"""Batches: the :class:`~.api.Dynamics` methods over many states per call."""

from __future__ import annotations

import numpy as np

from . import batch as _batch
from . import budgets as _budgets


class BatchMethods:
    """Many states per call (a part of :class:`~.api.Dynamics`)."""

    # ------------------------------------------------------------------ batches
    #
    # Many states per call: row t of every result equals the single-state call on row t,
    # bitwise.  Configurations are rows of Q (T, nq), velocities and accelerations rows of
    # V and A (T, nv).  See coriolis_ros.dynamics.batch for threads, workspaces and errors.

    def coriolis_batch(self, Q, V, out=None):
        """(M, Mdot, C), each (T, n, n): :meth:`coriolis` on every row of Q (T, nq), V (T, nv)."""
        Q = _batch.rows(Q, "Q", _batch.q_width(self.engine))
        V = _batch.rows(V, "V", self.nv)
        T, n = _batch.same_rows({"Q": Q, "V": V}), self.nv
        out = _batch.outputs(out, [(T, n, n)] * 3)
        wss, threads = _batch.workspaces(self.engine)
        if self.engine.coupled:  # one state at a time through the coupled kernel
            args = [self._mf, Q, V, wss, threads, *out]
            _batch.launch(self.engine, "coriolis", args, ("Q", "V"), (Q, V))
            return out
        # four states per pass (kernels.lanes), each lane bitwise the single-state call
        args = [self._mf, Q, V, wss, *_batch.lane_buffers(self.engine), threads, *out]
        _batch.launch(self.engine, "coriolis_lanes", args, ("Q", "V"), (Q, V))
        return out

    def christoffel_batch(self, Q, out=None):
        """Gamma (T, n, n, n): :meth:`christoffel` on every row of Q (T, nq)."""
        Q = _batch.rows(Q, "Q", _batch.q_width(self.engine))
        T, n = Q.shape[0], self.nv
        size = _budgets.christoffel_bytes(n, self._tree_nv, T)
        refusal = _budgets.christoffel_refusal(size, self.max_christoffel_bytes, f"{T} x Gamma")
        if refusal:
            raise ValueError(refusal)
        (out,) = _batch.outputs(out, [(T, n, n, n)])
        args = [self._mf, Q, *_batch.workspaces(self.engine), out]
        _batch.launch(self.engine, "christoffel", args, ("Q",), (Q,))
        return out

    def coriolis_vectors_batch(self, Q, V, out=None):
        """(C qd, C^T qd, M qd), each (T, n): :meth:`coriolis_vectors` on every row."""
        Q = _batch.rows(Q, "Q", _batch.q_width(self.engine))
        V = _batch.rows(V, "V", self.nv)
        T, n = _batch.same_rows({"Q": Q, "V": V}), self.nv
        out = _batch.outputs(out, [(T, n)] * 3)
        args = [self._mf, Q, V, *_batch.workspaces(self.engine), *out]
        _batch.launch(self.engine, "coriolis_vectors", args, ("Q", "V"), (Q, V))
        return out

    def inverse_dynamics_batch(self, Q, V, A, out=None):
        """tau (T, n): :meth:`inverse_dynamics` on every row of Q (T, nq), V and A (T, nv)."""
        Q = _batch.rows(Q, "Q", _batch.q_width(self.engine))
        V = _batch.rows(V, "V", self.nv)
        A = _batch.rows(A, "A", self.nv)
        T, n = _batch.same_rows({"Q": Q, "V": V, "A": A}), self.nv
        (out,) = _batch.outputs(out, [(T, n)])
        args = [self._mf, self._gravity, Q, V, A, *_batch.workspaces(self.engine), out]
        _batch.launch(self.engine, "inverse_dynamics", args, ("Q", "V", "A"), (Q, V, A))
        return out

    def slotine_li_batch(self, Q, V, QdR, QddR, out=None):
        """tau (T, n): :meth:`slotine_li` on every row of Q (T, nq), V, QdR and QddR (T, nv)."""
        Q = _batch.rows(Q, "Q", _batch.q_width(self.engine))
        V = _batch.rows(V, "V", self.nv)
        QdR = _batch.rows(QdR, "QdR", self.nv)
        QddR = _batch.rows(QddR, "QddR", self.nv)
        T, n = _batch.same_rows({"Q": Q, "V": V, "QdR": QdR, "QddR": QddR}), self.nv
        (out,) = _batch.outputs(out, [(T, n)])
        args = [self._mf, self._gravity, Q, V, QdR, QddR, *_batch.workspaces(self.engine), out]
        names = ("Q", "V", "QdR", "QddR")
        _batch.launch(self.engine, "slotine_li", args, names, (Q, V, QdR, QddR))
        return out

    def gravity_batch(self, Q, out=None):
        """g (T, n): :meth:`gravity` on every row of Q (T, nq)."""
        Q = _batch.rows(Q, "Q", _batch.q_width(self.engine))
        T, n = Q.shape[0], self.nv
        (out,) = _batch.outputs(out, [(T, n)])
        args = [self._mf, self._gravity, Q, *_batch.workspaces(self.engine), out]
        _batch.launch(self.engine, "gravity", args, ("Q",), (Q,))
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
