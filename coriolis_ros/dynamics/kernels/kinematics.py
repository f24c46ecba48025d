"""Forward kinematics in world coordinates: poses, joint subspaces Phi, inertias, velocities.

Multi-DoF joints (free flyer, planar) occupy consecutive rows of the model, each
row one column of the joint's motion subspace Phi, fixed in the child body (the
velocities are expressed in the child frame, Pinocchio's convention).  The
joint's first row places and moves all of its rows at once; the later rows'
calls are no-ops.  Every row of the joint carries the body's pose and velocity
v, and Phidot_r = v x Phi_r with the body's whole v (Echeandia & Wensing, journal
version, Section 3: Phi_i in R^{6 x n_i} with Phidot_i = v_i x Phi_i for a
body-fixed subspace).  Seen by the sweeps, such a joint is a chain of
instantaneous single-DoF joints, massless but for the last, whose composite
inertias all equal the body's; only Phidot differs from that chain's, and the
sweeps read it from the workspace.

Where the robot stands: every subtree hanging from the world (a root joint and all below
it) is placed as if that joint's frame were at the world's origin, i.e. the translation of
its tree transform and, for a root prismatic joint, free flyer or planar joint, the
translation its coordinates give are left out of the arithmetic.  This changes no output:
translating a whole subtree is a symmetry of its joint-space dynamics when gravity is
uniform and a multi-DoF joint's velocities are expressed in its child frame (M, C, Gamma,
g, RNEA are functions of the orientations and of the relative positions only).  It keeps
the world-frame quantities (the inertias about the origin, p x a in Phi) at the size of the
robot instead of that of its distance from the origin: a base 1e7 m away gives the same
bits as one at the origin, where computing there would lose ~1e7^2 eps relative in C.
"""

import math

from ..model import (
    FREE,
    MF_C,
    MF_I,
    MF_M,
    MF_PARENT,
    MF_Q,
    MF_R,
    MF_SUB,
    MF_T,
    MF_TYPE,
    MF_WIDTH,
    PLANAR,
    PRISMATIC,
    REVOLUTE,
)
from .spatial import (
    WS_A,
    WS_F,
    WS_H,
    WS_IC,
    WS_P,
    WS_R,
    WS_S,
    WS_SD,
    WS_V,
    WS_WIDTH,
    WS_CS,
    body_step,
    cross,
    inertia_times,
    kernel,
)
from .lanes import sincos_at


# Inputs beyond this are rejected like NaN: the terms quadratic in qd (and M in a prismatic
# q) overflow to inf/NaN near 1e154, and no joint moves 1e50 rad/s.
MAX_ABS = 1e50

# A free flyer's quaternion is normalized before use; one shorter than this is rejected.
MIN_QUATERNION_NORM = 1e-10

# Status codes the kernels return (0: success); the API turns them into ValueErrors.
BAD_Q, BAD_QD, BAD_QDD = 1, 2, 3  # a NaN or infinite entry
BAD_QUATERNION = 5  # a free flyer's quaternion of (nearly) zero norm
SIZE_Q, SIZE_QD, SIZE_QDD = 11, 12, 13  # wrong length
SIZE_OUT = 20  # an output array of the wrong shape
OVERLAP = 21  # output arrays sharing memory
SIZE_WS = 30  # a workspace that does not fit the model


@kernel
def config_size(mf):
    """nq, the length of q: the last joint's first coordinate plus its size."""
    n = mf.shape[0]
    if n == 0:
        return 0
    kind = mf[n - 1, MF_TYPE]
    size = 7 if kind == FREE else (3 if kind == PLANAR else 1)
    return int(mf[n - 1, MF_Q]) + size


@kernel
def check_position(mf, ws, q):
    """0, or the status code of the first problem with the workspace or q."""
    if not model_ok(mf, ws):
        return SIZE_WS
    if q.shape[0] != config_size(mf):
        return SIZE_Q
    if not all_finite(q):
        return BAD_Q
    for i in range(mf.shape[0]):
        if mf[i, MF_TYPE] == FREE and mf[i, MF_SUB] == 0:
            k = int(mf[i, MF_Q]) + 3
            norm2 = q[k] * q[k] + q[k + 1] * q[k + 1] + q[k + 2] * q[k + 2] + q[k + 3] * q[k + 3]
            if not norm2 >= MIN_QUATERNION_NORM * MIN_QUATERNION_NORM:
                return BAD_QUATERNION
    return 0


@kernel
def check_inputs(mf, ws, q, qd, qdd):
    """0, or the status code of the first problem with the workspace or the inputs.

    q has nq entries (:func:`config_size`), qd and qdd one per row.
    """
    n = mf.shape[0]
    status = check_position(mf, ws, q)
    if status:
        return status
    if qd.shape[0] != n:
        return SIZE_QD
    if qdd.shape[0] != n:
        return SIZE_QDD
    if not all_finite(qd):
        return BAD_QD
    if not all_finite(qdd):
        return BAD_QDD
    return 0


@kernel
def model_ok(mf, ws):
    n = mf.shape[0]
    return mf.shape[1] == MF_WIDTH and ws.shape[0] >= n and ws.shape[1] == WS_WIDTH


@kernel
def disjoint(a, b, c):
    """True if the three arrays' memory ranges do not overlap."""
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    ea, eb, ec = pa + a.nbytes, pb + b.nbytes, pc + c.nbytes
    return (ea <= pb or eb <= pa) and (ea <= pc or ec <= pa) and (eb <= pc or ec <= pb)


@kernel
def square_ok(n, x):
    return x.shape[0] == n and x.shape[1] == n


@kernel
def all_finite(x):
    """True if every entry is finite and within +-MAX_ABS (also False for NaN)."""
    for k in range(x.shape[0]):
        if not abs(x[k]) <= MAX_ABS:
            return False
    return True


@body_step
def joint_angles(mf, q, ws):
    """cos and sin of every revolute joint's angle and planar joint's rotation (WS_CS).

    First, in a loop of its own: the rows' (independent) evaluations then overlap, where
    inside :func:`place_body` each would wait on, and hold up, its chain of poses.
    """
    for i in range(mf.shape[0]):
        kind = mf[i, MF_TYPE]
        if kind == REVOLUTE or (kind == PLANAR and mf[i, MF_SUB] == 0):
            k = int(mf[i, MF_Q]) + (2 if kind == PLANAR else 0)
            ws[i, WS_CS], ws[i, WS_CS + 1] = sincos_at(q, k)


@kernel
def forward_positions(mf, q, ws):
    """place_body for every row, base to tips."""
    joint_angles(mf, q, ws)
    for i in range(mf.shape[0]):
        place_body(mf, q, ws, i)


@body_step
def place_body(mf, q, ws, i):
    """World pose, Phi and spatial inertia (into the IC slot) of row i, its parent placed.

    A single-DoF body's frame is its joint frame (joint axis = local z) rotated by
    q about z, or translated by q along z.  Phi in world coordinates is (a, p x a)
    for a revolute joint with axis a through p, and (0, a) for a prismatic one.
    A multi-DoF joint is placed whole by its first row (:func:`place_free`,
    :func:`place_planar`).  Rotations read their cos and sin from WS_CS:
    :func:`joint_angles` runs first, once per state.
    """
    kind = mf[i, MF_TYPE]
    if kind >= FREE and mf[i, MF_SUB] > 0:
        return  # placed with its joint's first row
    b = int(mf[i, MF_PARENT])
    t0, t1, t2 = mf[i, MF_T], mf[i, MF_T + 1], mf[i, MF_T + 2]
    if b < 0:  # the world; its subtree is placed at the origin (see the module docstring)
        a00, a01, a02 = mf[i, MF_R], mf[i, MF_R + 1], mf[i, MF_R + 2]
        a10, a11, a12 = mf[i, MF_R + 3], mf[i, MF_R + 4], mf[i, MF_R + 5]
        a20, a21, a22 = mf[i, MF_R + 6], mf[i, MF_R + 7], mf[i, MF_R + 8]
        px, py, pz = 0.0, 0.0, 0.0
    else:  # A = R_parent R_tree, p = p_parent + R_parent t_tree
        r00, r01, r02 = ws[b, WS_R], ws[b, WS_R + 1], ws[b, WS_R + 2]
        r10, r11, r12 = ws[b, WS_R + 3], ws[b, WS_R + 4], ws[b, WS_R + 5]
        r20, r21, r22 = ws[b, WS_R + 6], ws[b, WS_R + 7], ws[b, WS_R + 8]
        e00, e01, e02 = mf[i, MF_R], mf[i, MF_R + 1], mf[i, MF_R + 2]
        e10, e11, e12 = mf[i, MF_R + 3], mf[i, MF_R + 4], mf[i, MF_R + 5]
        e20, e21, e22 = mf[i, MF_R + 6], mf[i, MF_R + 7], mf[i, MF_R + 8]
        a00 = r00 * e00 + r01 * e10 + r02 * e20
        a01 = r00 * e01 + r01 * e11 + r02 * e21
        a02 = r00 * e02 + r01 * e12 + r02 * e22
        a10 = r10 * e00 + r11 * e10 + r12 * e20
        a11 = r10 * e01 + r11 * e11 + r12 * e21
        a12 = r10 * e02 + r11 * e12 + r12 * e22
        a20 = r20 * e00 + r21 * e10 + r22 * e20
        a21 = r20 * e01 + r21 * e11 + r22 * e21
        a22 = r20 * e02 + r21 * e12 + r22 * e22
        px = ws[b, WS_P] + r00 * t0 + r01 * t1 + r02 * t2
        py = ws[b, WS_P + 1] + r10 * t0 + r11 * t1 + r12 * t2
        pz = ws[b, WS_P + 2] + r20 * t0 + r21 * t1 + r22 * t2
    iq = int(mf[i, MF_Q])
    if kind == FREE:
        place_free(mf, q, ws, i, iq, a00, a01, a02, a10, a11, a12, a20, a21, a22, px, py, pz)
        return
    if kind == PLANAR:
        place_planar(mf, q, ws, i, iq, a00, a01, a02, a10, a11, a12, a20, a21, a22, px, py, pz)
        return
    qi = q[iq]
    if kind == PRISMATIC:
        if b >= 0:  # a root joint's displacement moves its whole subtree: left out
            px += a02 * qi
            py += a12 * qi
            pz += a22 * qi
        set_prismatic_column(ws, i, a02, a12, a22)
    else:  # R = A Rz(q)
        c, s = ws[i, WS_CS], ws[i, WS_CS + 1]
        a00, a01 = c * a00 + s * a01, c * a01 - s * a00
        a10, a11 = c * a10 + s * a11, c * a11 - s * a10
        a20, a21 = c * a20 + s * a21, c * a21 - s * a20
        set_revolute_column(ws, i, px, py, pz, a02, a12, a22)
    put_frame(mf, ws, i, a00, a01, a02, a10, a11, a12, a20, a21, a22, px, py, pz)


@body_step
def set_revolute_column(ws, i, px, py, pz, ax, ay, az):
    """Phi of row i: a rotation about the axis a through p, (a, p x a)."""
    mx, my, mz = cross(px, py, pz, ax, ay, az)
    ws[i, WS_S], ws[i, WS_S + 1], ws[i, WS_S + 2] = ax, ay, az
    ws[i, WS_S + 3], ws[i, WS_S + 4], ws[i, WS_S + 5] = mx, my, mz


@body_step
def set_prismatic_column(ws, i, ax, ay, az):
    """Phi of row i: a translation along a, (0, a)."""
    ws[i, WS_S], ws[i, WS_S + 1], ws[i, WS_S + 2] = 0.0, 0.0, 0.0
    ws[i, WS_S + 3], ws[i, WS_S + 4], ws[i, WS_S + 5] = ax, ay, az


@body_step
def place_free(mf, q, ws, i, iq, a00, a01, a02, a10, a11, a12, a20, a21, a22, px, py, pz):
    """Rows i..i+5 of a free flyer whose joint frame is (A, p), at q[iq:iq+7].

    The child frame is at p + A t with rotation A R(quaternion); Phi's columns are
    the child frame's x, y, z translations, then its x, y, z rotations (about axes
    through its origin): the velocities are expressed in the child frame.
    """
    tx, ty, tz = q[iq], q[iq + 1], q[iq + 2]
    x, y, z, w = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
    scale = 1.0 / math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x * scale, y * scale, z * scale, w * scale
    q00, q01, q02 = 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)
    q10, q11, q12 = 2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)
    q20, q21, q22 = 2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)
    r00 = a00 * q00 + a01 * q10 + a02 * q20
    r01 = a00 * q01 + a01 * q11 + a02 * q21
    r02 = a00 * q02 + a01 * q12 + a02 * q22
    r10 = a10 * q00 + a11 * q10 + a12 * q20
    r11 = a10 * q01 + a11 * q11 + a12 * q21
    r12 = a10 * q02 + a11 * q12 + a12 * q22
    r20 = a20 * q00 + a21 * q10 + a22 * q20
    r21 = a20 * q01 + a21 * q11 + a22 * q21
    r22 = a20 * q02 + a21 * q12 + a22 * q22
    if mf[i, MF_PARENT] >= 0:  # a root free flyer's position is left out
        px += a00 * tx + a01 * ty + a02 * tz
        py += a10 * tx + a11 * ty + a12 * tz
        pz += a20 * tx + a21 * ty + a22 * tz
    set_prismatic_column(ws, i, r00, r10, r20)
    set_prismatic_column(ws, i + 1, r01, r11, r21)
    set_prismatic_column(ws, i + 2, r02, r12, r22)
    set_revolute_column(ws, i + 3, px, py, pz, r00, r10, r20)
    set_revolute_column(ws, i + 4, px, py, pz, r01, r11, r21)
    set_revolute_column(ws, i + 5, px, py, pz, r02, r12, r22)
    for row in range(i, i + 6):
        put_frame(mf, ws, row, r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz)


@body_step
def place_planar(mf, q, ws, i, iq, a00, a01, a02, a10, a11, a12, a20, a21, a22, px, py, pz):
    """Rows i..i+2 of a planar joint whose joint frame is (A, p), at q[iq:iq+3] = (x, y, theta).

    The child frame is at p + A (x, y, 0) with rotation A Rz(theta); Phi's columns
    are its x and y translations and its rotation about its z axis.
    """
    tx, ty = q[iq], q[iq + 1]  # the rotation's cos and sin: joint_angles
    if mf[i, MF_PARENT] >= 0:  # a root planar joint's position is left out
        px += a00 * tx + a01 * ty
        py += a10 * tx + a11 * ty
        pz += a20 * tx + a21 * ty
    c, s = ws[i, WS_CS], ws[i, WS_CS + 1]
    a00, a01 = c * a00 + s * a01, c * a01 - s * a00
    a10, a11 = c * a10 + s * a11, c * a11 - s * a10
    a20, a21 = c * a20 + s * a21, c * a21 - s * a20
    set_prismatic_column(ws, i, a00, a10, a20)
    set_prismatic_column(ws, i + 1, a01, a11, a21)
    set_revolute_column(ws, i + 2, px, py, pz, a02, a12, a22)
    for row in range(i, i + 3):
        put_frame(mf, ws, row, a00, a01, a02, a10, a11, a12, a20, a21, a22, px, py, pz)


@body_step
def put_frame(mf, ws, i, a00, a01, a02, a10, a11, a12, a20, a21, a22, px, py, pz):
    """Write row i's world pose (R = a, p) and its spatial inertia about the world origin."""
    ws[i, WS_R], ws[i, WS_R + 1], ws[i, WS_R + 2] = a00, a01, a02
    ws[i, WS_R + 3], ws[i, WS_R + 4], ws[i, WS_R + 5] = a10, a11, a12
    ws[i, WS_R + 6], ws[i, WS_R + 7], ws[i, WS_R + 8] = a20, a21, a22
    ws[i, WS_P], ws[i, WS_P + 1], ws[i, WS_P + 2] = px, py, pz

    # spatial inertia about the world origin: c = p + R c_body, Ic = R Ic_body R^T
    m = mf[i, MF_M]
    b0, b1, b2 = mf[i, MF_C], mf[i, MF_C + 1], mf[i, MF_C + 2]
    cx = px + a00 * b0 + a01 * b1 + a02 * b2
    cy = py + a10 * b0 + a11 * b1 + a12 * b2
    cz = pz + a20 * b0 + a21 * b1 + a22 * b2
    j00, j01, j02 = mf[i, MF_I], mf[i, MF_I + 1], mf[i, MF_I + 2]
    j11, j12, j22 = mf[i, MF_I + 4], mf[i, MF_I + 5], mf[i, MF_I + 8]
    # T = R J (J symmetric)
    t00 = a00 * j00 + a01 * j01 + a02 * j02
    t01 = a00 * j01 + a01 * j11 + a02 * j12
    t02 = a00 * j02 + a01 * j12 + a02 * j22
    t10 = a10 * j00 + a11 * j01 + a12 * j02
    t11 = a10 * j01 + a11 * j11 + a12 * j12
    t12 = a10 * j02 + a11 * j12 + a12 * j22
    t20 = a20 * j00 + a21 * j01 + a22 * j02
    t21 = a20 * j01 + a21 * j11 + a22 * j12
    t22 = a20 * j02 + a21 * j12 + a22 * j22
    cc = cx * cx + cy * cy + cz * cz
    ws[i, WS_IC] = m
    ws[i, WS_IC + 1], ws[i, WS_IC + 2], ws[i, WS_IC + 3] = m * cx, m * cy, m * cz
    ws[i, WS_IC + 4] = t00 * a00 + t01 * a01 + t02 * a02 + m * (cc - cx * cx)
    ws[i, WS_IC + 5] = t10 * a10 + t11 * a11 + t12 * a12 + m * (cc - cy * cy)
    ws[i, WS_IC + 6] = t20 * a20 + t21 * a21 + t22 * a22 + m * (cc - cz * cz)
    ws[i, WS_IC + 7] = t00 * a10 + t01 * a11 + t02 * a12 - m * cx * cy
    ws[i, WS_IC + 8] = t00 * a20 + t01 * a21 + t02 * a22 - m * cx * cz
    ws[i, WS_IC + 9] = t10 * a20 + t11 * a21 + t12 * a22 - m * cy * cz


@body_step
def move_body(mf, qd, ws, i):
    """v_i = v_p(i) + Phi_i qd_i and Phidot_i = v_i x Phi_i (Algorithm 1, lines 3-4).

    A multi-DoF joint is moved whole by its first row (:func:`move_joint`).
    """
    kind = mf[i, MF_TYPE]
    if kind >= FREE:
        if mf[i, MF_SUB] == 0:
            move_joint(mf, qd, ws, i, 6 if kind == FREE else 3)
        return
    b = int(mf[i, MF_PARENT])
    qdi = qd[i]
    sw0, sw1, sw2 = ws[i, WS_S], ws[i, WS_S + 1], ws[i, WS_S + 2]
    su0, su1, su2 = ws[i, WS_S + 3], ws[i, WS_S + 4], ws[i, WS_S + 5]
    wx, wy, wz = sw0 * qdi, sw1 * qdi, sw2 * qdi
    ux, uy, uz = su0 * qdi, su1 * qdi, su2 * qdi
    if b >= 0:
        wx += ws[b, WS_V]
        wy += ws[b, WS_V + 1]
        wz += ws[b, WS_V + 2]
        ux += ws[b, WS_V + 3]
        uy += ws[b, WS_V + 4]
        uz += ws[b, WS_V + 5]
    ws[i, WS_V], ws[i, WS_V + 1], ws[i, WS_V + 2] = wx, wy, wz
    ws[i, WS_V + 3], ws[i, WS_V + 4], ws[i, WS_V + 5] = ux, uy, uz
    set_phidot(ws, i, wx, wy, wz, ux, uy, uz)


@body_step
def move_joint(mf, qd, ws, i, nd):
    """Rows i..i+nd-1 of a multi-DoF joint: v = v_p + sum_r Phi_r qd_r, Phidot_r = v x Phi_r.

    Every row gets the body's whole velocity v, so that Phidot_r is the time
    derivative of the body-fixed column Phi_r.
    """
    b = int(mf[i, MF_PARENT])
    wx, wy, wz, ux, uy, uz = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    if b >= 0:
        wx, wy, wz = ws[b, WS_V], ws[b, WS_V + 1], ws[b, WS_V + 2]
        ux, uy, uz = ws[b, WS_V + 3], ws[b, WS_V + 4], ws[b, WS_V + 5]
    for r in range(i, i + nd):
        qdr = qd[r]
        wx += ws[r, WS_S] * qdr
        wy += ws[r, WS_S + 1] * qdr
        wz += ws[r, WS_S + 2] * qdr
        ux += ws[r, WS_S + 3] * qdr
        uy += ws[r, WS_S + 4] * qdr
        uz += ws[r, WS_S + 5] * qdr
    for r in range(i, i + nd):
        ws[r, WS_V], ws[r, WS_V + 1], ws[r, WS_V + 2] = wx, wy, wz
        ws[r, WS_V + 3], ws[r, WS_V + 4], ws[r, WS_V + 5] = ux, uy, uz
        set_phidot(ws, r, wx, wy, wz, ux, uy, uz)


@body_step
def set_phidot(ws, i, wx, wy, wz, ux, uy, uz):
    """Phidot_i = v x Phi_i: (w, u) x (sw, su) = (w x sw, w x su + u x sw)."""
    sw0, sw1, sw2 = ws[i, WS_S], ws[i, WS_S + 1], ws[i, WS_S + 2]
    su0, su1, su2 = ws[i, WS_S + 3], ws[i, WS_S + 4], ws[i, WS_S + 5]
    d0, d1, d2 = cross(wx, wy, wz, sw0, sw1, sw2)
    e0, e1, e2 = cross(wx, wy, wz, su0, su1, su2)
    f0, f1, f2 = cross(ux, uy, uz, sw0, sw1, sw2)
    ws[i, WS_SD], ws[i, WS_SD + 1], ws[i, WS_SD + 2] = d0, d1, d2
    ws[i, WS_SD + 3], ws[i, WS_SD + 4], ws[i, WS_SD + 5] = e0 + f0, e1 + f1, e2 + f2


@body_step
def body_force(ws, i):
    """Momentum h_i = I_i v_i and net force f_i = I_i a_i + v_i x* h_i of body i (RNEA).

    With (w, u) x* (n, l) = (w x n + u x l, w x l); reads v, a and the inertia (IC slot).
    """
    wx, wy, wz = ws[i, WS_V], ws[i, WS_V + 1], ws[i, WS_V + 2]
    ux, uy, uz = ws[i, WS_V + 3], ws[i, WS_V + 4], ws[i, WS_V + 5]
    n0, n1, n2, l0, l1, l2 = inertia_times(ws, i, WS_IC, wx, wy, wz, ux, uy, uz)
    ws[i, WS_H], ws[i, WS_H + 1], ws[i, WS_H + 2] = n0, n1, n2
    ws[i, WS_H + 3], ws[i, WS_H + 4], ws[i, WS_H + 5] = l0, l1, l2
    a0, a1, a2, a3, a4, a5 = inertia_times(
        ws, i, WS_IC,
        ws[i, WS_A], ws[i, WS_A + 1], ws[i, WS_A + 2],
        ws[i, WS_A + 3], ws[i, WS_A + 4], ws[i, WS_A + 5],
    )  # fmt: skip
    x0, x1, x2 = cross(wx, wy, wz, n0, n1, n2)
    y0, y1, y2 = cross(ux, uy, uz, l0, l1, l2)
    z0, z1, z2 = cross(wx, wy, wz, l0, l1, l2)
    ws[i, WS_F], ws[i, WS_F + 1], ws[i, WS_F + 2] = a0 + x0 + y0, a1 + x1 + y1, a2 + x2 + y2
    ws[i, WS_F + 3], ws[i, WS_F + 4], ws[i, WS_F + 5] = a3 + z0, a4 + z1, a5 + z2


@body_step
def root_offset(mf, q, r):
    """The translation the dynamics leave out for the subtree of root row r: its tree
    transform's, plus what its coordinates give a root prismatic, free or planar joint."""
    ox, oy, oz = mf[r, MF_T], mf[r, MF_T + 1], mf[r, MF_T + 2]
    kind = mf[r, MF_TYPE]
    iq = int(mf[r, MF_Q])
    if kind == PRISMATIC:  # along the joint axis: the tree rotation's z column
        x = q[iq]
        ox += mf[r, MF_R + 2] * x
        oy += mf[r, MF_R + 5] * x
        oz += mf[r, MF_R + 8] * x
    elif kind == FREE or kind == PLANAR:
        tx, ty = q[iq], q[iq + 1]
        tz = q[iq + 2] if kind == FREE else 0.0
        ox += mf[r, MF_R] * tx + mf[r, MF_R + 1] * ty + mf[r, MF_R + 2] * tz
        oy += mf[r, MF_R + 3] * tx + mf[r, MF_R + 4] * ty + mf[r, MF_R + 5] * tz
        oz += mf[r, MF_R + 6] * tx + mf[r, MF_R + 7] * ty + mf[r, MF_R + 8] * tz
    return ox, oy, oz
