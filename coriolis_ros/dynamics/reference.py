"""Plain-numpy reference of Echeandia & Wensing's Algorithms 1 and 2 (journal version).

Readable documentation of, and a test oracle for, the Numba kernels
(:mod:`.kernels.coriolis_matrix`, :mod:`.kernels.christoffel`).  Clarity over speed:
every quantity is a dense numpy array, every block is commented with the paper's
algorithm line, and nothing is shared with the kernels but the packed model ``mf``.

Coordinates: **body-fixed**, as in the paper's listings.  Body i's motion vectors are
(angular, linear velocity of its frame origin) in its own frame, and ``X[i]`` = iX_p(i)
changes motion coordinates from the parent's frame to body i's (App. A); forces go back
with iX_p(i)^T and inertia-like operators (I, B) with the congruence iX_p^T (.) iX_p.

Bodies are joints, not rows: a multi-DoF joint (free flyer, planar) is one body whose
motion subspace Phi_i has several columns (the velocities are expressed in the child
frame, so Phi_i is constant in body coordinates, the joint's Phi-ring term is zero and
Phidot_i = (v_i x) Phi_i with the body's whole velocity v_i, Alg. 1 line 4).  Algorithm 1
then runs on matrix blocks unchanged.  Algorithm 2 assumes single-DoF joints; its only
change for multi-DoF joints is noted at lines 12-14 below.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .model import (
    FREE,
    MF_C,
    MF_I,
    MF_M,
    MF_PARENT,
    MF_R,
    MF_T,
    PLANAR,
    PRISMATIC,
    REVOLUTE,
    Model,
)

_E = np.eye(3)


# ----------------------------------------------------------------- spatial algebra (App. A)


def skew(p):
    """S(p), the 3D cross-product matrix: S(p) r = p x r."""
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def crm(v):
    """(v x), the motion/motion cross product of v = (w, u)."""
    w, u = skew(v[:3]), skew(v[3:])
    return np.block([[w, np.zeros((3, 3))], [u, w]])


def crf(v):
    """(v x*), the motion/force cross product; (v x) = -(v x*)^T, eq. (8)."""
    return -crm(v).T


def crf_bar(f):
    """(f x*), the swapped force cross product: (f x*) v = (v x*) f, for f = (n, f_lin)."""
    n, fl = skew(f[:3]), skew(f[3:])
    return np.block([[-n, -fl], [-fl, np.zeros((3, 3))]])


def spatial_inertia(m, c, Ic):
    """I about the frame origin from mass m, CoM c and inertia Ic about the CoM (App. A)."""
    C = skew(c)
    return np.block([[Ic + m * C @ C.T, m * C], [m * C.T, m * _E]])


def body_factor(v, inertia):
    """B(v, I) = 1/2 [(v x*) I + (I v) x* - I (v x)], Niemeyer-Slotine, eq. (10)."""
    return 0.5 * (crf(v) @ inertia + crf_bar(inertia @ v) - inertia @ crm(v))


def xform(E, r):
    """Motion transform to a frame with rotation E (new <- old) at r (old coordinates)."""
    return np.block([[E, np.zeros((3, 3))], [-E @ skew(r), E]])


# ----------------------------------------------------------------- the tree from ``mf``


def _rot_z(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _quaternion(x, y, z, w):
    x, y, z, w = np.array([x, y, z, w]) / np.linalg.norm([x, y, z, w])
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def _unit(k):
    e = np.zeros(6)
    e[k] = 1.0
    return e


# Phi of each joint type in its child (body) frame, motion vectors (w, u); z is the axis.
PHI = {
    REVOLUTE: np.array([_unit(2)]).T,
    PRISMATIC: np.array([_unit(5)]).T,
    FREE: np.array([_unit(3), _unit(4), _unit(5), _unit(0), _unit(1), _unit(2)]).T,
    PLANAR: np.array([_unit(3), _unit(4), _unit(2)]).T,
}


def _joint_pose(kind, qj):
    """(R, p): the child frame's rotation and origin in the joint frame."""
    if kind == REVOLUTE:
        return _rot_z(qj[0]), np.zeros(3)
    if kind == PRISMATIC:
        return _E, np.array([0.0, 0.0, qj[0]])
    if kind == FREE:
        return _quaternion(*qj[3:7]), np.asarray(qj[:3], dtype=float)
    if kind == PLANAR:
        return _rot_z(qj[2]), np.array([qj[0], qj[1], 0.0])
    raise NotImplementedError(f"joint type {kind} is not supported by the reference")


def _row_inertia(row):
    Ic = row[MF_I : MF_I + 9].reshape(3, 3)
    return spatial_inertia(row[MF_M], row[MF_C : MF_C + 3], Ic)


def _bodies(model: Model, q, mf=None):
    """Per body (= joint): parent body, velocity rows, Phi_i, I_i and X_i = iX_p(i) at q
    (inertias from ``mf``, default the model's own)."""
    if model.mimic or model.couplings:
        raise NotImplementedError("the reference supports plain trees (no mimic, no couplings)")
    mf = model.mf if mf is None else np.asarray(mf, dtype=float)
    q = np.asarray(q, dtype=float)
    joints = model.joints()
    body_of_row = np.empty(model.nv, dtype=np.int64)
    for b, (_, r0, nr, _) in enumerate(joints):
        body_of_row[r0 : r0 + nr] = b
    parent, rows, Phi, inertia, X = [], [], [], [], []
    for kind, r0, nr, iq in joints:
        p_row = int(mf[r0, MF_PARENT])
        parent.append(-1 if p_row < 0 else int(body_of_row[p_row]))
        rows.append(slice(r0, r0 + nr))
        R_tree, t_tree = mf[r0, MF_R : MF_R + 9].reshape(3, 3), mf[r0, MF_T : MF_T + 3]
        R_j, p_j = _joint_pose(kind, q[iq : iq + (7 if kind == FREE else nr)])
        Phi.append(PHI[kind])
        # every row of a multi-DoF joint lives in the body frame: sum their inertias
        inertia.append(sum(_row_inertia(mf[r]) for r in range(r0, r0 + nr)))
        # body frame in the parent frame: rotation R_tree R_j, origin t_tree + R_tree p_j
        X.append(xform((R_tree @ R_j).T, t_tree + R_tree @ p_j))
    return parent, rows, Phi, inertia, X


# ----------------------------------------------------------------- Algorithm 1


def coriolis_reference(model: Model, q, qd):
    """(M, Mdot, C) at (q, qd): Algorithm 1 with B of eq. (10), body coordinates."""
    parent, rows, Phi, Ib, X = _bodies(model, q)  # Ib[i] = I_i
    qd = np.asarray(qd, dtype=float)
    N, n = len(parent), model.nv
    M, Mdot, C = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    v, Phidot, IC, BC = [None] * N, [None] * N, [None] * N, [None] * N
    for i in range(N):  # line 2
        v_p = np.zeros(6) if parent[i] < 0 else v[parent[i]]  # line 1: v_0 = 0
        v[i] = X[i] @ v_p + Phi[i] @ qd[rows[i]]  # line 3
        Phidot[i] = crm(v[i]) @ Phi[i]  # line 4 (Phi-ring = 0: Phi_i constant in body frame)
        IC[i] = Ib[i].copy()  # line 5
        BC[i] = body_factor(v[i], Ib[i])  # line 6
    for j in range(N - 1, -1, -1):  # line 8
        J = rows[j]
        F1 = IC[j] @ Phidot[j] + BC[j] @ Phi[j]  # line 9
        F2 = IC[j] @ Phi[j]  # line 10
        F3 = BC[j].T @ Phi[j]  # line 11
        C[J, J] = Phi[j].T @ F1  # line 12
        M[J, J] = Phi[j].T @ F2  # line 13
        Mdot[J, J] = Phidot[j].T @ F2 + Phi[j].T @ (F1 + F3)  # line 14
        i = j  # line 15
        while parent[i] >= 0:  # line 16 (0-based: the world is -1)
            F1, F2, F3 = X[i].T @ F1, X[i].T @ F2, X[i].T @ F3  # line 17
            i = parent[i]  # line 18
            Ii = rows[i]
            C[Ii, J] = Phi[i].T @ F1  # line 19
            C[J, Ii] = (Phidot[i].T @ F2 + Phi[i].T @ F3).T  # line 20
            M[Ii, J] = Phi[i].T @ F2  # line 21
            M[J, Ii] = M[Ii, J].T
            Mdot[Ii, J] = Phidot[i].T @ F2 + Phi[i].T @ (F1 + F3)  # line 22
            Mdot[J, Ii] = Mdot[Ii, J].T
        if parent[j] >= 0:
            IC[parent[j]] = IC[parent[j]] + X[j].T @ IC[j] @ X[j]  # line 24
            BC[parent[j]] = BC[parent[j]] + X[j].T @ BC[j] @ X[j]  # line 25
    return M, Mdot, C  # line 27


# ----------------------------------------------------------------- Algorithm 2


def christoffel_reference(model: Model, q):
    """Gamma (n, n, n) at q, Gamma[i, j, k] = dC_ij/dqd_k: Algorithm 2, body coordinates.

    The paper's symmetry Gamma_ijk = Gamma_ikj (36) holds for single-DoF joints, not for two
    velocities j, k of one multi-DoF joint (generalized speeds, not coordinate rates).
    Differentiating (18), with dPhidot_j/dqd_k = Phi_k x Phi_j when k is in j's body or
    above it (eq. 35), and B(Phi_j, I) Phi_k = B(Phi_k, I) Phi_j + I (Phi_k x Phi_j) from
    eq. (10), gives for mutually related i, j, k, with l the deepest body of the three:
        Gamma_ijk = Phi_i^T B(Phi_k, IC_l) Phi_j  if k's body is strictly deeper than j's,
        Gamma_ijk = Phi_i^T B(Phi_j, IC_l) Phi_k  otherwise.
    For j, k in distinct bodies both forms give B(Phi_deeper, IC_l) Phi_higher: (36).  Each
    of lines 12-14 writes one value to two entries that swap their last two indices; the
    entry whose last index is the higher body's (i's or j's, never the deeper one's) is
    always right, the other only if the two bodies differ, and is written only then.  For
    single-DoF joints this is exactly the paper's listing.
    """
    parent, rows, Phi, IC, X = _bodies(model, q)  # lines 1-3: IC_i = I_i
    N, n = len(parent), model.nv
    Gamma = np.zeros((n, n, n))
    for k in range(N - 1, -1, -1):  # line 4 (IC_k is complete: its children came first)
        K = rows[k]
        for c in range(Phi[k].shape[1]):  # each velocity of joint k (once for 1-DoF joints)
            kc, s = K.start + c, Phi[k][:, c]
            Bt = body_factor(s, IC[k])  # line 5
            D = crf_bar(IC[k] @ s) - Bt  # line 6
            j = k  # line 7
            while j >= 0:  # line 8
                J = rows[j]
                F1, F2, F3 = Bt @ Phi[j], Bt.T @ Phi[j], D @ Phi[j]  # line 9
                i = j  # line 10
                while i >= 0:  # line 11
                    Ii = rows[i]
                    G1, G2, G3 = Phi[i].T @ F1, Phi[i].T @ F2, Phi[i].T @ F3  # (d_i, d_j) each
                    Gamma[Ii, kc, J] = G1  # line 12: Gamma_ikj = Phi_i^T F1
                    if j != k:
                        Gamma[Ii, J, kc] = G1  # line 12: Gamma_ijk = Gamma_ikj
                    Gamma[J, kc, Ii] = G2.T  # line 13: Gamma_jki = Phi_i^T F2
                    if i != k:
                        Gamma[J, Ii, kc] = G2.T  # line 13: Gamma_jik = Gamma_jki
                    Gamma[kc, J, Ii] = G3.T  # line 14: Gamma_kji = Phi_i^T F3
                    if i != j:
                        Gamma[kc, Ii, J] = G3  # line 14: Gamma_kij = Gamma_kji
                    F1, F2, F3 = X[i].T @ F1, X[i].T @ F2, X[i].T @ F3  # line 15
                    i = parent[i]  # line 16
                Bt = X[j].T @ Bt @ X[j]  # line 18
                D = X[j].T @ D @ X[j]  # line 19
                j = parent[j]  # line 20
        if parent[k] >= 0:
            IC[parent[k]] = IC[parent[k]] + X[k].T @ IC[k] @ X[k]  # line 22
    return Gamma  # line 24


# ----------------------------------------------------------------- Gamma by differentiation


def inverse_dynamics_reference(model: Model, q, qd, qdd, gravity=None, mf=None):
    """tau = M qdd + C qd + g: the recursive Newton-Euler algorithm in body coordinates
    (Featherstone, RBDA Table 5.1), gravity (world frame; default the model's) as the base
    acceleration a_0 = (0, -g); ``mf`` overrides the model's inertias."""
    parent, rows, Phi, Ib, X = _bodies(model, q, mf)
    g = model.gravity if gravity is None else np.asarray(gravity, dtype=float)
    qd, qdd = np.asarray(qd, dtype=float), np.asarray(qdd, dtype=float)
    N = len(parent)
    v, a, f = [None] * N, [None] * N, [None] * N
    for i in range(N):
        v_p = np.zeros(6) if parent[i] < 0 else v[parent[i]]
        a_p = np.r_[np.zeros(3), -g] if parent[i] < 0 else a[parent[i]]
        vj = Phi[i] @ qd[rows[i]]
        v[i] = X[i] @ v_p + vj
        a[i] = X[i] @ a_p + Phi[i] @ qdd[rows[i]] + crm(v[i]) @ vj  # Phidot = v x Phi
        f[i] = Ib[i] @ a[i] + crf(v[i]) @ Ib[i] @ v[i]
    tau = np.zeros(model.nv)
    for i in range(N - 1, -1, -1):
        tau[rows[i]] = Phi[i].T @ f[i]
        if parent[i] >= 0:
            f[parent[i]] = f[parent[i]] + X[i].T @ f[i]
    return tau


def structure_constants(model: Model):
    """c (n, n, n) with [X_k, X_j] = sum_l c[l, k, j] X_l for the velocity basis of the tree.

    A single-DoF joint's basis field is a coordinate field, which commutes with every other;
    a multi-DoF joint's velocities are the child frame's twist, so its fields are
    left-invariant on SE(3) (free flyer) or SE(2) (planar) and bracket as the Lie algebra
    does: [X_k, X_j] = X of (Phi_k x Phi_j), the motion cross product of the body-frame
    columns, which stays in the span of Phi (Wensing & Slotine, Section VI-D: nonzero only
    for k, j and l in one joint).
    """
    n = model.nv
    c = np.zeros((n, n, n))
    for kind, r0, nr, _ in model.joints():
        if nr == 1:
            continue
        Phi = PHI[kind]  # orthonormal columns: Phi^T is the dual basis on its span
        for k in range(nr):
            for j in range(nr):
                w = crm(Phi[:, k]) @ Phi[:, j]
                coeffs = Phi.T @ w
                assert np.allclose(Phi @ coeffs, w), "bracket outside the joint's span"
                c[r0 : r0 + nr, r0 + k, r0 + j] = coeffs
    return c


def christoffel_by_differentiation(model: Model, q, A=None, mf=None):
    """Gamma at q from derivatives of the velocity product, Wensing & Slotine Section VI-D:
    independent of Algorithms 1 and 2 (it needs only the RNEA and the joints' Lie brackets).

    The velocity product c(v) = C(q, v) v (the RNEA with qdd = 0 and no gravity) is a
    quadratic form in v, so its Hessian is exact by polarization, and gives the part of
    Gamma symmetric in its last two indices:

        Gs_ijk = 1/2 d^2 c_i / dv_j dv_k = 1/2 [c(e_j + e_k) - c(e_j) - c(e_k)]_i.

    With generalized speeds (a free flyer's body twist) the basis fields X_j need not
    commute, and Gamma_ijk = <X_i, nabla_{X_k} X_j> (so that C_ij = sum_k Gamma_ijk v_k) of
    the torsion-free (Levi-Civita) connection has the antisymmetric part
    Gamma_ijk - Gamma_ikj = <X_i, [X_k, X_j]> = sum_l M_il c^l_kj (structure constants,
    :func:`structure_constants`), hence

        Gamma_ijk = Gs_ijk + 1/2 sum_l M_il c^l_kj,

    with M from the same RNEA (M e_j = tau(q, 0, e_j) without gravity).  Coupled joints:
    ``model`` is the whole tree (``Dynamics.tree``), q its configuration, and ``A``
    (n, nbar) the constant map qdot = A qbardot (``Dynamics.map.matrix()``): then
    c(vbar) = A^T c(A vbar), M = A^T M A and the brackets of the fields X_bar = X A are
    A^+ (sum_rs A_ra A_sb c[:, r, s]).  ``mf`` overrides the model's inertias.
    """
    tree = dataclasses.replace(model, mimic=(), couplings=())  # every row a coordinate
    n = tree.nv
    A = np.eye(n) if A is None else np.asarray(A, dtype=float)
    nb = A.shape[1]
    zero, none = np.zeros(n), np.zeros(3)

    def velocity_product(vbar):
        return A.T @ inverse_dynamics_reference(tree, q, A @ vbar, zero, none, mf)

    eye = np.eye(nb)
    single = [velocity_product(eye[j]) for j in range(nb)]
    Gs = np.empty((nb, nb, nb))
    for j in range(nb):
        for k in range(j, nb):
            h = 0.5 * (velocity_product(eye[j] + eye[k]) - single[j] - single[k])
            Gs[:, j, k] = Gs[:, k, j] = h
    M = np.column_stack(
        [A.T @ inverse_dynamics_reference(tree, q, zero, A @ eye[j], none, mf) for j in range(nb)]
    )
    c_full = structure_constants(tree)
    c_bar = np.linalg.pinv(A) @ np.einsum("lrs,ra,sb->lab", c_full, A, A).reshape(n, -1)
    c_bar = c_bar.reshape(nb, nb, nb)  # c_bar[l, k, j]
    return Gs + 0.5 * np.einsum("il,lkj->ijk", M, c_bar)
