"""J-dot qd of a frame, in O(depth): the frame's acceleration at zero joint acceleration.

The body's spatial acceleration at qdd = 0 is a = sum_k Phidot_k qd_k = (wa, ua) over the
rows of the frame's path (world coordinates, :mod:`.kinematics`), since d/dt (J qd) =
J qdd + Jdot qd.  With the body's velocity (w_b, u_b) and pdot = u_b + w_b x p (see
:mod:`.frame_jacobian_dot`), linear part first:

    WORLD                (ua, wa)                          the spatial acceleration
    LOCAL_WORLD_ALIGNED  (ua + wa x p + w_b x pdot, wa)    the classical acceleration of the
                                                           frame origin (pddot, wdot)
    LOCAL                (R^T (ua + wa x p), R^T wa)       the spatial acceleration in the
                                                           frame (d/dt of the body twist)

which are Pinocchio's ``getFrameAcceleration`` (WORLD, LOCAL) and
``getFrameClassicalAcceleration`` (LOCAL_WORLD_ALIGNED) after ``forwardKinematics(q, qd, 0)``.
"""

from ..model import FM_BODY, MF_PARENT
from .coordinate_change import check_reduced, expand_position, expand_velocity, layout, offsets
from .coordinate_change import vector
from .frame_jacobian import BAD_FRAME, LOCAL, WORLD, frame_ok, frame_pose, place_path
from .frame_jacobian import transpose_times
from .kinematics import SIZE_OUT, check_inputs
from .spatial import WS_SD, WS_V, body_step, cross, kernel


@body_step
def bias(mf, fm, f, ref, qd, ws, out):
    """out (6,) = Jdot qd of frame f; its path placed and moving."""
    b = int(fm[f, FM_BODY])
    wa, wb, wc, ua, ub, uc = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    k = b
    while k >= 0:
        x = qd[k]
        wa += ws[k, WS_SD] * x
        wb += ws[k, WS_SD + 1] * x
        wc += ws[k, WS_SD + 2] * x
        ua += ws[k, WS_SD + 3] * x
        ub += ws[k, WS_SD + 4] * x
        uc += ws[k, WS_SD + 5] * x
        k = int(mf[k, MF_PARENT])
    if ref != WORLD and b >= 0:
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = frame_pose(fm, f, ws)
        ax, ay, az = cross(wa, wb, wc, px, py, pz)
        ua, ub, uc = ua + ax, ub + ay, uc + az
        if ref == LOCAL:
            ua, ub, uc = transpose_times(r00, r01, r02, r10, r11, r12, r20, r21, r22, ua, ub, uc)
            wa, wb, wc = transpose_times(r00, r01, r02, r10, r11, r12, r20, r21, r22, wa, wb, wc)
        else:  # + w_b x pdot
            ox, oy, oz = ws[b, WS_V], ws[b, WS_V + 1], ws[b, WS_V + 2]
            ex, ey, ez = cross(ox, oy, oz, px, py, pz)
            dx, dy, dz = ws[b, WS_V + 3] + ex, ws[b, WS_V + 4] + ey, ws[b, WS_V + 5] + ez
            gx, gy, gz = cross(ox, oy, oz, dx, dy, dz)
            ua, ub, uc = ua + gx, ub + gy, uc + gz
    out[0], out[1], out[2], out[3], out[4], out[5] = ua, ub, uc, wa, wb, wc


@kernel
def frame_bias(mf, fm, f, ref, q, qd, ws, out):
    """out (6,) = Jdot qd of frame f at (q, qd) in reference ``ref``; 0 or a status code."""
    if not frame_ok(mf, fm, ws, f, ref):
        return BAD_FRAME
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    if out.shape[0] != 6:
        return SIZE_OUT
    place_path(mf, q, qd, ws, int(fm[f, FM_BODY]), True, ref == WORLD)
    bias(mf, fm, f, ref, qd, ws, out)
    return 0


@kernel
def reduced_frame_bias(mf, fm, f, ref, qbar, qdbar, ws, out):
    """Jdotbar qbardot = Jdot qd at (phi(qbar), A qbardot) (A constant)."""
    n = mf.shape[0]
    if not frame_ok(mf, fm, ws, f, ref):
        return BAD_FRAME
    xw = ws[n:].reshape(-1)
    status = check_reduced(mf, xw, qbar, qdbar, qdbar)
    if status:
        return status
    if out.shape[0] != 6:
        return SIZE_OUT
    n, nq, _, _ = layout(mf, xw)
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd = xw[oq : oq + nq], vector(xw, v, n, 0)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    place_path(mf, q, qd, ws, int(fm[f, FM_BODY]), True, ref == WORLD)
    bias(mf, fm, f, ref, qd, ws, out)
    return 0
