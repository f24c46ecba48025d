"""Compiled loop-closure kinematics: placements, the residual phi(q), K(q), D_u(K w), Newton.

The arrays (built once by :class:`coriolis_ros.dynamics.loops.LoopClosure`):

``tree_i`` (n, 3) int64   per row: parent row (-1: world), kind (ROW_REVOLUTE, ROW_PRISMATIC,
                          ROW_ROOT: a floating or planar root's rows, held at the origin), q index
``tree_f`` (n, 12)        per row: rotation parent body -> joint frame (row-major), origin
``loop_i`` (L, 3) int64   per loop: kind (LOOP_REVOLUTE, LOOP_PRISMATIC, LOOP_FIXED), the rows
                          of P's body and S's body (-1: the world)
``loop_f`` (L, 27)        per loop: P's rotation and origin in its body, S's, the unit axis
``anc``    (L, 2, n) int64 per loop: 1 if row j is an ancestor (or the body) of P's / S's body
``Fk``     (L, 10, 3)     per loop, written by :func:`residual` (or :func:`all_frames`) with the
                          placements: P's axis in the world, P's origin, S's origin, S's axis,
                          then P's world rotation and S's; the Jacobians and the branch test
                          read them instead of placing the loop's frames again

Nothing here allocates: small temporaries live in ``s3`` (S3_ROWS, 3) and ``s6`` (S6_ROWS, 6),
whose rows are the 3- and 6-vectors of the helpers (regions S3_*, S6_*; row slices, never a
reshape, which costs more than the arithmetic here), and the Newton and QR scratch arrays
come from the caller (:mod:`.closed_entry` carves them from one packed workspace).  Copies
are explicit loops: slice assignment checks for overlap on every call.

Spatial vectors are (angular, linear at the world's origin), in world coordinates with the
tree's root at the origin (every loop quantity is relative, so the root's motion drops out).
The formulas are those of :mod:`coriolis_ros.dynamics.loops` (its docstrings derive them).
"""

from __future__ import annotations

import math

from numba import njit

ROW_REVOLUTE, ROW_PRISMATIC, ROW_ROOT = 0, 1, 2
LOOP_REVOLUTE, LOOP_PRISMATIC, LOOP_FIXED = 0, 1, 2
# Newton's outcomes
CLOSED, NOT_CLOSED, NOT_FINITE = 0, 1, 2
# A closure whose residual is below this fraction of Newton's tolerance after a Newton step is
# not polished (the polish costs a third of a closure along a trajectory), provided the next
# Newton step would move no joint by more than the tolerance either
POLISHED = 0.1
# Polishing steps at most: near a dead point (K_z nearly singular) a residual below the
# tolerance still leaves the dependent joints off by about tol / sigma_min(K_z), so Newton
# goes on, with K_z factored afresh, until its step is below the tolerance too
POLISH_STEPS = 4

# _nrt=False (as the tree's kernels, see .spatial): nothing here allocates, and without the
# runtime no view is reference-counted (an atomic increment and decrement each).
_OPTS = dict(cache=False, nogil=True, error_model="numpy", _nrt=False)
# The small per-loop steps are inlined into their callers: as calls, every array argument is
# passed as an exploded struct and every returned view reference-counted, which costs more
# than their arithmetic.
_LEAF = dict(_OPTS, forceinline=True)
_VIEWS = dict(_OPTS, inline="always")  # returns views: inlined into the caller's IR
# Rows of the scratch arrays s3 and s6 (no two helpers that nest share one).
S3_V = 0  # 6: the 3-vectors of residual and loop_rows
S3_RATE = 6  # 12: the 3-vectors of loop_rows_rate
S3_ROWS = 18
# A chord step (Newton's step with an earlier factorization of K_z) is kept when it shrinks
# max |phi| at least this much; otherwise Newton factors K_z where it stands
CHORD_GAIN = 0.1
S6_ZERO = 0  # zeros (the world's twist)
S6_OUT = 1  # one loop's six rows
S6_TW = 2  # 4: the twists vs, vp, ds, dp of jacobian_rate
S6_ROWS = 6


@njit(**_OPTS)
def placements(tree_i, tree_f, q, R, t, S):
    """Every body's rotation R[i] and origin t[i], and every row's motion axis S[i]."""
    n = tree_i.shape[0]
    for i in range(n):
        kind = tree_i[i, 1]
        for c in range(6):
            S[i, c] = 0.0
        if kind == ROW_ROOT:
            for r in range(3):
                for c in range(3):
                    R[i, r, c] = 1.0 if r == c else 0.0
                t[i, r] = 0.0
            continue
        p = tree_i[i, 0]
        # joint frame: parent body (or the world) times the tree transform
        for r in range(3):
            for c in range(3):
                acc = 0.0
                for m in range(3):
                    prm = (1.0 if r == m else 0.0) if p < 0 else R[p, r, m]
                    acc += prm * tree_f[i, 3 * m + c]
                R[i, r, c] = acc
            o = 0.0 if p < 0 else t[p, r]
            for m in range(3):
                prm = (1.0 if r == m else 0.0) if p < 0 else R[p, r, m]
                o += prm * tree_f[i, 9 + m]
            t[i, r] = o
        ax, ay, az = R[i, 0, 2], R[i, 1, 2], R[i, 2, 2]
        x = q[tree_i[i, 2]]
        if kind == ROW_PRISMATIC:
            t[i, 0] += ax * x
            t[i, 1] += ay * x
            t[i, 2] += az * x
            S[i, 3], S[i, 4], S[i, 5] = ax, ay, az
        else:
            c, s = math.cos(x), math.sin(x)
            for r in range(3):
                a0, a1 = R[i, r, 0], R[i, r, 1]
                R[i, r, 0] = a0 * c + a1 * s
                R[i, r, 1] = -a0 * s + a1 * c
            ox, oy, oz = t[i, 0], t[i, 1], t[i, 2]
            S[i, 0], S[i, 1], S[i, 2] = ax, ay, az
            S[i, 3] = oy * az - oz * ay
            S[i, 4] = oz * ax - ox * az
            S[i, 5] = ox * ay - oy * ax


@njit(**_LEAF)
def _frame(R, t, row, loop_f, k, off, Rout, pout):
    """World rotation and origin of loop k's frame stored at loop_f[k, off:off + 12]."""
    for r in range(3):
        for c in range(3):
            if row < 0:
                Rout[r, c] = loop_f[k, off + 3 * r + c]
            else:
                acc = 0.0
                for m in range(3):
                    acc += R[row, r, m] * loop_f[k, off + 3 * m + c]
                Rout[r, c] = acc
        if row < 0:
            pout[r] = loop_f[k, off + 9 + r]
        else:
            acc = t[row, r]
            for m in range(3):
                acc += R[row, r, m] * loop_f[k, off + 9 + m]
            pout[r] = acc


@njit(**_LEAF)
def _cross(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0], out[1], out[2] = x, y, z


@njit(**_LEAF)
def _perp(a, x, out):
    """x minus its component along the unit vector a."""
    d = a[0] * x[0] + a[1] * x[1] + a[2] * x[2]
    for r in range(3):
        out[r] = x[r] - a[r] * d


@njit(**_VIEWS)
def frames(Fk, k):
    """(F, RP, RS), loop k's rows of ``Fk``: F (4, 3) holds P's axis in the world, P's origin,
    S's origin, S's axis; RP and RS are P's and S's world rotations."""
    return Fk[k, 0:4], Fk[k, 4:7], Fk[k, 7:10]


@njit(**_VIEWS)
def loop_frames(R, t, loop_i, loop_f, k, Fk):
    """Loop k's frames at the placements R, t, into its rows of ``Fk``; returns
    :func:`frames`."""
    F, RP, RS = frames(Fk, k)
    _frame(R, t, loop_i[k, 1], loop_f, k, 0, RP, F[1])
    _frame(R, t, loop_i[k, 2], loop_f, k, 12, RS, F[2])
    for r in range(3):
        F[0, r] = RP[r, 0] * loop_f[k, 24] + RP[r, 1] * loop_f[k, 25] + RP[r, 2] * loop_f[k, 26]
        F[3, r] = RS[r, 0] * loop_f[k, 24] + RS[r, 1] * loop_f[k, 25] + RS[r, 2] * loop_f[k, 26]
    return F, RP, RS


@njit(**_OPTS)
def all_frames(R, t, loop_i, loop_f, Fk):
    """Every loop's frames into ``Fk`` (after :func:`placements`)."""
    for k in range(loop_i.shape[0]):
        loop_frames(R, t, loop_i, loop_f, k, Fk)


@njit(**_OPTS)
def residual(tree_i, tree_f, loop_i, loop_f, q, R, t, S, r, s3, Fk):
    """phi(q) into r (6 per loop); returns max |phi|.  R, t, S and Fk are q's."""
    placements(tree_i, tree_f, q, R, t, S)
    d, tmp, col_p, col_s = s3[S3_V], s3[S3_V + 1], s3[S3_V + 2], s3[S3_V + 3]
    size = 0.0
    for k in range(loop_i.shape[0]):
        F, RP, RS = loop_frames(R, t, loop_i, loop_f, k, Fk)
        for c in range(3):
            d[c] = F[2, c] - F[1, c]
        kind = loop_i[k, 0]
        if kind == LOOP_PRISMATIC:
            _perp(F[0], d, tmp)
            for c in range(3):
                r[6 * k + c] = tmp[c]
        else:
            for c in range(3):
                r[6 * k + c] = d[c]
        if kind == LOOP_REVOLUTE:
            _cross(F[0], F[3], tmp)
            for c in range(3):
                r[6 * k + 3 + c] = tmp[c]
        else:  # 1/2 sum_c (RP e_c) x (RS e_c)
            for m in range(3):
                r[6 * k + 3 + m] = 0.0
            for c in range(3):
                for m in range(3):
                    col_p[m] = RP[m, c]
                    col_s[m] = RS[m, c]
                _cross(col_p, col_s, tmp)
                for m in range(3):
                    r[6 * k + 3 + m] += 0.5 * tmp[m]
        for m in range(6):
            v = abs(r[6 * k + m])
            if not v <= size:  # NaN propagates
                size = v
    return size


@njit(**_LEAF)
def _point(v, p, out):
    """Velocity of the point p for the twist v (angular, linear at the origin)."""
    out[0] = v[3] + v[1] * p[2] - v[2] * p[1]
    out[1] = v[4] + v[2] * p[0] - v[0] * p[2]
    out[2] = v[5] + v[0] * p[1] - v[1] * p[0]


@njit(**_LEAF)
def loop_rows(kind, F, vs, vp, out, s3):
    """K w for one loop (6 rows) from the twists vs, vp of S's and P's bodies under w."""
    a, pP, pS = F[0], F[1], F[2]
    ps, pp, w = s3[S3_V], s3[S3_V + 1], s3[S3_V + 2]
    tmp, d, x = s3[S3_V + 3], s3[S3_V + 4], s3[S3_V + 5]
    _point(vs, pS, ps)
    _point(vp, pP, pp)
    for c in range(3):
        w[c] = vs[c] - vp[c]
    if kind == LOOP_PRISMATIC:
        for c in range(3):
            d[c] = pS[c] - pP[c]
        _cross(vp[:3], d, tmp)
        for c in range(3):
            x[c] = ps[c] - pp[c] - tmp[c]
        _perp(a, x, tmp)
        for c in range(3):
            out[c] = tmp[c]
            out[3 + c] = w[c]
    elif kind == LOOP_REVOLUTE:
        _perp(a, w, tmp)
        for c in range(3):
            out[c] = ps[c] - pp[c]
            out[3 + c] = tmp[c]
    else:
        for c in range(3):
            out[c] = ps[c] - pp[c]
            out[3 + c] = w[c]


@njit(**_LEAF)
def loop_rows_rate(kind, F, vs, vp, ds, dp, us, up, out, s3):
    """D_u (K w) for one loop: vs, vp the twists under w, ds, dp their rates along u (w held),
    us, up the twists under u, of S's and P's bodies."""
    a, pP, pS = F[0], F[1], F[2]
    w_rel, dw, dv = s3[S3_RATE], s3[S3_RATE + 1], s3[S3_RATE + 2]
    ps_dot, pp_dot = s3[S3_RATE + 3], s3[S3_RATE + 4]
    t1, t2, a_dot = s3[S3_RATE + 5], s3[S3_RATE + 6], s3[S3_RATE + 7]
    _point(us, pS, ps_dot)
    _point(up, pP, pp_dot)
    _point(ds, pS, dv)
    _point(dp, pP, t1)
    for c in range(3):
        dv[c] -= t1[c]
    _cross(vs[:3], ps_dot, t1)
    _cross(vp[:3], pp_dot, t2)
    for c in range(3):
        dv[c] += t1[c] - t2[c]
        w_rel[c] = vs[c] - vp[c]
        dw[c] = ds[c] - dp[c]
    _cross(up[:3], a, a_dot)
    if kind == LOOP_REVOLUTE:
        _perp(a, dw, t1)
        aw = a[0] * w_rel[0] + a[1] * w_rel[1] + a[2] * w_rel[2]
        dotw = a_dot[0] * w_rel[0] + a_dot[1] * w_rel[1] + a_dot[2] * w_rel[2]
        for c in range(3):
            out[c] = dv[c]
            out[3 + c] = t1[c] - (a_dot[c] * aw + a[c] * dotw)
    elif kind == LOOP_PRISMATIC:
        d, x = s3[S3_RATE + 8], s3[S3_RATE + 9]
        dx, pv = s3[S3_RATE + 10], s3[S3_RATE + 11]
        _point(vs, pS, x)
        _point(vp, pP, pv)
        for c in range(3):
            d[c] = pS[c] - pP[c]
            x[c] -= pv[c]
        _cross(vp[:3], d, t1)
        for c in range(3):
            x[c] -= t1[c]
        _cross(dp[:3], d, t1)
        for c in range(3):
            t2[c] = ps_dot[c] - pp_dot[c]
        _cross(vp[:3], t2, pv)
        for c in range(3):
            dx[c] = dv[c] - t1[c] - pv[c]
        _perp(a, dx, t1)
        ax = a[0] * x[0] + a[1] * x[1] + a[2] * x[2]
        dotx = a_dot[0] * x[0] + a_dot[1] * x[1] + a_dot[2] * x[2]
        for c in range(3):
            out[c] = t1[c] - (a_dot[c] * ax + a[c] * dotx)
            out[3 + c] = dw[c]
    else:
        for c in range(3):
            out[c] = dv[c]
            out[3 + c] = dw[c]


@njit(**_OPTS)
def jacobian(loop_i, anc, S, Fk, cols, K, s3, s6):
    """K[:, c] = column cols[c] of K(q) (S and Fk at q: after :func:`residual`)."""
    zero, out = s6[S6_ZERO], s6[S6_OUT]
    for c in range(6):
        zero[c] = 0.0
    for a in range(K.shape[0]):
        for c in range(K.shape[1]):
            K[a, c] = 0.0
    for k in range(loop_i.shape[0]):
        F, _, _ = frames(Fk, k)
        for c in range(cols.shape[0]):
            j = cols[c]
            on_p, on_s = anc[k, 0, j], anc[k, 1, j]
            if on_p == on_s:
                continue  # moves both frames, or neither
            loop_rows(loop_i[k, 0], F, S[j] if on_s else zero, S[j] if on_p else zero, out, s3)
            for a in range(6):
                K[6 * k + a, c] = out[a]


@njit(**_OPTS)
def jacobian_column(loop_i, anc, S, Fk, j, col, s3, s6):
    """col = column j of K(q) (S and Fk at q: after :func:`residual`)."""
    zero, out = s6[S6_ZERO], s6[S6_OUT]
    for c in range(6):
        zero[c] = 0.0
    for a in range(col.shape[0]):
        col[a] = 0.0
    for k in range(loop_i.shape[0]):
        on_p, on_s = anc[k, 0, j], anc[k, 1, j]
        if on_p == on_s:
            continue
        F, _, _ = frames(Fk, k)
        loop_rows(loop_i[k, 0], F, S[j] if on_s else zero, S[j] if on_p else zero, out, s3)
        for a in range(6):
            col[6 * k + a] = out[a]


@njit(**_LEAF)
def _twist_at(tree_i, S, b, w, out):
    """The twist of body b under joint velocity w (sum over its ancestors)."""
    for c in range(6):
        out[c] = 0.0
    j = b
    while j >= 0:
        for c in range(6):
            out[c] += S[j, c] * w[j]
        j = tree_i[j, 0]


@njit(**_LEAF)
def _twist_rate_at(tree_i, S, Vu, b, w, out):
    """D_u of body b's twist under w: sum over its joints j of (V_parent(j)(u) x S_j) w_j."""
    for c in range(6):
        out[c] = 0.0
    j = b
    while j >= 0:
        p = tree_i[j, 0]
        if p >= 0 and w[j] != 0.0:
            v, m = Vu[p], S[j]
            out[0] += (v[1] * m[2] - v[2] * m[1]) * w[j]
            out[1] += (v[2] * m[0] - v[0] * m[2]) * w[j]
            out[2] += (v[0] * m[1] - v[1] * m[0]) * w[j]
            out[3] += (v[1] * m[5] - v[2] * m[4] + v[4] * m[2] - v[5] * m[1]) * w[j]
            out[4] += (v[2] * m[3] - v[0] * m[5] + v[5] * m[0] - v[3] * m[2]) * w[j]
            out[5] += (v[0] * m[4] - v[1] * m[3] + v[3] * m[1] - v[4] * m[0]) * w[j]
        j = p


@njit(**_OPTS)
def jacobian_rate(tree_i, loop_i, S, Fk, u, w, Vu, out, s3, s6):
    """D_u (K(q) w) into out (6 per loop) (S and Fk at q); Vu (n, 6) is scratch for the twists
    under u."""
    n = tree_i.shape[0]
    for i in range(n):
        p = tree_i[i, 0]
        for c in range(6):
            Vu[i, c] = (0.0 if p < 0 else Vu[p, c]) + S[i, c] * u[i]
    zero, rows = s6[S6_ZERO], s6[S6_OUT]
    for c in range(6):
        zero[c] = 0.0
    vs, vp, ds, dp = s6[S6_TW], s6[S6_TW + 1], s6[S6_TW + 2], s6[S6_TW + 3]
    for k in range(loop_i.shape[0]):
        F, _, _ = frames(Fk, k)
        bp, bs = loop_i[k, 1], loop_i[k, 2]
        _twist_at(tree_i, S, bs, w, vs)
        _twist_at(tree_i, S, bp, w, vp)
        _twist_rate_at(tree_i, S, Vu, bs, w, ds)
        _twist_rate_at(tree_i, S, Vu, bp, w, dp)
        us = Vu[bs] if bs >= 0 else zero
        up = Vu[bp] if bp >= 0 else zero
        loop_rows_rate(loop_i[k, 0], F, vs, vp, ds, dp, us, up, rows, s3)
        for c in range(6):
            out[6 * k + c] = rows[c]


# ---------------------------------------------------------------------- least squares


@njit(**_OPTS)
def qr_factor(K, Q, perm, norms, vhead, beta, rtol):
    """Householder QR of K (m x k, m >= k) with column pivoting, into Q: R in its upper
    triangle, reflector c's vector v = (vhead[c], Q[c+1:, c]) below it, beta[c] = v.v.
    Columns whose pivot falls below rtol times the first are dropped.  Returns (rank, the
    ratio of the last pivot to the first if every column is kept, else 0)."""
    m, k = K.shape
    for r in range(m):
        for c in range(k):
            Q[r, c] = K[r, c]
    for c in range(k):
        perm[c] = c
        acc = 0.0
        for r in range(m):
            acc += Q[r, c] * Q[r, c]
        norms[c] = math.sqrt(acc)
    first = 0.0
    rank = 0
    for c in range(k):
        best = c
        for cc in range(c + 1, k):
            if norms[cc] > norms[best]:
                best = cc
        if best != c:
            for r in range(m):
                Q[r, c], Q[r, best] = Q[r, best], Q[r, c]
            norms[c], norms[best] = norms[best], norms[c]
            perm[c], perm[best] = perm[best], perm[c]
        acc = 0.0
        for r in range(c, m):
            acc += Q[r, c] * Q[r, c]
        alpha = math.sqrt(acc)
        if c == 0:
            first = alpha
        if not alpha > rtol * first or alpha == 0.0:
            break
        if Q[c, c] > 0:
            alpha = -alpha
        v0 = Q[c, c] - alpha
        vv = v0 * v0
        for r in range(c + 1, m):
            vv += Q[r, c] * Q[r, c]
        vhead[c] = v0
        beta[c] = vv
        if vv > 0.0:
            for cc in range(c + 1, k):
                f = v0 * Q[c, cc]
                for r in range(c + 1, m):
                    f += Q[r, c] * Q[r, cc]
                f *= 2.0 / vv
                Q[c, cc] -= f * v0
                for r in range(c + 1, m):
                    Q[r, cc] -= f * Q[r, c]
        Q[c, c] = alpha
        rank += 1
        for cc in range(c + 1, k):
            acc = 0.0
            for r in range(c + 1, m):
                acc += Q[r, cc] * Q[r, cc]
            norms[cc] = math.sqrt(acc)
    if rank == 0 or first == 0.0 or rank < k:
        return rank, 0.0
    return rank, abs(Q[rank - 1, rank - 1]) / first


@njit(**_OPTS)
def qr_solve(Q, perm, vhead, beta, rank, b, y, x):
    """x minimizing |K x - b| from :func:`qr_factor`'s Q (x = 0 in the dropped columns);
    y (m) is scratch."""
    m, k = Q.shape
    for r in range(m):
        y[r] = b[r]
    for c in range(rank):
        vv = beta[c]
        if vv > 0.0:
            f = vhead[c] * y[c]
            for r in range(c + 1, m):
                f += Q[r, c] * y[r]
            f *= 2.0 / vv
            y[c] -= f * vhead[c]
            for r in range(c + 1, m):
                y[r] -= f * Q[r, c]
    for c in range(rank - 1, -1, -1):
        acc = y[c]
        for cc in range(c + 1, rank):
            acc -= Q[c, cc] * y[cc]
        y[c] = acc / Q[c, c]
    for c in range(k):
        x[c] = 0.0
    for c in range(rank):
        x[perm[c]] = y[c]


# ---------------------------------------------------------------------- Newton


@njit(**_LEAF)
def _copy(src, dst):
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(**_LEAF)
def _largest(x):
    """max |x_i| (0 for an empty x; NaN if an entry is NaN)."""
    biggest = 0.0
    for i in range(x.shape[0]):
        if not abs(x[i]) <= biggest:
            biggest = abs(x[i])
    return biggest


@njit(**_OPTS)
def newton(tree_i, tree_f, loop_i, loop_f, anc, q, dependent, tol, max_steps, max_step,
           rank_rtol, chord, R, t, S, Fk, r, info, s3, s6, K, Q, perm, norms, vhead, beta, y,
           step, trial, r_trial):  # fmt: skip
    """Close the loops by moving q's dependent joints (damped Newton, at most ``max_step``
    per joint per step, halved until phi shrinks; then, unless max |phi| is already below
    POLISHED * tol and the next step would move no joint by more than tol, polishing steps,
    each kept if it shrinks phi, until one moves no joint by more than tol, at most
    POLISH_STEPS).  Returns (CLOSED, NOT_CLOSED
    or NOT_FINITE, rank): max |phi| in info[0], phi in r, the placements and loop frames of
    q in R, t, S, Fk; rank >= 0 when Q holds the QR of K at the resulting q
    (:func:`qr_factor` with rank_rtol), else -1.

    ``chord`` >= 0: Q holds a factorization of K_z (of that rank) at a configuration near q
    (the previous closure's, along a trajectory): the first step is a chord step with it, no
    Jacobian formed, kept if it shrinks phi by CHORD_GAIN (else Newton goes on from q).
    K, Q (m x nz), perm, norms, vhead, beta, step (nz), y, r_trial (m), trial (nq) are
    scratch (Q, perm, vhead, beta hold the chord's factorization on entry)."""
    qi = tree_i[:, 2]
    nz = dependent.shape[0]
    size = residual(tree_i, tree_f, loop_i, loop_f, q, R, t, S, r, s3, Fk)
    info[0] = size
    chord_rank = -1  # >= 0 once Q holds a factorization usable for a chord step from q
    if chord >= 0 and math.isfinite(size) and size > tol:
        qr_solve(Q, perm, vhead, beta, chord, r, y, step)
        biggest = 0.0
        for c in range(nz):
            biggest = max(biggest, abs(step[c]))
        if biggest <= max_step:
            _copy(q, trial)
            for c in range(nz):
                trial[qi[dependent[c]]] -= step[c]
            new = residual(tree_i, tree_f, loop_i, loop_f, trial, R, t, S, r_trial, s3, Fk)
            if new <= CHORD_GAIN * size:
                _copy(trial, q)
                _copy(r_trial, r)
                size = new
                chord_rank = chord
            else:  # back to q's placements, for Newton's Jacobian there
                residual(tree_i, tree_f, loop_i, loop_f, q, R, t, S, r, s3, Fk)
    for _ in range(max_steps):
        if not math.isfinite(size):
            info[0] = size
            return NOT_FINITE, -1
        if size <= tol:
            break
        jacobian(loop_i, anc, S, Fk, dependent, K, s3, s6)
        chord_rank, _ratio = qr_factor(K, Q, perm, norms, vhead, beta, rank_rtol)
        qr_solve(Q, perm, vhead, beta, chord_rank, r, y, step)
        biggest = 0.0
        for c in range(nz):
            biggest = max(biggest, abs(step[c]))
        if biggest > max_step:
            for c in range(nz):
                step[c] *= max_step / biggest
        new = size
        for _h in range(30):
            _copy(q, trial)
            for c in range(nz):
                trial[qi[dependent[c]]] -= step[c]
            new = residual(tree_i, tree_f, loop_i, loop_f, trial, R, t, S, r_trial, s3, Fk)
            if new < size:
                break
            for c in range(nz):
                step[c] *= 0.5
        # the last trial is the new q: its residual and placements are already computed
        _copy(trial, q)
        _copy(r_trial, r)
        size = new
    else:
        if not size <= tol:
            info[0] = size
            return (NOT_CLOSED if math.isfinite(size) else NOT_FINITE), -1
    if chord_rank >= 0 and size <= POLISHED * tol:
        # Newton's convergence is quadratic: a step from the tangent's prediction (|phi| ~ 1e-8
        # along a trajectory) usually lands here, and polishing would gain nothing A needs,
        # unless the next step is not that small (near a dead point: POLISH_STEPS).
        qr_solve(Q, perm, vhead, beta, chord_rank, r, y, step)
        if _largest(step) <= tol:
            info[0] = size
            return CLOSED, -1
    # Polish: more steps, each kept if it shrinks phi, until one moves no joint by more than
    # tol.  After a Newton or chord step the first is a chord step, with that step's
    # factorization (K at the iterate before q, so the error still shrinks by about the last
    # step's size); if q was closed on entry, or after a step that was still large, a Newton
    # step.
    rank = -1
    for _p in range(POLISH_STEPS):
        if chord_rank < 0:
            jacobian(loop_i, anc, S, Fk, dependent, K, s3, s6)
            chord_rank, _ratio = qr_factor(K, Q, perm, norms, vhead, beta, rank_rtol)
            rank = chord_rank  # Q is q's factorization unless the step is taken
        qr_solve(Q, perm, vhead, beta, chord_rank, r, y, step)
        _copy(q, trial)
        for c in range(nz):
            trial[qi[dependent[c]]] -= step[c]
        new = residual(tree_i, tree_f, loop_i, loop_f, trial, R, t, S, r_trial, s3, Fk)
        if not new < size:  # leave the placements and frames of the result
            residual(tree_i, tree_f, loop_i, loop_f, q, R, t, S, r_trial, s3, Fk)
            break
        _copy(trial, q)  # R, t, S, Fk are the result's
        _copy(r_trial, r)
        size = new
        rank = -1
        if _largest(step) <= tol:
            break
        chord_rank = -1  # the step was large: the next one with K_z factored at q
    info[0] = size
    return CLOSED, rank


WRONG_BRANCH, SINGULAR = 3, 4
FOLLOWER_RANGE = 5  # a follower's position beyond the bound (info[1]: the follower)
TOO_FAR = 6  # continuation would take more than MAX_CONTINUATION steps (info[0]: the jump)
# Continuation's budget: steps of at most max_step (0.2 rad or m) from the last closed
# configuration; a larger jump in one call is refused (1000 steps: about 20 ms on a four-bar)
# rather than stalling the caller for as long as it takes.
MAX_CONTINUATION = 1000


@njit(**_OPTS)
def _branch_ok(loop_i, Fk):
    """-1 if every loop closed as its joint says, else the index of the first that closed with
    its frames half a turn apart (axes opposite; P and S turned by 180 degrees)."""
    for k in range(loop_i.shape[0]):
        F, RP, RS = frames(Fk, k)
        if loop_i[k, 0] == LOOP_REVOLUTE:
            ok = F[0, 0] * F[3, 0] + F[0, 1] * F[3, 1] + F[0, 2] * F[3, 2] > 0.0
        else:
            tr = 0.0
            for a in range(3):
                for b in range(3):
                    tr += RP[b, a] * RS[b, a]
            ok = tr > 1.0
        if not ok:
            return k
    return -1


@njit(**_OPTS)
def closed_state(tree_i, tree_f, loop_i, loop_f, anc, q, start, has_start, predict, chord,
                 dependent, lead_q, lead_cols, lead_rows, tol, max_steps, max_step, rank_rtol,
                 singular_rtol, R, t, S, Fk, r, info, A, dA, Vu, s3, s6, K, Q, perm, norms,
                 vhead, beta, y, step, trial, r_trial, b, col, uk, uj, target):  # fmt: skip
    """Close the loops at q's independent positions and fill A and dA/dy at the result.

    q: the target (its dependent entries are the guess when ``has_start`` is false);
    start: the previous closed configuration (continuation from it when ``has_start``; with
    ``predict``, A and dA hold A and dA/dy at start, and each continuation step starts
    Newton from the prediction along start's tangent instead of start's dependent values:
    dz = A_zy dy, plus 1/2 dA_zy[dy, dy] when one step covers the jump).  ``chord`` >= 0:
    Q holds the factorization of K_z at start, of that rank (Newton's first step is then a
    chord step, :func:`newton`), else -1.
    lead_q / lead_cols / lead_rows: the loops' independent joints' index in q, their column
    of A and their row of the tree.  A's other entries (identity rows of the independent
    joints, zero elsewhere) are set by the caller once; this writes A's dependent rows in the
    loop columns and dA's dependent rows.  K_z is factored once for A and dA.  Returns
    CLOSED, NOT_CLOSED, NOT_FINITE, WRONG_BRANCH (info[1]: the loop), SINGULAR (info[0]:
    the pivot ratio) or TOO_FAR (info[0]: the lead joints' largest jump); q is the result,
    and on CLOSED, info[2] is the rank of Q, the factorization of K_z at q (for the next
    call's ``chord``).  The arguments after Vu are scratch: s3, s6, K, Q (m x nz), perm
    (int64), norms, vhead, beta, step (nz), y, r_trial, b, col (m), trial (nq), uk, uj (n),
    target (number of lead joints); Fk (L, 10, 3) receives the loops' frames.
    """
    qi = tree_i[:, 2]
    nz = dependent.shape[0]
    nl = lead_q.shape[0]
    m = r.shape[0]
    rank = -1
    if has_start:  # the other coordinates (base, other limbs) do not move the loops
        jump = 0.0
        for c in range(nl):
            jump = max(jump, abs(q[lead_q[c]] - start[lead_q[c]]))
        if not jump <= MAX_CONTINUATION * max_step:
            info[0] = jump
            return TOO_FAR
        steps = max(1, int(math.ceil(jump / max_step)))
        for c in range(nl):
            target[c] = q[lead_q[c]]
        for z in range(nz):
            q[qi[dependent[z]]] = start[qi[dependent[z]]]
        for s in range(1, steps + 1):
            for c in range(nl):
                iq = lead_q[c]
                q[iq] = target[c] if s == steps else start[iq] + (target[c] - start[iq]) * (
                    s / steps
                )
            if predict:  # along start's tangent: dz = A_zy dy (+ 1/2 dA_zy[dy, dy])
                for z in range(nz):
                    row = dependent[z]
                    dz = 0.0
                    for c in range(nl):
                        dy = target[c] - start[lead_q[c]]
                        dz += A[row, lead_cols[c]] * dy
                        if steps == 1:
                            for c2 in range(nl):
                                dy2 = target[c2] - start[lead_q[c2]]
                                dz += 0.5 * dA[row, lead_cols[c], lead_cols[c2]] * dy * dy2
                    q[qi[row]] += dz / steps
            status, rank = newton(tree_i, tree_f, loop_i, loop_f, anc, q, dependent, tol,
                                  max_steps, max_step, rank_rtol, chord if s == 1 else -1, R,
                                  t, S, Fk, r, info, s3, s6, K, Q, perm, norms, vhead, beta,
                                  y, step, trial, r_trial)  # fmt: skip
            if status != CLOSED:
                return status
    else:
        status, rank = newton(tree_i, tree_f, loop_i, loop_f, anc, q, dependent, tol,
                              max_steps, max_step, rank_rtol, -1, R, t, S, Fk, r, info, s3,
                              s6, K, Q, perm, norms, vhead, beta, y, step, trial,
                              r_trial)  # fmt: skip
        if status != CLOSED:
            return status
    k = _branch_ok(loop_i, Fk)
    if k >= 0:
        info[1] = k
        return WRONG_BRANCH
    if rank < 0:  # Newton's last factorization is not at q
        jacobian(loop_i, anc, S, Fk, dependent, K, s3, s6)
        rank, _ratio = qr_factor(K, Q, perm, norms, vhead, beta, rank_rtol)
    ratio = abs(Q[nz - 1, nz - 1]) / abs(Q[0, 0]) if rank == nz and Q[0, 0] != 0.0 else 0.0
    if not ratio >= singular_rtol:
        info[0] = ratio
        return SINGULAR
    # A: K_z A_z + K_y = 0 in the loops' independent columns
    for c in range(nl):
        jacobian_column(loop_i, anc, S, Fk, lead_rows[c], col, s3, s6)
        for a in range(m):
            b[a] = -col[a]
        qr_solve(Q, perm, vhead, beta, rank, b, y, step)
        for z in range(nz):
            A[dependent[z], lead_cols[c]] = step[z]
    # dA: (D_{A_k} K) A_j + K dA_j/dy_k = 0, symmetric in j, k
    for ck in range(nl):
        kcol = lead_cols[ck]
        for a in range(uk.shape[0]):
            uk[a] = A[a, kcol]
        for cj in range(ck, nl):
            jcol = lead_cols[cj]
            for a in range(uj.shape[0]):
                uj[a] = A[a, jcol]
            jacobian_rate(tree_i, loop_i, S, Fk, uk, uj, Vu, col, s3, s6)
            for a in range(m):
                b[a] = -col[a]
            qr_solve(Q, perm, vhead, beta, rank, b, y, step)
            for z in range(nz):
                dA[dependent[z], jcol, kcol] = step[z]
                dA[dependent[z], kcol, jcol] = step[z]
    info[2] = rank
    return CLOSED
