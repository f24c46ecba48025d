"""One step of the generalized-momentum observer (see :mod:`coriolis_ros.dynamics.observer`).

The residual r = K (p - p(0) - int(tau + C^T qd - g + r) dt) obeys, per joint,
dr/dt = K (dz/dt - r) with z = p - p(0) - int(w) dt and w = tau + C^T qd - g.  Between
two stamps h apart, z is taken linear (p exact at the stamps, w by the trapezoid
rule), so dz/dt = (p_k - p_k-1) / h - (w_k + w_k-1) / 2 is constant and the exact
solution is

    r_k = e^(-K h) r_k-1 + (1 - e^(-K h)) dz/dt,

computed with a = 1 - e^(-K h) = -expm1(-K h), exact to rounding for every K h.
"""

import math

from .kinematics import all_finite
from .spatial import kernel

# Status codes (0: success): tau has a NaN/infinite/huge entry, or the wrong length.
BAD_TAU, SIZE_TAU = 1, 11


@kernel
def observer_step(h, first, gain, tau, p, ctqd, g, p_prev, w_prev, r, out):
    """Advance r by h seconds (or start it at 0 if ``first``); copy it into out."""
    n = gain.shape[0]
    if tau.shape[0] != n:
        return SIZE_TAU
    if not all_finite(tau):
        return BAD_TAU
    for i in range(n):
        w = tau[i] + ctqd[i] - g[i]
        if first:
            r[i] = 0.0
        else:
            a = -math.expm1(-gain[i] * h)
            r[i] = (1.0 - a) * r[i] + (a / h) * (p[i] - p_prev[i]) - a * 0.5 * (w + w_prev[i])
        p_prev[i] = p[i]
        w_prev[i] = w
        out[i] = r[i]
    return 0
