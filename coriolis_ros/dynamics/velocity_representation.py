"""The velocity representation of a floating base: body, mixed or inertial.

A floating base's pose is (R, p), the rotation and the origin of the base frame in the world,
and the library's own velocity of it is the body twist (Pinocchio's free flyer), linear rows
first: nu_B = (v_B, w_B) with v_B = R^T pdot and [w_B] = R^T Rdot.  Two other choices are
offered, each a change of the base's velocity coordinates nu_B = T_b(q) nu'_b (the joints'
rows unchanged):

* ``"body"``: nu'_b = (R^T pdot, w_B); T_b = 1.
* ``"mixed"``: the base origin's velocity and the angular velocity, both in world axes,
  nu'_b = (pdot, w) with w = R w_B (Pinocchio's LOCAL_WORLD_ALIGNED);
  T_b = diag(R^T, R^T).
* ``"inertial"``: the base's spatial twist in the world frame at the world origin (the
  right-trivialised velocity, Pinocchio's WORLD), nu'_b = (pdot - w x p, w);
  T_b = Ad_(R, p)^-1 = [[R^T, -R^T [p]], [0, R^T]].

In each case dT_b/dt = -K(nu_B) T_b, with K = 0 (body), K = diag([w_B], [w_B]) (mixed) or
K = ad(nu_B) = [[ [w_B], [v_B] ], [0, [w_B]]] (inertial); K is linear in nu_B,
K = sum_c E_c nu_B,c.  The transformation law of Wensing & Slotine (Theorem V.1, eq. 17) with
T = diag(T_b, 1) and Tdot = -K T gives the dynamics in nu':

    M' = T^T M T          C' = T^T C T + T^T M Tdot = T^T (C - M K) T
    Mdot' = T^T (Mdot - K^T M - M K) T = C' + C'^T
    g' = T^T g            tau' = T^T tau(q, T nu', T nudot' - K nu)
    Gamma'_ijk = T_ai T_bj T_ck (Gamma_abc - M_ad (E_c)_db)   (so C'_ij = Gamma'_ijk nu'_k)
    J' = J T              Jdot' = (Jdot - J K) T

with every K acting on the base rows only.  C' is Christoffel-consistent when C is (Mdot' =
C' + C'^T above).  Every term is computed in the body representation by the compiled kernels
(which never see the base's position: ``docs/invariance.md``) and changed at the end, so the
body and mixed representations keep that invariance; the inertial one depends on p by
definition (M' grows as |p|^2), and its input nu' fixes pdot = v' + w x p, which is summed
with error-free products (:mod:`.kernels.base_change`) so that a base far from the origin
loses no more than the float64 rounding of the inputs themselves in nu_B.

The per-call work of ``coriolis`` and ``coriolis_vectors`` (the node's tick) is compiled
(:mod:`.kernels.base_change`, no allocation); the other methods change the results with numpy.
"""

from __future__ import annotations

import math

import numpy as np

from numba import types

from .batch import RowByRowBatches, outputs
from .engine import as_vector
from .kernel_table import F1, F2, compile_frozen
from .kernels import base_change
from .kernels.base_change import INERTIAL, MIXED
from .kernels.kinematics import MAX_ABS, MIN_QUATERNION_NORM

REPRESENTATIONS = ("body", "mixed", "inertial")
DEFAULT = "body"

# Methods of Dynamics that answer in the chosen representation (bound on the instance).
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
    "integrate",
    "warmup",
    "velocity_from_body",
    "velocity_to_body",
    "coriolis_batch",
    "christoffel_batch",
    "coriolis_vectors_batch",
    "inverse_dynamics_batch",
    "slotine_li_batch",
    "gravity_batch",
    "warmup_batch",
    "frame_jacobian",
    "frame_jacobian_dot",
    "frame_jacobians",
    "frame_acceleration_bias",
    "task_space",
    "external_wrench",
    "regressor",
    "energy_regressor",
    "regressor_batch",
    "energy_regressor_batch",
)


def check(value, root_joint: str) -> str:
    """``value`` if a model with this root joint can use it; ValueError saying why not."""
    if not isinstance(value, str) or value not in REPRESENTATIONS:
        raise ValueError(
            f"velocity_representation must be one of 'body', 'mixed' or 'inertial', got {value!r}"
        )
    if value != DEFAULT and root_joint != "floating":
        raise ValueError(
            f"velocity_representation={value!r} is for a floating base (root_joint="
            f"'floating'); this model's root joint is {root_joint!r}: leave the "
            "default 'body'"
        )
    return value


def _checked(x, size: int, name: str) -> np.ndarray:
    x = as_vector(x, size, name)
    if not (np.abs(x) <= MAX_ABS).all():
        raise ValueError(f"{name} has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) entry")
    return x


def identity(nq: int, nv: int, q, v, out=None) -> np.ndarray:
    """The body representation's velocity_from_body and velocity_to_body: v, checked."""
    _checked(q, nq, "q")
    v = _checked(v, nv, "v")
    if out is None:
        return v
    (out,) = outputs(out, [(nv,)])
    out[...] = v
    return out


def _hat(w) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _generators(rep: str) -> np.ndarray:
    """E (6, 6, 6) with K(nu_B) = sum_c E[c] nu_B[c]."""
    E = np.zeros((6, 6, 6))
    for c in range(3):
        e = np.zeros(3)
        e[c] = 1.0
        if rep == "inertial":
            E[c, :3, 3:] = _hat(e)  # [v_B] in ad(nu_B)
        if rep in ("mixed", "inertial"):
            E[3 + c, :3, :3] = E[3 + c, 3:, 3:] = _hat(e)
    return E


_CODES = {"mixed": MIXED, "inertial": INERTIAL}  # the variant is never "body"
_ARGS = {
    "base_velocity": (F1, F1, types.int64, F1, F2),  # q, nu', representation, nu_B, T_b and K
    "base_coriolis": (F2, F2, F2, F2, F2),  # M, Mdot, C, T_b and K, scratch
    "base_vectors": (F1, F1, F1, F1, F2),  # C nu, C^T nu, M nu, M K nu, T_b and K
}


def _kernel(name: str):
    """The compiled kernel (on first use, or from Numba's on-disk cache)."""
    return compile_frozen(getattr(base_change, name), _ARGS[name])


class VelocityRepresentation(RowByRowBatches):
    """:class:`~.api.Dynamics`' methods in the mixed or inertial representation, over a
    Dynamics in the body representation (``inner``)."""

    def __init__(self, representation: str, inner):
        self.representation = representation
        self.inner = inner
        self.nq, self.nv = inner.nq, inner.nv
        base_q = tuple(inner.model.position_names[:7])
        if tuple(inner.tree.position_names[:7]) != base_q:
            raise ValueError(  # e.g. a closed chain whose coordinates leave the base out
                "velocity_representation needs the floating base's 7 coordinates first in q"
            )
        self._E = _generators(representation)
        self._code = _CODES[representation]
        n = self.nv
        # scratch of the compiled paths (an instance is used by one thread at a time)
        self._nu, self._tk, self._w = np.empty(n), np.empty((12, 6)), np.empty((n, 6))
        self._zero, self._y = np.zeros(n), np.zeros(n)
        self._scratch = (np.empty(n), np.empty(n), np.empty(n))
        self._mk = self._scratch[2]  # M (K nu_B), the mixed case's third vector

    # ------------------------------------------------------------------ the change of variables

    def _q(self, q) -> np.ndarray:
        q = _checked(q, self.nq, "q")
        if math.sqrt(q[3:7] @ q[3:7]) < MIN_QUATERNION_NORM:
            raise ValueError("the floating base's quaternion (q[3:7]) has (nearly) zero norm")
        return q

    def _vector(self, x, name: str) -> np.ndarray:
        return _checked(x, self.nv, name)

    def _body(self, q, x, name: str, nu=None, tk=None):
        """(q, nu_B of x, tk): x (a velocity nu', or a vector like it) with the base's body
        twist, and tk[:6] = T_b, tk[6:] = K(nu_B), by the compiled ``base_velocity``."""
        nu = np.empty(self.nv) if nu is None else nu
        tk = np.empty((12, 6)) if tk is None else tk
        kernel = _kernel("base_velocity")
        try:
            status = kernel(q, x, self._code, nu, tk)
        except TypeError:  # not float64 arrays: checked conversions
            q, x = self._q(q), self._vector(x, name)
            status = kernel(q, x, self._code, nu, tk)
        if status:
            self._q(q), self._vector(x, name)  # raise, naming the problem
            raise RuntimeError(f"internal error: base_velocity status {status}")
        return q, nu, tk

    def _pose(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R, p) of the base in the world (the root joint's frame is the world's)."""
        x, y, z, w = (q[3:7] / math.sqrt(q[3:7] @ q[3:7])).tolist()
        R = np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ]
        )
        return R, q[:3]

    def _T(self, q) -> tuple[np.ndarray, np.ndarray]:
        """(q checked, T_b) at q."""
        q = self._q(q)
        return q, self._body(q, self._zero, "v")[2][:6]

    def _Tinv(self, R: np.ndarray, p: np.ndarray) -> np.ndarray:
        T = np.zeros((6, 6))
        T[:3, :3] = T[3:, 3:] = R
        if self.representation == "inertial":
            T[:3, 3:] = _hat(p) @ R
        return T

    def _state(self, q, qd):
        """(q, T_b, nu_B, K(nu_B)) for a state (q, nu')."""
        q, nu, tk = self._body(q, qd, "qd")
        return q, tk[:6], nu, tk[6:]

    @staticmethod
    def _right(X: np.ndarray, T: np.ndarray) -> None:
        """X <- X T (T acting on the first six columns), in place."""
        X[..., :6] = X[..., :6] @ T

    @staticmethod
    def _left(X: np.ndarray, T: np.ndarray) -> None:
        """X <- T^T X (on the first six rows; a vector or a matrix), in place."""
        X[:6] = T.T @ X[:6]

    def _congruence(self, X: np.ndarray, T: np.ndarray) -> None:
        self._right(X, T)
        self._left(X, T)

    @staticmethod
    def _finite(*arrays) -> None:
        for arr in arrays:
            if not np.isfinite(arr).all():
                raise ValueError(
                    "the result is not finite (inputs too large for this velocity representation)"
                )

    def _embed(self, y6: np.ndarray) -> np.ndarray:
        y = np.zeros(self.nv)
        y[:6] = y6
        return y

    def velocity_from_body(self, q, v, out=None) -> np.ndarray:
        """nu' of the velocity v given with the base's body twist (e.g. odometry's)."""
        q = self._q(q)
        R, p = self._pose(q)
        res = self._vector(v, "v")
        res[:6] = self._Tinv(R, p) @ res[:6]
        self._finite(res)
        if out is None:
            return res
        (out,) = outputs(out, [(self.nv,)])
        out[...] = res
        return out

    def velocity_to_body(self, q, v, out=None) -> np.ndarray:
        """The velocity with the base's body twist, of nu' = v."""
        if out is not None:
            (out,) = outputs(out, [(self.nv,)])
        q = self._q(q)  # the kernel reads q[:7] only: its length is checked here
        res = self._body(q, v, "v")[1]
        if out is None:
            return res
        out[...] = res
        return out

    # ------------------------------------------------------------------ algorithms

    def coriolis(self, q, qd, out=None):
        """(M', Mdot', C'): the body representation's, changed in place (compiled)."""
        q, nu, tk = self._body(q, qd, "qd", self._nu, self._tk)
        M, Mdot, C = self.inner.coriolis(q, nu, out)
        if _kernel("base_coriolis")(M, Mdot, C, tk, self._w):
            self._finite(M, Mdot, C)
        return M, Mdot, C

    def christoffel(self, q, out=None, method: str = "algorithm2"):
        """Gamma'[i, j, k] = dC'_ij / dnu'_k."""
        q, T = self._T(q)
        G = self.inner.christoffel(q, out, method)
        M = self.inner.mass_matrix(q)
        # Gamma_abc - M_ad (E_c)_db, on b, c < 6
        G[:, :6, :6] -= np.einsum("ad,cdb->abc", M[:, :6], self._E)
        G[:6] = np.tensordot(T.T, G[:6], axes=1)  # (T^T)_ia Gamma_a..
        G[:, :6] = np.einsum("bj,abk->ajk", T, G[:, :6])
        G[:, :, :6] = G[:, :, :6] @ T
        self._finite(G)
        return G

    def coriolis_christoffel(self, q, qd, out=None):
        """(M', Mdot', C', Gamma'): :meth:`coriolis` and :meth:`christoffel`."""
        n = self.nv
        if out is None:
            out = (None, None, None, None)
        else:
            out = outputs(out, [(n, n)] * 3 + [(n, n, n)])
        M, Mdot, C = self.coriolis(q, qd, None if out[0] is None else out[:3])
        return M, Mdot, C, self.christoffel(q, out[3])

    def mass_matrix(self, q, out=None):
        q, T = self._T(q)
        M = self.inner.mass_matrix(q, out)
        self._congruence(M, T)
        self._finite(M)
        return M

    def gravity(self, q, out=None):
        q, T = self._T(q)
        g = self.inner.gravity(q, out)
        self._left(g, T)
        self._finite(g)
        return g

    def inverse_dynamics(self, q, qd, qdd, out=None):
        q, T, nu, K = self._state(q, qd)
        a = self._body(q, qdd, "qdd")[1]
        a[:6] -= K @ nu[:6]
        tau = self.inner.inverse_dynamics(q, nu, a, out)
        self._left(tau, T)
        self._finite(tau)
        return tau

    def coriolis_vectors(self, q, qd, out=None):
        """(C' nu', C'^T nu', M' nu') (compiled change)."""
        q, nu, tk = self._body(q, qd, "qd", self._nu, self._tk)
        c, ct, m = self.inner.coriolis_vectors(q, nu, out)
        mk = self._mk
        if self.representation == "mixed":  # K nu_B = (w_B x v_B, 0): C' nu' needs M K nu_B
            y = self._y
            y[:6] = tk[6:] @ nu[:6]
            self.inner.coriolis_vectors(q, y, out=self._scratch)
        else:  # K nu_B = ad(nu_B) nu_B = 0
            mk[:] = 0.0
        if _kernel("base_vectors")(c, ct, m, mk, tk):
            self._finite(c, ct, m)
        return c, ct, m

    def coriolis_times(self, q, qd, x, out=None):
        """C'(q, nu') x."""
        q, T, nu, K = self._state(q, qd)
        xb = self._body(q, x, "x")[1]
        y = self.inner.coriolis_times(q, nu, xb, out)
        y -= self.inner.coriolis_vectors(q, self._embed(K @ xb[:6]))[2]
        self._left(y, T)
        self._finite(y)
        return y

    def _reference(self, q, K, qd_ref, qdd_ref):
        r = self._body(q, qd_ref, "qd_ref")[1]
        a = self._body(q, qdd_ref, "qdd_ref")[1]
        a[:6] -= K @ r[:6]
        return r, a

    def slotine_li(self, q, qd, qd_ref, qdd_ref, out=None):
        """M' qdd_ref + C'(q, nu') qd_ref + g'."""
        q, T, nu, K = self._state(q, qd)
        r, a = self._reference(q, K, qd_ref, qdd_ref)
        tau = self.inner.slotine_li(q, nu, r, a, out)
        self._left(tau, T)
        self._finite(tau)
        return tau

    def regressor(self, q, qd, qd_ref, qdd_ref, out=None):
        q, T, nu, K = self._state(q, qd)
        r, a = self._reference(q, K, qd_ref, qdd_ref)
        Y = self.inner.regressor(q, nu, r, a, out)
        self._left(Y, T)
        self._finite(Y)
        return Y

    def energy_regressor(self, q, qd, out=None):
        q, _, nu, _ = self._state(q, qd)
        return self.inner.energy_regressor(q, nu, out)

    def integrate(self, q, v, dt: float = 1.0) -> np.ndarray:
        """q (+) v dt with v converted to the body twist at q (then as the body one)."""
        q, nu, _ = self._body(q, v, "v")
        return self.inner.integrate(q, nu, dt)

    def warmup(self) -> None:
        self.inner.warmup()
        q, v = self.inner.neutral(), np.zeros(self.nv)
        self.coriolis(q, v)  # the compiled change of variables
        self.coriolis_vectors(q, v)

    # ------------------------------------------------------------------ frames

    def frame_jacobian(self, q, frame: str, reference: str = "local_world_aligned", out=None):
        q, T = self._T(q)
        J = self.inner.frame_jacobian(q, frame, reference, out)
        self._right(J, T)
        return J

    def frame_jacobians(self, q, qd, frame: str, reference: str = "local_world_aligned",
                        out=None):  # fmt: skip
        q, T, nu, K = self._state(q, qd)
        J, Jd = self.inner.frame_jacobians(q, nu, frame, reference, out)
        Jd[:, :6] -= J[:, :6] @ K
        self._right(J, T)
        self._right(Jd, T)
        self._finite(J, Jd)
        return J, Jd

    def frame_jacobian_dot(self, q, qd, frame: str, reference: str = "local_world_aligned",
                           out=None):  # fmt: skip
        (out,) = outputs(out, [(6, self.nv)])
        out[...] = self.frame_jacobians(q, qd, frame, reference)[1]
        return out

    def frame_acceleration_bias(self, q, qd, frame: str,
                                reference: str = "local_world_aligned", out=None):  # fmt: skip
        """Jdot' nu' = Jdot nu - J K nu (the same as the body one in the inertial case)."""
        q, _, nu, K = self._state(q, qd)
        bias = self.inner.frame_acceleration_bias(q, nu, frame, reference, out)
        Knu = K @ nu[:6]
        if np.any(Knu):
            bias -= self.inner.frame_jacobian(q, frame, reference)[:, :6] @ Knu
        self._finite(bias)
        return bias

    def task_space(self, q, qd, frame: str, reference: str = "local_world_aligned", rows=None,
                   damping: float = 0.0, out=None):  # fmt: skip
        """Lambda and mu do not depend on the representation; J' and Jdot' do."""
        q, T, nu, K = self._state(q, qd)
        Lam, mu, J, Jd = self.inner.task_space(q, nu, frame, reference, rows, damping, out)
        Jd[:, :6] -= J[:, :6] @ K
        self._right(J, T)
        self._right(Jd, T)
        self._finite(J, Jd)
        return Lam, mu, J, Jd

    def external_wrench(self, q, residual, frame: str, reference: str = "local_world_aligned",
                        rows=None):  # fmt: skip
        """The wrench w with J'^T w = residual', i.e. J^T w = T^-T residual'."""
        q = self._q(q)
        R, p = self._pose(q)
        r = self._vector(residual, "residual")
        r[:6] = self._Tinv(R, p).T @ r[:6]
        return self.inner.external_wrench(q, r, frame, reference, rows)

    # ------------------------------------------------------------------ batches (row by row)

    def regressor_batch(self, Q, V, QdR, QddR, out=None):
        n, p = self.nv, 10 * len(self.inner.parameter_joints)
        args = [(Q, self.nq, "Q"), (V, n, "V"), (QdR, n, "QdR"), (QddR, n, "QddR")]
        return self._batch(self.regressor, args, [(n, p)], out)

    def energy_regressor_batch(self, Q, V, out=None):
        p = 10 * len(self.inner.parameter_joints)
        args = [(Q, self.nq, "Q"), (V, self.nv, "V")]
        return self._batch(self.energy_regressor, args, [(2, p)], out)

    def warmup_batch(self) -> None:
        self.inner.warmup_batch()
