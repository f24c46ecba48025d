"""Task-space inertia and Coriolis matrices of a frame (Wensing & Slotine, Remark 8).

For a task Jacobian J (m x n, the chosen rows of a frame Jacobian) the task-space
inertia is Lambda = (J M^-1 J^T)^-1 and, with the dynamically consistent inverse
J# = M^-1 J^T Lambda, the task-space Coriolis matrix is given by the transformation law of
the paper's eq. (17) with A = J#:

    mu = J#^T C J# + J#^T M Jdot#.

Differentiating J# (M^-1 and Lambda included) and using Lambda J M^-1 J^T = 1, the second
term is J#^T M Jdot# = -Lambda Jdot M^-1 J^T Lambda, so

    mu = Lambda (J M^-1 C - Jdot) M^-1 J^T Lambda = Lambda (Z^T C Z - Jdot Z) Lambda,

with Z = M^-1 J^T.  Then mu + mu^T = Lambda (J M^-1 (C + C^T) M^-1 J^T - Jdot M^-1 J^T -
J M^-1 Jdot^T) Lambda = d/dt Lambda when Mdot = C + C^T (C from Algorithm 1), so
Lambdadot - 2 mu is skew.  With ``damping`` d > 0, Lambda = (J M^-1 J^T + d 1)^-1 and the
same mu: the identity d/dt Lambda = mu + mu^T still holds (d is constant).

M^-1 is never formed: M = L^T L by the tree-sparse factorization (:mod:`.ltl`), then
Y = L^-T J^T, J M^-1 J^T = Y^T Y and Z = L^-1 Y, O(m (sum of depths)) each.  M, Mdot and
C come from Algorithm 1 (:mod:`.coriolis_matrix`), J and Jdot from :mod:`.frame_jacobian`
and :mod:`.frame_jacobian_dot`.  The scratch ``tw`` is a flat array of
:func:`task_ws_size` entries owned by the caller.
"""

import math

from ..model import FM_BODY
from .coordinate_change import expand_position, expand_velocity, layout, offsets, vector
from .coordinate_change import reduced_coriolis
from .coriolis_matrix import coriolis_matrix
from .frame_jacobian import BAD_FRAME, WORLD, apart, frame_ok, jacobian_columns, place_path
from .frame_jacobian_dot import jacobian_dot_columns
from .kinematics import OVERLAP, SIZE_OUT, SIZE_WS, check_inputs
from .ltl import ancestors, ltl, solve_l, solve_lt
from .spatial import body_step, kernel, long_kernel

SINGULAR_MASS = 41  # M is not positive definite (a massless subtree)
SINGULAR_TASK = 42  # J M^-1 J^T is singular (a rank-deficient task) and damping is 0
# A Cholesky pivot of J M^-1 J^T + d 1 at or below this fraction of its largest diagonal
# entry: the task is rank-deficient (condition number beyond ~1e12).
TASK_RCOND = 1e-12


@kernel
def task_ws_size(n):
    """Length of the scratch of a task on n coordinates: M, Mdot, C, the frame's J and
    Jdot (6 x n), Y^T, Z^T, (C Z)^T (6 x n), two 6 x 6 blocks and the ancestor lists
    (n x (n + 1), :func:`.ltl.ancestors`)."""
    return 3 * n * n + 30 * n + 72 + n * (n + 1)


@kernel
def row_count(rows):
    """The number of task rows encoded in ``rows`` (base-8 digits row + 1, first row
    lowest), or -1 if a digit is not a row 0..5 or a row repeats."""
    m = 0
    seen = 0
    code = rows
    while code > 0 and m < 7:
        r = (code & 7) - 1
        if r < 0 or r > 5 or (seen >> r) & 1:
            return -1
        seen |= 1 << r
        m += 1
        code >>= 3
    return m if code == 0 and m > 0 else -1


@body_step
def task_terms(mf, dense, rows, m, damping, M, C, J6, Jd6, tw, n, Lam, mu, J, Jd):
    """Lambda, mu, J, Jdot from M, C and the frame's J6, Jd6 (n coordinates)."""
    for t in range(m):
        r = ((rows >> (3 * t)) & 7) - 1
        for c in range(n):
            J[t, c] = J6[r, c]
            Jd[t, c] = Jd6[r, c]
    o = 3 * n * n + 12 * n
    Yt = tw[o : o + 6 * n].reshape((6, n))
    Zt = tw[o + 6 * n : o + 12 * n].reshape((6, n))
    Wt = tw[o + 12 * n : o + 18 * n].reshape((6, n))
    G = tw[o + 18 * n : o + 18 * n + 36].reshape((6, 6))
    K = tw[o + 18 * n + 36 : o + 18 * n + 72].reshape((6, 6))
    anc = tw[o + 18 * n + 72 : o + 18 * n + 72 + n * (n + 1)].reshape((n, n + 1))
    ancestors(mf, dense, n, anc)
    if not ltl(M, anc):
        return SINGULAR_MASS
    for t in range(m):
        y = Yt[t]
        for c in range(n):
            y[c] = J[t, c]
        solve_lt(anc, M, y)  # Y = L^-T J^T
    scale = 0.0
    for s in range(m):  # G = J M^-1 J^T + d 1 = Y^T Y + d 1
        for t in range(s + 1):
            acc = 0.0
            for c in range(n):
                acc += Yt[s, c] * Yt[t, c]
            G[s, t] = acc
        G[s, s] += damping
        scale = max(scale, G[s, s])
    floor = TASK_RCOND * scale
    for k in range(m):  # Cholesky G = R R^T in the lower triangle
        d = G[k, k]
        for j in range(k):
            d -= G[k, j] * G[k, j]
        if not d > floor:
            return SINGULAR_TASK
        d = math.sqrt(d)
        G[k, k] = d
        for i in range(k + 1, m):
            s = G[i, k]
            for j in range(k):
                s -= G[i, j] * G[k, j]
            G[i, k] = s / d
    for c in range(m):  # Lambda = G^-1, column by column
        for i in range(m):
            s = 1.0 if i == c else 0.0
            for j in range(i):
                s -= G[i, j] * Lam[j, c]
            Lam[i, c] = s / G[i, i]
        for i in range(m - 1, -1, -1):
            s = Lam[i, c]
            for j in range(i + 1, m):
                s -= G[j, i] * Lam[j, c]
            Lam[i, c] = s / G[i, i]
    for i in range(m):
        for j in range(i):
            x = 0.5 * (Lam[i, j] + Lam[j, i])
            Lam[i, j] = x
            Lam[j, i] = x
    for t in range(m):  # Z = M^-1 J^T = L^-1 Y, and W = C Z
        z = Zt[t]
        for c in range(n):
            z[c] = Yt[t, c]
        solve_l(anc, M, z)
        for i in range(n):
            acc = 0.0
            for j in range(n):
                acc += C[i, j] * z[j]
            Wt[t, i] = acc
    for s in range(m):  # K = Z^T C Z - Jdot Z
        for t in range(m):
            acc = 0.0
            for c in range(n):
                acc += Zt[s, c] * Wt[t, c] - Jd[s, c] * Zt[t, c]
            K[s, t] = acc
    for s in range(m):  # G <- K Lambda (G's factor is no longer needed), mu = Lambda G
        for t in range(m):
            acc = 0.0
            for c in range(m):
                acc += K[s, c] * Lam[c, t]
            G[s, t] = acc
    for s in range(m):
        for t in range(m):
            acc = 0.0
            for c in range(m):
                acc += Lam[s, c] * G[c, t]
            mu[s, t] = acc
    return 0


@body_step
def sizes_ok(m, n, Lam, mu, J, Jd):
    return (
        Lam.shape[0] == m and Lam.shape[1] == m and mu.shape[0] == m and mu.shape[1] == m
        and J.shape[0] == m and J.shape[1] == n and Jd.shape[0] == m and Jd.shape[1] == n
    )  # fmt: skip


@body_step
def all_apart(tw, Lam, mu, J, Jd):
    """The four outputs and the scratch share no memory."""
    return (
        apart(Lam, mu) and apart(Lam, J) and apart(Lam, Jd) and apart(mu, J) and apart(mu, Jd)
        and apart(J, Jd) and apart(tw, Lam) and apart(tw, mu) and apart(tw, J) and apart(tw, Jd)
    )  # fmt: skip


@long_kernel
def task_space(mf, fm, f, ref, rows, damping, q, qd, ws, tw, Lam, mu, J, Jd):
    """Lambda, mu (m x m), J and Jdot (m x n) of the task ``rows`` of frame f in reference
    ``ref`` at (q, qd); 0 or a status code (SINGULAR_* above)."""
    n = mf.shape[0]
    m = row_count(rows)
    if not frame_ok(mf, fm, ws, f, ref) or m < 0 or not damping >= 0.0:
        return BAD_FRAME
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    if not sizes_ok(m, n, Lam, mu, J, Jd):
        return SIZE_OUT
    if not all_apart(tw, Lam, mu, J, Jd):
        return OVERLAP
    if tw.shape[0] < task_ws_size(n):
        return SIZE_WS
    M = tw[0 : n * n].reshape((n, n))
    Md = tw[n * n : 2 * n * n].reshape((n, n))
    C = tw[2 * n * n : 3 * n * n].reshape((n, n))
    J6 = tw[3 * n * n : 3 * n * n + 6 * n].reshape((6, n))
    Jd6 = tw[3 * n * n + 6 * n : 3 * n * n + 12 * n].reshape((6, n))
    status = coriolis_matrix(mf, q, qd, ws, M, Md, C)
    if status:
        return status
    place_path(mf, q, qd, ws, int(fm[f, FM_BODY]), True, ref == WORLD)
    jacobian_columns(mf, fm, f, ref, ws, J6, q, -1)
    jacobian_dot_columns(mf, fm, f, ref, ws, Jd6, q, -1)
    return task_terms(mf, False, rows, m, damping, M, C, J6, Jd6, tw, n, Lam, mu, J, Jd)


@long_kernel
def reduced_task_space(mf, fm, f, ref, rows, damping, qbar, qdbar, ws, tw, Lam, mu, J, Jd):
    """The same in the independent coordinates: Mbar, Cbar (Algorithm 1 through A), Jbar =
    J A, Jdotbar = Jdot A, and a dense factorization of Mbar."""
    n = mf.shape[0]
    m = row_count(rows)
    if not frame_ok(mf, fm, ws, f, ref) or m < 0 or not damping >= 0.0:
        return BAD_FRAME
    xw = ws[n:].reshape(-1)
    nn, nq, nb, _ = layout(mf, xw)
    if nn < 0:
        return SIZE_WS
    if tw.shape[0] < task_ws_size(nb):
        return SIZE_WS
    M = tw[0 : nb * nb].reshape((nb, nb))
    Md = tw[nb * nb : 2 * nb * nb].reshape((nb, nb))
    C = tw[2 * nb * nb : 3 * nb * nb].reshape((nb, nb))
    J6 = tw[3 * nb * nb : 3 * nb * nb + 6 * nb].reshape((6, nb))
    Jd6 = tw[3 * nb * nb + 6 * nb : 3 * nb * nb + 12 * nb].reshape((6, nb))
    status = reduced_coriolis(mf, qbar, qdbar, ws, M, Md, C)  # checks qbar and qdbar
    if status:
        return status
    if not sizes_ok(m, nb, Lam, mu, J, Jd):
        return SIZE_OUT
    if not all_apart(tw, Lam, mu, J, Jd):
        return OVERLAP
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd = xw[oq : oq + nq], vector(xw, v, n, 0)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    place_path(mf, q, qd, ws, int(fm[f, FM_BODY]), True, ref == WORLD)
    jacobian_columns(mf, fm, f, ref, ws, J6, xw, a)
    jacobian_dot_columns(mf, fm, f, ref, ws, Jd6, xw, a)
    return task_terms(mf, True, rows, m, damping, M, C, J6, Jd6, tw, nb, Lam, mu, J, Jd)
