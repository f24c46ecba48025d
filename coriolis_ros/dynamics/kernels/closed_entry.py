"""A closed chain's compiled entry points: closure, A, dA/dy, the tree's terms and the
reduction in one call each, over one packed array.

Wensing & Slotine, Section VI-C1: with qdot = A(y) ydot, Cbar = A^T C A + A^T M Adot and
Gammabar_ijk = A_ai A_bj A_ck Gamma_abc + A_ai M_ab dA_bj/dy_k (:mod:`.closed_reduction`),
after the loops are closed by Newton and A, dA/dy computed (:mod:`.loop_closure`).  One
compiled call does all of it, so a call costs the arithmetic, not Python: every array the
steps need is a view into one float64 array, ``packed`` (:func:`unpack`): ci's words, cf, cw,
then the tree kernels' workspace.

``ci`` int64   the sizes (header I_*), the offsets of the integer regions and of the
               workspace's regions (W_*), then the integer data: the tree's and loops'
               tables, the dependent joints, the loops' lead joints, the kept positions,
               the QR's column permutation (written), the followers' rows, which
               dependent joints are continuous (their position is kept in [-pi, pi)) and
               which lead joints are (continuation takes their shorter way round);
``cf`` float64 the tree's and loops' geometry, then Newton's tolerance, largest step and the
               two rank thresholds, then each follower's ratio and offset;
``cw`` float64 the workspace: the last closed configuration and the y it was closed at (a
               flag after it says whether that y is valid), the placements, A, dA, the tree's
               M, Mdot, C, every scratch array, the loops' frames, the tree's Gamma and the
               reduction's scratch (W_GX, empty when Gamma is over the memory budget), and
               (W_CHORD) one plus the rank of the factorization of K_z at the last closed
               configuration left in the QR regions (0: none; Newton's first step from
               there is a chord step).

:func:`layout` computes the offsets; :class:`coriolis_ros.dynamics.loops.LoopClosure` fills
the arrays.  Status codes: 0, the input codes of :mod:`.kinematics` (BAD_Q, SIZE_Q, ...),
CLOSURE + the closure's outcome (:mod:`.loop_closure`: NOT_CLOSED, NOT_FINITE, WRONG_BRANCH,
SINGULAR), NOT_FINITE_OUT, NO_GAMMA, TREE + a tree kernel's status.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .christoffel import christoffel
from .closed_reduction import reduce_christoffel, reduce_coriolis
from .coriolis_matrix import coriolis_matrix
from .crba import mass_from_composites
from .kinematics import (
    BAD_Q,
    MAX_ABS,
    BAD_QD,
    OVERLAP,
    SIZE_OUT,
    SIZE_Q,
    SIZE_QD,
    all_finite,
    disjoint,
    square_ok,
)
from .spatial import WS_WIDTH
from .views import shaped
from .loop_closure import CLOSED, FOLLOWER_RANGE, S3_ROWS, S6_ROWS, closed_state

SC_SIZE = 3 * S3_ROWS + 6 * S6_ROWS  # the scratch rows s3 and s6, one after the other

# No runtime (see .spatial): views of the packed arrays are not reference-counted.
_OPTS = dict(cache=False, error_model="numpy", _nrt=False)
# Helpers that return views are inlined into their callers' IR (without the runtime a compiled
# function may only return its own arguments).
_VIEWS = dict(_OPTS, inline="always")

CLOSURE = 100  # + the closure's outcome
NOT_FINITE_OUT = 110  # a reduced output entry is not finite
NO_GAMMA = 120  # the workspace has no room for the tree's Gamma (refused by its budget)
TREE = 200  # + a tree kernel's status (an internal error: its inputs were checked)

# ci header: sizes (I_CI: of ci itself)
I_N, I_NQ, I_L, I_NZ, I_NL, I_NY, I_NQY, I_MAX_STEPS, I_NF, I_CI = range(10)
# ci header: offsets of the integer regions in ci
(I_TREE, I_LOOP, I_ANC, I_DEP, I_LEAD_Q, I_LEAD_C, I_LEAD_R, I_KEEP, I_PERM, I_FOL,
 I_WRAP, I_LWRAP) = range(10, 22)  # fmt: skip
I_W = 22  # ci[I_W + W_*]: the offset of workspace region W_* in cw
# workspace regions
(W_LAST, W_Y, W_Q, W_R, W_T, W_S, W_RES, W_INFO, W_A, W_DA, W_VU, W_SC, W_K, W_QR, W_NORMS,
 W_VHEAD, W_BETA, W_YS, W_STEP, W_TRIAL, W_RTRIAL, W_B, W_COL, W_UK, W_UJ, W_TARGET, W_V,
 W_M, W_MD, W_C, W_ADOT, W_MA, W_LEAD, W_FR, W_GX, W_CHORD) = range(36)  # fmt: skip
W_LAST_REGION = W_CHORD  # (of size 1)
HEADER = I_W + 36
# cf: the tree's geometry (n x 12), the loops' (L x 27), then these four, then the followers'
# (ratio, offset) pairs
P_TOL, P_MAX_STEP, P_RANK_RTOL, P_SINGULAR_RTOL = range(4)
P_FOLLOWERS = 4


def layout(
    n: int,
    nq: int,
    loops: int,
    nz: int,
    nl: int,
    ny: int,
    nqy: int,
    nf: int = 0,
    gamma: bool = True,
):
    """(ci offsets {name: (offset, size)}, cw regions [(offset, size)] in W_* order, sizes of
    ci, cf and cw) for a tree of n rows and nq positions, ``loops`` loops, nz dependent and
    nl lead joints, ny independent velocities, nqy independent positions and nf followers
    (joints that follow a leader at a constant ratio: mimic joints, geared rotors).  With
    ``gamma``, the region W_GX holds the tree's Gamma and the reduction's scratch
    (:func:`gamma_size` doubles); without, it is empty and the Gamma entry points refuse
    (NO_GAMMA): the caller's memory budget did not allow it."""
    m = 6 * loops
    ints = [("tree", 3 * n), ("loop", 3 * loops), ("anc", 2 * loops * n), ("dep", nz),
            ("lead_q", nl), ("lead_c", nl), ("lead_r", nl), ("keep", nqy),
            ("perm", nz), ("fol", 2 * nf), ("wrap", nz), ("lwrap", nl)]  # fmt: skip
    offsets, at = {}, HEADER
    for name, size in ints:
        offsets[name] = (at, size)
        at += size
    work = [nq, nqy + 1, nq, 9 * n, 3 * n, 6 * n, m, 3, n * ny, n * ny * ny, 6 * n, SC_SIZE,
            m * nz, m * nz, nz, nz, nz, m, nz, nq, m, m, m, n, n, nl, n, n * n, n * n, n * n,
            n * ny, n * ny, nl, 30 * loops, gamma_size(n, ny) if gamma else 0, 1]  # fmt: skip
    regions, w = [], 0
    for size in work:
        regions.append((w, size))
        w += size
    return offsets, regions, at, 12 * n + 27 * loops + P_FOLLOWERS + 2 * nf, w


def gamma_size(n: int, ny: int) -> int:
    """Doubles of the region W_GX: the tree's Gamma (n^3), then X (n^2 ny), the scratch of
    :func:`.closed_reduction.reduce_christoffel`."""
    return n * n * n + n * n * ny


@njit(**_VIEWS)
def _ints(ci):
    n, L, nz, nl, nqy = ci[I_N], ci[I_L], ci[I_NZ], ci[I_NL], ci[I_NQY]
    o = ci[I_TREE]
    tree_i = shaped(ci[o : o + 3 * n], (n, 3))
    o = ci[I_LOOP]
    loop_i = shaped(ci[o : o + 3 * L], (L, 3))
    o = ci[I_ANC]
    anc = shaped(ci[o : o + 2 * L * n], (L, 2, n))
    dep = ci[ci[I_DEP] : ci[I_DEP] + nz]
    lead_q = ci[ci[I_LEAD_Q] : ci[I_LEAD_Q] + nl]
    lead_c = ci[ci[I_LEAD_C] : ci[I_LEAD_C] + nl]
    lead_r = ci[ci[I_LEAD_R] : ci[I_LEAD_R] + nl]
    keep = ci[ci[I_KEEP] : ci[I_KEEP] + nqy]
    perm = ci[ci[I_PERM] : ci[I_PERM] + nz]
    return tree_i, loop_i, anc, dep, lead_q, lead_c, lead_r, keep, perm


@njit(**_VIEWS)
def _w(ci, cw, region, size):
    o = ci[I_W + region]
    return cw[o : o + size]


@njit(**_OPTS)
def _close(ci, cf, cw, has_start):
    """Close the loops from the target in W_Q (continuation from W_LAST when ``has_start``);
    on success W_LAST is the result and the y cache is cleared.  Returns the closure's
    outcome (loop_closure.CLOSED, ...).

    A continuous lead joint's turns do not move the loops: continuation takes it the shorter
    way round, to its target modulo a turn, and its target value is put back after the
    closure (a jump of many turns in one call costs a few steps, not one per 0.2 rad)."""
    n, nq, L, nz, nl, ny = ci[I_N], ci[I_NQ], ci[I_L], ci[I_NZ], ci[I_NL], ci[I_NY]
    m = 6 * L
    tree_i, loop_i, anc, dep, lead_q, lead_c, lead_r, _, perm = _ints(ci)
    tree_f = shaped(cf[: 12 * n], (n, 12))
    loop_f = shaped(cf[12 * n : 12 * n + 27 * L], (L, 27))
    p = 12 * n + 27 * L
    q = _w(ci, cw, W_Q, nq)
    last = _w(ci, cw, W_LAST, nq)
    literal = _w(ci, cw, W_LEAD, nl)
    turns = ci[ci[I_LWRAP] : ci[I_LWRAP] + nl]
    chord_at = ci[I_W + W_CHORD]
    chord = int(cw[chord_at]) - 1 if has_start else -1
    cw[chord_at] = 0.0  # QR's regions are rewritten below; valid again once W_LAST is
    if has_start:
        for c in range(nl):
            i = lead_q[c]
            literal[c] = q[i]
            if turns[c] and not abs(q[i] - last[i]) <= math.pi:
                # from the last position less its whole turns, as the sum of a large one and
                # the short way would round (to 0.125 rad at 1e15): the loops see the same
                # angles, and the closure the target's own
                start = _angle(last[i])
                last[i] = start  # the same configuration: no cached y may return it as is
                cw[ci[I_W + W_Y] + ci[I_NQY]] = 0.0
                q[i] = start + _shorter_way(_angle(q[i]) - start)
    if L == 0:  # no loop: only followers of sums of joints (a constant A)
        status = CLOSED
        _w(ci, cw, W_INFO, 3)[2] = -1.0  # no factorization for a chord step
    else:
        status = closed_state(
            tree_i, tree_f, loop_i, loop_f, anc, q, last, has_start, has_start, chord, dep,
            lead_q, lead_c, lead_r,
            cf[p + P_TOL], ci[I_MAX_STEPS], cf[p + P_MAX_STEP], cf[p + P_RANK_RTOL],
            cf[p + P_SINGULAR_RTOL],
            shaped(_w(ci, cw, W_R, 9 * n), (n, 3, 3)), shaped(_w(ci, cw, W_T, 3 * n), (n, 3)),
            shaped(_w(ci, cw, W_S, 6 * n), (n, 6)), shaped(_w(ci, cw, W_FR, 30 * L), (L, 10, 3)),
            _w(ci, cw, W_RES, m), _w(ci, cw, W_INFO, 3),
            shaped(_w(ci, cw, W_A, n * ny), (n, ny)),
            shaped(_w(ci, cw, W_DA, n * ny * ny), (n, ny, ny)),
            shaped(_w(ci, cw, W_VU, 6 * n), (n, 6)),
            shaped(_w(ci, cw, W_SC, 3 * S3_ROWS), (S3_ROWS, 3)),
            shaped(cw[ci[I_W + W_SC] + 3 * S3_ROWS : ci[I_W + W_SC] + SC_SIZE], (S6_ROWS, 6)),
            shaped(_w(ci, cw, W_K, m * nz), (m, nz)), shaped(_w(ci, cw, W_QR, m * nz), (m, nz)),
            perm, _w(ci, cw, W_NORMS, nz), _w(ci, cw, W_VHEAD, nz), _w(ci, cw, W_BETA, nz),
            _w(ci, cw, W_YS, m), _w(ci, cw, W_STEP, nz), _w(ci, cw, W_TRIAL, nq),
            _w(ci, cw, W_RTRIAL, m), _w(ci, cw, W_B, m), _w(ci, cw, W_COL, m),
            _w(ci, cw, W_UK, n), _w(ci, cw, W_UJ, n), _w(ci, cw, W_TARGET, nl),
        )  # fmt: skip
    if status == CLOSED:
        _wrap(ci, tree_i, dep, q)
        if has_start:
            for c in range(nl):
                if turns[c]:
                    q[lead_q[c]] = literal[c]
    if status == CLOSED and ci[I_NF] > 0:  # after the wrap: followers see the leader's value
        bad = _follow(ci, cf[p + P_FOLLOWERS :], tree_i, q,
                      shaped(_w(ci, cw, W_A, n * ny), (n, ny)),
                      shaped(_w(ci, cw, W_DA, n * ny * ny), (n, ny, ny)))  # fmt: skip
        if bad >= 0:
            _w(ci, cw, W_INFO, 3)[1] = bad
            # A and dA are the refused configuration's now, not W_LAST's: no cached y may
            # return them (the next call closes the loops again)
            cw[ci[I_W + W_Y] + ci[I_NQY]] = 0.0
            return FOLLOWER_RANGE
    if status == CLOSED:
        for i in range(nq):
            last[i] = q[i]
        cw[ci[I_W + W_Y] + ci[I_NQY]] = 0.0
        cw[chord_at] = _w(ci, cw, W_INFO, 3)[2] + 1.0
    return status


@njit(**_OPTS)
def _angle(x):
    """x plus whole turns, in [-pi, pi]: by sin and cos, whose argument reduction is exact at
    any size (x - 2 pi floor(...) is not: at 1e49 its rounding is 1e33)."""
    return math.atan2(math.sin(x), math.cos(x))


@njit(**_OPTS)
def _shorter_way(d):
    """d, an angle difference, plus whole turns into [-pi, pi)."""
    return d - 2.0 * math.pi * math.floor((d + math.pi) / (2.0 * math.pi))


@njit(**_OPTS)
def _wrap(ci, tree_i, dep, q):
    """Continuous dependent joints back into [-pi, pi): one turning with a crank gains a turn
    per turn of the crank, and Newton, which moves it by steps near 1e-12, can no longer
    place it once its value is so large that its spacing of doubles is that coarse (32768
    rad on the four-bar: after an hour of a crank at 10 rad/s)."""
    o = ci[I_WRAP]
    for z in range(dep.shape[0]):
        if ci[o + z]:
            i = tree_i[dep[z], 2]
            x = q[i]
            if abs(x) > math.pi:
                q[i] = _shorter_way(x)


@njit(**_OPTS)
def _follow(ci, ratios, tree_i, q, A, dA):
    """The followers (mimic joints, geared rotors: q_f = ratio q_l + offset; a joint coupled
    to a sum of joints: q_f = sum of ratio q_l + offset) from their leaders, after the
    closure: their position, A's row (the same sum of the leaders' rows) and dA's.  A
    follower's terms are consecutive, its offset on the first.  No follower moves a loop
    (LoopClosure refuses one that does), so the closure never reads them.  Returns -1, or
    the first term of the first follower whose position is beyond +-MAX_ABS (the tree's
    kernels refuse it)."""
    nf, ny = ci[I_NF], A.shape[1]
    o = ci[I_FOL]
    first = 0
    for k in range(nf):
        f, lead = ci[o + 2 * k], ci[o + 2 * k + 1]
        ratio = ratios[2 * k]
        i = tree_i[f, 2]
        if k == first:  # the follower's first term: its offset
            q[i] = ratios[2 * k + 1]
            for j in range(ny):
                A[f, j] = 0.0
                for m in range(ny):
                    dA[f, j, m] = 0.0
        q[i] += ratio * q[tree_i[lead, 2]]
        for j in range(ny):
            A[f, j] += ratio * A[lead, j]
            for m in range(ny):
                dA[f, j, m] += ratio * dA[lead, j, m]
        if k + 1 == nf or ci[o + 2 * k + 2] != f:  # its last term
            if not abs(q[i]) <= MAX_ABS:
                return first
            first = k + 1
    return -1


@njit(**_OPTS)
def close_loops(ci, cf, cw, has_start):
    """:func:`_close` as an entry point (0 or CLOSURE + the outcome)."""
    status = _close(ci, cf, cw, has_start)
    return 0 if status == CLOSED else CLOSURE + status


@njit(**_OPTS)
def update(ci, cf, cw, y):
    """Close the loops at the independent positions y, unless they were closed at this y
    last (then nothing is done): continuation from W_LAST; W_LAST, A and dA are the result.
    Returns 0, BAD_Q, SIZE_Q or CLOSURE + the outcome."""
    nqy, nq = ci[I_NQY], ci[I_NQ]
    if y.shape[0] != nqy:
        return SIZE_Q
    if not all_finite(y):
        return BAD_Q
    cached = _w(ci, cw, W_Y, nqy + 1)
    if cached[nqy] == 1.0:
        same = True
        for i in range(nqy):
            if cached[i] != y[i]:
                same = False
                break
        if same:
            return 0
    q = _w(ci, cw, W_Q, nq)
    last = _w(ci, cw, W_LAST, nq)
    for i in range(nq):
        q[i] = last[i]
    keep = ci[ci[I_KEEP] : ci[I_KEEP] + nqy]
    for i in range(nqy):
        q[keep[i]] = y[i]
    status = _close(ci, cf, cw, True)
    if status != CLOSED:
        return CLOSURE + status
    for i in range(nqy):
        cached[i] = y[i]
    cached[nqy] = 1.0
    return 0


@njit(**_VIEWS)
def unpack(packed):
    """(ci, cf, cw, tws) from ``packed`` (LoopClosure.packed): ci's int64 words (their bits),
    cf, cw, then the tree kernels' workspace (WS_WIDTH columns).  The entry points take the
    one array (and the tree's model floats): each array argument costs the caller's dispatch
    about a tenth of a microsecond, a four-bar's whole Cbar ten."""
    words = packed.view(np.int64)
    ci = words[: words[I_CI]]
    ni = ci.shape[0]
    nf = 12 * ci[I_N] + 27 * ci[I_L] + P_FOLLOWERS + 2 * ci[I_NF]
    nw = ci[I_W + W_LAST_REGION] + 1
    at = ni + nf + nw
    rows = (packed.shape[0] - at) // WS_WIDTH
    tws = shaped(packed[at : at + rows * WS_WIDTH], (rows, WS_WIDTH))
    return ci, packed[ni : ni + nf], packed[ni + nf : at], tws


@njit(**_OPTS)
def _check_rates(ny, yd, Mbar, Mbardot, Cbar):
    """0, or the status of a ydot of the wrong size or not finite, or an (ny x ny) output of
    the wrong shape."""
    if yd.shape[0] != ny:
        return SIZE_QD
    if not all_finite(yd):
        return BAD_QD
    if not (square_ok(ny, Mbar) and square_ok(ny, Mbardot) and square_ok(ny, Cbar)):
        return SIZE_OUT
    return 0


@njit(nogil=True, **_OPTS)
def closed_coriolis(mf, packed, y, yd, Mbar, Mbardot, Cbar):
    """Mbar, Mbardot and Cbar at (y, ydot): the loops closed at y, the tree's M, Mdot, C at
    (q(y), A ydot) by Algorithm 1, reduced (:func:`.closed_reduction.reduce_coriolis`)."""
    ci, cf, cw, tws = unpack(packed)
    n, nq, ny = ci[I_N], ci[I_NQ], ci[I_NY]
    status = _check_rates(ny, yd, Mbar, Mbardot, Cbar)
    if status:
        return status
    if not disjoint(Mbar, Mbardot, Cbar):
        return OVERLAP
    status = update(ci, cf, cw, y)
    if status:
        return status
    A = shaped(_w(ci, cw, W_A, n * ny), (n, ny))
    v = _w(ci, cw, W_V, n)
    for a in range(n):
        acc = 0.0
        for j in range(ny):
            acc += A[a, j] * yd[j]
        v[a] = acc
    M = shaped(_w(ci, cw, W_M, n * n), (n, n))
    Mdot = shaped(_w(ci, cw, W_MD, n * n), (n, n))
    C = shaped(_w(ci, cw, W_C, n * n), (n, n))
    status = coriolis_matrix(mf, _w(ci, cw, W_LAST, nq), v, tws, M, Mdot, C)
    if status:
        return TREE + status
    dA = shaped(_w(ci, cw, W_DA, n * ny * ny), (n, ny, ny))
    Adot = shaped(_w(ci, cw, W_ADOT, n * ny), (n, ny))
    MA = shaped(_w(ci, cw, W_MA, n * ny), (n, ny))
    if not reduce_coriolis(M, Mdot, C, A, dA, yd, Adot, MA, Mbar, Mbardot, Cbar):
        return NOT_FINITE_OUT
    return 0


@njit(**_OPTS)
def _has_gamma(ci):
    """Whether the workspace has the region W_GX (:func:`gamma_size` doubles, not 0)."""
    n, ny = ci[I_N], ci[I_NY]
    return ci[I_W + W_CHORD] - ci[I_W + W_GX] == n * n * n + n * n * ny


@njit(**_OPTS)
def _gamma_bar(mf, ci, cw, tws, out):
    """Gammabar into out (ny, ny, ny) at the closed configuration W_LAST: the tree's Gamma
    (Algorithm 2) and M there (from Algorithm 2's composite inertias), reduced
    (:func:`.closed_reduction.reduce_christoffel`); W_MA is left holding M A.  Returns 0,
    NO_GAMMA, TREE + a tree kernel's status or NOT_FINITE_OUT."""
    n, nq, ny = ci[I_N], ci[I_NQ], ci[I_NY]
    if not _has_gamma(ci):
        return NO_GAMMA
    at = ci[I_W + W_GX]
    G = shaped(cw[at : at + n * n * n], (n, n, n))
    X = shaped(cw[at + n * n * n : ci[I_W + W_CHORD]], (n, n, ny))
    q = _w(ci, cw, W_LAST, nq)
    status = christoffel(mf, q, tws, G)
    if status:
        return TREE + status
    M = shaped(_w(ci, cw, W_M, n * n), (n, n))
    mass_from_composites(mf, tws, M)  # from what christoffel left in tws
    A = shaped(_w(ci, cw, W_A, n * ny), (n, ny))
    dA = shaped(_w(ci, cw, W_DA, n * ny * ny), (n, ny, ny))
    MA = shaped(_w(ci, cw, W_MA, n * ny), (n, ny))
    if not reduce_christoffel(G, M, A, dA, X, MA, out):
        return NOT_FINITE_OUT
    return 0


@njit(nogil=True, **_OPTS)
def closed_christoffel(mf, packed, y, out):
    """Gammabar at y into out (ny, ny, ny): the loops closed at y, then :func:`_gamma_bar`."""
    ci, cf, cw, tws = unpack(packed)
    ny = ci[I_NY]
    if not (out.shape[0] == ny and out.shape[1] == ny and out.shape[2] == ny):
        return SIZE_OUT
    status = update(ci, cf, cw, y)
    if status:
        return status
    return _gamma_bar(mf, ci, cw, tws, out)


@njit(nogil=True, **_OPTS)
def closed_coriolis_christoffel(mf, packed, y, yd, Mbar, Mbardot, Cbar, out):
    """Mbar, Mbardot, Cbar at (y, ydot) and Gammabar at y, the loops closed once: Gammabar by
    :func:`_gamma_bar`, then Cbar_ij = sum_k Gammabar_ijk ydot_k (Section VI-C1: the reduced
    Christoffel symbols give the reduced system's factorization), Mbar = A^T (M A) and
    Mbardot = Cbar + Cbar^T (the skew-symmetry of Mbardot - 2 Cbar, the same section).  The
    tree's C and Mdot are not formed: Gammabar holds them."""
    ci, cf, cw, tws = unpack(packed)
    n, ny = ci[I_N], ci[I_NY]
    if not _has_gamma(ci):  # before the closure moves anything
        return NO_GAMMA
    status = _check_rates(ny, yd, Mbar, Mbardot, Cbar)
    if status:
        return status
    if not (out.shape[0] == ny and out.shape[1] == ny and out.shape[2] == ny):
        return SIZE_OUT
    if not (disjoint(Mbar, Mbardot, Cbar) and disjoint(Mbar, Mbardot, out)
            and disjoint(Mbar, Cbar, out) and disjoint(Mbardot, Cbar, out)):  # fmt: skip
        return OVERLAP
    status = update(ci, cf, cw, y)
    if status:
        return status
    status = _gamma_bar(mf, ci, cw, tws, out)
    if status:
        return status
    A = shaped(_w(ci, cw, W_A, n * ny), (n, ny))
    MA = shaped(_w(ci, cw, W_MA, n * ny), (n, ny))
    for i in range(ny):
        for j in range(ny):
            cb = 0.0
            for k in range(ny):
                cb += out[i, j, k] * yd[k]
            mb = 0.0
            for a in range(n):
                mb += A[a, i] * MA[a, j]
            Cbar[i, j] = cb
            Mbar[i, j] = mb
    finite = True
    for i in range(ny):
        for j in range(ny):
            x = Cbar[i, j] + Cbar[j, i]
            Mbardot[i, j] = x
            finite = finite and math.isfinite(x) and math.isfinite(Mbar[i, j])
    return 0 if finite else NOT_FINITE_OUT
