"""Spatial algebra in world (ground) coordinates, as scalar Numba helpers.

Conventions (Featherstone, *Rigid Body Dynamics Algorithms*, ch. 2):
a motion vector is (w, u) = (angular, linear velocity of the body point at the
world origin); a force vector is (n, f) = (moment about the world origin,
force).  A spatial inertia about the world origin is stored compactly as ten
numbers ``m, h (= m c), Ibar`` (rotational inertia about the origin, symmetric:
xx, yy, zz, xy, xz, yz), meaning

    I = [[Ibar, h x], [(h x)^T, m 1]].

Every helper returns tuples of floats so that LLVM keeps them in registers.

The workspace ``ws`` of every kernel is a (n, WS_WIDTH) float64 array, one row
per body, with these column offsets:
"""

from numba import njit

WS_R = 0  # 9: world rotation of the body frame, row-major
WS_P = 9  # 3: world position of the body frame origin
WS_S = 12  # 6: Phi, the joint motion subspace in world coordinates
WS_V = 18  # 6: v, the body's spatial velocity
WS_SD = 24  # 6: Phidot = v x Phi
WS_IC = 30  # 10: the body's spatial inertia, then IC, the composite inertia of its subtree
WS_BP = 40  # 9: BC, composite body-level Coriolis factor: its 3x3 block P, row-major
WS_BL = 49  # 3: BC: the vector L of its lower-left block -(L x)
WS_H = 52  # 6: momentum I v, then summed over the subtree
# Algorithm 1 over clusters (coriolis_matrix.sweep) only: 15 columns from WS_H, the F1, F2
# and F3 that a row's coupled siblings (its rotors) add to its own before its ancestor walk.
WS_CLUSTER = WS_H
WS_F = 58  # 6: force, then summed over the subtree
WS_A = 64  # 6: acceleration
WS_U = 70  # 6: J_i x, a velocity-like vector (coriolis_times, slotine_li)
WS_CS = 76  # 2: cos and sin of the joint angle (revolute; planar: its rotation)
WS_STREAM = 78  # 1, row 0 only: 1.0 if the caller fills fresh outputs (the batches), else 0
WS_WIDTH = 79

# Fused multiply-add is the one fast-math liberty taken: it only removes a rounding step.
# _nrt=False: no Numba runtime.  The kernels never allocate (so this also proves it: an
# allocating kernel does not compile), and without it each array argument is passed as a
# plain view instead of being wrapped in a freshly malloc'd runtime record: 0.2-0.25 us less
# per call with 6-8 arrays, a sixth of an O(N) call on a 6-DoF arm (the option is private
# but Numba uses it for its own allocation-free helpers, e.g. numba/misc/mergesort.py).
# No cache here: the entry points get theirs when first compiled
# (dynamics.kernel_table.compile_frozen), so that importing the kernels touches no disk.
_OPTIONS = dict(
    cache=False, error_model="numpy", boundscheck=False, fastmath={"contract"}, _nrt=False
)
kernel = njit(**_OPTIONS)
# The O(Nd) and O(Nd^2) sweeps release the GIL so other Python threads run meanwhile;
# the O(N) ones keep it: releasing and taking it back costs ~0.1 us, a tenth of their time.
long_kernel = njit(nogil=True, **_OPTIONS)
# Per-body steps called inside the kernels' own loops, inlined into them: as calls they
# would receive every array as its exploded struct (a 2-D array is nine words) and return
# tuples through memory, which cost more than many of the steps themselves.
body_step = njit(forceinline=True, **_OPTIONS)
# Without the runtime, a helper that returns a view of its arguments' storage is inlined into
# its caller's IR (a compiled function may then only return its own arguments): the caller
# keeps the runtime-free call, with no reference counting of views.
view_helper = njit(inline="always", **_OPTIONS)


@kernel
def cross(ax, ay, az, bx, by, bz):
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


@kernel
def dot6(ws, row, col, x0, x1, x2, x3, x4, x5):
    """ws[row, col:col+6] . x"""
    return (
        ws[row, col] * x0
        + ws[row, col + 1] * x1
        + ws[row, col + 2] * x2
        + ws[row, col + 3] * x3
        + ws[row, col + 4] * x4
        + ws[row, col + 5] * x5
    )


@kernel
def dot3(ws, row, col, x0, x1, x2):
    """ws[row, col:col+3] . x"""
    return ws[row, col] * x0 + ws[row, col + 1] * x1 + ws[row, col + 2] * x2


@body_step
def inertia_times(ws, row, col, wx, wy, wz, ux, uy, uz):
    """I v = (Ibar w + h x u, m u + w x h) for the inertia at ws[row, col:col+10], v = (w, u)."""
    m = ws[row, col]
    hx, hy, hz = ws[row, col + 1], ws[row, col + 2], ws[row, col + 3]
    ixx, iyy, izz = ws[row, col + 4], ws[row, col + 5], ws[row, col + 6]
    ixy, ixz, iyz = ws[row, col + 7], ws[row, col + 8], ws[row, col + 9]
    cx, cy, cz = cross(hx, hy, hz, ux, uy, uz)
    dx, dy, dz = cross(wx, wy, wz, hx, hy, hz)
    return (
        ixx * wx + ixy * wy + ixz * wz + cx,
        ixy * wx + iyy * wy + iyz * wz + cy,
        ixz * wx + iyz * wy + izz * wz + cz,
        m * ux + dx,
        m * uy + dy,
        m * uz + dz,
    )


@body_step
def body_factor(ws, row, col, wx, wy, wz, ux, uy, uz):
    """The Christoffel-consistent body-level factorization B(v, I) (Echeandia & Wensing eq. 10)

        B = 1/2 [(v x*) I + (I v) xbar* - I (v x)]

    for the compact inertia at ws[row, col:col+10] and v = (w, u).  Worked out in
    coordinates its right column is zero and its lower-left block is -(L x), with
    L = m u + w x h the linear momentum; the upper-left block is

        P = 1/2 (S + S^T) - 1/2 (n x) - 1/2 (h u^T + u h^T) + (u . h) 1,

    where S = (w x) Ibar and n = Ibar w + h x u.  Returns P (row-major) then L.
    """
    m = ws[row, col]
    hx, hy, hz = ws[row, col + 1], ws[row, col + 2], ws[row, col + 3]
    ixx, iyy, izz = ws[row, col + 4], ws[row, col + 5], ws[row, col + 6]
    ixy, ixz, iyz = ws[row, col + 7], ws[row, col + 8], ws[row, col + 9]
    # S = (w x) Ibar, row by row: S[r, :] = (w x Ibar[:, c]) r-th component
    s00 = wy * ixz - wz * ixy
    s01 = wy * iyz - wz * iyy
    s02 = wy * izz - wz * iyz
    s10 = wz * ixx - wx * ixz
    s11 = wz * ixy - wx * iyz
    s12 = wz * ixz - wx * izz
    s20 = wx * ixy - wy * ixx
    s21 = wx * iyy - wy * ixy
    s22 = wx * iyz - wy * ixz
    cx, cy, cz = cross(hx, hy, hz, ux, uy, uz)
    nx = ixx * wx + ixy * wy + ixz * wz + cx
    ny = ixy * wx + iyy * wy + iyz * wz + cy
    nz = ixz * wx + iyz * wy + izz * wz + cz
    uh = ux * hx + uy * hy + uz * hz
    # symmetric part
    a00 = s00 - ux * hx + uh
    a11 = s11 - uy * hy + uh
    a22 = s22 - uz * hz + uh
    a01 = 0.5 * (s01 + s10 - ux * hy - uy * hx)
    a02 = 0.5 * (s02 + s20 - ux * hz - uz * hx)
    a12 = 0.5 * (s12 + s21 - uy * hz - uz * hy)
    # skew part -1/2 (n x)
    kx, ky, kz = 0.5 * nx, 0.5 * ny, 0.5 * nz
    lx, ly, lz = cross(wx, wy, wz, hx, hy, hz)
    return (
        a00,
        a01 + kz,
        a02 - ky,
        a01 - kz,
        a11,
        a12 + kx,
        a02 + ky,
        a12 - kx,
        a22,
        m * ux + lx,
        m * uy + ly,
        m * uz + lz,
    )


@body_step
def reference_force(ws, i):
    """f_i = I_i a_i + B(v_i, I_i) y_i, with B the factor of :func:`body_factor` (eq. 10).

    Reads v_i (WS_V), y_i (WS_U), a_i (WS_A) and the inertia I_i (IC slot); writes
    WS_F.  With y_i = v_i this is the RNEA body force I a + v x* (I v) (Definition 4,
    property 1).  Worked out in coordinates, with v = (w, u), a = (al, be),
    I = (m, h, Ibar) and s = w x y_w, the lower-right zero block of B leaves only y_w:

        B(v, I) y = (1/2 [w x (Ibar y_w) + y_w x (Ibar w) - Ibar s] + h x (y_w x u),
                     y_w x (m u + w x h)),

    and the identity (A a) x b + a x (A b) + A^T (a x b) = tr(A) (a x b) turns the
    first three terms into 1/2 tr(Ibar) s - Ibar s + y_w x (Ibar w).  With
    c = be + y_w x u, summing I a = (Ibar al + h x be, m be + al x h):

        f = (Ibar (al - s) + 1/2 tr(Ibar) s + y_w x (Ibar w) + h x c,
             m c + al x h + y_w x (w x h)).
    """
    m = ws[i, WS_IC]
    hx, hy, hz = ws[i, WS_IC + 1], ws[i, WS_IC + 2], ws[i, WS_IC + 3]
    ixx, iyy, izz = ws[i, WS_IC + 4], ws[i, WS_IC + 5], ws[i, WS_IC + 6]
    ixy, ixz, iyz = ws[i, WS_IC + 7], ws[i, WS_IC + 8], ws[i, WS_IC + 9]
    wx, wy, wz = ws[i, WS_V], ws[i, WS_V + 1], ws[i, WS_V + 2]
    ux, uy, uz = ws[i, WS_V + 3], ws[i, WS_V + 4], ws[i, WS_V + 5]
    yx, yy, yz = ws[i, WS_U], ws[i, WS_U + 1], ws[i, WS_U + 2]
    sx, sy, sz = cross(wx, wy, wz, yx, yy, yz)
    ex, ey, ez = cross(yx, yy, yz, ux, uy, uz)
    cx, cy, cz = ws[i, WS_A + 3] + ex, ws[i, WS_A + 4] + ey, ws[i, WS_A + 5] + ez
    ax, ay, az = ws[i, WS_A], ws[i, WS_A + 1], ws[i, WS_A + 2]
    dx, dy, dz = ax - sx, ay - sy, az - sz
    t = 0.5 * (ixx + iyy + izz)
    # Ibar w, then y_w x (Ibar w)
    jx = ixx * wx + ixy * wy + ixz * wz
    jy = ixy * wx + iyy * wy + iyz * wz
    jz = ixz * wx + iyz * wy + izz * wz
    kx, ky, kz = cross(yx, yy, yz, jx, jy, jz)
    lx, ly, lz = cross(hx, hy, hz, cx, cy, cz)
    ws[i, WS_F] = ixx * dx + ixy * dy + ixz * dz + t * sx + kx + lx
    ws[i, WS_F + 1] = ixy * dx + iyy * dy + iyz * dz + t * sy + ky + ly
    ws[i, WS_F + 2] = ixz * dx + iyz * dy + izz * dz + t * sz + kz + lz
    px, py, pz = cross(wx, wy, wz, hx, hy, hz)
    qx, qy, qz = cross(yx, yy, yz, px, py, pz)
    rx, ry, rz = cross(ax, ay, az, hx, hy, hz)
    ws[i, WS_F + 3] = m * cx + rx + qx
    ws[i, WS_F + 4] = m * cy + ry + qy
    ws[i, WS_F + 5] = m * cz + rz + qz


@kernel
def add_rows(ws, dst, src, col, width):
    for c in range(col, col + width):
        ws[dst, c] += ws[src, c]
