"""Recursive Newton-Euler inverse dynamics and the generalized gravity, world coordinates.

Gravity enters as a fictitious base acceleration a_0 = (0, -g)
(Featherstone, RBDA section 5.3).  In ground coordinates
a_i = a_p(i) + Phi_i qdd_i + Phidot_i qd_i and
f_i = I_i a_i + v_i x* (I_i v_i); tau_i = Phi_i . sum of f over the subtree of i.
"""

from ..model import MF_PARENT
from .kinematics import (
    check_inputs,
    check_position,
    SIZE_OUT,
    SIZE_WS,
    forward_positions,
    body_force,
    move_body,
    place_body,
    joint_angles,
)
from .spatial import (
    WS_A,
    WS_F,
    WS_IC,
    WS_S,
    WS_SD,
    add_rows,
    cross,
    dot6,
    kernel,
)


@kernel
def inverse_dynamics(mf, gravity, q, qd, qdd, ws, tau):
    """Fill tau; returns 0 or a status code (kinematics.BAD_*, SIZE_*)."""
    n = mf.shape[0]
    if gravity.shape[0] != 3:
        return SIZE_WS
    status = check_inputs(mf, ws, q, qd, qdd)
    if status:
        return status
    if tau.shape[0] != n:
        return SIZE_OUT
    joint_angles(mf, q, ws)
    for i in range(n):
        place_body(mf, q, ws, i)
        move_body(mf, qd, ws, i)
        b = int(mf[i, MF_PARENT])
        qdi, qddi = qd[i], qdd[i]
        for c in range(6):
            acc = ws[i, WS_S + c] * qddi + ws[i, WS_SD + c] * qdi
            if b >= 0:
                acc += ws[b, WS_A + c]
            elif c >= 3:
                acc -= gravity[c - 3]
            ws[i, WS_A + c] = acc
        body_force(ws, i)
    for j in range(n - 1, -1, -1):
        tau[j] = dot6(ws, j, WS_S, ws[j, WS_F], ws[j, WS_F + 1], ws[j, WS_F + 2],
                      ws[j, WS_F + 3], ws[j, WS_F + 4], ws[j, WS_F + 5])  # fmt: skip
        b = int(mf[j, MF_PARENT])
        if b >= 0:
            add_rows(ws, b, j, WS_F, 6)
    return 0


@kernel
def generalized_gravity(mf, gravity, q, ws, g):
    """Fill g = RNEA(q, 0, 0); returns 0 or a status code (kinematics.BAD_*, SIZE_*).

    With v = 0 and a = a_0 everywhere, f_i = I_i a_0 = (h_i x (-g), -m_i g), so only
    the composite mass and first moment (m, h of IC) are needed.
    """
    n = mf.shape[0]
    if gravity.shape[0] != 3:
        return SIZE_WS
    status = check_position(mf, ws, q)
    if status:
        return status
    if g.shape[0] != n:
        return SIZE_OUT
    forward_positions(mf, q, ws)
    ax, ay, az = -gravity[0], -gravity[1], -gravity[2]
    for j in range(n - 1, -1, -1):
        m = ws[j, WS_IC]
        n0, n1, n2 = cross(ws[j, WS_IC + 1], ws[j, WS_IC + 2], ws[j, WS_IC + 3], ax, ay, az)
        g[j] = dot6(ws, j, WS_S, n0, n1, n2, m * ax, m * ay, m * az)
        b = int(mf[j, MF_PARENT])
        if b >= 0:
            add_rows(ws, b, j, WS_IC, 4)
    return 0
