"""One tick of the Slotine-Li adaptive controller (:mod:`coriolis_ros.dynamics.adaptive`).

Slotine & Li, "On the adaptive control of robot manipulators", IJRR 6(3), 1987:

    qd_r = qd_d - Lambda q~,   qdd_r = qdd_d - Lambda (qd - qd_d),   s = qd - qd_r,
    tau = Y(q, qd, qd_r, qdd_r) pi^ - K_D s,                     (control law)
    d/dt pi^ = -P Y^T s,                                          (adaptation law)

the adaptation integrated by one explicit step per tick and projected, body by body, onto
the physically consistent set {pi_k : J_l(pi_k) >= eps 1}, J_l = D J D the pseudo-inertia
(Wensing, Kim and Slotine, RA-L 2017) scaled by D = diag(1/l, 1/l, 1/l, 1) with a length l
per body.  With P_k = gamma_k (A_k^T A_k)^-1, A_k the linear map pi_k -> J_l(pi_k) (so that
||pi_k||^2 in the metric P_k^-1 is ||J_l(pi_k)||_F^2 / gamma_k), the projection in the
metric P^-1 is the Frobenius projection of J_l onto {J >= eps 1}: clip the eigenvalues of
J_l at eps (Higham, "Computing a nearest symmetric positive semidefinite matrix", 1988).
The set is convex, so the projection never moves pi^ away from a physically consistent pi
in the metric P^-1: the Lyapunov argument survives the projection.

Everything here works in the caller's preallocated arrays; nothing allocates.
"""

import math

from .kinematics import MAX_ABS
from .spatial import kernel

# statuses of adaptive_step (>= 0: done, the number of bodies projected)
BAD_RESULT = -1  # tau or the updated pi^ would be non-finite or beyond MAX_ABS: nothing changed
BAD_SIZES = -2  # the arrays do not fit together
# statuses of slotine_li_reference: the first non-finite desired input, or a size mismatch
BAD_Q_DES, BAD_QD_DES, BAD_QDD_DES = 1, 2, 3
SIZE_Q_DES, SIZE_QD_DES, SIZE_QDD_DES, SIZE_STATE = 4, 5, 6, 7

# work layout (float64, WORK_SIZE): Y_k^T s of one body, its J_l, the eigenvectors of J_l
W_G = 0  # 10
W_J = 10  # 16: row-major 4 x 4
W_V = 26  # 16: row-major, the vectors as columns
WORK_SIZE = 42


@kernel
def slotine_li_reference(q, qd, q_des, qd_des, qdd_des, lam, qd_r, qdd_r):
    """qd_r = qd_d - Lambda (q - q_d), qdd_r = qdd_d - Lambda (qd - qd_d), Lambda diagonal;
    0, or the status of the first desired input of the wrong size or non-finite, or
    SIZE_STATE for q or qd (outputs untouched)."""
    n = lam.shape[0]
    if q.shape[0] != n or qd.shape[0] != n or qd_r.shape[0] != n or qdd_r.shape[0] != n:
        return SIZE_STATE
    if q_des.shape[0] != n:
        return SIZE_Q_DES
    if qd_des.shape[0] != n:
        return SIZE_QD_DES
    if qdd_des.shape[0] != n:
        return SIZE_QDD_DES
    for i in range(n):
        if not abs(q_des[i]) <= MAX_ABS:
            return BAD_Q_DES
        if not abs(qd_des[i]) <= MAX_ABS:
            return BAD_QD_DES
        if not abs(qdd_des[i]) <= MAX_ABS:
            return BAD_QDD_DES
    for i in range(n):
        qd_r[i] = qd_des[i] - lam[i] * (q[i] - q_des[i])
        qdd_r[i] = qdd_des[i] - lam[i] * (qd[i] - qd_des[i])
    return 0


@kernel
def to_pseudo_inertia(pi, k, scale, J, o):
    """J_l (row-major 4 x 4) of body k's ten parameters (m, h, Ixx, Ixy, Iyy, Ixz, Iyz, Izz):
    Sigma = 1/2 tr(I) 1 - I divided by l^2, h by l, m."""
    m = pi[k]
    ixx, ixy, iyy, ixz, iyz, izz = pi[k + 4], pi[k + 5], pi[k + 6], pi[k + 7], pi[k + 8], pi[k + 9]
    t = 0.5 * (ixx + iyy + izz)
    a, b = 1.0 / (scale * scale), 1.0 / scale
    sxx, syy, szz = (t - ixx) * a, (t - iyy) * a, (t - izz) * a
    sxy, sxz, syz = -ixy * a, -ixz * a, -iyz * a
    hx, hy, hz = pi[k + 1] * b, pi[k + 2] * b, pi[k + 3] * b
    J[o], J[o + 1], J[o + 2], J[o + 3] = sxx, sxy, sxz, hx
    J[o + 4], J[o + 5], J[o + 6], J[o + 7] = sxy, syy, syz, hy
    J[o + 8], J[o + 9], J[o + 10], J[o + 11] = sxz, syz, szz, hz
    J[o + 12], J[o + 13], J[o + 14], J[o + 15] = hx, hy, hz, m


@kernel
def from_pseudo_inertia(J, o, scale, pi, k):
    """The inverse of :func:`to_pseudo_inertia`: I = tr(Sigma) 1 - Sigma."""
    a = scale * scale
    sxx, sxy, sxz = J[o] * a, 0.5 * (J[o + 1] + J[o + 4]) * a, 0.5 * (J[o + 2] + J[o + 8]) * a
    syy, syz, szz = J[o + 5] * a, 0.5 * (J[o + 6] + J[o + 9]) * a, J[o + 10] * a
    tr = sxx + syy + szz
    pi[k] = J[o + 15]
    pi[k + 1] = 0.5 * (J[o + 3] + J[o + 12]) * scale
    pi[k + 2] = 0.5 * (J[o + 7] + J[o + 13]) * scale
    pi[k + 3] = 0.5 * (J[o + 11] + J[o + 14]) * scale
    pi[k + 4], pi[k + 5], pi[k + 6] = tr - sxx, -sxy, tr - syy
    pi[k + 7], pi[k + 8], pi[k + 9] = -sxz, -syz, tr - szz


@kernel
def positive_definite_above(J, o, eps):
    """True if J - eps 1 (row-major 4 x 4 at J[o:], symmetric) has a Cholesky factor with
    positive pivots."""
    l00s = J[o] - eps
    if not l00s > 0.0:
        return False
    l00 = math.sqrt(l00s)
    l10, l20, l30 = J[o + 4] / l00, J[o + 8] / l00, J[o + 12] / l00
    d1 = J[o + 5] - eps - l10 * l10
    if not d1 > 0.0:
        return False
    l11 = math.sqrt(d1)
    l21 = (J[o + 9] - l20 * l10) / l11
    l31 = (J[o + 13] - l30 * l10) / l11
    d2 = J[o + 10] - eps - l20 * l20 - l21 * l21
    if not d2 > 0.0:
        return False
    l22 = math.sqrt(d2)
    l32 = (J[o + 14] - l30 * l20 - l31 * l21) / l22
    return J[o + 15] - eps - l30 * l30 - l31 * l31 - l32 * l32 > 0.0


@kernel
def jacobi_eigen(w, a, v):
    """Eigen-decomposition of the symmetric 4 x 4 A = w[a:a+16] (row-major; overwritten, its
    diagonal then holds the eigenvalues) by cyclic Jacobi rotations (Golub & Van Loan,
    *Matrix Computations*, Algorithm 8.5.3); w[v:v+16] gets the eigenvectors as columns."""
    for i in range(16):
        w[v + i] = 0.0
    for i in range(4):
        w[v + 5 * i] = 1.0
    for _ in range(60):
        off, norm = 0.0, 0.0
        for i in range(16):
            norm += w[a + i] * w[a + i]
        for p in range(4):
            for r in range(p + 1, 4):
                off += w[a + 4 * p + r] * w[a + 4 * p + r]
        if off <= 1e-32 * norm:
            return
        for p in range(3):
            for r in range(p + 1, 4):
                apr = w[a + 4 * p + r]
                if apr == 0.0:
                    continue
                theta = (w[a + 5 * r] - w[a + 5 * p]) / (2.0 * apr)
                t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                sn = t * c
                for j in range(4):  # A <- A G (columns p, r)
                    ajp, ajr = w[a + 4 * j + p], w[a + 4 * j + r]
                    w[a + 4 * j + p] = c * ajp - sn * ajr
                    w[a + 4 * j + r] = sn * ajp + c * ajr
                for j in range(4):  # A <- G^T A (rows p, r)
                    apj, arj = w[a + 4 * p + j], w[a + 4 * r + j]
                    w[a + 4 * p + j] = c * apj - sn * arj
                    w[a + 4 * r + j] = sn * apj + c * arj
                for j in range(4):  # V <- V G
                    vjp, vjr = w[v + 4 * j + p], w[v + 4 * j + r]
                    w[v + 4 * j + p] = c * vjp - sn * vjr
                    w[v + 4 * j + r] = sn * vjp + c * vjr


@kernel
def project_body(pi, k, scale, eps, work):
    """Project body k of pi in place onto {J_l >= eps 1} (eigenvalues clipped at eps); returns
    True if it moved."""
    to_pseudo_inertia(pi, k, scale, work, W_J)
    if positive_definite_above(work, W_J, eps):
        return False
    jacobi_eigen(work, W_J, W_V)
    d0 = max(work[W_J], eps)
    d1 = max(work[W_J + 5], eps)
    d2 = max(work[W_J + 10], eps)
    d3 = max(work[W_J + 15], eps)
    for i in range(4):
        for j in range(i, 4):
            x = (
                work[W_V + 4 * i] * d0 * work[W_V + 4 * j]
                + work[W_V + 4 * i + 1] * d1 * work[W_V + 4 * j + 1]
                + work[W_V + 4 * i + 2] * d2 * work[W_V + 4 * j + 2]
                + work[W_V + 4 * i + 3] * d3 * work[W_V + 4 * j + 3]
            )
            work[W_J + 4 * i + j] = x
            work[W_J + 4 * j + i] = x
    from_pseudo_inertia(work, W_J, scale, pi, k)
    return True


@kernel
def adaptive_step(Y, qd, qd_r, kd, pi, blocks, gains, scales, eps, dt, s, tau, pi_next, work):
    """tau = Y pi - K_D s with s = qd - qd_r, then pi <- Proj(pi - dt P Y^T s), P_k =
    gains[k] blocks[k] (zero gain: body k not adapted).  The new pi is built in pi_next and
    copied to pi only if it and tau are finite and within MAX_ABS.  Returns the number of
    bodies the projection moved, or BAD_RESULT (pi unchanged)."""
    n, width = Y.shape
    nb = width // 10
    if qd.shape[0] != n or qd_r.shape[0] != n or kd.shape[0] != n or pi.shape[0] != width:
        return BAD_SIZES
    for i in range(n):
        s[i] = qd[i] - qd_r[i]
    for i in range(n):
        acc = -kd[i] * s[i]
        for c in range(width):
            acc += Y[i, c] * pi[c]
        tau[i] = acc
    for c in range(width):
        pi_next[c] = pi[c]
    moved = 0
    for b in range(nb):
        gain = gains[b]
        if gain == 0.0:
            continue
        k = 10 * b
        for c in range(10):
            acc = 0.0
            for i in range(n):
                acc += Y[i, k + c] * s[i]
            work[W_G + c] = acc
        for r in range(10):
            acc = 0.0
            for c in range(10):
                acc += blocks[b, r, c] * work[W_G + c]
            pi_next[k + r] -= dt * gain * acc
        if eps >= 0.0 and project_body(pi_next, k, scales[b], eps, work):
            moved += 1
    for i in range(n):
        if not abs(tau[i]) <= MAX_ABS:
            return BAD_RESULT
    for c in range(width):
        if not abs(pi_next[c]) <= MAX_ABS:
            return BAD_RESULT
    for c in range(width):
        pi[c] = pi_next[c]
    return moved
