"""The adaptive controller of the passivity demo (``--controller adaptive``), ROS-free.

:class:`AdaptiveSlotineLi` is the demo's Slotine–Li law with the parameter estimate π̂ of the
library's :class:`~coriolis_ros.dynamics.AdaptiveController` (Slotine & Li, "On the adaptive
control of robot manipulators", IJRR 1987) in place of the model's parameters:

    q̇_r = q̇_d − Λ e,   q̈_r = q̈_d − Λ ė,   s = q̇ − q̇_r,
    τ = Y(q, q̇, q̇_r, q̈_r − κ s) π̂ − K_D s = M̂ q̈_r + Ĉ q̇_r + ĝ − κ M̂(q) s − K_D s,
    π̂ ← Proj(π̂ − h P Y(q, q̇, q̇_r, q̈_r − κ s)ᵀ s),

one :meth:`AdaptiveController.step` per state, with the acceleration argument q̈_r − κ s: the
damping κ M̂(q) s of :class:`~coriolis_ros.demo.passivity_controller.SlotineLiController`
(which keeps the 1 kHz loop stable where a diagonal gain does not) comes out of the regressor,
and its own error −κ M̃ s is part of Y π̃, so the adaptation accounts for it.  With the true
parameters π and π̃ = π̂ − π the plant M q̈ + C q̇ + g = τ gives M ṡ + C s = −κ M s − K_D s + Y π̃,
and with Ṁ − 2C skew (the Christoffel-consistent C of the regressor)

    V = ½ sᵀ M s + ½ π̃ᵀ P⁻¹ π̃,   V̇ = −sᵀ (κ M + K_D) s ≤ 0

in continuous time (the loop here is sampled at the plant's rate with one step of delay).
K_D is :data:`KD` (the AdaptiveController's diagonal K_D must be positive; the damping is
κ M̂).  P = γ G⁻¹ per body (``--adapt-gain`` γ; G the pseudo-inertia metric of
docs/adaptive.md), length scales from the starting estimate.  h is the time since the previous
state (0 at the first: no step), so the update follows the plant's clock whatever its rate.

The controller starts from ``dyn``'s parameters: :func:`~coriolis_ros.demo.passivity_controller.
make_controller` hands it the scenario's wrong model (``--parameter-error``).
"""

from __future__ import annotations

import numpy as np

KD = 1e-9  # N·m·s/rad: the damping is κ M̂(q) (module docstring)


class AdaptiveSlotineLi:
    """The demo controller protocol (``torque(t, q, qd)``, ``e``, ``s``, ``log_row()``,
    ``reset()``) around an :class:`~coriolis_ros.dynamics.AdaptiveController`.

    ``dyn``: the controller's model (its parameters are the starting estimate, physically
    consistent); ``reference``: ``position(t)``, ``velocity(t)``, ``acceleration(t)`` in
    ``dyn.joint_names`` order; ``scenario``: ``lam``, ``kappa`` (1/s, positive) and
    ``adapt_gain`` (γ ≥ 0; 0 freezes π̂: then this is the Slotine–Li controller of ``dyn``).
    """

    def __init__(self, dyn, reference, scenario):
        from coriolis_ros.dynamics import AdaptiveController
        from coriolis_ros.dynamics.errors import plain

        n = dyn.nv
        if dyn.nq != n:
            raise ValueError("the demo controller is for fixed-base robots (nq == nv)")
        kappa = float(scenario.kappa)
        if not (np.isfinite(kappa) and kappa > 0):
            got = plain(scenario.kappa)
            raise ValueError(f"kappa must be one positive number (1/s), got {got!r}")
        self.kappa = kappa
        self.lam = np.full(n, float(scenario.lam))
        self.reference = reference
        # dt is replaced by the measured interval before every step (class docstring)
        self.adaptive = AdaptiveController(dyn, dt=1e-3, lam=self.lam, kd=KD,
                                           gain=scenario.adapt_gain)  # fmt: skip
        self.e, self.ed, self.s = np.zeros(n), np.zeros(n), np.zeros(n)
        self.q_d, self.qd_d = np.zeros(n), np.zeros(n)
        self._qd_r, self._qdd_r = np.zeros(n), np.zeros(n)
        self._t_prev = None

    def torque(self, t: float, q, qd) -> np.ndarray:
        ref = self.reference
        self.q_d[:] = ref.position(t)
        self.qd_d[:] = ref.velocity(t)
        qdd_d = ref.acceleration(t)
        np.subtract(q, self.q_d, out=self.e)
        np.subtract(qd, self.qd_d, out=self.ed)
        np.multiply(self.lam, self.e, out=self._qd_r)
        np.subtract(self.qd_d, self._qd_r, out=self._qd_r)  # q̇_r = q̇_d − Λ e
        np.subtract(qd, self._qd_r, out=self.s)  # s = ė + Λ e
        np.multiply(self.lam, self.ed, out=self._qdd_r)
        np.subtract(qdd_d, self._qdd_r, out=self._qdd_r)  # q̈_r = q̈_d − Λ ė
        self._qdd_r -= self.kappa * self.s  # q̈_r − κ s
        h = 0.0 if self._t_prev is None else t - self._t_prev
        self._t_prev = t
        self.adaptive.dt = h if h > 0 else 0.0
        return self.adaptive.step(q, qd, self._qd_r, self._qdd_r)

    def log_row(self) -> dict:
        """π̂ after this state's step (ten per body, ``dyn.parameter_links`` order)."""
        return {"pi": self.adaptive.parameters}

    def reset(self) -> None:
        """Back to the starting estimate and no previous state."""
        self.adaptive.reset()
        self._t_prev = None
