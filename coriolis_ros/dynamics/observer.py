"""Generalized-momentum disturbance observer (De Luca & Mattone 2003; Haddadin, De Luca &
Albu-Schäffer, "Robot collisions: a survey on detection, isolation, and identification",
IEEE T-RO 2017, section on the momentum observer).

    from coriolis_ros.dynamics import Dynamics, MomentumObserver
    obs = MomentumObserver(dyn, gain=50.0)        # K_O in 1/s, scalar or one per joint
    r = obs.update(t, q, qd, tau)                 # t in seconds; r estimates tau_ext
    obs.reset()

ROS-free: it only needs a :class:`~coriolis_ros.dynamics.Dynamics`.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from .api import Dynamics
from .kernels.kinematics import MAX_ABS
from .kernels.momentum_observer import ST_GAIN, ST_OUT

_NAMES = ("q", "qd", "tau")


class MomentumObserver:
    """The residual r = K_O (p - p(0) - ∫(τ + Cᵀq̇ - g + r) dt) of a rigid-body robot.

    With M q̈ + C q̇ + g = τ + τ_ext and p = M q̇, ṗ = τ + Cᵀq̇ - g + τ_ext (since
    Ṁ = C + Cᵀ), so the residual obeys ṙ = K_O (τ_ext - r): a first-order estimate of the
    external joint torque τ_ext with time constant 1/K_O per joint, from positions,
    velocities and applied torques only (no acceleration, no inverse of M).  p and Cᵀq̇
    are the library's exact O(N) ones (those of :meth:`Dynamics.coriolis_vectors`, with
    the Christoffel-consistent C) and g that of :meth:`Dynamics.gravity`, all three from
    one pass over the tree fused with the step below (one compiled call per update).

    **Discrete form.**  Per joint, ṙ = K (ż - r) with z = p - p(0) - ∫w dt and
    w = τ + Cᵀq̇ - g.  Between consecutive stamps t_k-1, t_k (h = t_k - t_k-1, whatever
    it is) z is taken linear, p exact at the stamps and w by the trapezoid rule, and the
    linear equation is solved exactly over the interval:

        r_k = e^(-K h) r_k-1 + (1 - e^(-K h)) [(p_k - p_k-1) / h - (w_k + w_k-1) / 2].

    Why this form: every interval uses its own measured length, so jittery, irregular or
    sparse stamps are fine; p enters only through differences that telescope to
    p - p(0) exactly, whatever the stamps; the feedback of r is integrated exactly (the
    exponential), so the estimate has the time constant 1/K_O exactly, with no stability
    limit on K_O h (forward Euler, r_k = r_k-1 + K h (...), multiplies the error by
    1 - K h per step: it overshoots for K h > 1 and amplifies for K h > 2, e.g. after a
    gap).  The one approximation is the trapezoid quadrature of the measured w between
    stamps (second order in h; a torque held constant between stamps is thereby shifted
    by half a sample); in particular a constant τ_ext applied from rest gives
    r(t_k) = τ_ext (1 - e^(-K_O (t_k - t_0))) at every stamp.  The first update (and the
    first after :meth:`reset`) sets p(0) and returns r = 0.

    **Not modelled.**  Joint friction, motor and transmission dynamics (rotor inertia,
    elasticity), sensor delay and noise: τ must be the torque acting on the rigid links;
    whatever is unmodelled (friction, for instance, when τ is a commanded or
    motor-side torque) shows up in r as if it were external.

    **Arguments** of :meth:`update`: ``t`` in seconds, strictly increasing (a stamp equal
    to or older than the last accepted one raises ``ValueError``; so do non-finite ``t``
    and bad ``q``, ``qd``, ``tau``, like every method of :class:`Dynamics`, and a rejected
    update leaves the observer as it was).  float64 resolves about 0.24 µs at epoch
    times (1.7e9 s): pass the time since a fixed origin if that matters.

    **Allocation-free**: the update works in preallocated arrays and returns the same
    array every time, overwritten by the next update (copy it to keep it; writing into
    it does not disturb the observer).  It uses its own :meth:`Dynamics.clone`, so it
    may run in another thread than ``dyn``.
    """

    def __init__(self, dyn: Dynamics, gain):
        if not isinstance(dyn, Dynamics):
            raise TypeError(f"dyn must be a Dynamics, got {type(dyn).__name__}")
        if dyn.velocity_representation != "body":  # its kernels run the body representation
            raise ValueError(
                "the momentum observer needs velocity_representation='body' (this Dynamics "
                f"uses {dyn.velocity_representation!r})"
            )
        n = dyn.nv
        self._dyn = dyn.clone()  # its own workspace
        engine = self._dyn.engine
        self._engine = engine
        self._model = (engine.mf, engine.gravity, engine.ws)
        self._nv = n
        # Rows: K_O, p and w = tau + C^T qd - g at the last stamp, r, the returned copy of r.
        self._state = np.zeros((5, n))
        self._state[ST_GAIN] = _gain_array(gain, n)
        self._out = self._state[ST_OUT]
        self._t: float | None = None
        # A model with coupled joints: p, C^T qd and g from its reduced kernels, then the step.
        # The kernels are loaded (or compiled) now, never on the update path.
        # A closed-chain model (dyn.closed) likewise, with its own methods.
        self._closed = self._dyn.closed
        self._reduced = engine.coupled or self._closed is not None
        if self._reduced:
            self._step = engine.kernels.observer_step
            self._terms = tuple(np.zeros(n) for _ in range(4))  # C qd, C^T qd, p, g
        else:
            self._update = engine.kernels.observer_update

    @property
    def gain(self) -> np.ndarray:
        """K_O, one per joint (1/s)."""
        return self._state[ST_GAIN].copy()

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self._dyn.joint_names

    @property
    def time(self) -> float | None:
        """The stamp of the last accepted update; None before the first (or after reset)."""
        return self._t

    def reset(self) -> None:
        """Forget the history: the next update sets p(0) anew and returns r = 0."""
        self._t = None

    def close_loops(self, q, dependent) -> None:
        """A closed chain: close the loops of the observer's own model at ``q`` by Newton from
        the dependent joints' positions ``dependent`` (in the order of
        :attr:`Dynamics.dependent_joints`; :meth:`Dynamics.close_loops`); later updates continue
        from there.  For a jump its continuation refuses, with the joints measured at q."""
        self._dyn.close_loops(q, dependent=dependent)

    def update(self, t, q, qd, tau) -> np.ndarray:
        """Integrate up to stamp ``t`` (seconds) with the joint state and applied torque there;
        returns the residual r, the estimate of the external joint torque."""
        if type(t) is not float:  # isinstance(t, Real) alone costs ~1 us
            if isinstance(t, bool) or not isinstance(t, Real):
                raise ValueError(f"t must be a number of seconds, got {type(t).__name__}")
            t = float(t)
        if not abs(t) <= MAX_ABS:
            raise ValueError(f"t must be finite and within ±{MAX_ABS:g} s, got {t}")
        last = self._t
        if last is not None and not t > last:
            what = "repeats" if t == last else "is older than"
            raise ValueError(f"t = {t!r} {what} the last stamp {last!r}: stamps must increase")
        # dt = 0 starts the observer; otherwise dt > 0 (distinct doubles differ by > 0).
        dt = 0.0 if last is None else t - last
        if self._reduced:
            return self._update_reduced(t, dt, q, qd, tau)
        mf, gravity, ws = self._model
        try:
            status = self._update(mf, gravity, q, qd, tau, ws, self._state, dt)
        except TypeError:
            args = [mf, gravity, q, qd, tau, ws, self._state, dt]
            status = self._engine.retry(self._update, args, (2, 3, 4), (), _NAMES)
        if status:
            self._engine.fail(status, (q, qd, tau), (), _NAMES)
        self._t = t
        return self._out

    def _update_reduced(self, t: float, dt: float, q, qd, tau) -> np.ndarray:
        cqd, ctqd, p, g = self._terms
        self._dyn.coriolis_vectors(q, qd, out=(cqd, ctqd, p))  # validates q and qd
        self._dyn.gravity(q, out=g)
        if self._closed is not None:  # the tree engine's checks have the tree's sizes
            tau = self._closed.check_vector(tau, self._nv, _NAMES[2])
        try:
            status = self._step(p, ctqd, g, tau, self._state, dt)
        except TypeError:
            tau = self._engine.coerce(tau, _NAMES[2])
            status = self._step(p, ctqd, g, tau, self._state, dt)
        if status:
            self._engine.fail(status, (q, qd, tau), (), _NAMES)
        self._t = t
        return self._out

    def __repr__(self) -> str:
        return f"MomentumObserver({self._dyn.name!r}, nv={self._nv})"


def _gain_array(gain, n: int) -> np.ndarray:
    """K_O as n positive finite floats, from a scalar or n values; ValueError otherwise."""
    if isinstance(gain, bool) or (isinstance(gain, np.ndarray) and gain.dtype == bool):
        raise ValueError("gain must be a positive number (1/s) or one per joint, got a bool")
    try:
        arr = np.array(gain, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"gain must be a positive number (1/s) or {n} of them: {exc}") from None
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    elif arr.shape != (n,):
        raise ValueError(f"gain must be a scalar or have shape ({n},), got {arr.shape}")
    bad = [float(k) for k in arr if not (k > 0.0 and math.isfinite(k))]
    if bad:
        raise ValueError(f"gain must be positive and finite (1/s), got {bad[0]!r}")
    too_large = [float(k) for k in arr if k > MAX_GAIN]
    if too_large:
        raise ValueError(f"gain must be at most {MAX_GAIN:g} (1/s), got {too_large[0]!r}")
    return arr


# K_O bound (1/s): a time constant of 1 us.  The update's (1 - e^(-K h)) / h <= K multiplies
# differences of momenta, so a bounded K keeps r finite for every accepted input and stamp.
MAX_GAIN = 1e6
