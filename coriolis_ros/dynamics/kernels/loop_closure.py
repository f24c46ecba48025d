"""Compiled loop-closure kinematics: placements, the residual phi(q), K(q), D_u(K w), Newton.

The arrays (built once by :class:`coriolis_ros.dynamics.loops.LoopClosure`):

``tree_i`` (n, 3) int64   per row: parent row (-1: world), kind (ROW_REVOLUTE, ROW_PRISMATIC,
                          ROW_ROOT: a floating or planar root's rows, held at the origin), q index
``tree_f`` (n, 12)        per row: rotation parent body -> joint frame (row-major), origin
``loop_i`` (L, 3) int64   per loop: kind (LOOP_REVOLUTE, LOOP_PRISMATIC, LOOP_FIXED), the rows
                          of P's body and S's body (-1: the world)
``loop_f`` (L, 27)        per loop: P's rotation and origin in its body, S's, the unit axis
``anc``    (L, 2, n) bool per loop: row j is an ancestor (or the body) of P's / S's body

Spatial vectors are (angular, linear at the world's origin), in world coordinates with the
tree's root at the origin (every loop quantity is relative, so the root's motion drops out).
The formulas are those of :mod:`coriolis_ros.dynamics.loops` (its docstrings derive them).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

ROW_REVOLUTE, ROW_PRISMATIC, ROW_ROOT = 0, 1, 2
LOOP_REVOLUTE, LOOP_PRISMATIC, LOOP_FIXED = 0, 1, 2
# Newton's outcomes
CLOSED, NOT_CLOSED, NOT_FINITE = 0, 1, 2

_OPTS = dict(cache=False, nogil=True, error_model="numpy")


@njit(**_OPTS)
def placements(tree_i, tree_f, q, R, t, S):
    """Every body's rotation R[i] and origin t[i], and every row's motion axis S[i]."""
    n = tree_i.shape[0]
    for i in range(n):
        kind = tree_i[i, 1]
        S[i, :] = 0.0
        if kind == ROW_ROOT:
            R[i, :, :] = 0.0
            R[i, 0, 0] = R[i, 1, 1] = R[i, 2, 2] = 1.0
            t[i, :] = 0.0
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


@njit(**_OPTS)
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


@njit(**_OPTS)
def _cross(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0], out[1], out[2] = x, y, z


@njit(**_OPTS)
def _perp(a, x, out):
    """x minus its component along the unit vector a."""
    d = a[0] * x[0] + a[1] * x[1] + a[2] * x[2]
    for r in range(3):
        out[r] = x[r] - a[r] * d


@njit(**_OPTS)
def loop_frames(R, t, loop_i, loop_f, k, F):
    """F (4, 3): P's axis in the world, P's origin, S's origin, S's axis; and the rotations
    are returned (RP, RS)."""
    RP = np.empty((3, 3))
    RS = np.empty((3, 3))
    _frame(R, t, loop_i[k, 1], loop_f, k, 0, RP, F[1])
    _frame(R, t, loop_i[k, 2], loop_f, k, 12, RS, F[2])
    for r in range(3):
        F[0, r] = RP[r, 0] * loop_f[k, 24] + RP[r, 1] * loop_f[k, 25] + RP[r, 2] * loop_f[k, 26]
        F[3, r] = RS[r, 0] * loop_f[k, 24] + RS[r, 1] * loop_f[k, 25] + RS[r, 2] * loop_f[k, 26]
    return RP, RS


@njit(**_OPTS)
def residual(tree_i, tree_f, loop_i, loop_f, q, R, t, S, r):
    """phi(q) into r (6 per loop); returns max |phi|."""
    placements(tree_i, tree_f, q, R, t, S)
    F = np.empty((4, 3))
    d = np.empty(3)
    tmp = np.empty(3)
    size = 0.0
    for k in range(loop_i.shape[0]):
        RP, RS = loop_frames(R, t, loop_i, loop_f, k, F)
        for c in range(3):
            d[c] = F[2, c] - F[1, c]
        kind = loop_i[k, 0]
        if kind == LOOP_PRISMATIC:
            _perp(F[0], d, tmp)
            r[6 * k : 6 * k + 3] = tmp
        else:
            r[6 * k : 6 * k + 3] = d
        if kind == LOOP_REVOLUTE:
            _cross(F[0], F[3], tmp)
            r[6 * k + 3 : 6 * k + 6] = tmp
        else:  # 1/2 sum_c (RP e_c) x (RS e_c)
            for m in range(3):
                r[6 * k + 3 + m] = 0.0
            for c in range(3):
                _cross(RP[:, c], RS[:, c], tmp)
                for m in range(3):
                    r[6 * k + 3 + m] += 0.5 * tmp[m]
        for m in range(6):
            v = abs(r[6 * k + m])
            if not v <= size:  # NaN propagates
                size = v
    return size


@njit(**_OPTS)
def _point(v, p, out):
    """Velocity of the point p for the twist v (angular, linear at the origin)."""
    out[0] = v[3] + v[1] * p[2] - v[2] * p[1]
    out[1] = v[4] + v[2] * p[0] - v[0] * p[2]
    out[2] = v[5] + v[0] * p[1] - v[1] * p[0]


@njit(**_OPTS)
def loop_rows(kind, F, vs, vp, out):
    """K w for one loop (6 rows) from the twists vs, vp of S's and P's bodies under w."""
    a, pP, pS = F[0], F[1], F[2]
    ps = np.empty(3)
    pp = np.empty(3)
    w = np.empty(3)
    tmp = np.empty(3)
    _point(vs, pS, ps)
    _point(vp, pP, pp)
    for c in range(3):
        w[c] = vs[c] - vp[c]
    if kind == LOOP_PRISMATIC:
        d = np.empty(3)
        x = np.empty(3)
        for c in range(3):
            d[c] = pS[c] - pP[c]
        _cross(vp[:3], d, tmp)
        for c in range(3):
            x[c] = ps[c] - pp[c] - tmp[c]
        _perp(a, x, tmp)
        out[0:3] = tmp
        out[3:6] = w
    elif kind == LOOP_REVOLUTE:
        for c in range(3):
            out[c] = ps[c] - pp[c]
        _perp(a, w, tmp)
        out[3:6] = tmp
    else:
        for c in range(3):
            out[c] = ps[c] - pp[c]
        out[3:6] = w


@njit(**_OPTS)
def loop_rows_rate(kind, F, vs, vp, ds, dp, us, up, out):
    """D_u (K w) for one loop: vs, vp the twists under w, ds, dp their rates along u (w held),
    us, up the twists under u, of S's and P's bodies."""
    a, pP, pS = F[0], F[1], F[2]
    w_rel = np.empty(3)
    dw = np.empty(3)
    dv = np.empty(3)
    ps_dot = np.empty(3)
    pp_dot = np.empty(3)
    t1 = np.empty(3)
    t2 = np.empty(3)
    a_dot = np.empty(3)
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
        out[0:3] = dv
        _perp(a, dw, t1)
        aw = a[0] * w_rel[0] + a[1] * w_rel[1] + a[2] * w_rel[2]
        dotw = a_dot[0] * w_rel[0] + a_dot[1] * w_rel[1] + a_dot[2] * w_rel[2]
        for c in range(3):
            out[3 + c] = t1[c] - (a_dot[c] * aw + a[c] * dotw)
    elif kind == LOOP_PRISMATIC:
        d = np.empty(3)
        x = np.empty(3)
        dx = np.empty(3)
        pv = np.empty(3)
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
        out[3:6] = dw
    else:
        out[0:3] = dv
        out[3:6] = dw


@njit(**_OPTS)
def jacobian(tree_i, loop_i, loop_f, anc, R, t, S, cols, K):
    """K[:, c] = column cols[c] of K(q) (after :func:`placements`)."""
    F = np.empty((4, 3))
    zero = np.zeros(6)
    out = np.empty(6)
    K[:, :] = 0.0
    for k in range(loop_i.shape[0]):
        loop_frames(R, t, loop_i, loop_f, k, F)
        for c in range(cols.shape[0]):
            j = cols[c]
            on_p, on_s = anc[k, 0, j], anc[k, 1, j]
            if on_p == on_s:
                continue  # moves both frames, or neither
            loop_rows(loop_i[k, 0], F, S[j] if on_s else zero, S[j] if on_p else zero, out)
            K[6 * k : 6 * k + 6, c] = out


@njit(**_OPTS)
def _twist_at(tree_i, S, b, w, out):
    """The twist of body b under joint velocity w (sum over its ancestors)."""
    out[:] = 0.0
    j = b
    while j >= 0:
        for c in range(6):
            out[c] += S[j, c] * w[j]
        j = tree_i[j, 0]


@njit(**_OPTS)
def _twist_rate_at(tree_i, S, Vu, b, w, out):
    """D_u of body b's twist under w: sum over its joints j of (V_parent(j)(u) x S_j) w_j."""
    out[:] = 0.0
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
def jacobian_rate(tree_i, loop_i, loop_f, R, t, S, u, w, Vu, out):
    """D_u (K(q) w) into out (6 per loop); Vu (n, 6) is scratch for the twists under u."""
    n = tree_i.shape[0]
    for i in range(n):
        p = tree_i[i, 0]
        for c in range(6):
            Vu[i, c] = (0.0 if p < 0 else Vu[p, c]) + S[i, c] * u[i]
    F = np.empty((4, 3))
    zero = np.zeros(6)
    vs, vp, ds, dp = np.empty(6), np.empty(6), np.empty(6), np.empty(6)
    rows = np.empty(6)
    for k in range(loop_i.shape[0]):
        loop_frames(R, t, loop_i, loop_f, k, F)
        bp, bs = loop_i[k, 1], loop_i[k, 2]
        _twist_at(tree_i, S, bs, w, vs)
        _twist_at(tree_i, S, bp, w, vp)
        _twist_rate_at(tree_i, S, Vu, bs, w, ds)
        _twist_rate_at(tree_i, S, Vu, bp, w, dp)
        us = Vu[bs] if bs >= 0 else zero
        up = Vu[bp] if bp >= 0 else zero
        loop_rows_rate(loop_i[k, 0], F, vs, vp, ds, dp, us, up, rows)
        out[6 * k : 6 * k + 6] = rows


@njit(**_OPTS)
def least_squares(A, b, rtol, x):
    """x minimizing |A x - b| (A: m x k, m >= k) by Householder QR with column pivoting;
    columns whose pivot falls below rtol times the first are dropped (x = 0 there).
    Returns the ratio of the last kept pivot to the first (a rank and conditioning gauge)."""
    m, k = A.shape
    Q = A.copy()
    y = b.copy()
    perm = np.arange(k)
    norms = np.empty(k)
    for c in range(k):
        norms[c] = np.sqrt(np.sum(Q[:, c] ** 2))
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
        alpha = np.sqrt(np.sum(Q[c:, c] ** 2))
        if c == 0:
            first = alpha
        if not alpha > rtol * first or alpha == 0.0:
            break
        if Q[c, c] > 0:
            alpha = -alpha
        v = Q[c:, c].copy()
        v[0] -= alpha
        vv = np.sum(v * v)
        if vv > 0.0:
            for cc in range(c, k):
                f = 2.0 * np.sum(v * Q[c:, cc]) / vv
                Q[c:, cc] -= f * v
            f = 2.0 * np.sum(v * y[c:]) / vv
            y[c:] -= f * v
        Q[c, c] = alpha
        rank += 1
        for cc in range(c + 1, k):
            norms[cc] = np.sqrt(np.sum(Q[c + 1 :, cc] ** 2))
    z = np.zeros(k)
    for c in range(rank - 1, -1, -1):
        acc = y[c]
        for cc in range(c + 1, rank):
            acc -= Q[c, cc] * z[cc]
        z[c] = acc / Q[c, c]
    x[:] = 0.0
    for c in range(k):
        x[perm[c]] = z[c]
    if rank == 0 or first == 0.0:
        return 0.0
    return abs(Q[rank - 1, rank - 1]) / first if rank == k else 0.0


@njit(**_OPTS)
def newton(
    tree_i,
    tree_f,
    loop_i,
    loop_f,
    anc,
    q,
    dependent,
    tol,
    max_steps,
    max_step,
    rank_rtol,
    R,
    t,
    S,
    r,
    info,
):
    """Close the loops by moving q's dependent joints (damped Newton, at most ``max_step``
    per joint per step, halved until phi shrinks; then two plain polishing steps kept while
    they shrink phi); returns CLOSED, NOT_CLOSED or NOT_FINITE, with max |phi| in info[0] and
    phi in r."""
    qi = tree_i[:, 2]
    nz = dependent.shape[0]
    m = r.shape[0]
    K = np.empty((m, nz))
    step = np.empty(nz)
    trial = q.copy()
    r_trial = np.empty(m)
    size = residual(tree_i, tree_f, loop_i, loop_f, q, R, t, S, r)
    info[0] = size
    for _ in range(max_steps):
        if not math.isfinite(size):
            info[0] = size
            return NOT_FINITE
        if size <= tol:
            break
        jacobian(tree_i, loop_i, loop_f, anc, R, t, S, dependent, K)
        least_squares(K, r, rank_rtol, step)
        biggest = 0.0
        for c in range(nz):
            biggest = max(biggest, abs(step[c]))
        if biggest > max_step:
            step *= max_step / biggest
        new = size
        for _h in range(30):
            trial[:] = q
            for c in range(nz):
                trial[qi[dependent[c]]] -= step[c]
            new = residual(tree_i, tree_f, loop_i, loop_f, trial, R, t, S, r_trial)
            if new < size:
                break
            step *= 0.5
        q[:] = trial
        size = residual(tree_i, tree_f, loop_i, loop_f, q, R, t, S, r)
    else:
        if not size <= tol:
            info[0] = size
            return NOT_CLOSED if math.isfinite(size) else NOT_FINITE
    for _ in range(2):  # polish: plain Newton steps kept while they shrink phi
        jacobian(tree_i, loop_i, loop_f, anc, R, t, S, dependent, K)
        least_squares(K, r, rank_rtol, step)
        trial[:] = q
        for c in range(nz):
            trial[qi[dependent[c]]] -= step[c]
        new = residual(tree_i, tree_f, loop_i, loop_f, trial, R, t, S, r_trial)
        if not new < size:
            break
        q[:] = trial
        r[:] = r_trial
        size = new
    placements(tree_i, tree_f, q, R, t, S)  # leave the placements of the result
    info[0] = size
    return CLOSED


WRONG_BRANCH, SINGULAR = 3, 4


@njit(**_OPTS)
def _branch_ok(R, t, loop_i, loop_f):
    """-1 if every loop closed as its joint says, else the index of the first that closed with
    its frames half a turn apart (axes opposite; P and S turned by 180 degrees)."""
    F = np.empty((4, 3))
    for k in range(loop_i.shape[0]):
        RP, RS = loop_frames(R, t, loop_i, loop_f, k, F)
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
def closed_state(tree_i, tree_f, loop_i, loop_f, anc, q, start, has_start, dependent,
                 lead_q, lead_cols, lead_rows, tol, max_steps, max_step, rank_rtol,
                 singular_rtol, R, t, S, r, info, A, dA, Vu):
    """Close the loops at q's independent positions and fill A and dA/dy at the result.

    q: the target (its dependent entries are the guess when ``has_start`` is false);
    start: the previous closed configuration (continuation from it when ``has_start``).
    lead_q / lead_cols / lead_rows: the loops' independent joints' index in q, their column
    of A and their row of the tree.  A's other entries (identity rows of the independent
    joints, zero elsewhere) are set by the caller once; this writes A's dependent rows in the
    loop columns and dA's dependent rows.  Returns CLOSED, NOT_CLOSED, NOT_FINITE,
    WRONG_BRANCH (info[1]: the loop) or SINGULAR (info[0]: the pivot ratio); q is the result.
    """
    qi = tree_i[:, 2]
    nz = dependent.shape[0]
    nl = lead_q.shape[0]
    if has_start:  # the other coordinates (base, other limbs) do not move the loops
        jump = 0.0
        for c in range(nl):
            jump = max(jump, abs(q[lead_q[c]] - start[lead_q[c]]))
        steps = max(1, int(math.ceil(jump / max_step)))
        target = np.empty(nl)
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
            status = newton(tree_i, tree_f, loop_i, loop_f, anc, q, dependent, tol, max_steps,
                            max_step, rank_rtol, R, t, S, r, info)
            if status != CLOSED:
                return status
    else:
        status = newton(tree_i, tree_f, loop_i, loop_f, anc, q, dependent, tol, max_steps,
                        max_step, rank_rtol, R, t, S, r, info)
        if status != CLOSED:
            return status
    k = _branch_ok(R, t, loop_i, loop_f)
    if k >= 0:
        info[1] = k
        return WRONG_BRANCH
    m = r.shape[0]
    Kz = np.empty((m, nz))
    jacobian(tree_i, loop_i, loop_f, anc, R, t, S, dependent, Kz)
    col = np.empty((m, 1))
    one = np.empty(1, dtype=np.int64)
    x = np.empty(nz)
    b = np.empty(m)
    b[:] = 0.0
    ratio = least_squares(Kz, b, singular_rtol, x)
    if not ratio >= singular_rtol:
        info[0] = ratio
        return SINGULAR
    # A: K_z A_z + K_y = 0 in the loops' independent columns
    for c in range(nl):
        one[0] = lead_rows[c]
        jacobian(tree_i, loop_i, loop_f, anc, R, t, S, one, col)
        for a in range(m):
            b[a] = -col[a, 0]
        least_squares(Kz, b, rank_rtol, x)
        for z in range(nz):
            A[dependent[z], lead_cols[c]] = x[z]
    # dA: (D_{A_k} K) A_j + K dA_j/dy_k = 0, symmetric in j, k
    rate = np.empty(m)
    for ck in range(nl):
        kcol = lead_cols[ck]
        for cj in range(ck, nl):
            jcol = lead_cols[cj]
            jacobian_rate(tree_i, loop_i, loop_f, R, t, S, A[:, kcol].copy(),
                          A[:, jcol].copy(), Vu, rate)
            for a in range(m):
                b[a] = -rate[a]
            least_squares(Kz, b, rank_rtol, x)
            for z in range(nz):
                dA[dependent[z], jcol, kcol] = x[z]
                dA[dependent[z], kcol, jcol] = x[z]
    return CLOSED
