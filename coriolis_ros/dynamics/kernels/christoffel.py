"""Algorithm 2 of Echeandia & Wensing: Christoffel symbols of the first kind in O(Nd^2).

Gamma[i, j, k] = d C_ij / d qd_k, so that C_ij = sum_k Gamma_ijk qd_k, with
C the Christoffel-consistent factorization of Algorithm 1.  World coordinates
again turn the transforms of lines 15, 18, 19 and 22 into identities or sums.
With Btilde = B(Phi_k, IC_k) = [[P, 0], [-(L x), 0]] and IC_k Phi_k = (n, L),

    D = (IC_k Phi_k xbar*) - Btilde = [[-(n x) - P, -(L x)], [0, 0]],

so F2 and F3 have a zero bottom half (line 9).  The skew part of P is -1/2 (n x)
(:func:`.spatial.body_factor`), so -(n x) - P = -P^T and D = -Btilde^T: F3 = -F2, and
line 14's entries are minus line 13's, Gamma_kij = -Gamma_jik.  (This is
Gamma_kji + Gamma_jki = dM_kj/dq_i = 0 for i an ancestor of j and k: joint i carries j,
k and everything they move rigidly.)  The kernel therefore computes neither D nor F3.

Memory, not arithmetic, bounds the kernel on large trees: Gamma has n^3 entries
(681 KB for Talos' 44 DoF), of which the sweep writes only those whose indices lie
on one root path (9 % for Talos).  Departures from the paper's listing: F3 = -F2
(above), which changes the results by rounding only; and three which change no bit
of them: line 22 (IC_p(k) += IC_k) runs as its own backward pass before the sweep,
which then finds IC_k complete as it would; for i = j the sweep skips line 12, whose
entries line 13 overwrites; and large, mostly zero outputs are zeroed by streaming
stores (:func:`zero_output`).

Multi-DoF joints and generalized speeds
---------------------------------------
A free flyer or planar joint is a run of rows r (one per velocity DoF) whose
columns Phi_r are fixed in the child body J, so Phidot_r = v_J x Phi_r with the
body's whole velocity v_J = v_parent + sum_{s in J} Phi_s qd_s
(:mod:`.kinematics`).  To Algorithm 1 the run is a serial chain of single-DoF
rows, massless but for the last, so the composites IC_r and BC_r of every row of
J equal the body's; its formulas C_ij = Phi_i . F1_j (i an ancestor row of j, or
i = j) and C_ji = Phidot_i . F2_j + Phi_i . F3_j (i a strict ancestor) are the
block formulas of the journal version's Section 3 once Phidot is the body's.

Differentiating C with respect to qd_k, with Phi and IC fixed, the only place
where this differs from the chain of single-DoF joints Algorithm 2 assumes is
d Phidot_r / d qd_k = Phi_k x Phi_r: the chain has it for rows k up to r, the
body also for the later rows k of r's own joint.  The B(., IC) terms are the
chain's: for a later row k of J, B(Phi_k, IC_k) = B(Phi_k, IC_J).  So

    Gamma = Gamma_chain (lines 1-22 unchanged) + Delta, where, for every later
    row k of the joint of row j (k > j, same joint),

    (1) Delta[i, j, k] = Phi_i . IC_j (Phi_k x Phi_j)   for i = j and every ancestor row i of j,

    and, for every row j, every strict ancestor row i of j and every later row k
    of i's joint,

    (2) Delta[j, i, k] = (Phi_k x Phi_i) . IC_j Phi_j.

(1) comes from C_ij's F1_j = IC_j Phidot_j + ..., (2) from C_ji's Phidot_i . F2_j.
Their cost is O(N d n_J^2) for joints of n_J <= 6 rows, so the sweep keeps its
O(N d^2).  With generalized speeds (the free flyer's angular velocity is not the
derivative of any coordinate) Gamma[i, j, k] != Gamma[i, k, j] in general; C =
sum_k Gamma[:, :, k] qd_k and Gamma_ijk + Gamma_jik = the derivative of M_ij
along Phi_k still hold, and for single-DoF joints Delta is zero.
"""

from ..model import FREE, MF_PARENT, MF_SUB, MF_TYPE
from ..rotor_fold import SPIN_WIDTH
from .coriolis_matrix import coordinate, spin_axis
from .kinematics import SIZE_OUT, check_position, forward_positions
from .spatial import (
    WS_STREAM,
    WS_A,
    WS_IC,
    WS_S,
    WS_U,
    WS_V,
    add_rows,
    body_factor,
    body_step,
    cross,
    dot3,
    dot6,
    inertia_times,
    kernel,
    long_kernel,
)
from .streaming import stream_zeros


@long_kernel
def christoffel(mf, q, ws, Gamma):
    """Fill Gamma (n, n, n); returns 0 or a status code (kinematics.BAD_*, SIZE_*)."""
    n = mf.shape[0]
    status = check_position(mf, ws, q)
    if status:
        return status
    if Gamma.shape[0] != n or Gamma.shape[1] != n or Gamma.shape[2] != n:
        return SIZE_OUT
    forward_positions(mf, q, ws)  # lines 1-3: IC_i = I_i
    composite_inertias(mf, ws)
    zero_output(mf, ws, Gamma)
    sweep(mf, ws, Gamma, ws[0], -1, False)
    if has_multi_dof(mf):
        multi_dof_terms(mf, ws, Gamma, ws[0], -1)
    return 0


@kernel
def christoffel_through_map(mf, q, ws, Gbar, amap, a0, s0):
    """Gbar = A^T-reduced Gamma (Gbar_ijk = sum A_ai A_bj A_ck Gamma_abc) for A's rows at
    amap[a0:] (:mod:`.coordinate_change`; a0 < 0: the identity): the sweep adds each entry
    it computes into its reduced place, so no full-size tensor is formed and only Gbar is
    zeroed.  mf is the compact tree (:mod:`..rotor_fold`), q the full tree's (checked by the
    caller).  The spin of the folded rotors in the table at amap[s0:] is added by
    :func:`sweep` for those it can take (the direct tree, a rotor hanging from its leader's
    parent: :func:`spin_axes`) and by :func:`spin_terms` for the rest."""
    forward_positions(mf, q, ws)  # lines 1-3: IC_i = I_i
    composite_inertias(mf, ws)
    nb = Gbar.shape[0]
    for r in range(nb):
        for s in range(nb):
            for t in range(nb):
                Gbar[r, s, t] = 0.0
    merged = a0 < 0 and spin_axes(mf, ws, amap, s0)
    sweep(mf, ws, Gbar, amap, a0, merged)
    if has_multi_dof(mf):
        multi_dof_terms(mf, ws, Gbar, amap, a0)
    spin_terms(mf, ws, Gbar, amap, a0, s0, merged)
    return 0


@body_step
def led_from_parent(mf, amap, y):
    """Whether spin line y's rotor hangs from its leader's parent (not the world): on the
    direct compact tree its symbols then fall on the sweep's own triples (:func:`sweep`)."""
    p = int(amap[y])
    return p >= 0 and int(mf[int(amap[y + 1]), MF_PARENT]) == p


@kernel
def spin_axes(mf, ws, amap, s0):
    """On the direct compact tree (each row its own column, multiplier 1): each row k's spin
    vector sigma_k = sum of 1/2 J N a over the folded rotors led by k that hang from k's
    parent p, not the world (a: the world spin axis, N the rotor's multiplier), into
    ws[k, WS_A : WS_A + 3], and ws[k, WS_A + 3] = 1 if there is one; returns whether any
    row has one."""
    for k in range(mf.shape[0]):
        for c in range(4):
            ws[k, WS_A + c] = 0.0
    found = False
    for t in range(int(amap[s0])):
        y = s0 + 1 + SPIN_WIDTH * t
        if not led_from_parent(mf, amap, y):
            continue
        k = int(amap[y + 1])
        h = 0.5 * amap[y + 2] * amap[y + 7]
        ax, ay, az = spin_axis(ws, amap, y)
        ws[k, WS_A] += h * ax
        ws[k, WS_A + 1] += h * ay
        ws[k, WS_A + 2] += h * az
        ws[k, WS_A + 3] = 1.0
        found = True
    return found


@kernel
def spin_terms(mf, ws, Gbar, amap, a0, s0, merged):
    """The Christoffel symbols the spin of each folded rotor r in the table at amap[s0:]
    adds (:mod:`..rotor_fold`), except those of the rotors :func:`sweep` adds when
    ``merged`` (:func:`led_from_parent`), through the map: for rows x != m on the path from the root
    to r's parent p, t(x, m) = 1/2 J [s_x, s_m, a] (a: the spin axis), Gamma[x, m, r] =
    Gamma[x, r, m] = t(x, m) and Gamma[r, x, m] = -t(x, m) if m is x, an ancestor of x or a
    later row of x's joint (m before joint_end(x)), else t(x, m); r stands for the rotor's
    column and multiplier.  Each pair is visited once, m an ancestor of x: t(m, x) =
    -t(x, m), and u_m = 1/2 J s_m x a is formed once per row (in WS_U)."""
    for t in range(int(amap[s0])):
        y = s0 + 1 + SPIN_WIDTH * t
        p = int(amap[y])
        if p < 0 or (merged and led_from_parent(mf, amap, y)):
            continue  # on the world: a constant M entry, no symbol; or added by the sweep
        h = 0.5 * amap[y + 2]
        cr, mr = int(amap[y + 6]), amap[y + 7]
        ax, ay, az = spin_axis(ws, amap, y)
        m = p
        while m >= 0:
            u0, u1, u2 = cross(ws[m, WS_S], ws[m, WS_S + 1], ws[m, WS_S + 2], ax, ay, az)
            ws[m, WS_U], ws[m, WS_U + 1], ws[m, WS_U + 2] = h * u0, h * u1, h * u2
            m = int(mf[m, MF_PARENT])
        x = p
        while x >= 0:
            cx, mx = coordinate(amap, a0, x)
            m = int(mf[x, MF_PARENT])
            while m >= 0:  # m an ancestor of x: t(x, m) = s_x . u_m
                cm, mm = coordinate(amap, a0, m)
                w = mx * mm * mr * dot3(ws, x, WS_S, ws[m, WS_U], ws[m, WS_U + 1], ws[m, WS_U + 2])
                Gbar[cx, cm, cr] += w
                Gbar[cx, cr, cm] += w
                Gbar[cr, cx, cm] -= w  # m before joint_end(x)
                Gbar[cm, cx, cr] -= w
                Gbar[cm, cr, cx] -= w
                Gbar[cr, cm, cx] += w if x < joint_end(mf, m) else -w
                m = int(mf[m, MF_PARENT])
            x = int(mf[x, MF_PARENT])


@kernel
def composite_inertias(mf, ws):
    """Line 22, hoisted: IC_p(k) += IC_k, so IC_k is complete before step k reads it."""
    for k in range(mf.shape[0] - 1, -1, -1):
        b = int(mf[k, MF_PARENT])
        if b >= 0:
            add_rows(ws, b, k, WS_IC, 10)


@kernel
def sweep(mf, ws, Gamma, amap, a0, spin):
    """Lines 4-21 on IC and the columns in ws, into Gamma (zeroed by the caller), or into
    Gbar = A^T-reduced Gamma through the map (a0 >= 0): each entry Gamma_abc it computes is
    added, times m_a m_b m_c, to Gbar[col a, col b, col c] (:mod:`.coordinate_change`).

    With ``spin`` (unmapped only), also the symbols of the folded rotors led by each row k
    from k's parent (:func:`spin_axes`): those of such a rotor are, by :func:`spin_terms`'
    rule with r's column k and multiplier in sigma_k, the six entries of step k's triple
    (i, j, k) for each j != k and strict ancestor i of j: t = s_j . (s_i x sigma_k) is
    added to line 13's value and subtracted from line 12's, and Gamma[k, i, j] is minus
    line 13's, plus 2 t when j is a later row of i's joint.  As t = s_i . (sigma_k x s_j),
    adding sigma_k x s_j to F2's and subtracting it from F1's angular part (line 9) adds
    them all: the rotors led by row k cost one cross product per row j on k's path (plus a
    dot product per i for later rows of a multi-DoF joint), and no entry is written twice.

    Step k writes the entries whose deepest index is k, each once, except for j = k, where
    lines 12-14 write some entries twice and the last write stands (the values written
    first are zero in exact arithmetic: M_kk does not depend on an ancestor's q).  Through
    the map every entry must be added once, so there the j = k entries are added with the
    value the unmapped sweep leaves.
    """
    n = mf.shape[0]
    mapped = a0 >= 0
    for k in range(n - 1, -1, -1):  # line 4
        kw0, kw1, kw2 = ws[k, WS_S], ws[k, WS_S + 1], ws[k, WS_S + 2]
        ku0, ku1, ku2 = ws[k, WS_S + 3], ws[k, WS_S + 4], ws[k, WS_S + 5]
        # line 5: Btilde = B(Phi_k, IC_k)
        p00, p01, p02, p10, p11, p12, p20, p21, p22, lx, ly, lz = body_factor(
            ws, k, WS_IC, kw0, kw1, kw2, ku0, ku1, ku2
        )
        # line 6: D = -Btilde^T (module docstring), not formed
        ck, mk = coordinate(amap, a0, k)  # k's reduced column and multiplier (k, 1 unmapped)
        spun = spin and ws[k, WS_A + 3] != 0.0
        if spun:
            sx, sy, sz = ws[k, WS_A], ws[k, WS_A + 1], ws[k, WS_A + 2]
        j = k
        while j >= 0:  # line 8
            cj, mj = coordinate(amap, a0, j)
            mjk = mj * mk
            jw0, jw1, jw2 = ws[j, WS_S], ws[j, WS_S + 1], ws[j, WS_S + 2]
            ju0, ju1, ju2 = ws[j, WS_S + 3], ws[j, WS_S + 4], ws[j, WS_S + 5]
            # line 9: F1 = Btilde Phi_j, F2 = Btilde^T Phi_j (F3 = D Phi_j = -F2)
            f10 = p00 * jw0 + p01 * jw1 + p02 * jw2
            f11 = p10 * jw0 + p11 * jw1 + p12 * jw2
            f12 = p20 * jw0 + p21 * jw1 + p22 * jw2
            f13, f14, f15 = cross(jw0, jw1, jw2, lx, ly, lz)
            m0, m1, m2 = cross(lx, ly, lz, ju0, ju1, ju2)
            f20 = p00 * jw0 + p10 * jw1 + p20 * jw2 + m0
            f21 = p01 * jw0 + p11 * jw1 + p21 * jw2 + m1
            f22 = p02 * jw0 + p12 * jw1 + p22 * jw2 + m2
            # lines 11-17 for i = j: lines 12 and 13 write the same two entries, and line 13
            # writes last, so line 12 is skipped; line 14's two entries are one
            g2 = dot3(ws, j, WS_S, f20, f21, f22)
            if not mapped:
                Gamma[j, j, k] = g2  # line 13
                Gamma[j, k, j] = g2
                Gamma[k, j, j] = -g2  # line 14: Phi_j . F3 = -Phi_j . F2
            elif j == k:
                Gamma[ck, ck, ck] -= mjk * mk * g2  # the three writes are one entry
            else:
                w = mjk * mj * g2
                Gamma[cj, cj, ck] += w
                Gamma[cj, ck, cj] += w
                Gamma[ck, cj, cj] -= w
            spin_j = spun and j != k
            if spin_j:  # t = s_j . (s_i x sigma_k) = s_i . c, c = sigma_k x s_j (docstring)
                c0, c1, c2 = cross(sx, sy, sz, jw0, jw1, jw2)
                f10, f11, f12 = f10 - c0, f11 - c1, f12 - c2
                f20, f21, f22 = f20 + c0, f21 + c1, f22 + c2
            late = spin_j and mf[j, MF_TYPE] >= FREE  # i may be an earlier row of j's joint
            i = int(mf[j, MF_PARENT])
            while i >= 0:  # lines 11-17, i a strict ancestor of j
                g1 = dot6(ws, i, WS_S, f10, f11, f12, f13, f14, f15)
                g2 = dot3(ws, i, WS_S, f20, f21, f22)
                ci, mi = coordinate(amap, a0, i)
                w = mi * mjk
                if not mapped:
                    g3 = -g2  # line 14: Phi_i . F3 = -Phi_i . F2
                    if late and j < joint_end(mf, i):
                        g3 += 2.0 * dot3(ws, i, WS_S, c0, c1, c2)
                    Gamma[i, j, k] = g1  # line 12
                    Gamma[i, k, j] = g1
                    Gamma[j, i, k] = g2  # line 13
                    Gamma[j, k, i] = g2
                    Gamma[k, i, j] = g3  # line 14
                    Gamma[k, j, i] = -g2
                elif j == k:  # the six writes are three entries; line 14's stand
                    Gamma[ci, ck, ck] += w * g1
                    Gamma[ck, ci, ck] -= w * g2
                    Gamma[ck, ck, ci] -= w * g2
                else:
                    Gamma[ci, cj, ck] += w * g1
                    Gamma[ci, ck, cj] += w * g1
                    Gamma[cj, ci, ck] += w * g2
                    Gamma[cj, ck, ci] += w * g2
                    Gamma[ck, ci, cj] -= w * g2
                    Gamma[ck, cj, ci] -= w * g2
                i = int(mf[i, MF_PARENT])
            j = int(mf[j, MF_PARENT])


# Outputs of at least this many bytes, of which at most a STREAM_NONZERO-th is nonzero, are
# zeroed by streaming stores (see zero_output): half the per-core L2 cache of the benchmark
# machine (512 KiB), i.e. from 32 DoF on.  Nonzero: Talos full 9 %, Talos reduced 10 %, a
# 40-DoF quadruped 8 % (streaming measured faster); Talos full on a free flyer 19 %, a
# 2 x 20 DoF biped 29 %, a serial chain all (ordinary stores measured faster).
STREAM_BYTES = 256 * 1024
STREAM_NONZERO = 8
WS_DEPTH = WS_V  # 1: rows on the path from the world to r (a column the kernel leaves unused)


@kernel
def chain_triples(mf, ws):
    """The number of triples i <= j <= k on one root path, the sweep's inner iterations
    (each writes up to six entries of Gamma): sum over k of depth(k) (depth(k) + 1) / 2."""
    total = 0
    for r in range(mf.shape[0]):
        p = int(mf[r, MF_PARENT])
        d = 1 if p < 0 else int(ws[p, WS_DEPTH]) + 1
        ws[r, WS_DEPTH] = d
        total += d * (d + 1) // 2
    return total


@kernel
def zero_output(mf, ws, Gamma):
    """Gamma = 0, before the sweep writes its nonzero entries.

    Ordinary stores, except for large, mostly zero outputs.  From STREAM_BYTES on, the
    output no longer stays in the core's cache until the sweep writes into it, and zeroing
    it with ordinary stores costs a read and a write of every cache line: two thirds of the
    time for Talos full.  If moreover the sweep writes at most a STREAM_NONZERO-th of the
    entries (Gamma[a, b, c] is nonzero only if a, b, c lie on one root path), every line is
    zeroed by streaming stores (streaming.stream_zeros: written, not read), and only the
    lines the sweep writes (14 % of them for Talos) are read back.  For a mostly nonzero
    output (a chain) reading them back costs more than streaming saves.

    Only where the workspace says the outputs are fresh memory (``ws[0, WS_STREAM]``, set in
    the batches' workspaces): a single call's ``out=``, reused from call to call, stays in
    the cache, and streaming would push it to memory for the sweep to read back (Talos
    reduced, 32 DoF: 10 -> 21 us per call, measured).
    """
    n = Gamma.shape[0]
    fresh = ws[0, WS_STREAM] != 0.0
    large = n * n * n * 8 >= STREAM_BYTES
    if fresh and large and 6 * chain_triples(mf, ws) * STREAM_NONZERO <= n * n * n:
        stream_zeros(Gamma)
        return
    for a in range(n):
        for b in range(n):
            for c in range(n):
                Gamma[a, b, c] = 0.0


@kernel
def has_multi_dof(mf):
    for r in range(mf.shape[0]):
        if mf[r, MF_TYPE] >= FREE:
            return True
    return False


@kernel
def joint_end(mf, i):
    """One past the last row of row i's joint."""
    kind = mf[i, MF_TYPE]
    if kind < FREE:
        return i + 1
    return i - int(mf[i, MF_SUB]) + (6 if kind == FREE else 3)


@kernel
def phi_cross(ws, k, j):
    """Phi_k x Phi_j, the motion cross product (w, u) x (a, b) = (w x a, w x b + u x a)."""
    kw0, kw1, kw2 = ws[k, WS_S], ws[k, WS_S + 1], ws[k, WS_S + 2]
    jw0, jw1, jw2 = ws[j, WS_S], ws[j, WS_S + 1], ws[j, WS_S + 2]
    a0, a1, a2 = cross(kw0, kw1, kw2, jw0, jw1, jw2)
    b0, b1, b2 = cross(kw0, kw1, kw2, ws[j, WS_S + 3], ws[j, WS_S + 4], ws[j, WS_S + 5])
    c0, c1, c2 = cross(ws[k, WS_S + 3], ws[k, WS_S + 4], ws[k, WS_S + 5], jw0, jw1, jw2)
    return a0, a1, a2, b0 + c0, b1 + c1, b2 + c2


@kernel
def multi_dof_terms(mf, ws, Gamma, amap, a0):
    """Add Delta (module docstring, (1) and (2)); IC holds every row's composite inertia.
    Through the map when a0 >= 0 (:func:`add3`, as :func:`sweep` adds)."""
    n = mf.shape[0]
    for j in range(n):
        # (2): Phidot_i . F2_j, F2_j = IC_j Phi_j, for later rows k of a strict ancestor i
        f0, f1, f2, f3, f4, f5 = inertia_times(
            ws, j, WS_IC,
            ws[j, WS_S], ws[j, WS_S + 1], ws[j, WS_S + 2],
            ws[j, WS_S + 3], ws[j, WS_S + 4], ws[j, WS_S + 5],
        )  # fmt: skip
        i = int(mf[j, MF_PARENT])
        while i >= 0:
            for k in range(i + 1, joint_end(mf, i)):
                x0, x1, x2, x3, x4, x5 = phi_cross(ws, k, i)
                add3(Gamma, j, i, k, x0 * f0 + x1 * f1 + x2 * f2 + x3 * f3 + x4 * f4 + x5 * f5,
                     amap, a0)  # fmt: skip
            i = int(mf[i, MF_PARENT])
        # (1): Phi_i . IC_j (Phi_k x Phi_j) for later rows k of j's own joint
        for k in range(j + 1, joint_end(mf, j)):
            x0, x1, x2, x3, x4, x5 = phi_cross(ws, k, j)
            w0, w1, w2, w3, w4, w5 = inertia_times(ws, j, WS_IC, x0, x1, x2, x3, x4, x5)
            i = j
            while i >= 0:
                add3(Gamma, i, j, k, dot6(ws, i, WS_S, w0, w1, w2, w3, w4, w5), amap, a0)
                i = int(mf[i, MF_PARENT])


@body_step
def add3(G, i, j, k, value, amap, a0):
    """G[i, j, k] += value, or through the map (a0 >= 0) G[col i, col j, col k] +=
    m_i m_j m_k value."""
    if a0 < 0:
        G[i, j, k] += value
    else:
        ci, mi = coordinate(amap, a0, i)
        cj, mj = coordinate(amap, a0, j)
        ck, mk = coordinate(amap, a0, k)
        G[ci, cj, ck] += mi * mj * mk * value
