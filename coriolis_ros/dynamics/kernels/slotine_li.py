"""The Slotine-Li torque M qdd_r + C(q, qd) qd_r + g in O(N), without forming M or C.

With the body Jacobians J_k (v_k = J_k qd), M = sum_k J_k^T I_k J_k (eq. 29) and
C = sum_k J_k^T (B(v_k, I_k) J_k + I_k Jdot_k) (eq. 30, the C of Algorithm 1; see
:mod:`.coriolis_times` for the same result from eqs. 14-18 and Appendix B), and g
is the RNEA with gravity as a fictitious base acceleration a_0 = (0, -g)
(Featherstone, RBDA section 5.3), so

    M qdd_r + C qd_r + g = sum_k J_k^T (I_k a_k + B(v_k, I_k) y_k),

    y_k = J_k qd_r                          = y_p(k) + Phi_k qd_r,k,
    a_k = a_0 + J_k qdd_r + Jdot_k qd_r     = a_p(k) + Phi_k qdd_r,k + Phidot_k qd_r,k,

a modified RNEA (eqs. 5, 12, 13): the true velocities v_k (from qd) enter only through
Phidot_k = v_k x Phi_k and B(v_k, I_k); the reference velocity and acceleration take
the places of qd and qdd in the velocity and acceleration passes, and the body force
is f_k = I_k a_k + B(v_k, I_k) y_k (``spatial.reference_force``); tau_i = Phi_i . sum of
f over the subtree of i.  With qd_r = qd it is the RNEA, M qdd + C qd + g.  O(N).

The fourth input vector, qdd_r, has status codes of its own: BAD_ARG4, SIZE_ARG4.
"""

from ..model import MF_PARENT
from .kinematics import (
    SIZE_OUT,
    SIZE_WS,
    all_finite,
    check_inputs,
    move_body,
    place_body,
    joint_angles,
)
from .spatial import (
    WS_A,
    WS_F,
    WS_S,
    WS_SD,
    WS_U,
    add_rows,
    dot6,
    kernel,
    reference_force,
)

# A NaN/infinite/huge entry in, or the wrong length of, the fourth input vector
# (after kinematics.BAD_Q, BAD_QD, BAD_QDD = 1, 2, 3 and SIZE_Q, SIZE_QD, SIZE_QDD = 11, 12, 13).
BAD_ARG4, SIZE_ARG4 = 4, 14  # kinematics uses 1-3, 5 (BAD_QUATERNION) and 11-13


@kernel
def slotine_li(mf, gravity, q, qd, qd_r, qdd_r, ws, tau):
    """Fill tau = M qdd_r + C(q, qd) qd_r + g; returns 0 or a status code
    (kinematics.BAD_*, SIZE_*: qd_r is the third vector, qdd_r the fourth)."""
    n = mf.shape[0]
    if gravity.shape[0] != 3:
        return SIZE_WS
    status = check_inputs(mf, ws, q, qd, qd_r)
    if status:
        return status
    if qdd_r.shape[0] != n:
        return SIZE_ARG4
    if not all_finite(qdd_r):
        return BAD_ARG4
    if tau.shape[0] != n:
        return SIZE_OUT
    joint_angles(mf, q, ws)
    for i in range(n):
        place_body(mf, q, ws, i)
        move_body(mf, qd, ws, i)
        b = int(mf[i, MF_PARENT])
        xi, zi = qd_r[i], qdd_r[i]
        for c in range(6):
            u = ws[i, WS_S + c] * xi
            a = ws[i, WS_S + c] * zi + ws[i, WS_SD + c] * xi
            if b >= 0:
                u += ws[b, WS_U + c]
                a += ws[b, WS_A + c]
            elif c >= 3:
                a -= gravity[c - 3]
            ws[i, WS_U + c] = u
            ws[i, WS_A + c] = a
        reference_force(ws, i)
    # The inputs are read only above, so tau may alias any of them.
    for j in range(n - 1, -1, -1):
        tau[j] = dot6(ws, j, WS_S, ws[j, WS_F], ws[j, WS_F + 1], ws[j, WS_F + 2],
                      ws[j, WS_F + 3], ws[j, WS_F + 4], ws[j, WS_F + 5])  # fmt: skip
        b = int(mf[j, MF_PARENT])
        if b >= 0:
            add_rows(ws, b, j, WS_F, 6)
    return 0
