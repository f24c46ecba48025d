"""The floating base's change of velocity variables on the per-tick path, compiled.

:mod:`coriolis_ros.dynamics.velocity_representation` defines the representations and the law
(nu_B = T_b nu'_b, dT_b/dt = -K T_b, C' = T^T (C - M K) T, ...).  These kernels do its
per-call work for ``coriolis`` and ``coriolis_vectors`` without allocating: ``base_velocity``
checks (q, nu'), forms T_b and K(nu_B) into ``tk`` (12 x 6: T_b, then K) and nu_B;
``base_coriolis`` and ``base_vectors`` change the body-representation results in place.

The inertial representation's pdot = v' + w x p nearly cancels far from the origin; it is
summed with error-free products (Dekker's split) and sums (Knuth's TwoSum), so pdot keeps its
own relative accuracy.  These kernels are compiled without contraction into fused multiply-adds
(which would break the error-free transformations).
"""

from numba import njit

from .kinematics import MAX_ABS, MIN_QUATERNION_NORM

MIXED, INERTIAL = 1, 2
# status codes, as kinematics'
BAD_Q, BAD_QD, BAD_QUATERNION, SIZE_Q, SIZE_QD, SIZE_OUT = 1, 2, 5, 11, 12, 20
BAD_RESULT = 40  # a result that is not finite

_plain = njit(cache=False, error_model="numpy", boundscheck=False, _nrt=False)

_SPLIT = 134217729.0  # 2^27 + 1


@_plain
def _two_product(a, b):
    """(x, y) with x + y = a b exactly (Dekker)."""
    x = a * b
    c = _SPLIT * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLIT * b
    bh = c - (c - b)
    bl = b - bh
    y = al * bl - (((x - ah * bh) - al * bh) - ah * bl)
    return x, y


@_plain
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@_plain
def _plus_cross(v, a, b, c, d):
    """v + a b - c d, accurate where the terms cancel."""
    x1, y1 = _two_product(a, b)
    x2, y2 = _two_product(c, d)
    h, e1 = _two_sum(x1, -x2)
    s, e2 = _two_sum(h, v)
    return s + (e1 + e2 + y1 - y2)


@_plain
def _finite(x):
    return abs(x) <= MAX_ABS


@_plain
def base_velocity(q, v, rep, nu, tk):
    """0, or a status code: nu = nu_B of (q, nu' = v), tk[:6] = T_b, tk[6:] = K(nu_B)."""
    n = v.shape[0]
    if q.shape[0] < 7:
        return SIZE_Q
    if nu.shape[0] != n or n < 6 or tk.shape[0] != 12 or tk.shape[1] != 6:
        return SIZE_OUT
    for i in range(q.shape[0]):
        if not _finite(q[i]):
            return BAD_Q
    for i in range(n):
        if not _finite(v[i]):
            return BAD_QD
    qx, qy, qz, qw = q[3], q[4], q[5], q[6]
    norm = (qx * qx + qy * qy + qz * qz + qw * qw) ** 0.5
    if norm < MIN_QUATERNION_NORM:
        return BAD_QUATERNION
    x, y, z, w = qx / norm, qy / norm, qz / norm, qw / norm
    # R^T, row-major (R as configuration.quaternion_matrix)
    r00, r01, r02 = 1 - 2 * (y * y + z * z), 2 * (x * y + z * w), 2 * (x * z - y * w)
    r10, r11, r12 = 2 * (x * y - z * w), 1 - 2 * (x * x + z * z), 2 * (y * z + x * w)
    r20, r21, r22 = 2 * (x * z + y * w), 2 * (y * z - x * w), 1 - 2 * (x * x + y * y)
    for i in range(6, n):
        nu[i] = v[i]
    wx, wy, wz = v[3], v[4], v[5]
    px, py, pz = q[0], q[1], q[2]
    if rep == INERTIAL:  # pdot = v + w x p
        lx = _plus_cross(v[0], wy, pz, wz, py)
        ly = _plus_cross(v[1], wz, px, wx, pz)
        lz = _plus_cross(v[2], wx, py, wy, px)
    else:
        lx, ly, lz = v[0], v[1], v[2]
    nu[0] = r00 * lx + r01 * ly + r02 * lz
    nu[1] = r10 * lx + r11 * ly + r12 * lz
    nu[2] = r20 * lx + r21 * ly + r22 * lz
    nu[3] = r00 * wx + r01 * wy + r02 * wz
    nu[4] = r10 * wx + r11 * wy + r12 * wz
    nu[5] = r20 * wx + r21 * wy + r22 * wz
    for i in range(12):
        for j in range(6):
            tk[i, j] = 0.0
    rt = ((r00, r01, r02), (r10, r11, r12), (r20, r21, r22))
    for i in range(3):
        for j in range(3):
            tk[i, j] = rt[i][j]
            tk[3 + i, 3 + j] = rt[i][j]
    if rep == INERTIAL:  # -R^T [p]
        for i in range(3):
            a, b, c = rt[i]
            tk[i, 3] = -(b * pz - c * py)
            tk[i, 4] = -(c * px - a * pz)
            tk[i, 5] = -(a * py - b * px)
    # K: [w_B] on both diagonal blocks, and [v_B] top right for the inertial one
    ax, ay, az = nu[3], nu[4], nu[5]
    for o in (0, 3):
        tk[6 + o, o + 1], tk[6 + o, o + 2] = -az, ay
        tk[7 + o, o], tk[7 + o, o + 2] = az, -ax
        tk[8 + o, o], tk[8 + o, o + 1] = -ay, ax
    if rep == INERTIAL:
        bx, by, bz = nu[0], nu[1], nu[2]
        tk[6, 4], tk[6, 5] = -bz, by
        tk[7, 3], tk[7, 5] = bz, -bx
        tk[8, 3], tk[8, 4] = -by, bx
    return 0


@_plain
def _congruence(X, tk, w):
    """X <- T^T X T (T = diag(T_b, 1)), w (n x 6) scratch."""
    n = X.shape[0]
    for i in range(n):  # X T on the first six columns
        for j in range(6):
            s = 0.0
            for a in range(6):
                s += X[i, a] * tk[a, j]
            w[i, j] = s
        for j in range(6):
            X[i, j] = w[i, j]
    for c in range(n):  # T^T X on the first six rows
        for i in range(6):
            s = 0.0
            for a in range(6):
                s += tk[a, i] * X[a, c]
            w[c, i] = s
        for i in range(6):
            X[i, c] = w[c, i]


@_plain
def _all_finite2(X):
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if not _finite(X[i, j]):
                return False
    return True


@_plain
def base_coriolis(M, Mdot, C, tk, w):
    """(M, Mdot, C) of the body representation -> (M', Mdot', C') in place; w (n x 6) scratch.
    0, or BAD_RESULT."""
    n = M.shape[0]
    if w.shape[0] < n or w.shape[1] != 6:
        return SIZE_OUT
    for i in range(n):  # w = M K (first six columns of M)
        for j in range(6):
            s = 0.0
            for d in range(6):
                s += M[i, d] * tk[6 + d, j]
            w[i, j] = s
    for i in range(n):  # C -= M K, Mdot -= M K + K^T M
        for j in range(6):
            C[i, j] -= w[i, j]
            Mdot[i, j] -= w[i, j]
            Mdot[j, i] -= w[i, j]
    _congruence(M, tk, w)
    _congruence(Mdot, tk, w)
    _congruence(C, tk, w)
    if not (_all_finite2(M) and _all_finite2(Mdot) and _all_finite2(C)):
        return BAD_RESULT
    return 0


@_plain
def base_vectors(c, ct, m, mk, tk):
    """(C nu, C^T nu, M nu) of the body representation, and mk = M (K nu_B) (zero rows past
    six), -> (C' nu', C'^T nu', M' nu') in place: c -= mk, ct[:6] -= K^T m[:6], then T^T."""
    n = c.shape[0]
    for i in range(n):
        c[i] -= mk[i]
    k0 = k1 = k2 = k3 = k4 = k5 = 0.0
    for d in range(6):
        k0 += tk[6 + d, 0] * m[d]
        k1 += tk[6 + d, 1] * m[d]
        k2 += tk[6 + d, 2] * m[d]
        k3 += tk[6 + d, 3] * m[d]
        k4 += tk[6 + d, 4] * m[d]
        k5 += tk[6 + d, 5] * m[d]
    ct[0] -= k0
    ct[1] -= k1
    ct[2] -= k2
    ct[3] -= k3
    ct[4] -= k4
    ct[5] -= k5
    for x in (c, ct, m):
        a0, a1, a2, a3, a4, a5 = x[0], x[1], x[2], x[3], x[4], x[5]
        for i in range(6):
            x[i] = (tk[0, i] * a0 + tk[1, i] * a1 + tk[2, i] * a2 + tk[3, i] * a3
                    + tk[4, i] * a4 + tk[5, i] * a5)  # fmt: skip
    for x in (c, ct, m):
        for i in range(n):
            if not _finite(x[i]):
                return BAD_RESULT
    return 0
