"""Inertial parameters and regressors: the :class:`~.api.Dynamics` methods about pi."""

from __future__ import annotations

import numpy as np

from . import batch as _batch
from . import parameters as _parameters

# the input names of the Slotine-Li torque and regressor, for error messages
SLOTINE_LI_INPUTS = ("q", "qd", "qd_ref", "qdd_ref")


class ParameterMethods:
    """Read and change the inertial parameters; the Slotine-Li and energy regressors
    (a part of :class:`~.api.Dynamics`)."""

    # ------------------------------------------------------------------ inertial parameters

    @property
    def parameter_links(self) -> tuple[str, ...]:
        """The URDF link of each body of :meth:`inertial_parameters`, in order.

        One body per moving joint of the tree the kernels run on, in its order
        (:attr:`tree_joint_names`; a floating base's six rows are one body, the first): for
        a plain tree that is one body per joint of :attr:`joint_names`; with mimic joints or
        rotors (:attr:`coupled_joints`) the joints that follow carry bodies too, so there
        are more bodies than independent joints.  Links welded by fixed joints are merged
        into their body, links welded to the world are not bodies (as in Pinocchio).
        """
        return _parameters.body_links(self.tree)

    @property
    def parameter_joints(self) -> tuple[str, ...]:
        """The joint of each body of :meth:`inertial_parameters` (``root_joint`` for a
        floating or planar base)."""
        return _parameters.body_joints(self.tree)

    def inertial_parameters(self) -> np.ndarray:
        """pi, ten per body (:attr:`parameter_links`), as Pinocchio orders them:
        m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz, with c the centre of mass
        and I the rotational inertia about the origin of the body's link frame, in that frame
        (a new array; see :mod:`coriolis_ros.dynamics.parameters`)."""
        return _parameters.read(self.engine.mf_store, self.engine.link_rotations, self.tree)

    def set_inertial_parameters(self, pi, check_physical: bool = True) -> None:
        """Change every body's inertial parameters in place (no rebuild, no recompilation):
        every method, batches included, uses them from the next call on, and so does every
        later :meth:`clone` (a clone or an observer made before keeps the values it copied).

        ``ValueError``, naming the body's link, and nothing changed: wrong size, a NaN,
        infinite or huge (beyond ±1e50) entry, a body that is not physically consistent
        (its pseudo-inertia [[tr(I)/2 - I, m c], [m c^T, m]] is not positive definite;
        an all-zero, massless body is accepted) unless ``check_physical=False``, and,
        always, a body the model cannot store (zero mass with a nonzero m c).
        """
        _parameters.write(self.engine, pi, check_physical)

    def regressor(self, q, qd, qd_ref, qdd_ref, out=None):
        """Y (nv, 10 bodies) with Y pi = M qdd_ref + C(q, qd) qd_ref + g for the C of
        :meth:`coriolis` (the Slotine-Li regressor), pi = :meth:`inertial_parameters`.
        With qd_ref = qd it is the inverse-dynamics regressor (Pinocchio's
        ``computeJointTorqueRegressor``).  Computed by one recursive sweep
        (:mod:`.kernels.regressor`), O(N d)."""
        self._tree_only("regressor")
        self.engine.check_expanded(qdd_ref, "qdd_ref")  # the coupled kernel expands it unchecked
        if out is None:
            out = np.empty((self.nv, 10 * len(self.parameter_joints)))
        k, E = self._k.regressor, self.engine.link_rotations
        try:
            status = k(self._mf, E, self._gravity, q, qd, qd_ref, qdd_ref, self._ws, out)
        except TypeError:
            args = [self._mf, E, self._gravity, q, qd, qd_ref, qdd_ref, self._ws, out]
            status = self._retry(k, args, (3, 4, 5, 6), (out,), SLOTINE_LI_INPUTS)
        if status:
            self._fail(status, (q, qd, qd_ref, qdd_ref), (out,), SLOTINE_LI_INPUTS)
        return out

    def energy_regressor(self, q, qd, out=None):
        """(2, 10 bodies): row 0 . pi = the kinetic energy 1/2 qd^T M qd, row 1 . pi = the
        potential energy -g^T sum_k m_k c_k (zero with every centre of mass at the world
        origin), both linear in pi (:meth:`inertial_parameters`)."""
        self._tree_only("energy_regressor")
        self.engine.check_expanded(qd, "qd")  # the coupled kernel expands it unchecked
        if out is None:
            out = np.empty((2, 10 * len(self.parameter_joints)))
        k, E = self._k.energy_regressor, self.engine.link_rotations
        try:
            status = k(self._mf, E, self._gravity, q, qd, self._ws, out)
        except TypeError:
            args = [self._mf, E, self._gravity, q, qd, self._ws, out]
            status = self._retry(k, args, (3, 4), (out,))
        if status:
            self._fail(status, (q, qd), (out,))
        return out

    def regressor_batch(self, Q, V, QdR, QddR, out=None):
        """Y (T, n, 10 bodies): :meth:`regressor` on every row of Q (T, nq), V, QdR and QddR
        (T, nv); row t equals the single-state call, bitwise (see :meth:`coriolis_batch`)."""
        self._tree_only("regressor_batch")
        Q = _batch.rows(Q, "Q", _batch.q_width(self.engine))
        V = _batch.rows(V, "V", self.nv)
        QdR = _batch.rows(QdR, "QdR", self.nv)
        QddR = _batch.rows(QddR, "QddR", self.nv)
        T = _batch.same_rows({"Q": Q, "V": V, "QdR": QdR, "QddR": QddR})
        self.engine.check_expanded(QddR, "QddR")  # as in regressor
        (out,) = _batch.outputs(out, [(T, self.nv, 10 * len(self.parameter_joints))])
        E = self.engine.link_rotations
        args = [self._mf, E, self._gravity, Q, V, QdR, QddR, *_batch.workspaces(self.engine), out]
        names = ("Q", "V", "QdR", "QddR")
        _batch.launch(self.engine, "regressor", args, names, (Q, V, QdR, QddR))
        return out

    def energy_regressor_batch(self, Q, V, out=None):
        """(T, 2, 10 bodies): :meth:`energy_regressor` on every row of Q (T, nq) and V (T, nv)."""
        self._tree_only("energy_regressor_batch")
        Q = _batch.rows(Q, "Q", _batch.q_width(self.engine))
        V = _batch.rows(V, "V", self.nv)
        T = _batch.same_rows({"Q": Q, "V": V})
        self.engine.check_expanded(V, "V")  # as in energy_regressor
        (out,) = _batch.outputs(out, [(T, 2, 10 * len(self.parameter_joints))])
        E = self.engine.link_rotations
        args = [self._mf, E, self._gravity, Q, V, *_batch.workspaces(self.engine), out]
        _batch.launch(self.engine, "energy_regressor", args, ("Q", "V"), (Q, V))
        return out

    def _tree_only(self, method: str) -> None:
        if self.closed is not None and not self.loops:
            raise ValueError(
                f"{method} is not available yet for a model with a joint coupled to a sum of "
                f"joints ({', '.join(self.summed_joints)}: computed as a closed chain; "
                "docs/rotors.md)"
            )
        if self.closed is not None:
            raise ValueError(
                f"{method} is not available for a model with closed loops yet (its coordinates "
                "are not a constant map of the tree's; docs/loops.md)"
            )
