"""Algorithm 1 of Echeandia & Wensing: M, Mdot and the Christoffel-consistent C in O(Nd).

All spatial quantities are in world coordinates (the paper's post-publication
note: Pinocchio's variant), so the congruence transforms of lines 17, 24 and
25 reduce to plain sums.  The body-level factor B has the block form
[[P, 0], [-(L x), 0]] (see :func:`spatial.body_factor`), hence

    F3 = BC^T Phi = (P^T phi_w + L x phi_u, 0),

and only its top half is kept.

The sweep can also write through a change of coordinates with a constant A whose
rows have one nonzero each (mimic joints, geared rotors: :mod:`.coordinate_change`):
every entry X_ij it computes is added, times m_i m_j, to Xbar[col(i), col(j)], which
is Xbar = A^T X A without a full-size intermediate (each (i, j) is written once).

Clusters (Wensing & Slotine, Section VI-C).  A rotor r geared to joint k (q_r = N q_k)
and hanging from k's parent is, with k's link, one body of a cluster tree: the cluster's
motion subspace stacks Phi_k and N Phi_r, so the cluster's F1, F2 and F3 (lines 9-11)
are the link's plus N times the rotor's, all in world coordinates, and lines 16-23 walk
the ancestors once with that sum.  The sweep does exactly that: a coupled row whose
parent is its leader's parent (and which comes after it) adds m_r F_r into the leader's
row (``WS_CLUSTER``) instead of walking; the leader walks with F_k plus what it received.
The cluster's diagonal is C_kk + N^2 C_rr: rotor and link are siblings, so the tree has
no C_kr.  A rotor costs the per-body lines 2-15, not a second walk up the tree.
"""

from ..model import MF_PARENT
from ..rotor_fold import SPIN_WIDTH
from .kinematics import (
    check_inputs,
    OVERLAP,
    SIZE_OUT,
    disjoint,
    joint_angles,
    move_body,
    place_body,
    square_ok,
)
from .lanes import LANES, lane_rows, lane_vector, lanes, store_run, transpose
from .spatial import (
    WS_BL,
    WS_BP,
    WS_CLUSTER,
    WS_IC,
    WS_R,
    WS_S,
    WS_SD,
    WS_V,
    add_rows,
    body_factor,
    body_step,
    cross,
    dot3,
    dot6,
    inertia_times,
    long_kernel,
)


@long_kernel
def coriolis_matrix(mf, q, qd, ws, M, Mdot, C):
    """Fill M, Mdot and C; returns 0 or a status code (kinematics.BAD_*, SIZE_*)."""
    n = mf.shape[0]
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    if not (square_ok(n, M) and square_ok(n, Mdot) and square_ok(n, C)):
        return SIZE_OUT
    if not disjoint(M, Mdot, C):
        return OVERLAP
    sweep(mf, q, qd, ws, M, Mdot, C, q, -1, True, -1)
    return 0


@long_kernel
def coriolis_lanes(mf, Q4, V4, ws4, S, M, Mdot, C, t0, count):
    """:func:`coriolis_matrix` on four states at once, on checked inputs (:mod:`.lanes`).

    Q4 (nq, 4) and V4 (n, 4) hold states t0 .. t0 + count - 1 lane by lane (idle lanes repeat
    state t0), ws4 is a workspace with a lane axis, (rows, WS_WIDTH, 4).  The sweep is
    :func:`sweep` itself, compiled for lane types, so every lane is computed exactly as the
    single-state kernel computes its state; it writes into S (3, n, n, 4), which stays in
    the cache, and S is then copied out in order: lane l to M[t0 + l], Mdot[t0 + l] and
    C[t0 + l] (idle lanes to row t0, with the values lane 0 wrote there).  S must be zero
    where the model's sweep writes nothing: zeroed once for the model, it stays so.
    """
    SM, SMdot, SC = lanes(S[0]), lanes(S[1]), lanes(S[2])
    # S is zero wherever the sweep does not write (the same entries every pass): zeroed once
    sweep(mf, lane_vector(Q4), lane_vector(V4), lanes(ws4), SM, SMdot, SC, Q4[0], -1, False,
          -1)
    outM, outMdot = lane_rows(M, t0, count), lane_rows(Mdot, t0, count)
    outC = lane_rows(C, t0, count)
    m = S.shape[1]
    for i in range(m):
        copy_row(SM, outM, i, m)
        copy_row(SMdot, outMdot, i, m)
        copy_row(SC, outC, i, m)


@body_step
def copy_row(S, out, i, m):
    """Row i of every lane's matrix: four columns at a time through a 4 x 4 transpose (one
    vector store per lane), the last m mod 4 entry by entry."""
    j = 0
    while j + LANES <= m:
        r0, r1, r2, r3 = transpose(S[i, j], S[i, j + 1], S[i, j + 2], S[i, j + 3])
        store_run(out, 0, i, j, r0)
        store_run(out, 1, i, j, r1)
        store_run(out, 2, i, j, r2)
        store_run(out, 3, i, j, r3)
        j += LANES
    while j < m:
        out[i, j] = S[i, j]
        j += 1


@body_step
def coordinate(amap, a0, i):
    """(i, 1), or through the map (a0 >= 0: (column, multiplier) pairs at amap[a0:])
    the reduced column of row i and its multiplier."""
    if a0 < 0:
        return i, 1.0
    return int(amap[a0 + 2 * i]), amap[a0 + 2 * i + 1]


@body_step
def cluster_leader(mf, amap, a0, j):
    """The row whose walk row j's joins (its leader's, when j is a coupled row after its leader
    with the same parent), or -1: j walks on its own."""
    if a0 < 0:
        return -1
    n = mf.shape[0]
    k = int(amap[a0 + 2 * n + int(amap[a0 + 2 * j])])  # the full row of j's reduced column
    if k == j or k > j or mf[k, MF_PARENT] != mf[j, MF_PARENT]:
        return -1
    return k


@body_step
def put(X, i, j, w, value, mapped):
    """X[i, j] = value, or X[i, j] += w value through the map."""
    if mapped:
        X[i, j] += w * value
    else:
        X[i, j] = value


@body_step
def sweep(mf, q, qd, ws, M, Mdot, C, amap, a0, zero, s0):
    """Algorithm 1 on checked inputs, into (A^T) M (A) etc. (see :func:`put`).

    ``zero``: first set M, Mdot and C to zero.  Without it the entries the sweep does not
    write (i and j on no common root path) keep their values: a buffer reused for the same
    model, zeroed once, needs no zeroing again (:func:`coriolis_lanes`).  ``s0`` >= 0: mf is
    a compact tree whose folded rotors are the spin table at amap[s0:] (:mod:`..rotor_fold`,
    :func:`spin_clusters`)."""
    n = mf.shape[0]
    mapped = a0 >= 0
    clusters = mapped or s0 >= 0
    joint_angles(mf, q, ws)
    for i in range(n):  # lines 2-7, with IC_i = I_i written by place_body
        place_body(mf, q, ws, i)
        move_body(mf, qd, ws, i)  # lines 3-4
        # line 6: BC_i = B(v_i, I_i)
        p00, p01, p02, p10, p11, p12, p20, p21, p22, lx, ly, lz = body_factor(
            ws, i, WS_IC,
            ws[i, WS_V], ws[i, WS_V + 1], ws[i, WS_V + 2],
            ws[i, WS_V + 3], ws[i, WS_V + 4], ws[i, WS_V + 5],
        )  # fmt: skip
        ws[i, WS_BP], ws[i, WS_BP + 1], ws[i, WS_BP + 2] = p00, p01, p02
        ws[i, WS_BP + 3], ws[i, WS_BP + 4], ws[i, WS_BP + 5] = p10, p11, p12
        ws[i, WS_BP + 6], ws[i, WS_BP + 7], ws[i, WS_BP + 8] = p20, p21, p22
        ws[i, WS_BL], ws[i, WS_BL + 1], ws[i, WS_BL + 2] = lx, ly, lz
        if clusters:  # no cluster member has joined row i's walk yet
            for c in range(WS_CLUSTER, WS_CLUSTER + 15):
                ws[i, c] = 0.0 * lx

    if zero:
        for r in range(M.shape[0]):
            for c in range(M.shape[0]):
                M[r, c] = 0.0
                Mdot[r, c] = 0.0
                C[r, c] = 0.0

    if s0 >= 0:
        spin_clusters(mf, qd, ws, M, amap, s0)

    for j in range(n - 1, -1, -1):  # line 8
        sw0, sw1, sw2 = ws[j, WS_S], ws[j, WS_S + 1], ws[j, WS_S + 2]
        su0, su1, su2 = ws[j, WS_S + 3], ws[j, WS_S + 4], ws[j, WS_S + 5]
        # line 10: F2 = IC_j Phi_j
        f20, f21, f22, f23, f24, f25 = inertia_times(ws, j, WS_IC, sw0, sw1, sw2, su0, su1, su2)
        # line 9: F1 = IC_j Phidot_j + BC_j Phi_j
        f10, f11, f12, f13, f14, f15 = inertia_times(
            ws, j, WS_IC,
            ws[j, WS_SD], ws[j, WS_SD + 1], ws[j, WS_SD + 2],
            ws[j, WS_SD + 3], ws[j, WS_SD + 4], ws[j, WS_SD + 5],
        )  # fmt: skip
        p00, p01, p02 = ws[j, WS_BP], ws[j, WS_BP + 1], ws[j, WS_BP + 2]
        p10, p11, p12 = ws[j, WS_BP + 3], ws[j, WS_BP + 4], ws[j, WS_BP + 5]
        p20, p21, p22 = ws[j, WS_BP + 6], ws[j, WS_BP + 7], ws[j, WS_BP + 8]
        lx, ly, lz = ws[j, WS_BL], ws[j, WS_BL + 1], ws[j, WS_BL + 2]
        f10 += p00 * sw0 + p01 * sw1 + p02 * sw2
        f11 += p10 * sw0 + p11 * sw1 + p12 * sw2
        f12 += p20 * sw0 + p21 * sw1 + p22 * sw2
        g0, g1, g2 = cross(sw0, sw1, sw2, lx, ly, lz)  # -(L x) phi_w = phi_w x L
        f13 += g0
        f14 += g1
        f15 += g2
        # line 11: F3 = BC_j^T Phi_j (top half; the bottom half is zero)
        k0, k1, k2 = cross(lx, ly, lz, su0, su1, su2)
        f30 = p00 * sw0 + p10 * sw1 + p20 * sw2 + k0
        f31 = p01 * sw0 + p11 * sw1 + p21 * sw2 + k1
        f32 = p02 * sw0 + p12 * sw1 + p22 * sw2 + k2

        cj, mj = coordinate(amap, a0, j)
        w = mj * mj
        cjj = dot6(ws, j, WS_S, f10, f11, f12, f13, f14, f15)  # line 12
        put(C, cj, cj, w, cjj, mapped)
        put(M, cj, cj, w, dot6(ws, j, WS_S, f20, f21, f22, f23, f24, f25), mapped)  # line 13
        mdjj = (  # line 14
            dot6(ws, j, WS_SD, f20, f21, f22, f23, f24, f25)
            + cjj
            + dot3(ws, j, WS_S, f30, f31, f32)
        )
        put(Mdot, cj, cj, w, mdjj, mapped)
        if mapped:
            k = cluster_leader(mf, amap, a0, j)
            if k >= 0:  # j is a rotor of k's cluster: its share of k's walk, times m_j
                add_cluster(ws, k, mj, f10, f11, f12, f13, f14, f15,
                            f20, f21, f22, f23, f24, f25, f30, f31, f32)  # fmt: skip
                b = int(mf[j, MF_PARENT])
                if b >= 0:  # lines 24-25
                    add_rows(ws, b, j, WS_IC, 10)
                    add_rows(ws, b, j, WS_BP, 12)
                continue
        if clusters:
            # the cluster's F: m_j F_j plus what its rotors added; the walk's weights m_i
            x = WS_CLUSTER
            f10, f11 = mj * f10 + ws[j, x], mj * f11 + ws[j, x + 1]
            f12, f13 = mj * f12 + ws[j, x + 2], mj * f13 + ws[j, x + 3]
            f14, f15 = mj * f14 + ws[j, x + 4], mj * f15 + ws[j, x + 5]
            f20, f21 = mj * f20 + ws[j, x + 6], mj * f21 + ws[j, x + 7]
            f22, f23 = mj * f22 + ws[j, x + 8], mj * f23 + ws[j, x + 9]
            f24, f25 = mj * f24 + ws[j, x + 10], mj * f25 + ws[j, x + 11]
            f30, f31 = mj * f30 + ws[j, x + 12], mj * f31 + ws[j, x + 13]
            f32 = mj * f32 + ws[j, x + 14]
            mj = 1.0
        i = int(mf[j, MF_PARENT])
        while i >= 0:  # lines 16-23 (no transform in world coordinates)
            cij = dot6(ws, i, WS_S, f10, f11, f12, f13, f14, f15)
            cji = dot6(ws, i, WS_SD, f20, f21, f22, f23, f24, f25) + dot3(
                ws, i, WS_S, f30, f31, f32
            )
            mij = dot6(ws, i, WS_S, f20, f21, f22, f23, f24, f25)
            ci, mi = coordinate(amap, a0, i)
            w = mi * mj
            put(C, ci, cj, w, cij, mapped)
            put(C, cj, ci, w, cji, mapped)
            put(M, ci, cj, w, mij, mapped)
            put(M, cj, ci, w, mij, mapped)
            put(Mdot, ci, cj, w, cij + cji, mapped)
            put(Mdot, cj, ci, w, cij + cji, mapped)
            i = int(mf[i, MF_PARENT])
        b = int(mf[j, MF_PARENT])
        if b >= 0:  # lines 24-25
            add_rows(ws, b, j, WS_IC, 10)
            add_rows(ws, b, j, WS_BP, 12)
    if s0 >= 0:
        for t in range(int(amap[s0])):  # the rotors' N^2 J on M's diagonal
            x = s0 + 1 + SPIN_WIDTH * t
            m = amap[x + 7]
            M[int(amap[x + 6]), int(amap[x + 6])] += m * m * amap[x + 2]


@body_step
def spin_axis(ws, amap, x):
    """The spin axis of the folded rotor on spin line x in world coordinates: its axis in its
    parent's frame (amap[x + 3 : x + 6]) turned by the parent's rotation, or as it is when the
    parent is the world."""
    b, e0, e1, e2 = int(amap[x]), amap[x + 3], amap[x + 4], amap[x + 5]
    if b < 0:
        return e0, e1, e2
    return (ws[b, WS_R] * e0 + ws[b, WS_R + 1] * e1 + ws[b, WS_R + 2] * e2,
            ws[b, WS_R + 3] * e0 + ws[b, WS_R + 4] * e1 + ws[b, WS_R + 5] * e2,
            ws[b, WS_R + 6] * e0 + ws[b, WS_R + 7] * e1 + ws[b, WS_R + 8] * e2)  # fmt: skip


@body_step
def spin_clusters(mf, qd, ws, M, amap, s0):
    """Each folded rotor of the spin table at amap[s0:] (:mod:`..rotor_fold`; parent p,
    leader k, moment J, axis e in p's frame, column c, multiplier m): k's cluster sums +=
    m (F1, F2, F3) with F1 = (1/2 J w_p x a, 0), F2 = (J a, 0), F3 = 1/2 J w_p x a; BC_p +=
    qd_r B(S_r, I_r), whose only nonzero block is P = -1/2 J (a x), qd_r = m qd_k.  (Its
    M[c, c] += m^2 J comes after the sweep, which may write that entry by assignment; C_rr
    and Mdot_rr are zero.)"""
    for t in range(int(amap[s0])):
        x = s0 + 1 + SPIN_WIDTH * t
        b, k, spin = int(amap[x]), int(amap[x + 1]), amap[x + 2]
        m = amap[x + 7]  # (its column, amap[x + 6], is for M's diagonal: after the sweep)
        a0, a1, a2 = spin_axis(ws, amap, x)
        wx, wy, wz = 0.0, 0.0, 0.0
        if b >= 0:
            wx, wy, wz = ws[b, WS_V], ws[b, WS_V + 1], ws[b, WS_V + 2]
        h = 0.5 * spin
        g0, g1, g2 = cross(wx, wy, wz, a0, a1, a2)
        g0, g1, g2 = h * g0, h * g1, h * g2
        if b < 0:
            continue  # on the world: no ancestor to walk, only M's diagonal (below)
        add_cluster(ws, k, m, g0, g1, g2, 0.0, 0.0, 0.0,
                    spin * a0, spin * a1, spin * a2, 0.0, 0.0, 0.0, g0, g1, g2)  # fmt: skip
        if b >= 0:  # P_b += s (a x), s = -1/2 J qd_r
            s = -h * m * qd[k]
            ws[b, WS_BP + 1] -= s * a2
            ws[b, WS_BP + 2] += s * a1
            ws[b, WS_BP + 3] += s * a2
            ws[b, WS_BP + 5] -= s * a0
            ws[b, WS_BP + 6] -= s * a1
            ws[b, WS_BP + 7] += s * a0


@body_step
def add_cluster(ws, k, m, f10, f11, f12, f13, f14, f15, f20, f21, f22, f23, f24, f25,
                f30, f31, f32):  # fmt: skip
    """Row k's cluster sums += m (F1, F2, F3)."""
    x = WS_CLUSTER
    ws[k, x] += m * f10
    ws[k, x + 1] += m * f11
    ws[k, x + 2] += m * f12
    ws[k, x + 3] += m * f13
    ws[k, x + 4] += m * f14
    ws[k, x + 5] += m * f15
    ws[k, x + 6] += m * f20
    ws[k, x + 7] += m * f21
    ws[k, x + 8] += m * f22
    ws[k, x + 9] += m * f23
    ws[k, x + 10] += m * f24
    ws[k, x + 11] += m * f25
    ws[k, x + 12] += m * f30
    ws[k, x + 13] += m * f31
    ws[k, x + 14] += m * f32
