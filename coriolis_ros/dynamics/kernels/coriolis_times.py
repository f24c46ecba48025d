"""C(q, qd) x in O(N) for the Christoffel-consistent C of Algorithm 1, without forming C.

Derivation (equation numbers of Echeandia & Wensing, journal version).  Algorithm 1
evaluates, for i ~ j, C_ij = Phi_i^T (IC_[ij] Phidot_j + BC_[ij] Phi_j) (eq. 18), with
the composites IC_[ij] = sum_{k >= [ij]} I_k and BC_[ij] = sum_{k >= [ij]} B(v_k, I_k)
(eqs. 15-16) and B the body-level factor of eq. 10 (``spatial.body_factor``).  The
change of summation set in Appendix B, read backwards (the pairs (k, j) with j ~ i and
k >= [ij] are exactly those with k >= i and j <= k), gives for any x in R^n

    (C x)_i = sum_{j ~ i} Phi_i^T (IC_[ij] Phidot_j + BC_[ij] Phi_j) x_j
            = Phi_i^T sum_{k >= i} (I_k w_k + B(v_k, I_k) y_k),

    y_k = sum_{j <= k} Phi_j x_j    = y_p(k) + Phi_k x_k        (like eq. 5),
    w_k = sum_{j <= k} Phidot_j x_j = w_p(k) + Phidot_k x_k     (like eq. 12, qdd = 0),

which is also eq. 30, C x = sum_k J_k^T (B(v_k, I_k) J_k x + I_k Jdot_k x), since
y_k = J_k x and w_k = Jdot_k x.  So C x is a modified RNEA (eq. 13): the true
velocities v_k (from qd) enter only through Phidot and B(v_k, I_k); a velocity-like
pass carries y = J x, an acceleration-like pass carries Phidot x, and the body force
is f_k = I_k w_k + B(v_k, I_k) y_k (``spatial.reference_force``) instead of
I_k a_k + v_k x* I_k v_k; the backward pass sums f over subtrees and projects on
Phi_i as eq. 13 does.  With x = qd, B(v, I) v = v x* I v (Definition 4) and this is
the RNEA at qdd = 0 without gravity, C qd.  Every quantity is the one Algorithm 1
reads (Phi, Phidot = v x Phi, I_k in world coordinates), so the result is C x for
Algorithm 1's C (Christoffel-consistent, Proposition 2) up to rounding.  Cost: one
forward and one backward pass, O(N); nothing of size n x n is formed.
"""

from ..model import MF_PARENT
from .kinematics import SIZE_OUT, check_inputs, move_body, place_body, joint_angles
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


@kernel
def coriolis_times(mf, q, qd, x, ws, y):
    """Fill y = C(q, qd) x; returns 0 or a status code (kinematics.BAD_*, SIZE_*; x is the
    third vector: BAD_QDD, SIZE_QDD)."""
    n = mf.shape[0]
    status = check_inputs(mf, ws, q, qd, x)
    if status:
        return status
    if y.shape[0] != n:
        return SIZE_OUT
    joint_angles(mf, q, ws)
    for i in range(n):
        place_body(mf, q, ws, i)
        move_body(mf, qd, ws, i)
        b = int(mf[i, MF_PARENT])
        xi = x[i]
        for c in range(6):
            u = ws[i, WS_S + c] * xi
            a = ws[i, WS_SD + c] * xi
            if b >= 0:
                u += ws[b, WS_U + c]
                a += ws[b, WS_A + c]
            ws[i, WS_U + c] = u
            ws[i, WS_A + c] = a
        reference_force(ws, i)
    # x is read only above, so y may alias it.
    for j in range(n - 1, -1, -1):
        y[j] = dot6(ws, j, WS_S, ws[j, WS_F], ws[j, WS_F + 1], ws[j, WS_F + 2],
                    ws[j, WS_F + 3], ws[j, WS_F + 4], ws[j, WS_F + 5])  # fmt: skip
        b = int(mf[j, MF_PARENT])
        if b >= 0:
            add_rows(ws, b, j, WS_F, 6)
    return 0
