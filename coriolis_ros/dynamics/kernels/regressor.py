"""Regressors: the Slotine-Li torque and the energies as linear maps of the inertial parameters.

**The Slotine-Li regressor.**  :mod:`.slotine_li` computes

    M qdd_r + C(q, qd) qd_r + g = sum_k J_k^T f_k,   f_k = I_k a_k + B(v_k, I_k) y_k,

with y_k = J_k qd_r, a_k = a_0 + J_k qdd_r + Jdot_k qd_r (a_0 = (0, -g)) and B the
Christoffel-consistent body factor (Echeandia & Wensing, eq. 10).  Body k's force f_k is
linear in its inertia I_k, and so in its ten parameters pi_k (:mod:`.parameters`): in the
frame of its link, with v = (w, u), a = (al, be), y = (y_w, y_u), s = w x y_w,
c = be + y_w x u and d = al - s (``spatial.reference_force``),

    f = (Ibar d + 1/2 tr(Ibar) s + y_w x (Ibar w) + h x c,   m c + al x h + y_w x (w x h)),

whose columns for m, h and the six entries of Ibar are the 6 x 10 body regressor
Psi(v, a, y) (with y = v it is the inverse-dynamics body regressor I a + v x* I v of
Atkeson, An and Hollerbach 1986).  Moved to world coordinates (a force transform) each
column is projected on the joint axes Phi_j of the body's ancestors j (tau_j =
Phi_j . sum of f over the subtree of j):

    Y[j, 10 k : 10 k + 10] = Phi_j^T X_k^* Psi_k   for j = k and every ancestor of k,

zero elsewhere, so that Y pi = M qdd_r + C qd_r + g.  O(N d) for depth d.

**Energy regressors.**  T = 1/2 qd^T M qd = sum_k 1/2 v_k^T I_k v_k and
U = -g^T sum_k m_k c_k are linear in pi too: with v = (w, u) in the link frame,
v^T I v = w^T Ibar w + m u.u + 2 h.(u x w), and m c = m p + R h for the link's pose (R, p).
"""

from ..model import MF_PARENT
from .coordinate_change import (
    check_reduced,
    expand_position,
    expand_velocity,
    layout,
    offsets,
    vector,
)
from .kinematics import (
    SIZE_OUT,
    SIZE_WS,
    all_finite,
    check_inputs,
    check_position,
    joint_angles,
    move_body,
    place_body,
    root_offset,
)
from .parameters import body_count, is_body_row
from .slotine_li import BAD_ARG4, SIZE_ARG4
from .spatial import (
    WS_A,
    WS_P,
    WS_R,
    WS_S,
    WS_SD,
    WS_U,
    WS_V,
    body_step,
    cross,
    dot6,
    kernel,
    long_kernel,
)


@body_step
def reference_pass(mf, gravity, q, qd, qd_r, qdd_r, ws):
    """Poses, v_k (WS_V), y_k = J_k qd_r (WS_U) and a_k (WS_A) of every row (slotine_li's
    forward pass, lines for y and a: y_k = y_p + Phi_k qd_r,k, a_k = a_p + Phi_k qdd_r,k +
    Phidot_k qd_r,k, a_0 = (0, -g))."""
    joint_angles(mf, q, ws)
    for i in range(mf.shape[0]):
        place_body(mf, q, ws, i)
        move_body(mf, qd, ws, i)
        b = int(mf[i, MF_PARENT])
        xi, zi = qd_r[i], qdd_r[i]
        for c in range(6):
            u = ws[i, WS_S + c] * xi
            a = ws[i, WS_S + c] * zi + ws[i, WS_SD + c] * xi
            if b >= 0:
                u += ws[b, WS_U + c]
                a += ws[b, WS_A + c]
            elif c >= 3:
                a -= gravity[c - 3]
            ws[i, WS_U + c] = u
            ws[i, WS_A + c] = a


@body_step
def link_pose(ws, E, i):
    """R_L = R_i E_i, the world rotation of row i's link frame (row-major), then p_i."""
    r00, r01, r02 = ws[i, WS_R], ws[i, WS_R + 1], ws[i, WS_R + 2]
    r10, r11, r12 = ws[i, WS_R + 3], ws[i, WS_R + 4], ws[i, WS_R + 5]
    r20, r21, r22 = ws[i, WS_R + 6], ws[i, WS_R + 7], ws[i, WS_R + 8]
    e00, e01, e02 = E[i, 0], E[i, 1], E[i, 2]
    e10, e11, e12 = E[i, 3], E[i, 4], E[i, 5]
    e20, e21, e22 = E[i, 6], E[i, 7], E[i, 8]
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
        ws[i, WS_P],
        ws[i, WS_P + 1],
        ws[i, WS_P + 2],
    )


@body_step
def to_link(ws, i, col, r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz):
    """The motion vector ws[i, col:col+6] (world, at the world origin) in the link frame at
    its origin p: (R^T w, R^T (u + w x p))."""
    wx, wy, wz = ws[i, col], ws[i, col + 1], ws[i, col + 2]
    ex, ey, ez = cross(wx, wy, wz, px, py, pz)
    ux, uy, uz = ws[i, col + 3] + ex, ws[i, col + 4] + ey, ws[i, col + 5] + ez
    return (
        r00 * wx + r10 * wy + r20 * wz,
        r01 * wx + r11 * wy + r21 * wz,
        r02 * wx + r12 * wy + r22 * wz,
        r00 * ux + r10 * uy + r20 * uz,
        r01 * ux + r11 * uy + r21 * uz,
        r02 * ux + r12 * uy + r22 * uz,
    )


@body_step
def emit(mf, ws, Y, amap, a0, i, col, n0, n1, n2, f0, f1, f2,
         r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz):  # fmt: skip
    """Column ``col`` of Y from the link-frame force (n, f) of row i's body: moved to world
    coordinates about the world origin (f_w = R f, n_w = R n + p x f_w), then Phi_j . (n_w,
    f_w) for i and each of its ancestors j.  a0 >= 0: row j is written through the
    coordinate map at amap[a0:] (column of j, multiplier), Y += multiplier * value."""
    g0 = r00 * f0 + r01 * f1 + r02 * f2
    g1 = r10 * f0 + r11 * f1 + r12 * f2
    g2 = r20 * f0 + r21 * f1 + r22 * f2
    t0, t1, t2 = cross(px, py, pz, g0, g1, g2)
    m0 = r00 * n0 + r01 * n1 + r02 * n2 + t0
    m1 = r10 * n0 + r11 * n1 + r12 * n2 + t1
    m2 = r20 * n0 + r21 * n1 + r22 * n2 + t2
    j = i
    while j >= 0:
        value = dot6(ws, j, WS_S, m0, m1, m2, g0, g1, g2)
        if a0 < 0:
            Y[j, col] = value
        else:
            Y[int(amap[a0 + 2 * j]), col] += amap[a0 + 2 * j + 1] * value
        j = int(mf[j, MF_PARENT])


@body_step
def body_columns(mf, E, ws, Y, amap, a0, i, k):
    """Y's columns k..k+9 for row i's body: Psi(v, a, y) (module docstring), column by column."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = link_pose(ws, E, i)
    R = (r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz)
    wx, wy, wz, ux, uy, uz = to_link(ws, i, WS_V, *R)
    ax, ay, az, bx, by, bz = to_link(ws, i, WS_A, *R)
    yx, yy, yz, _, _, _ = to_link(ws, i, WS_U, *R)
    sx, sy, sz = cross(wx, wy, wz, yx, yy, yz)  # s = w x y_w
    ex, ey, ez = cross(yx, yy, yz, ux, uy, uz)
    cx, cy, cz = bx + ex, by + ey, bz + ez  # c = be + y_w x u
    dx, dy, dz = ax - sx, ay - sy, az - sz  # d = al - s
    hx, hy, hz = 0.5 * sx, 0.5 * sy, 0.5 * sz
    # m: (0, c)
    emit(mf, ws, Y, amap, a0, i, k, 0.0, 0.0, 0.0, cx, cy, cz, *R)
    # h = e_x, e_y, e_z: (e x c, al x e + y_w x (w x e))
    p0, p1, p2 = cross(yx, yy, yz, 0.0, wz, -wy)
    emit(mf, ws, Y, amap, a0, i, k + 1, 0.0, -cz, cy, p0, az + p1, -ay + p2, *R)
    p0, p1, p2 = cross(yx, yy, yz, -wz, 0.0, wx)
    emit(mf, ws, Y, amap, a0, i, k + 2, cz, 0.0, -cx, -az + p0, p1, ax + p2, *R)
    p0, p1, p2 = cross(yx, yy, yz, wy, -wx, 0.0)
    emit(mf, ws, Y, amap, a0, i, k + 3, -cy, cx, 0.0, ay + p0, -ax + p1, p2, *R)
    # Ibar = the basis matrix of xx, xy, yy, xz, yz, zz: (B d + 1/2 tr(B) s + y_w x (B w), 0)
    p0, p1, p2 = cross(yx, yy, yz, wx, 0.0, 0.0)
    emit(mf, ws, Y, amap, a0, i, k + 4, dx + hx + p0, hy + p1, hz + p2, 0.0, 0.0, 0.0, *R)
    p0, p1, p2 = cross(yx, yy, yz, wy, wx, 0.0)
    emit(mf, ws, Y, amap, a0, i, k + 5, dy + p0, dx + p1, p2, 0.0, 0.0, 0.0, *R)
    p0, p1, p2 = cross(yx, yy, yz, 0.0, wy, 0.0)
    emit(mf, ws, Y, amap, a0, i, k + 6, hx + p0, dy + hy + p1, hz + p2, 0.0, 0.0, 0.0, *R)
    p0, p1, p2 = cross(yx, yy, yz, wz, 0.0, wx)
    emit(mf, ws, Y, amap, a0, i, k + 7, dz + p0, p1, dx + p2, 0.0, 0.0, 0.0, *R)
    p0, p1, p2 = cross(yx, yy, yz, 0.0, wz, wy)
    emit(mf, ws, Y, amap, a0, i, k + 8, p0, dz + p1, dy + p2, 0.0, 0.0, 0.0, *R)
    p0, p1, p2 = cross(yx, yy, yz, 0.0, 0.0, wz)
    emit(mf, ws, Y, amap, a0, i, k + 9, hx + p0, hy + p1, dz + hz + p2, 0.0, 0.0, 0.0, *R)


@body_step
def regressor_sweep(mf, E, ws, Y, amap, a0):
    """Zero Y, then write every body's columns (after :func:`reference_pass`)."""
    for r in range(Y.shape[0]):
        for c in range(Y.shape[1]):
            Y[r, c] = 0.0
    k = 0
    for i in range(mf.shape[0]):
        if is_body_row(mf, i):
            body_columns(mf, E, ws, Y, amap, a0, i, k)
            k += 10


@kernel
def check_fourth(mf, E, gravity, x, nb, Y, rows):
    """0, or the status of a bad fourth vector (qdd_r), E, gravity or Y (rows x 10 nb)."""
    if gravity.shape[0] != 3 or E.shape[0] != mf.shape[0] or E.shape[1] != 9:
        return SIZE_WS
    if x.shape[0] != rows:
        return SIZE_ARG4
    if not all_finite(x):
        return BAD_ARG4
    if Y.shape[0] != rows or Y.shape[1] != 10 * nb:
        return SIZE_OUT
    return 0


@long_kernel
def regressor(mf, E, gravity, q, qd, qd_r, qdd_r, ws, Y):
    """Fill Y (n, 10 bodies) with Y pi = M qdd_r + C(q, qd) qd_r + g; returns 0 or a status
    code (kinematics.BAD_*, SIZE_*: qd_r is the third vector, qdd_r the fourth)."""
    n = mf.shape[0]
    status = check_inputs(mf, ws, q, qd, qd_r)
    if status:
        return status
    status = check_fourth(mf, E, gravity, qdd_r, body_count(mf), Y, n)
    if status:
        return status
    reference_pass(mf, gravity, q, qd, qd_r, qdd_r, ws)
    regressor_sweep(mf, E, ws, Y, q, -1)
    return 0


@long_kernel
def reduced_regressor(mf, E, gravity, qbar, qdbar, qd_rbar, qdd_rbar, ws, Ybar):
    """Ybar = A^T Y(phi(qbar), A qbardot, A qd_rbar, A qdd_rbar) (Adot = 0): every row of Y
    written through A (coordinate_change)."""
    xw = ws[mf.shape[0] :].reshape(-1)  # the rows after the model's, as one flat array
    status = check_reduced(mf, xw, qbar, qdbar, qd_rbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    status = check_fourth(mf, E, gravity, qdd_rbar, body_count(mf), Ybar, nvbar)
    if status:
        return status
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd = xw[oq : oq + nq], vector(xw, v, n, 0)
    qd_r, qdd_r = vector(xw, v, n, 1), vector(xw, v, n, 3)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    expand_velocity(xw, a, n, qd_rbar, qd_r)
    expand_velocity(xw, a, n, qdd_rbar, qdd_r)
    status = check_inputs(mf, ws, q, qd, qd_r)  # the model, quaternions, overflow of m q
    if status:
        return status
    reference_pass(mf, gravity, q, qd, qd_r, qdd_r, ws)
    regressor_sweep(mf, E, ws, Ybar, xw, a)
    return 0


@body_step
def energy_rows(mf, E, gravity, q, ws, out):
    """out[0] . pi = T, out[1] . pi = U (module docstring), after the poses and velocities.
    The heights are absolute: the offset the placements leave out of each subtree hanging from
    the world (kernels.kinematics) is added back, as U depends on where the robot stands."""
    k = 0
    gx, gy, gz = gravity[0], gravity[1], gravity[2]
    for i in range(mf.shape[0]):
        if not is_body_row(mf, i):
            continue
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = link_pose(ws, E, i)
        R = (r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz)
        root = i
        while mf[root, MF_PARENT] >= 0:
            root = int(mf[root, MF_PARENT])
        ox, oy, oz = root_offset(mf, q, root)
        wx, wy, wz, ux, uy, uz = to_link(ws, i, WS_V, *R)
        lx, ly, lz = cross(ux, uy, uz, wx, wy, wz)
        out[0, k] = 0.5 * (ux * ux + uy * uy + uz * uz)
        out[0, k + 1], out[0, k + 2], out[0, k + 3] = lx, ly, lz
        out[0, k + 4], out[0, k + 5], out[0, k + 6] = 0.5 * wx * wx, wx * wy, 0.5 * wy * wy
        out[0, k + 7], out[0, k + 8], out[0, k + 9] = wx * wz, wy * wz, 0.5 * wz * wz
        out[1, k] = -(gx * (px + ox) + gy * (py + oy) + gz * (pz + oz))
        out[1, k + 1] = -(r00 * gx + r10 * gy + r20 * gz)
        out[1, k + 2] = -(r01 * gx + r11 * gy + r21 * gz)
        out[1, k + 3] = -(r02 * gx + r12 * gy + r22 * gz)
        for c in range(k + 4, k + 10):
            out[1, c] = 0.0
        k += 10


@kernel
def check_energy(mf, E, gravity, out):
    if gravity.shape[0] != 3 or E.shape[0] != mf.shape[0] or E.shape[1] != 9:
        return SIZE_WS
    if out.shape[0] != 2 or out.shape[1] != 10 * body_count(mf):
        return SIZE_OUT
    return 0


@kernel
def energy_regressor(mf, E, gravity, q, qd, ws, out):
    """Fill out (2, 10 bodies): out[0] . pi = 1/2 qd^T M qd, out[1] . pi = the potential
    energy -g^T sum m c (zero with every centre of mass at the world origin)."""
    status = check_inputs(mf, ws, q, qd, qd)
    if status:
        return status
    status = check_energy(mf, E, gravity, out)
    if status:
        return status
    joint_angles(mf, q, ws)
    for i in range(mf.shape[0]):
        place_body(mf, q, ws, i)
        move_body(mf, qd, ws, i)
    energy_rows(mf, E, gravity, q, ws, out)
    return 0


@kernel
def reduced_energy_regressor(mf, E, gravity, qbar, qdbar, ws, out):
    """The energy regressor at (phi(qbar), A qbardot): energies are the same in any
    coordinates."""
    xw = ws[mf.shape[0] :].reshape(-1)
    status = check_reduced(mf, xw, qbar, qdbar, qdbar)
    if status:
        return status
    status = check_energy(mf, E, gravity, out)
    if status:
        return status
    n, nq, _, _ = layout(mf, xw)
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd = xw[oq : oq + nq], vector(xw, v, n, 0)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    status = check_position(mf, ws, q)
    if status:
        return status
    joint_angles(mf, q, ws)
    for i in range(n):
        place_body(mf, q, ws, i)
        move_body(mf, qd, ws, i)
    energy_rows(mf, E, gravity, q, ws, out)
    return 0
