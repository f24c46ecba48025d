"""The time derivative of a frame Jacobian, in O(depth).

With Phidot_k = v_k x Phi_k = (wd, ud) (:mod:`.kinematics`), the body's velocity
v_b = (w_b, u_b) and the frame origin's velocity pdot = u_b + w_b x p, the time derivative
of each column of :mod:`.frame_jacobian` is, linear part first:

    WORLD                (ud, wd)
    LOCAL_WORLD_ALIGNED  (ud + wd x p + w x pdot, wd)
    LOCAL                R^T (ud + wd x p + w x pdot - w_b x (u + w x p)),  R^T (wd - w_b x w)

(the last from d/dt R^T = -R^T (w_b x)), which is Pinocchio's
``getFrameJacobianTimeVariation`` in each reference frame.
"""

from ..model import FM_BODY, MF_PARENT
from .coordinate_change import check_reduced, expand_position, expand_velocity, layout, offsets
from .coordinate_change import vector
from .frame_jacobian import (
    BAD_FRAME,
    LOCAL,
    apart,
    WORLD,
    frame_ok,
    frame_pose,
    jacobian_columns,
    place_path,
    put_column,
    transpose_times,
    zero,
)
from .kinematics import OVERLAP, SIZE_OUT, check_inputs
from .spatial import WS_S, WS_SD, WS_V, body_step, cross, kernel


@body_step
def jacobian_dot_columns(mf, fm, f, ref, ws, Jd, amap, a0):
    """Fill Jd (6 x n, or 6 x nbar through A) for frame f; its path placed and moving."""
    zero(Jd)
    b = int(fm[f, FM_BODY])
    if b < 0:
        return
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = frame_pose(fm, f, ws)
    ox, oy, oz = ws[b, WS_V], ws[b, WS_V + 1], ws[b, WS_V + 2]
    ex, ey, ez = cross(ox, oy, oz, px, py, pz)
    dx, dy, dz = ws[b, WS_V + 3] + ex, ws[b, WS_V + 4] + ey, ws[b, WS_V + 5] + ez  # pdot
    k = b
    while k >= 0:
        wx, wy, wz = ws[k, WS_SD], ws[k, WS_SD + 1], ws[k, WS_SD + 2]
        ux, uy, uz = ws[k, WS_SD + 3], ws[k, WS_SD + 4], ws[k, WS_SD + 5]
        if ref != WORLD:
            sx, sy, sz = ws[k, WS_S], ws[k, WS_S + 1], ws[k, WS_S + 2]
            ax, ay, az = cross(wx, wy, wz, px, py, pz)
            bx, by, bz = cross(sx, sy, sz, dx, dy, dz)
            ux, uy, uz = ux + ax + bx, uy + ay + by, uz + az + bz
            if ref == LOCAL:
                cx, cy, cz = cross(sx, sy, sz, px, py, pz)
                lx = ws[k, WS_S + 3] + cx
                ly = ws[k, WS_S + 4] + cy
                lz = ws[k, WS_S + 5] + cz
                gx, gy, gz = cross(ox, oy, oz, lx, ly, lz)
                hx, hy, hz = cross(ox, oy, oz, sx, sy, sz)
                ux, uy, uz = transpose_times(
                    r00, r01, r02, r10, r11, r12, r20, r21, r22, ux - gx, uy - gy, uz - gz
                )
                wx, wy, wz = transpose_times(
                    r00, r01, r02, r10, r11, r12, r20, r21, r22, wx - hx, wy - hy, wz - hz
                )
        put_column(Jd, k, amap, a0, ux, uy, uz, wx, wy, wz)
        k = int(mf[k, MF_PARENT])


@kernel
def frame_jacobian_dot(mf, fm, f, ref, q, qd, ws, Jd):
    """Jdot (6 x n) of frame f at (q, qd) in reference ``ref``; 0 or a status code."""
    if not frame_ok(mf, fm, ws, f, ref):
        return BAD_FRAME
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    if Jd.shape[0] != 6 or Jd.shape[1] != mf.shape[0]:
        return SIZE_OUT
    place_path(mf, q, qd, ws, int(fm[f, FM_BODY]), True, ref == WORLD)
    jacobian_dot_columns(mf, fm, f, ref, ws, Jd, q, -1)
    return 0


@kernel
def reduced_frame_jacobian_dot(mf, fm, f, ref, qbar, qdbar, ws, Jd):
    """Jdotbar = Jdot A (6 x nbar) at (phi(qbar), A qbardot)."""
    n = mf.shape[0]
    if not frame_ok(mf, fm, ws, f, ref):
        return BAD_FRAME
    xw = ws[n:].reshape(-1)
    status = check_reduced(mf, xw, qbar, qdbar, qdbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if Jd.shape[0] != 6 or Jd.shape[1] != nvbar:
        return SIZE_OUT
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd = xw[oq : oq + nq], vector(xw, v, n, 0)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    place_path(mf, q, qd, ws, int(fm[f, FM_BODY]), True, ref == WORLD)
    jacobian_dot_columns(mf, fm, f, ref, ws, Jd, xw, a)
    return 0


@kernel
def frame_jacobians(mf, fm, f, ref, q, qd, ws, J, Jd):
    """J and Jdot (6 x n each) of frame f at (q, qd), one pass over its path."""
    if not frame_ok(mf, fm, ws, f, ref):
        return BAD_FRAME
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    n = mf.shape[0]
    if J.shape[0] != 6 or J.shape[1] != n or Jd.shape[0] != 6 or Jd.shape[1] != n:
        return SIZE_OUT
    if not apart(J, Jd):
        return OVERLAP
    place_path(mf, q, qd, ws, int(fm[f, FM_BODY]), True, ref == WORLD)
    jacobian_columns(mf, fm, f, ref, ws, J, q, -1)
    jacobian_dot_columns(mf, fm, f, ref, ws, Jd, q, -1)
    return 0


@kernel
def reduced_frame_jacobians(mf, fm, f, ref, qbar, qdbar, ws, J, Jd):
    """Jbar = J A and Jdotbar = Jdot A at (phi(qbar), A qbardot)."""
    n = mf.shape[0]
    if not frame_ok(mf, fm, ws, f, ref):
        return BAD_FRAME
    xw = ws[n:].reshape(-1)
    status = check_reduced(mf, xw, qbar, qdbar, qdbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if J.shape[0] != 6 or J.shape[1] != nvbar or Jd.shape[0] != 6 or Jd.shape[1] != nvbar:
        return SIZE_OUT
    if not apart(J, Jd):
        return OVERLAP
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd = xw[oq : oq + nq], vector(xw, v, n, 0)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    place_path(mf, q, qd, ws, int(fm[f, FM_BODY]), True, ref == WORLD)
    jacobian_columns(mf, fm, f, ref, ws, J, xw, a)
    jacobian_dot_columns(mf, fm, f, ref, ws, Jd, xw, a)
    return 0
