"""Algorithm 2 of Echeandia & Wensing: Christoffel symbols of the first kind in O(Nd^2).

Gamma[i, j, k] = d C_ij / d qd_k, so that C_ij = sum_k Gamma_ijk qd_k, with
C the Christoffel-consistent factorization of Algorithm 1.  World coordinates
again turn the transforms of lines 15, 18, 19 and 22 into identities or sums.
With Btilde = B(Phi_k, IC_k) = [[P, 0], [-(L x), 0]] and IC_k Phi_k = (n, L),

    D = (IC_k Phi_k xbar*) - Btilde = [[-(n x) - P, -(L x)], [0, 0]],

so F2 and F3 have a zero bottom half (line 9).
"""

from ..model import MF_PARENT
from .kinematics import check_inputs, SIZE_OUT, forward_positions
from .spatial import (
    WS_IC,
    WS_S,
    add_rows,
    body_factor,
    cross,
    dot3,
    dot6,
    inertia_times,
    long_kernel,
)


@long_kernel
def christoffel(mf, q, ws, Gamma):
    """Fill Gamma (n, n, n); returns 0 or a status code (kinematics.BAD_*, SIZE_*)."""
    n = mf.shape[0]
    status = check_inputs(mf, ws, q, q, q)
    if status:
        return status
    if Gamma.shape[0] != n or Gamma.shape[1] != n or Gamma.shape[2] != n:
        return SIZE_OUT
    forward_positions(mf, q, ws)  # lines 1-3: IC_i = I_i
    for a in range(n):
        for b in range(n):
            for c in range(n):
                Gamma[a, b, c] = 0.0

    for k in range(n - 1, -1, -1):  # line 4
        kw0, kw1, kw2 = ws[k, WS_S], ws[k, WS_S + 1], ws[k, WS_S + 2]
        ku0, ku1, ku2 = ws[k, WS_S + 3], ws[k, WS_S + 4], ws[k, WS_S + 5]
        # line 5: Btilde = B(Phi_k, IC_k)
        p00, p01, p02, p10, p11, p12, p20, p21, p22, lx, ly, lz = body_factor(
            ws, k, WS_IC, kw0, kw1, kw2, ku0, ku1, ku2
        )
        # line 6: D needs n, the moment of IC_k Phi_k
        nx, ny, nz, _, _, _ = inertia_times(ws, k, WS_IC, kw0, kw1, kw2, ku0, ku1, ku2)
        j = k
        while j >= 0:  # line 8
            jw0, jw1, jw2 = ws[j, WS_S], ws[j, WS_S + 1], ws[j, WS_S + 2]
            ju0, ju1, ju2 = ws[j, WS_S + 3], ws[j, WS_S + 4], ws[j, WS_S + 5]
            # line 9: F1 = Btilde Phi_j, F2 = Btilde^T Phi_j, F3 = D Phi_j
            f10 = p00 * jw0 + p01 * jw1 + p02 * jw2
            f11 = p10 * jw0 + p11 * jw1 + p12 * jw2
            f12 = p20 * jw0 + p21 * jw1 + p22 * jw2
            f13, f14, f15 = cross(jw0, jw1, jw2, lx, ly, lz)
            m0, m1, m2 = cross(lx, ly, lz, ju0, ju1, ju2)
            f20 = p00 * jw0 + p10 * jw1 + p20 * jw2 + m0
            f21 = p01 * jw0 + p11 * jw1 + p21 * jw2 + m1
            f22 = p02 * jw0 + p12 * jw1 + p22 * jw2 + m2
            o0, o1, o2 = cross(nx, ny, nz, jw0, jw1, jw2)
            f30, f31, f32 = -o0 - f10 - m0, -o1 - f11 - m1, -o2 - f12 - m2
            i = j
            while i >= 0:  # lines 11-17
                g1 = dot6(ws, i, WS_S, f10, f11, f12, f13, f14, f15)
                g2 = dot3(ws, i, WS_S, f20, f21, f22)
                g3 = dot3(ws, i, WS_S, f30, f31, f32)
                Gamma[i, j, k] = g1  # line 12
                Gamma[i, k, j] = g1
                Gamma[j, i, k] = g2  # line 13
                Gamma[j, k, i] = g2
                Gamma[k, i, j] = g3  # line 14
                Gamma[k, j, i] = g3
                i = int(mf[i, MF_PARENT])
            j = int(mf[j, MF_PARENT])
        b = int(mf[k, MF_PARENT])
        if b >= 0:  # line 22
            add_rows(ws, b, k, WS_IC, 10)
    return 0
