"""Forward kinematics in world coordinates: poses, joint subspaces Phi, inertias, velocities."""

import math

from ..model import MF_C, MF_I, MF_M, MF_PARENT, MF_R, MF_T, MF_TYPE, MF_WIDTH, PRISMATIC
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
    body_step,
    cross,
    inertia_times,
    kernel,
)


# Inputs beyond this are rejected like NaN: the terms quadratic in qd (and M in a prismatic
# q) overflow to inf/NaN near 1e154, and no joint moves 1e50 rad/s.
MAX_ABS = 1e50

# Status codes the kernels return (0: success); the API turns them into ValueErrors.
BAD_Q, BAD_QD, BAD_QDD = 1, 2, 3  # a NaN or infinite entry
SIZE_Q, SIZE_QD, SIZE_QDD = 11, 12, 13  # wrong length
SIZE_OUT = 20  # an output array of the wrong shape
OVERLAP = 21  # output arrays sharing memory
SIZE_WS = 30  # a workspace that does not fit the model


@kernel
def vectors_ok(n, a, b, c):
    """0 if q, qd, qdd have length n, else the SIZE_* code of the first that does not."""
    if a.shape[0] != n:
        return SIZE_Q
    if b.shape[0] != n:
        return SIZE_QD
    if c.shape[0] != n:
        return SIZE_QDD
    return 0


@kernel
def check_inputs(mf, ws, q, qd, qdd):
    """0, or the status code of the first problem with the workspace or the inputs."""
    n = mf.shape[0]
    if not model_ok(mf, ws):
        return SIZE_WS
    status = vectors_ok(n, q, qd, qdd)
    if status:
        return status
    if not all_finite(q):
        return BAD_Q
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


@kernel
def forward_positions(mf, q, ws):
    """place_body for every body, base to tips."""
    for i in range(q.shape[0]):
        place_body(mf, q, ws, i)


@body_step
def place_body(mf, q, ws, i):
    """World pose, Phi and spatial inertia (into the IC slot) of body i, its parent placed.

    Body i's frame is its joint frame (joint axis = local z) rotated by q_i about
    z, or translated by q_i along z.  Phi_i in world coordinates is (a, p x a)
    for a revolute joint with axis a through p, and (0, a) for a prismatic one.
    """
    b = int(mf[i, MF_PARENT])
    t0, t1, t2 = mf[i, MF_T], mf[i, MF_T + 1], mf[i, MF_T + 2]
    if b < 0:  # the fixed base is the world frame
        a00, a01, a02 = mf[i, MF_R], mf[i, MF_R + 1], mf[i, MF_R + 2]
        a10, a11, a12 = mf[i, MF_R + 3], mf[i, MF_R + 4], mf[i, MF_R + 5]
        a20, a21, a22 = mf[i, MF_R + 6], mf[i, MF_R + 7], mf[i, MF_R + 8]
        px, py, pz = t0, t1, t2
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
    qi = q[i]
    if mf[i, MF_TYPE] == PRISMATIC:
        px += a02 * qi
        py += a12 * qi
        pz += a22 * qi
        ws[i, WS_S], ws[i, WS_S + 1], ws[i, WS_S + 2] = 0.0, 0.0, 0.0
        ws[i, WS_S + 3], ws[i, WS_S + 4], ws[i, WS_S + 5] = a02, a12, a22
    else:  # R = A Rz(q)
        c, s = math.cos(qi), math.sin(qi)
        a00, a01 = c * a00 + s * a01, c * a01 - s * a00
        a10, a11 = c * a10 + s * a11, c * a11 - s * a10
        a20, a21 = c * a20 + s * a21, c * a21 - s * a20
        mx, my, mz = cross(px, py, pz, a02, a12, a22)
        ws[i, WS_S], ws[i, WS_S + 1], ws[i, WS_S + 2] = a02, a12, a22
        ws[i, WS_S + 3], ws[i, WS_S + 4], ws[i, WS_S + 5] = mx, my, mz
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
    """v_i = v_p(i) + Phi_i qd_i and Phidot_i = v_i x Phi_i (Algorithm 1, lines 3-4)."""
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
    # motion cross product (w, u) x (sw, su) = (w x sw, w x su + u x sw)
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
