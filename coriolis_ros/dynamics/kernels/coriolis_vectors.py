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
    BAD_Q,
    BAD_QD,
    OVERLAP,
    SIZE_OUT,
    SIZE_WS,
    all_finite,
    disjoint,
    move_body,
    place_body,
    model_ok,
    vectors_ok,
)
from .spatial import (
    WS_A,
    WS_F,
    WS_H,
    WS_IC,
    WS_S,
    WS_SD,
    WS_V,
    add_rows,
    cross,
    dot6,
    inertia_times,
    kernel,
)


@kernel
def coriolis_vectors(mf, q, qd, ws, Cqd, CTqd, p):
    """Fill Cqd, CTqd and p; returns 0 or a status code (kinematics.BAD_*, SIZE_*)."""
    n = mf.shape[0]
    if not model_ok(mf, ws):
        return SIZE_WS
    status = vectors_ok(n, q, qd, qd)
    if status:
        return status
    if Cqd.shape[0] != n or CTqd.shape[0] != n or p.shape[0] != n:
        return SIZE_OUT
    if not disjoint(Cqd, CTqd, p):
        return OVERLAP
    if not all_finite(q):
        return BAD_Q
    if not all_finite(qd):
        return BAD_QD
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
        wx, wy, wz = ws[i, WS_V], ws[i, WS_V + 1], ws[i, WS_V + 2]
        ux, uy, uz = ws[i, WS_V + 3], ws[i, WS_V + 4], ws[i, WS_V + 5]
        n0, n1, n2, l0, l1, l2 = inertia_times(ws, i, WS_IC, wx, wy, wz, ux, uy, uz)
        ws[i, WS_H], ws[i, WS_H + 1], ws[i, WS_H + 2] = n0, n1, n2
        ws[i, WS_H + 3], ws[i, WS_H + 4], ws[i, WS_H + 5] = l0, l1, l2
        a0, a1, a2, a3, a4, a5 = inertia_times(
            ws, i, WS_IC,
            ws[i, WS_A], ws[i, WS_A + 1], ws[i, WS_A + 2],
            ws[i, WS_A + 3], ws[i, WS_A + 4], ws[i, WS_A + 5],
        )  # fmt: skip
        x0, x1, x2 = cross(wx, wy, wz, n0, n1, n2)
        y0, y1, y2 = cross(ux, uy, uz, l0, l1, l2)
        z0, z1, z2 = cross(wx, wy, wz, l0, l1, l2)
        ws[i, WS_F], ws[i, WS_F + 1], ws[i, WS_F + 2] = a0 + x0 + y0, a1 + x1 + y1, a2 + x2 + y2
        ws[i, WS_F + 3], ws[i, WS_F + 4], ws[i, WS_F + 5] = a3 + z0, a4 + z1, a5 + z2
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
