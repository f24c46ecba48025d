"""One update of the generalized-momentum observer (see :mod:`coriolis_ros.dynamics.observer`).

The residual r = K (p - p(0) - int(tau + C^T qd - g + r) dt) obeys, per joint,
dr/dt = K (dz/dt - r) with z = p - p(0) - int(w) dt and w = tau + C^T qd - g.  Between
two stamps dt apart, z is taken linear (p exact at the stamps, w by the trapezoid
rule), so dz/dt = (p_k - p_k-1) / dt - (w_k + w_k-1) / 2 is constant and the exact
solution is

    r_k = e^(-K dt) r_k-1 + (1 - e^(-K dt)) dz/dt,

computed with a = 1 - e^(-K dt) = -expm1(-K dt), exact to rounding for every K dt.

The terms come from one pass over the tree, the formulas of :mod:`.coriolis_vectors` and
:func:`.rnea.generalized_gravity` fused: with h_i = I_i v_i summed over subtrees (hC),
p_i = Phi_i . hC_i and (C^T qd)_i = Phidot_i . hC_i; g_i = Phi_i . (IC_i a_0) with the
composite mass and first moment and a_0 = (0, -g).  C qd (an RNEA force pass) is not needed.
"""

import math

from ..model import MF_PARENT
from .kinematics import (
    BAD_QDD,
    SIZE_QDD,
    SIZE_WS,
    all_finite,
    check_inputs,
    move_body,
    place_body,
    joint_angles,
)
from .spatial import WS_H, WS_IC, WS_S, WS_SD, WS_V, add_rows, cross, dot6, inertia_times, kernel

# Rows of the observer's state array (5, n).
ST_GAIN, ST_P, ST_W, ST_R, ST_OUT = 0, 1, 2, 3, 4


@kernel
def observer_update(mf, gravity, q, qd, tau, ws, state, dt):
    """Advance r by dt > 0 seconds (dt = 0: start, r = 0) with the joint state and torque
    at the new stamp; copy r into state[ST_OUT].  Returns 0 or a status code
    (kinematics.BAD_*, SIZE_*; tau is the third vector)."""
    n = mf.shape[0]
    if gravity.shape[0] != 3 or state.shape[0] != 5 or state.shape[1] != n:
        return SIZE_WS
    status = check_inputs(mf, ws, q, qd, tau)
    if status:
        return status
    joint_angles(mf, q, ws)
    for i in range(n):
        place_body(mf, q, ws, i)
        move_body(mf, qd, ws, i)
        h0, h1, h2, h3, h4, h5 = inertia_times(
            ws, i, WS_IC,
            ws[i, WS_V], ws[i, WS_V + 1], ws[i, WS_V + 2],
            ws[i, WS_V + 3], ws[i, WS_V + 4], ws[i, WS_V + 5],
        )  # fmt: skip
        ws[i, WS_H], ws[i, WS_H + 1], ws[i, WS_H + 2] = h0, h1, h2
        ws[i, WS_H + 3], ws[i, WS_H + 4], ws[i, WS_H + 5] = h3, h4, h5
    ax, ay, az = -gravity[0], -gravity[1], -gravity[2]
    for j in range(n - 1, -1, -1):
        h0, h1, h2 = ws[j, WS_H], ws[j, WS_H + 1], ws[j, WS_H + 2]
        h3, h4, h5 = ws[j, WS_H + 3], ws[j, WS_H + 4], ws[j, WS_H + 5]
        p = dot6(ws, j, WS_S, h0, h1, h2, h3, h4, h5)
        ctqd = dot6(ws, j, WS_SD, h0, h1, h2, h3, h4, h5)
        m = ws[j, WS_IC]
        n0, n1, n2 = cross(ws[j, WS_IC + 1], ws[j, WS_IC + 2], ws[j, WS_IC + 3], ax, ay, az)
        g = dot6(ws, j, WS_S, n0, n1, n2, m * ax, m * ay, m * az)
        w = tau[j] + ctqd - g
        if dt == 0.0:
            state[ST_R, j] = 0.0
        else:
            a = -math.expm1(-state[ST_GAIN, j] * dt)
            state[ST_R, j] = (
                (1.0 - a) * state[ST_R, j]
                + (a / dt) * (p - state[ST_P, j])
                - a * 0.5 * (w + state[ST_W, j])
            )
        state[ST_P, j] = p
        state[ST_W, j] = w
        state[ST_OUT, j] = state[ST_R, j]
        b = int(mf[j, MF_PARENT])
        if b >= 0:
            add_rows(ws, b, j, WS_H, 6)
            add_rows(ws, b, j, WS_IC, 4)
    return 0


@kernel
def observer_step(p, ctqd, g, tau, state, dt):
    """The same update from p, C^T qd and g computed elsewhere (a model with mimic joints:
    its reduced terms come from the reduced kernels).  Returns 0 or a status code."""
    n = state.shape[1]
    if state.shape[0] != 5 or p.shape[0] != n or ctqd.shape[0] != n or g.shape[0] != n:
        return SIZE_WS
    if tau.shape[0] != n:
        return SIZE_QDD
    if not all_finite(tau):
        return BAD_QDD
    for j in range(n):
        w = tau[j] + ctqd[j] - g[j]
        if dt == 0.0:
            state[ST_R, j] = 0.0
        else:
            a = -math.expm1(-state[ST_GAIN, j] * dt)
            state[ST_R, j] = (
                (1.0 - a) * state[ST_R, j]
                + (a / dt) * (p[j] - state[ST_P, j])
                - a * 0.5 * (w + state[ST_W, j])
            )
        state[ST_P, j] = p[j]
        state[ST_W, j] = w
        state[ST_OUT, j] = state[ST_R, j]
    return 0
