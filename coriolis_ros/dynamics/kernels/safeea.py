"""Safeea, Bearee & Neto's recursive Christoffel symbols for serial chains, O(n^3).

M. Safeea, R. Bearee, P. Neto, "Recursive algorithm for calculating Christoffel
symbols efficiently", Mechanism and Machine Theory 142 (2019) 103589.  With unit
velocities at joints j <= i and every other joint at rest (qdd = 0), the velocity
products act on each link l >= i through its centre of mass c_l as half the
inertial force and moment (the paper's eqs. 26-27, "frame injection"):

    f_ji^l = m_l k_j x (k_i x p_Cli),        h_ji^l = 1/2 (L_l k_j) x k_i,
    L_l = R_l (tr(I_l) 1 - 2 I_l) R_l^T,

and a backward recursion over the links sums them into the force F and moment H
felt at each joint k (eqs. 28-29), whose projection on the joint axis is
c_ji^k = k_k . H_ji^k (eq. 30).  In our notation Gamma[k, j, i] = Gamma[k, i, j]
= c_ji^k.

Two generalizations, both worked out from the same velocity-product expansion:

* moments are summed about the world origin instead of being carried from joint
  to joint (H = sum h + c_l x f), and the projection is Phi_k . (H, F), the
  world-coordinate joint column (k_k, o_k x k_k) of :mod:`.kinematics`; this is
  eq. 30 moved to the origin;
* prismatic joints: with w_j the angular part of Phi_j (the axis k_j of a
  revolute joint, 0 for a prismatic one) and J_i(c) = nu_i + w_i x c the
  velocity Phi_i gives the point c (nu_i: the linear part of Phi_i at the world
  origin, so J_i(c_l) = k_i x p_Cli for a revolute joint and the axis for a
  prismatic one), the half velocity-product terms are

      f_ji^l = m_l w_j x J_i(c_l),           h_ji^l = 1/2 (L_l w_j) x w_i,

  which are the paper's for two revolute joints and vanish when j is prismatic
  (a translation does not turn later axes).

The symbols with j > i follow from the symmetry c_ji^k = c_ij^k.  Only serial
chains of revolute and prismatic joints (parent[i] = i - 1) are valid input; the
API checks that once per model.
"""

from ..model import MF_PARENT
from .kinematics import SIZE_OUT, check_position, forward_positions
from .spatial import WS_BP, WS_F, WS_IC, WS_S, cross, long_kernel

# Scratch columns (free in this kernel): centre of mass c_l, then L_l (xx, yy, zz, xy, xz, yz).
_C = WS_BP
_L = WS_BP + 3
# L_l w_j for the current j.
_LW = WS_F


@long_kernel
def christoffel_safeea(mf, q, ws, Gamma):
    """Fill Gamma (n, n, n) of a serial chain; returns 0 or a status code (kinematics.*)."""
    n = mf.shape[0]
    status = check_position(mf, ws, q)
    if status:
        return status
    if Gamma.shape[0] != n or Gamma.shape[1] != n or Gamma.shape[2] != n:
        return SIZE_OUT
    forward_positions(mf, q, ws)
    for a in range(n):
        for b in range(n):
            for c in range(n):
                Gamma[a, b, c] = 0.0
    for b in range(n):  # c_b and L_b from the spatial inertia about the world origin
        m = ws[b, WS_IC]
        cx, cy, cz = 0.0, 0.0, 0.0
        if m > 0.0:
            cx, cy, cz = ws[b, WS_IC + 1] / m, ws[b, WS_IC + 2] / m, ws[b, WS_IC + 3] / m
        # rotational inertia about the centre of mass: Ibar - m (|c|^2 1 - c c^T)
        jxx = ws[b, WS_IC + 4] - m * (cy * cy + cz * cz)
        jyy = ws[b, WS_IC + 5] - m * (cx * cx + cz * cz)
        jzz = ws[b, WS_IC + 6] - m * (cx * cx + cy * cy)
        tr = jxx + jyy + jzz
        ws[b, _C], ws[b, _C + 1], ws[b, _C + 2] = cx, cy, cz
        ws[b, _L], ws[b, _L + 1], ws[b, _L + 2] = tr - 2.0 * jxx, tr - 2.0 * jyy, tr - 2.0 * jzz
        ws[b, _L + 3] = -2.0 * (ws[b, WS_IC + 7] + m * cx * cy)
        ws[b, _L + 4] = -2.0 * (ws[b, WS_IC + 8] + m * cx * cz)
        ws[b, _L + 5] = -2.0 * (ws[b, WS_IC + 9] + m * cy * cz)

    for j in range(n):
        wj0, wj1, wj2 = ws[j, WS_S], ws[j, WS_S + 1], ws[j, WS_S + 2]
        if wj0 == 0.0 and wj1 == 0.0 and wj2 == 0.0:
            continue  # prismatic j: no velocity product with later joints
        for b in range(j, n):  # L_b w_j, used for every i
            ws[b, _LW] = ws[b, _L] * wj0 + ws[b, _L + 3] * wj1 + ws[b, _L + 4] * wj2
            ws[b, _LW + 1] = ws[b, _L + 3] * wj0 + ws[b, _L + 1] * wj1 + ws[b, _L + 5] * wj2
            ws[b, _LW + 2] = ws[b, _L + 4] * wj0 + ws[b, _L + 5] * wj1 + ws[b, _L + 2] * wj2
        for i in range(j, n):
            wi0, wi1, wi2 = ws[i, WS_S], ws[i, WS_S + 1], ws[i, WS_S + 2]
            ni0, ni1, ni2 = ws[i, WS_S + 3], ws[i, WS_S + 4], ws[i, WS_S + 5]
            F0, F1, F2 = 0.0, 0.0, 0.0  # eq. 28
            H0, H1, H2 = 0.0, 0.0, 0.0  # eq. 29, about the world origin
            for k in range(n - 1, -1, -1):
                if k >= i:  # link k injects f and h
                    m = ws[k, WS_IC]
                    cx, cy, cz = ws[k, _C], ws[k, _C + 1], ws[k, _C + 2]
                    a0, a1, a2 = cross(wi0, wi1, wi2, cx, cy, cz)  # J_i(c_k) = nu_i + w_i x c_k
                    a0, a1, a2 = m * (ni0 + a0), m * (ni1 + a1), m * (ni2 + a2)
                    f0, f1, f2 = cross(wj0, wj1, wj2, a0, a1, a2)  # eq. 27
                    h0, h1, h2 = cross(ws[k, _LW], ws[k, _LW + 1], ws[k, _LW + 2], wi0, wi1, wi2)
                    t0, t1, t2 = cross(cx, cy, cz, f0, f1, f2)
                    F0 += f0
                    F1 += f1
                    F2 += f2
                    H0 += 0.5 * h0 + t0  # eq. 26 plus the moment of f
                    H1 += 0.5 * h1 + t1
                    H2 += 0.5 * h2 + t2
                c = (  # eq. 30: Phi_k . (H, F)
                    ws[k, WS_S] * H0
                    + ws[k, WS_S + 1] * H1
                    + ws[k, WS_S + 2] * H2
                    + ws[k, WS_S + 3] * F0
                    + ws[k, WS_S + 4] * F1
                    + ws[k, WS_S + 5] * F2
                )
                Gamma[k, j, i] = c
                Gamma[k, i, j] = c
    return 0


def is_serial_chain(mf) -> bool:
    """True if every row's parent is the previous row (the first row's is the world)."""
    return all(int(mf[i, MF_PARENT]) == i - 1 for i in range(mf.shape[0]))
