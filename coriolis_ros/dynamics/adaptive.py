"""Slotine-Li adaptive control with physically consistent parameter estimates.

    from coriolis_ros.dynamics import AdaptiveController, Dynamics
    ctrl = AdaptiveController(dyn, dt=1e-3, lam=10.0, kd=20.0, gain=0.5, pi0=pi_guess)
    tau = ctrl.track(q, qd, q_des, qd_des, qdd_des)    # one tick: torque, then pi^ updated
    tau = ctrl.step(q, qd, qd_ref, qdd_ref)            # the same with your own references
    ctrl.parameters                                    # pi^, ten per body (Dynamics' order)

ROS-free, like :class:`~coriolis_ros.dynamics.MomentumObserver`: a controller node calls
:meth:`AdaptiveController.track` (or :meth:`~AdaptiveController.step`) once per tick.  The
control law, the adaptation law and the projection are in :mod:`.kernels.adaptive`; the
regressor is :meth:`Dynamics.regressor` (Y pi = M qdd_r + C qd_r + g with the
Christoffel-consistent C, which is what makes d/dt(1/2 s^T M s) = s^T (M sdot + C s) hold).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from . import parameters as _parameters
from .api import Dynamics
from .errors import plain
from .kernels.adaptive import BAD_RESULT, BAD_SIZES, SIZE_Q_DES, SIZE_STATE, WORK_SIZE
from .kernels.kinematics import MAX_ABS

_REFERENCE_NAMES = ("q_des", "qd_des", "qdd_des")


class AdaptiveController:
    """Slotine & Li's adaptive controller (IJRR 1987), one explicit step per tick:

        qd_r = qd_d - Lambda (q - q_d),   qdd_r = qdd_d - Lambda (qd - qd_d),   s = qd - qd_r,
        tau  = Y(q, qd, qd_r, qdd_r) pi^ - K_D s,
        pi^ <- Proj(pi^ - dt P Y^T s).

    With the true parameters pi and pi~ = pi^ - pi, the continuous-time closed loop has
    V = 1/2 s^T M s + 1/2 pi~^T P^-1 pi~ and dV/dt = -s^T K_D s <= 0 (Mdot - 2 C skew).

    **The gain P** is block-diagonal, one 10 x 10 block per body, P_k = gain_k G_k^-1, where
    pi_k^T G_k pi_k = ||J_l(pi_k)||_F^2, J_l = D J D the body's pseudo-inertia
    J = [[1/2 tr(I) 1 - I, h], [h^T, m]] scaled by D = diag(1/l_k, 1/l_k, 1/l_k, 1)
    (``length_scales``, metres; default the radius of gyration sqrt(tr(I) / 2m) of
    ``pi0`` about the link origin).  So the parameter term of V is
    sum_k ||J_l(pi~_k)||_F^2 / (2 gain_k): masses, first moments / l and second moments / l^2
    weighted alike.  ``gain`` (kg^-1 ... see docs/adaptive.md) is one number or one per body; a
    body with gain 0 is not adapted (and not in V).

    **Projection** (Wensing, Kim and Slotine, "Linear matrix inequalities for physically
    consistent inertial parameter identification", RA-L 2017): after each step every adapted
    body whose J_l is not >= ``margin`` 1 is replaced by the nearest one in the metric P^-1,
    which for this P is J_l with its eigenvalues clipped at ``margin`` (kg).  The set is
    convex and contains the true parameters when their J_l >= margin 1, so the projection
    never increases pi~^T P^-1 pi~: V keeps decreasing.  ``margin < 0`` turns it off.

    **Arguments**: ``dt`` the tick (s); ``lam`` (1/s) and ``kd`` positive, one number or one
    per joint (diagonal Lambda and K_D); ``pi0`` the initial estimate (default: the
    model's), physically consistent.  ValueError for anything else.

    **Per tick** nothing is allocated: the returned torque is the same array every tick
    (copy it to keep it).  The controller owns a :meth:`Dynamics.clone`, so it may run in
    another thread than ``dyn``.  Closed-chain models are refused (no regressor).
    """

    def __init__(
        self,
        dyn: Dynamics,
        dt: float,
        lam,
        kd,
        gain,
        pi0=None,
        length_scales=None,
        margin: float = 1e-9,
    ):
        if not isinstance(dyn, Dynamics):
            raise TypeError(f"dyn must be a Dynamics, got {type(dyn).__name__}")
        if dyn.closed is not None:
            raise ValueError("AdaptiveController needs a regressor: not for closed-loop models")
        self._dyn = dyn.clone()
        n = dyn.nv
        links = dyn.parameter_links
        nb = len(links)
        self._links = links
        self.dt = _positive(dt, "dt")
        self._lam = _per(lam, n, "lam", positive=True)
        self._kd = _per(kd, n, "kd", positive=True)
        self._gains = _per(gain, nb, "gain", positive=False)
        self.margin = _finite(margin, "margin")
        pi = dyn.inertial_parameters() if pi0 is None else _vector(pi0, 10 * nb, "pi0")
        for b in range(nb):  # refused by name, as set_inertial_parameters refuses
            body = pi[10 * b : 10 * b + 10]
            if (
                self._gains[b] > 0
                and not np.linalg.eigvalsh(_parameters.pseudo_inertia(body))[0] > 0
            ):
                zero = " (its mass is 0: a massless rotor or link)"
                why = "" if body[0] > 0 else zero if body[0] == 0 else " (its mass is negative)"
                raise ValueError(
                    f"pi0 of body {b} (link '{links[b]}') is not physically consistent{why}: "
                    "its pseudo-inertia is not positive definite; give it a gain of 0 to keep "
                    "its parameters fixed"
                )
        if length_scales is None:
            scales = np.array([_radius(pi[10 * b : 10 * b + 10]) for b in range(nb)])
        else:
            scales = _per(length_scales, nb, "length_scales", positive=True)
        self._scales = scales
        self._blocks = np.array([np.linalg.inv(_metric(s)) for s in scales])  # G_k^-1
        self._metric = np.array([_metric(s) for s in scales])  # G_k
        self._pi = np.ascontiguousarray(pi, dtype=np.float64)
        self._pi0 = self._pi.copy()
        # buffers: Y, qd_r, qdd_r, s, tau, the next pi, the kernel's scratch
        self._Y = np.zeros((n, 10 * nb))
        self._qd_r, self._qdd_r, self._s, self._tau = (np.zeros(n) for _ in range(4))
        self._pi_next = np.zeros(10 * nb)
        self._work = np.zeros(WORK_SIZE)
        self._moved = 0
        self._vector_space = dyn.nq == dyn.nv and not (
            {"floating", "planar"} & set(dyn.model.joint_types)
        )
        self._reference, self._update = _kernels()
        self._project_all()
        zero = np.zeros(n)  # load (or compile) the regressor now, not on the first tick
        self._dyn.regressor(dyn.neutral(), zero, zero, zero, out=self._Y)

    # ------------------------------------------------------------------ per tick

    def track(self, q, qd, q_des, qd_des, qdd_des) -> np.ndarray:
        """One tick towards the desired trajectory (q_d, qd_d, qdd_d) at this state: the
        torque, after which pi^ has moved by one step.  For models whose configuration is a
        vector (no floating or planar joint); otherwise build qd_r, qdd_r on the manifold and
        call :meth:`step`."""
        if not self._vector_space:
            raise ValueError(
                "track() needs q - q_des to be a tangent vector: this model has a floating or "
                "planar joint; compute qd_ref and qdd_ref yourself and call step()"
            )
        args = [q, qd, q_des, qd_des, qdd_des, self._lam, self._qd_r, self._qdd_r]
        try:
            status = self._reference(*args)
        except TypeError:
            engine = self._dyn.engine
            for i, name in enumerate(("q", "qd", "qd", "qd", "qd")):
                args[i] = engine.coerce(args[i], name)
            status = self._reference(*args)
            q, qd = args[0], args[1]
        if status:
            self._refuse_reference(status, args)
        return self.step(q, qd, self._qd_r, self._qdd_r)

    def _refuse_reference(self, status: int, args: list) -> None:
        n = self._dyn.nv
        if status == SIZE_STATE:  # q or qd: the regressor's own messages
            self._dyn.regressor(args[0], args[1], np.zeros(n), np.zeros(n), out=self._Y)
        if status >= SIZE_Q_DES:
            which = status - SIZE_Q_DES
            got = np.shape(args[2 + which])
            raise ValueError(f"{_REFERENCE_NAMES[which]} must have shape ({n},), got {got}")
        raise ValueError(
            f"{_REFERENCE_NAMES[status - 1]} has a NaN, infinite or huge "
            f"(beyond ±{MAX_ABS:g}) entry"
        )

    def step(self, q, qd, qd_ref, qdd_ref) -> np.ndarray:
        """One tick with the caller's reference velocity and acceleration: s = qd - qd_ref,
        tau = Y pi^ - K_D s, then pi^ <- Proj(pi^ - dt P Y^T s).  Returns tau."""
        Y = self._dyn.regressor(q, qd, qd_ref, qdd_ref, out=self._Y)  # validates the state
        args = [
            Y, qd, qd_ref, self._kd, self._pi, self._blocks, self._gains, self._scales,
            self.margin, self.dt, self._s, self._tau, self._pi_next, self._work,
        ]  # fmt: skip
        try:
            status = self._update(*args)
        except TypeError:
            args[1] = self._dyn.engine.coerce(qd, "qd")
            args[2] = self._dyn.engine.coerce(qd_ref, "qd")
            status = self._update(*args)
        if status == BAD_SIZES:  # cannot happen after the regressor's checks
            raise RuntimeError("internal error: adaptive_step sizes")
        if status == BAD_RESULT:
            raise ValueError(
                "this tick would make tau or pi^ non-finite or huge (beyond "
                f"±{MAX_ABS:g}): s = qd - qd_ref is too large for the gains; pi^ unchanged"
            )
        self._moved = status
        return self._tau

    # ------------------------------------------------------------------ state

    @property
    def parameters(self) -> np.ndarray:
        """pi^, ten per body in :meth:`Dynamics.inertial_parameters`' order (a copy)."""
        return self._pi.copy()

    @property
    def parameter_links(self) -> tuple[str, ...]:
        return self._links

    @property
    def sliding(self) -> np.ndarray:
        """s = qd - qd_r of the last tick (a copy)."""
        return self._s.copy()

    @property
    def reference(self) -> tuple[np.ndarray, np.ndarray]:
        """(qd_r, qdd_r) of the last :meth:`track` tick (copies)."""
        return self._qd_r.copy(), self._qdd_r.copy()

    @property
    def projected(self) -> int:
        """How many bodies the last tick's projection moved."""
        return self._moved

    @property
    def length_scales(self) -> np.ndarray:
        return self._scales.copy()

    def gain_matrix(self) -> np.ndarray:
        """P (10 bodies x 10 bodies, block-diagonal; zero blocks for bodies not adapted)."""
        nb = len(self._links)
        P = np.zeros((10 * nb, 10 * nb))
        for b in range(nb):
            P[10 * b : 10 * b + 10, 10 * b : 10 * b + 10] = self._gains[b] * self._blocks[b]
        return P

    def parameter_energy(self, pi) -> float:
        """1/2 (pi^ - pi)^T P^-1 (pi^ - pi) over the adapted bodies: the parameter term of V."""
        err = self._pi - _vector(pi, self._pi.size, "pi")
        total = 0.0
        for b, gain in enumerate(self._gains):
            if gain > 0:
                e = err[10 * b : 10 * b + 10]
                total += 0.5 * float(e @ self._metric[b] @ e) / gain
        return total

    def pseudo_inertias(self) -> np.ndarray:
        """J of every body of pi^ (bodies, 4, 4), unscaled (for checks)."""
        pi = self._pi.reshape(-1, 10)
        return np.array([_parameters.pseudo_inertia(body) for body in pi])

    def reset(self, pi=None) -> None:
        """Back to ``pi`` (default: the initial estimate), projected if needed."""
        self._pi[:] = self._pi0 if pi is None else _vector(pi, self._pi.size, "pi")
        self._project_all()

    def _project_all(self) -> None:
        """The projection alone (a zero step), e.g. for an initial estimate at the margin."""
        Y = np.zeros_like(self._Y)
        z = np.zeros(self._dyn.nv)
        self._update(
            Y, z, z, self._kd, self._pi, self._blocks, self._gains, self._scales,
            self.margin, 0.0, self._s, self._tau, self._pi_next, self._work,
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"AdaptiveController({self._dyn.name!r}, nv={self._dyn.nv}, dt={self.dt})"


def _metric(scale: float) -> np.ndarray:
    """G with pi_k^T G pi_k = ||D J(pi_k) D||_F^2 (10 x 10), D = diag(1/l, 1/l, 1/l, 1)."""
    D = np.diag([1.0 / scale] * 3 + [1.0])
    A = np.array([(D @ _parameters.pseudo_inertia(e) @ D).reshape(-1) for e in np.eye(10)]).T
    return A.T @ A


def _radius(body: np.ndarray) -> float:
    """sqrt(tr(I) / 2m) (the body's RMS distance from its link origin), 1 m if undefined."""
    m, tr = body[0], body[4] + body[6] + body[9]
    if m > 0 and tr > 0:
        return float(math.sqrt(0.5 * tr / m))
    return 1.0


def _kernels():
    from numba import types

    from .kernel_table import compile_frozen
    from .kernels import adaptive as k

    f1 = types.Array(types.float64, 1, "C")
    f2 = types.Array(types.float64, 2, "C")
    f3 = types.Array(types.float64, 3, "C")
    f8 = types.float64
    return (
        compile_frozen(k.slotine_li_reference, (f1,) * 8),
        compile_frozen(k.adaptive_step, (f2, f1, f1, f1, f1, f3, f1, f1, f8, f8, f1, f1, f1, f1)),
    )


def _finite(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, Real) or not math.isfinite(float(x)):
        raise ValueError(f"{name} must be a finite number, got {plain(x)!r}")
    return float(x)


def _positive(x, name: str) -> float:
    x = _finite(x, name)
    if not x > 0:
        raise ValueError(f"{name} must be positive, got {x!r}")
    return x


def _per(x, size: int, name: str, positive: bool) -> np.ndarray:
    """One number or ``size`` numbers, finite, positive (or, if not ``positive``, >= 0)."""
    if isinstance(x, bool) or (isinstance(x, np.ndarray) and x.dtype == bool):
        raise ValueError(f"{name} must be numbers, got a bool")
    try:
        arr = np.array(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number or {size} of them: {exc}") from None
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise ValueError(f"{name} must be a number or have shape ({size},), got {arr.shape}")
    ok = (arr > 0) if positive else (arr >= 0)
    if not np.all(ok & (arr <= MAX_ABS)):
        j = int(np.argmax(~(ok & (arr <= MAX_ABS))))
        sign = "positive" if positive else "non-negative"
        raise ValueError(f"{name}[{j}] must be finite and {sign}, got {float(arr[j])!r}")
    return np.ascontiguousarray(arr)


def _vector(x, size: int, name: str) -> np.ndarray:
    try:
        arr = np.array(x, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be {size} numbers: {exc}") from None
    if arr.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {np.shape(x)}")
    if not np.all(np.abs(arr) <= MAX_ABS):
        raise ValueError(f"{name} has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) entry")
    return arr


__all__ = ["AdaptiveController"]
