"""Inertial parameters in, and out of, the packed model ``mf``.

A body's ten parameters (Pinocchio's order) are, in the frame of its URDF link,

    pi = (m, h_x, h_y, h_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz),

h = m c the first moment and I the rotational inertia about the link frame's origin.
``mf`` stores, in the row's body frame (x_body = E x_link, same origin), the mass, the
centre of mass c and the inertia about it: c = h / m and I_c = I - (h.h 1 - h h^T) / m
(parallel axes).  A body is the last row of its joint (every row of a single-DoF joint;
the sixth of a free flyer, the third of a planar joint: the rows before are massless).

Physical consistency (Wensing, Kim and Slotine, "Linear matrix inequalities for physically
consistent inertial parameter identification", RA-L 2017, Theorem 1): the pseudo-inertia

    J = [[Sigma, h], [h^T, m]],   Sigma = 1/2 tr(I) 1 - I,

is positive definite (tested here by a Cholesky factorization with positive pivots).
"""

import math

from ..model import FREE, MF_C, MF_I, MF_M, MF_SUB, MF_TYPE, PLANAR
from .kinematics import MAX_ABS
from .spatial import kernel

# Why a body is refused: status = 4 * body + reason.
NOT_PHYSICAL = 1  # the pseudo-inertia is not positive definite
FIRST_MOMENT_WITHOUT_MASS = 2  # m = 0 and h != 0: no centre of mass to store
NOT_REPRESENTABLE = 3  # c or I_c beyond +-MAX_ABS (a tiny mass with a large first moment)
BAD_SIZE = -1  # pi or E do not fit the model


@kernel
def is_body_row(mf, i):
    """True if row i carries a body: the last row of its joint."""
    kind = mf[i, MF_TYPE]
    last = 5 if kind == FREE else (2 if kind == PLANAR else 0)
    return mf[i, MF_SUB] == last


@kernel
def body_count(mf):
    nb = 0
    for i in range(mf.shape[0]):
        if is_body_row(mf, i):
            nb += 1
    return nb


@kernel
def pseudo_inertia_pd(pi, k):
    """True if body k's pseudo-inertia J (module docstring) is positive definite: the
    Cholesky factorization J = L L^T exists with positive pivots."""
    m = pi[k]
    hx, hy, hz = pi[k + 1], pi[k + 2], pi[k + 3]
    ixx, ixy, iyy, ixz, iyz, izz = pi[k + 4], pi[k + 5], pi[k + 6], pi[k + 7], pi[k + 8], pi[k + 9]
    t = 0.5 * (ixx + iyy + izz)
    # J, symmetric: rows/columns 0-2 Sigma, 3 the mass
    a00, a01, a02, a03 = t - ixx, -ixy, -ixz, hx
    a11, a12, a13 = t - iyy, -iyz, hy
    a22, a23 = t - izz, hz
    a33 = m
    if not a00 > 0.0:
        return False
    l00 = math.sqrt(a00)
    l10, l20, l30 = a01 / l00, a02 / l00, a03 / l00
    d1 = a11 - l10 * l10
    if not d1 > 0.0:
        return False
    l11 = math.sqrt(d1)
    l21 = (a12 - l20 * l10) / l11
    l31 = (a13 - l30 * l10) / l11
    d2 = a22 - l20 * l20 - l21 * l21
    if not d2 > 0.0:
        return False
    l22 = math.sqrt(d2)
    l32 = (a23 - l30 * l20 - l31 * l21) / l22
    d3 = a33 - l30 * l30 - l31 * l31 - l32 * l32
    return d3 > 0.0


@kernel
def stored_inertia(E, i, pi, k):
    """(status, m, c (3), I_c (row-major 9)) of body k's parameters in row i's frame."""
    m = pi[k]
    lx, ly, lz = pi[k + 1], pi[k + 2], pi[k + 3]
    ixx, ixy, iyy, ixz, iyz, izz = pi[k + 4], pi[k + 5], pi[k + 6], pi[k + 7], pi[k + 8], pi[k + 9]
    e00, e01, e02 = E[i, 0], E[i, 1], E[i, 2]
    e10, e11, e12 = E[i, 3], E[i, 4], E[i, 5]
    e20, e21, e22 = E[i, 6], E[i, 7], E[i, 8]
    # h and I in the row's frame: E h, E I E^T
    hx = e00 * lx + e01 * ly + e02 * lz
    hy = e10 * lx + e11 * ly + e12 * lz
    hz = e20 * lx + e21 * ly + e22 * lz
    t00 = e00 * ixx + e01 * ixy + e02 * ixz
    t01 = e00 * ixy + e01 * iyy + e02 * iyz
    t02 = e00 * ixz + e01 * iyz + e02 * izz
    t10 = e10 * ixx + e11 * ixy + e12 * ixz
    t11 = e10 * ixy + e11 * iyy + e12 * iyz
    t12 = e10 * ixz + e11 * iyz + e12 * izz
    t20 = e20 * ixx + e21 * ixy + e22 * ixz
    t21 = e20 * ixy + e21 * iyy + e22 * iyz
    t22 = e20 * ixz + e21 * iyz + e22 * izz
    bxx = t00 * e00 + t01 * e01 + t02 * e02
    bxy = t00 * e10 + t01 * e11 + t02 * e12
    bxz = t00 * e20 + t01 * e21 + t02 * e22
    byy = t10 * e10 + t11 * e11 + t12 * e12
    byz = t10 * e20 + t11 * e21 + t12 * e22
    bzz = t20 * e20 + t21 * e21 + t22 * e22
    if m == 0.0:
        if hx != 0.0 or hy != 0.0 or hz != 0.0:
            return FIRST_MOMENT_WITHOUT_MASS, m, 0.0, 0.0, 0.0, bxx, bxy, bxz, byy, byz, bzz
        return 0, m, 0.0, 0.0, 0.0, bxx, bxy, bxz, byy, byz, bzz
    # parallel axes to the centre of mass: I_c = I - (h.h 1 - h h^T) / m
    cx, cy, cz = hx / m, hy / m, hz / m
    hh = hx * cx + hy * cy + hz * cz
    cxx = bxx - hh + hx * cx
    cyy = byy - hh + hy * cy
    czz = bzz - hh + hz * cz
    cxy = bxy + hx * cy
    cxz = bxz + hx * cz
    cyz = byz + hy * cz
    status = 0
    for x in (cx, cy, cz, cxx, cyy, czz, cxy, cxz, cyz):
        if not abs(x) <= MAX_ABS:
            status = NOT_REPRESENTABLE
    return status, m, cx, cy, cz, cxx, cxy, cxz, cyy, cyz, czz


@kernel
def write_parameters(mf, E, pi, check):
    """Store pi (10 per body, link frames) in mf's mass, centre-of-mass and inertia columns.

    All or nothing: every body is checked first (that mf can hold it, then its pseudo-inertia
    if ``check``; an all-zero body, a massless link, passes); returns 0, or 4 * body + reason
    for the first body refused (module constants), or BAD_SIZE if pi or E do not fit.  pi
    must be finite (the caller checks).
    """
    n = mf.shape[0]
    if pi.shape[0] != 10 * body_count(mf) or E.shape[0] != n or E.shape[1] != 9:
        return BAD_SIZE
    for write in range(2):
        b = 0
        for i in range(n):
            if not is_body_row(mf, i):
                continue
            k = 10 * b
            status, m, cx, cy, cz, cxx, cxy, cxz, cyy, cyz, czz = stored_inertia(E, i, pi, k)
            if write == 0:
                if status:
                    return 4 * b + status
                zero = True
                for x in range(k, k + 10):
                    if pi[x] != 0.0:
                        zero = False
                if check and not zero and not pseudo_inertia_pd(pi, k):
                    return 4 * b + NOT_PHYSICAL
            else:
                mf[i, MF_M] = m
                mf[i, MF_C], mf[i, MF_C + 1], mf[i, MF_C + 2] = cx, cy, cz
                mf[i, MF_I], mf[i, MF_I + 1], mf[i, MF_I + 2] = cxx, cxy, cxz
                mf[i, MF_I + 3], mf[i, MF_I + 4], mf[i, MF_I + 5] = cxy, cyy, cyz
                mf[i, MF_I + 6], mf[i, MF_I + 7], mf[i, MF_I + 8] = cxz, cyz, czz
            b += 1
    return 0
