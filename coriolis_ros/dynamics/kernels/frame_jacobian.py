"""Frame placements and frame Jacobians in O(depth), Pinocchio's three reference frames.

A frame is a URDF link attached to a body row ``b`` of the model (-1: the world) with a
fixed pose (R_bf, t_bf) in that body's frame (the side table ``fm``, :mod:`..model`).
Its world pose is R = R_b R_bf, p = p_b + R_b t_bf.  Only the rows on the path from the
world to ``b`` move the frame, so only they are placed (:func:`place_path`): the cost is
the frame's depth in the tree, not the model's size.

Column k of the Jacobian (k an ancestor row of b, or b itself) is the joint's motion
subspace Phi_k = (w, u) in world coordinates (angular, then the velocity of the body
point at the world origin, :mod:`.spatial`; Featherstone, RBDA ch. 2), re-expressed with
the linear part first as Pinocchio does (``ReferenceFrame``):

    WORLD                (u, w)                  spatial velocity at the world origin
    LOCAL_WORLD_ALIGNED  (u + w x p, w)          velocity of the frame origin, world axes
    LOCAL                (R^T (u + w x p), R^T w)  the same in the frame's own axes

Other columns are zero.  The time derivative (``frame_jacobian_dot``) and J-dot qd
(``frame_bias``) follow from Phidot_k = v_k x Phi_k (:mod:`.kinematics`).

The coupled variants (mimic joints, geared rotors: :mod:`.coordinate_change`) expand the
independent coordinates to the tree's and write every tree column through A
(Jbar = J A, one nonzero per row of A: column k adds m_k times itself to column col(k)).
"""

from ..model import (
    FM_BODY,
    FM_R,
    FM_T,
    FM_WIDTH,
    MF_PARENT,
    MF_Q,
    MF_SUB,
    MF_TYPE,
    PLANAR,
    REVOLUTE,
)
from .coordinate_change import check_position_only, expand_position, layout, offsets
from .kinematics import SIZE_OUT, check_position, model_ok, move_body, place_body, root_offset
from .lanes import sincos_at
from .spatial import WS_CS, WS_P, WS_R, WS_S, WS_U, body_step, cross, kernel

# Pinocchio's ReferenceFrame values.
WORLD, LOCAL, LOCAL_WORLD_ALIGNED = 0, 1, 2
BAD_FRAME = 40  # a frame index or reference out of range (the API checks names first)

WS_PATH = WS_U  # scratch column: the rows of a frame's path, deepest first


@kernel
def frame_ok(mf, fm, ws, f, ref):
    """True if f indexes the side table, ref is a reference frame and the body exists."""
    if not model_ok(mf, ws) or fm.shape[1] != FM_WIDTH:
        return False
    if f < 0 or f >= fm.shape[0] or ref < 0 or ref > 2:
        return False
    return int(fm[f, FM_BODY]) < mf.shape[0]


@kernel
def apart(a, b):
    """True if the two arrays' memory ranges do not overlap."""
    pa, pb = a.ctypes.data, b.ctypes.data
    return pa + a.nbytes <= pb or pb + b.nbytes <= pa


@body_step
def place_path(mf, q, qd, ws, b, moving, absolute):
    """Place (and with ``moving`` set in motion) the rows from the world down to row b;
    ``absolute``: where they are (for placements and the world reference), else as the
    dynamics place them, with the subtree's root joint at the origin (exact however far from
    the origin the robot stands; the local and local-world-aligned Jacobians do not depend on
    it).

    The path is listed deepest first in the scratch column WS_PATH of rows 0..d-1 (d <= n
    rows), then walked base to tip; multi-DoF joints are placed by their first row.
    """
    d = 0
    k = b
    while k >= 0:
        ws[d, WS_PATH] = k
        d += 1
        k = int(mf[k, MF_PARENT])
    for t in range(d - 1, -1, -1):
        i = int(ws[t, WS_PATH])
        kind = mf[i, MF_TYPE]
        if kind == REVOLUTE or (kind == PLANAR and mf[i, MF_SUB] == 0):
            iq = int(mf[i, MF_Q]) + (2 if kind == PLANAR else 0)
            ws[i, WS_CS], ws[i, WS_CS + 1] = sincos_at(q, iq)
        place_body(mf, q, ws, i)
    if absolute and d > 0:
        # the dynamics place a subtree hanging from the world with its root joint at the origin
        # (kernels.kinematics); frames are where they are: move the path back by that offset
        # o (positions p + o, and each axis Phi, about the origin, gains o x its angular part)
        ox, oy, oz = root_offset(mf, q, int(ws[d - 1, WS_PATH]))
        for t in range(d - 1, -1, -1):
            i = int(ws[t, WS_PATH])
            ws[i, WS_P] += ox
            ws[i, WS_P + 1] += oy
            ws[i, WS_P + 2] += oz
            wx, wy, wz = ws[i, WS_S], ws[i, WS_S + 1], ws[i, WS_S + 2]
            ws[i, WS_S + 3] += oy * wz - oz * wy
            ws[i, WS_S + 4] += oz * wx - ox * wz
            ws[i, WS_S + 5] += ox * wy - oy * wx
    if moving:
        for t in range(d - 1, -1, -1):
            move_body(mf, qd, ws, int(ws[t, WS_PATH]))




@body_step
def frame_pose(fm, f, ws):
    """World pose (R row-major, p) of frame f, its body placed."""
    b = int(fm[f, FM_BODY])
    e00, e01, e02 = fm[f, FM_R], fm[f, FM_R + 1], fm[f, FM_R + 2]
    e10, e11, e12 = fm[f, FM_R + 3], fm[f, FM_R + 4], fm[f, FM_R + 5]
    e20, e21, e22 = fm[f, FM_R + 6], fm[f, FM_R + 7], fm[f, FM_R + 8]
    t0, t1, t2 = fm[f, FM_T], fm[f, FM_T + 1], fm[f, FM_T + 2]
    if b < 0:
        return e00, e01, e02, e10, e11, e12, e20, e21, e22, t0, t1, t2
    r00, r01, r02 = ws[b, WS_R], ws[b, WS_R + 1], ws[b, WS_R + 2]
    r10, r11, r12 = ws[b, WS_R + 3], ws[b, WS_R + 4], ws[b, WS_R + 5]
    r20, r21, r22 = ws[b, WS_R + 6], ws[b, WS_R + 7], ws[b, WS_R + 8]
    return (
        r00 * e00 + r01 * e10 + r02 * e20,
        r00 * e01 + r01 * e11 + r02 * e21,
        r00 * e02 + r01 * e12 + r02 * e22,
        r10 * e00 + r11 * e10 + r12 * e20,
        r10 * e01 + r11 * e11 + r12 * e21,
        r10 * e02 + r11 * e12 + r12 * e22,
        r20 * e00 + r21 * e10 + r22 * e20,
        r20 * e01 + r21 * e11 + r22 * e21,
        r20 * e02 + r21 * e12 + r22 * e22,
        ws[b, WS_P] + r00 * t0 + r01 * t1 + r02 * t2,
        ws[b, WS_P + 1] + r10 * t0 + r11 * t1 + r12 * t2,
        ws[b, WS_P + 2] + r20 * t0 + r21 * t1 + r22 * t2,
    )


@body_step
def transpose_times(r00, r01, r02, r10, r11, r12, r20, r21, r22, x, y, z):
    """R^T (x, y, z)."""
    return (
        r00 * x + r10 * y + r20 * z,
        r01 * x + r11 * y + r21 * z,
        r02 * x + r12 * y + r22 * z,
    )


@body_step
def put_column(J, k, amap, a0, c0, c1, c2, c3, c4, c5):
    """Column k of the tree's Jacobian into J: J[:, k] = c, or through A (a0 >= 0):
    J[:, col(k)] += m_k c."""
    if a0 < 0:
        J[0, k], J[1, k], J[2, k], J[3, k], J[4, k], J[5, k] = c0, c1, c2, c3, c4, c5
        return
    col, mul = int(amap[a0 + 2 * k]), amap[a0 + 2 * k + 1]
    J[0, col] += mul * c0
    J[1, col] += mul * c1
    J[2, col] += mul * c2
    J[3, col] += mul * c3
    J[4, col] += mul * c4
    J[5, col] += mul * c5


@body_step
def zero(J):
    for r in range(J.shape[0]):
        for c in range(J.shape[1]):
            J[r, c] = 0.0


@body_step
def jacobian_columns(mf, fm, f, ref, ws, J, amap, a0):
    """Fill J (6 x n, or 6 x nbar through A) for frame f; its path placed."""
    zero(J)
    b = int(fm[f, FM_BODY])
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = frame_pose(fm, f, ws)
    k = b
    while k >= 0:
        wx, wy, wz = ws[k, WS_S], ws[k, WS_S + 1], ws[k, WS_S + 2]
        ux, uy, uz = ws[k, WS_S + 3], ws[k, WS_S + 4], ws[k, WS_S + 5]
        if ref != WORLD:  # the velocity of the frame origin: u + w x p
            cx, cy, cz = cross(wx, wy, wz, px, py, pz)
            ux, uy, uz = ux + cx, uy + cy, uz + cz
        if ref == LOCAL:
            ux, uy, uz = transpose_times(r00, r01, r02, r10, r11, r12, r20, r21, r22, ux, uy, uz)
            wx, wy, wz = transpose_times(r00, r01, r02, r10, r11, r12, r20, r21, r22, wx, wy, wz)
        put_column(J, k, amap, a0, ux, uy, uz, wx, wy, wz)
        k = int(mf[k, MF_PARENT])


@body_step
def write_placement(fm, f, ws, T):
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = frame_pose(fm, f, ws)
    T[0, 0], T[0, 1], T[0, 2], T[0, 3] = r00, r01, r02, px
    T[1, 0], T[1, 1], T[1, 2], T[1, 3] = r10, r11, r12, py
    T[2, 0], T[2, 1], T[2, 2], T[2, 3] = r20, r21, r22, pz
    T[3, 0], T[3, 1], T[3, 2], T[3, 3] = 0.0, 0.0, 0.0, 1.0


# ----------------------------------------------------------------------------- the tree


@kernel
def frame_placement(mf, fm, f, q, ws, T):
    """T (4 x 4): the world pose of frame f at q; 0 or a status code."""
    if not frame_ok(mf, fm, ws, f, 0):
        return BAD_FRAME
    status = check_position(mf, ws, q)
    if status:
        return status
    if T.shape[0] != 4 or T.shape[1] != 4:
        return SIZE_OUT
    place_path(mf, q, q, ws, int(fm[f, FM_BODY]), False, True)
    write_placement(fm, f, ws, T)
    return 0


@kernel
def frame_jacobian(mf, fm, f, ref, q, ws, J):
    """J (6 x n) of frame f at q in reference ``ref``; 0 or a status code."""
    if not frame_ok(mf, fm, ws, f, ref):
        return BAD_FRAME
    status = check_position(mf, ws, q)
    if status:
        return status
    if J.shape[0] != 6 or J.shape[1] != mf.shape[0]:
        return SIZE_OUT
    place_path(mf, q, q, ws, int(fm[f, FM_BODY]), False, ref == WORLD)
    jacobian_columns(mf, fm, f, ref, ws, J, q, -1)
    return 0


# ----------------------------------------------------------------------------- coupled


@kernel
def reduced_frame_placement(mf, fm, f, qbar, ws, T):
    """The placement at q = phi(qbar)."""
    n = mf.shape[0]
    if not frame_ok(mf, fm, ws, f, 0):
        return BAD_FRAME
    xw = ws[n:].reshape(-1)
    status = check_position_only(mf, xw, qbar)
    if status:
        return status
    if T.shape[0] != 4 or T.shape[1] != 4:
        return SIZE_OUT
    n, nq, _, _ = layout(mf, xw)
    _, p, oq, _, _, _ = offsets(n, nq)
    q = xw[oq : oq + nq]
    expand_position(xw, p, nq, qbar, q)
    status = check_position(mf, ws, q)  # quaternions
    if status:
        return status
    place_path(mf, q, q, ws, int(fm[f, FM_BODY]), False, True)
    write_placement(fm, f, ws, T)
    return 0


@kernel
def reduced_frame_jacobian(mf, fm, f, ref, qbar, ws, J):
    """Jbar = J A (6 x nbar) at q = phi(qbar)."""
    n = mf.shape[0]
    if not frame_ok(mf, fm, ws, f, ref):
        return BAD_FRAME
    xw = ws[n:].reshape(-1)
    status = check_position_only(mf, xw, qbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if J.shape[0] != 6 or J.shape[1] != nvbar:
        return SIZE_OUT
    a, p, oq, _, _, _ = offsets(n, nq)
    q = xw[oq : oq + nq]
    expand_position(xw, p, nq, qbar, q)
    status = check_position(mf, ws, q)
    if status:
        return status
    place_path(mf, q, q, ws, int(fm[f, FM_BODY]), False, ref == WORLD)
    jacobian_columns(mf, fm, f, ref, ws, J, xw, a)
    return 0

