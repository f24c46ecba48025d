"""The wrench at a frame that best explains a joint-space residual: J^T w = r by least squares.

For the m task rows J (m x n) of a frame's Jacobian, take the one-sided Jacobi
decomposition J^T V = W (Hestenes: plane rotations V make W's columns orthogonal; their norms
are J's singular values s_k); then the least-squares solution of
J^T w = r is w = sum_k V[:, k] (W[:, k] . r) / s_k^2, when the rows are independent: every
singular value above max(m, n) * eps * s_max (numpy's rank tolerance).  J is first divided
by its largest |entry| (and w by the same number at the end), so no square under- or
overflows.  The condition number is s_max / s_min.  One compiled call (the node runs this
for every watched frame at every state), with no linear-algebra library: Jacobi's method is
accurate to rounding in the singular values for matrices this small (m <= 6 columns).

A column whose squared norm falls to (max(m, n) eps)^2 ||J||_F^2 / m or below is numerically
zero (its singular value is under the rank tolerance, since ||J||_F^2 / m <= s_max^2): it is
not rotated any more. Without that, the relative orthogonality test never passes for a
rank-deficient J (a frame with fewer joints than rows above it) and every call ran all
MAX_SWEEPS sweeps, about seven times the full-rank cost.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kinematics import MAX_ABS

BAD_RESIDUAL = -2.0  # a NaN, infinite or huge residual entry
SIZE_RESIDUAL = -3.0  # the residual's length is not J's number of columns
NOT_OBSERVABLE = -1.0  # J's rows are rank-deficient (or fewer joints than rows)
SIZE_SCRATCH = -4.0  # the scratch array is too small (the caller's error)
OVERFLOW = -5.0  # w is not finite: a huge residual over tiny singular values

EPS = float(np.finfo(np.float64).eps)
MAX_SWEEPS = 60  # Jacobi converges quadratically: a handful of sweeps for m <= 6


@njit(cache=False, error_model="numpy", _nrt=False)
def wrench_from_residual(J, r, w, scratch):
    """Fill w (m) and return the condition number of J (m x n), or one of the negative
    codes above (w is then not to be used).  ``scratch`` (at least n + m + 2 rows, 6 columns)
    holds W, V, the squared singular values, and in ``scratch[n + m + 1, 0]`` the number of
    sweeps taken: nothing is allocated."""
    m, n = J.shape
    if r.shape[0] != n:
        return SIZE_RESIDUAL
    for k in range(n):
        if not abs(r[k]) <= MAX_ABS:
            return BAD_RESIDUAL
    if n < m or m == 0:
        return NOT_OBSERVABLE
    if scratch.shape[0] < n + m + 2 or scratch.shape[1] < m:
        return SIZE_SCRATCH
    W = scratch[:n]
    V = scratch[n : n + m]
    sq = scratch[n + m]
    for i in range(m):
        for k in range(m):
            V[i, k] = 0.0
    scale = 0.0  # J's largest |entry|: W = J^T / scale, so no square underflows or overflows
    for i in range(n):
        for k in range(m):
            scale = max(scale, abs(J[k, i]))
    if not (scale > 0.0 and scale < math.inf):
        return NOT_OBSERVABLE
    for i in range(n):
        for k in range(m):
            W[i, k] = J[k, i] / scale
    fro2 = 0.0
    for i in range(n):
        for k in range(m):
            fro2 += W[i, k] * W[i, k]
    for k in range(m):
        V[k, k] = 1.0
    tol = max(m, n) * EPS
    negligible = tol * tol * fro2 / m  # a column this small is numerically zero
    sweeps = 0
    for _ in range(MAX_SWEEPS):
        sweeps += 1
        rotated = False
        for p in range(m - 1):
            for q in range(p + 1, m):
                alpha = beta = gamma = 0.0
                for i in range(n):
                    alpha += W[i, p] * W[i, p]
                    beta += W[i, q] * W[i, q]
                    gamma += W[i, p] * W[i, q]
                if not (alpha > negligible and beta > negligible):
                    continue  # a numerically zero column: J is rank-deficient
                if not abs(gamma) > EPS * math.sqrt(alpha * beta):
                    continue  # already orthogonal (to rounding)
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                t = (1.0 if zeta >= 0.0 else -1.0) / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = c * t
                for i in range(n):
                    wp, wq = W[i, p], W[i, q]
                    W[i, p] = c * wp - s * wq
                    W[i, q] = s * wp + c * wq
                for i in range(m):
                    vp, vq = V[i, p], V[i, q]
                    V[i, p] = c * vp - s * vq
                    V[i, q] = s * vp + c * vq
        if not rotated:
            break
    scratch[n + m + 1, 0] = sweeps
    smax, smin = 0.0, math.inf
    for k in range(m):
        acc = 0.0
        for i in range(n):
            acc += W[i, k] * W[i, k]
        sq[k] = acc
        sk = math.sqrt(acc)
        smax = max(smax, sk)
        smin = min(smin, sk)
    if not smin > tol * smax:
        return NOT_OBSERVABLE
    for i in range(m):
        w[i] = 0.0
    for k in range(m):
        acc = 0.0
        for i in range(n):
            acc += W[i, k] * r[i]
        acc /= sq[k]
        for i in range(m):
            w[i] += V[i, k] * acc
    for i in range(m):  # (J / scale)^T (scale w) = r
        w[i] /= scale
        if not abs(w[i]) < math.inf:
            return OVERFLOW
    return smax / smin
