"""C qd, C^T qd and the generalized momentum p = M qd in O(N), without forming C.

With h_i = I_i v_i and hC_i its sum over the subtree of i:

* p_i = Phi_i . hC_i, since M qd stacks the subtree momenta projected on Phi;
* C qd = RNEA(q, qd, 0) without gravity: Phi_i . fC_i with f_k = I_k a_k + v_k x* h_k;
* d/dt (M qd) at qdd = 0 is Mdot qd = Phidot_i . hC_i + Phi_i . fC_i, because
  d/dt (I_k v_k) = f_k; so C^T qd = Mdot qd - C qd = Phidot_i . hC_i
  (Mdot = C + C^T), the term momentum-based disturbance observers need.
"""

from ..model import MF_PARENT
from .kinematics import (
    check_inputs,
    OVERLAP,
    SIZE_OUT,
    disjoint,
    body_force,
    move_body,
    place_body,
    joint_angles,
)
from .spatial import (
    WS_A,
    WS_F,
    WS_H,
    WS_S,
    WS_SD,
    add_rows,
    dot6,
    kernel,
)


@kernel
def coriolis_vectors(mf, q, qd, ws, Cqd, CTqd, p):
    """Fill Cqd, CTqd and p; returns 0 or a status code (kinematics.BAD_*, SIZE_*)."""
    n = mf.shape[0]
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    if Cqd.shape[0] != n or CTqd.shape[0] != n or p.shape[0] != n:
        return SIZE_OUT
    if not disjoint(Cqd, CTqd, p):
        return OVERLAP
    joint_angles(mf, q, ws)
    for i in range(n):
        place_body(mf, q, ws, i)
        move_body(mf, qd, ws, i)
        b = int(mf[i, MF_PARENT])
        qdi = qd[i]
        for c in range(6):
            acc = ws[i, WS_SD + c] * qdi
            if b >= 0:
                acc += ws[b, WS_A + c]
            ws[i, WS_A + c] = acc
        body_force(ws, i)
    for j in range(n - 1, -1, -1):
        h0, h1, h2 = ws[j, WS_H], ws[j, WS_H + 1], ws[j, WS_H + 2]
        h3, h4, h5 = ws[j, WS_H + 3], ws[j, WS_H + 4], ws[j, WS_H + 5]
        Cqd[j] = dot6(ws, j, WS_S, ws[j, WS_F], ws[j, WS_F + 1], ws[j, WS_F + 2],
                      ws[j, WS_F + 3], ws[j, WS_F + 4], ws[j, WS_F + 5])  # fmt: skip
        p[j] = dot6(ws, j, WS_S, h0, h1, h2, h3, h4, h5)
        CTqd[j] = dot6(ws, j, WS_SD, h0, h1, h2, h3, h4, h5)
        b = int(mf[j, MF_PARENT])
        if b >= 0:
            add_rows(ws, b, j, WS_F, 6)
            add_rows(ws, b, j, WS_H, 6)
    return 0
