"""Balanced rotors folded into their parent body, for the coupled C and Gamma kernels.

A rotor r is a coupled revolute row hanging from its leader k's parent p (q_r = N q_k: the
pair is one cluster, Wensing & Slotine, Section VI-C) with nothing moving below it.  If it
is balanced about its spin axis a (centre of mass on the axis; the axis a principal axis
with moment J, the two transverse moments equal), its spatial inertia in world coordinates
does not depend on its angle, so it moves with p like a part welded to p, and its kinetic
energy is

    T_r = 1/2 v_p^T I_r v_p + J qd_r (a . w_p) + 1/2 J qd_r^2,

(v_p, w_p: p's spatial and angular velocity).  The first term is p's, once I_r is added to
p's inertia (the *folded* tree: the rotor's row keeps no mass).  What the spin adds to
Algorithm 1 (Echeandia & Wensing) then has closed forms, worked out with the body factor
B(v, I) = 1/2 [(v x*) I + (I v) xbar* - I (v x)] of their eq. 10 for the rotor's I_r and
S_r = (a, c x a) (c on the axis):

    I_r S_r = (J a, 0),   B(S_r, I_r) = [[-1/2 (J a) x, 0], [0, 0]],   B(S_r, I_r) S_r = 0,

and, with B(v, I) u - B(u, I) v = -I (v x u) and B + B^T = d/dt I (world coordinates),

    F1_r = B(S_r, I_r) v_p = (1/2 J w_p x a, 0),   F2_r = (J a, 0),
    F3_r = B(v_r, I_r)^T S_r (top half) = 1/2 J w_p x a,

plus qd_r B(S_r, I_r) in p's composite factor BC_p (B is linear in v: B(v_r, I_r) =
B(v_p, I_r) + qd_r B(S_r, I_r), and the folded tree already has the first).  So the sweep
places, moves and factors no rotor body: a rotor costs a cross product and the cluster's
sums (:func:`.kernels.coriolis_matrix.spin_rotor`).  The same derivation, differentiated in
the velocities, gives the Christoffel symbols the spin adds to those of the folded tree:
for rows x != l on the path from the root to p, with t = 1/2 J [s_x, s_l, a] (s: the
angular part of a row's column; [.,.,.] the triple product),

    Gamma[x, l, r] = Gamma[x, r, l] = t,
    Gamma[r, x, l] = -t if l is x, an ancestor of x or a later row of x's joint, else t

(:func:`.kernels.christoffel.spin_terms`).  Equal transverse moments are what make I_r's
world value angle-independent; a rotor without them, or with anything else off round-off,
is not folded and runs as a body of its own, as before.
"""

from __future__ import annotations

import numpy as np

from .armature import _add_rigid
from .model import MF_C, MF_I, MF_M, MF_PARENT, MF_R, MF_T, MF_TYPE, REVOLUTE

# Round-off allowed in "balanced": products of inertia and the transverse moments' difference
# relative to the largest moment; the centre's distance from the axis (m).
RELATIVE = 1e-12
OFF_AXIS = 1e-12


def balanced(row: np.ndarray) -> float | None:
    """The moment J about the spin axis (z of the row's frame) of a balanced rotor's body, or
    None if the body is not balanced about it (module docstring)."""
    inertia = row[MF_I : MF_I + 9].reshape(3, 3)
    scale = float(np.abs(inertia).max())
    tol = RELATIVE * scale
    products = (inertia[0, 1], inertia[0, 2], inertia[1, 2], inertia[1, 0], inertia[2, 0],
                inertia[2, 1])  # fmt: skip
    if any(abs(float(x)) > tol for x in products):
        return None
    if abs(float(inertia[0, 0] - inertia[1, 1])) > tol:
        return None
    if row[MF_M] > 0.0 and float(np.hypot(row[MF_C], row[MF_C + 1])) > OFF_AXIS:
        return None
    return float(inertia[2, 2])


def fold(mf: np.ndarray, leaders: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(folded mf, fold flags (n), J (n)) for a tree's packed rows ``mf`` and, per row, its
    cluster leader (the row whose ancestor walk it joins, or -1).

    A row r is folded if it has a leader, is revolute, has no child rows and is balanced:
    its body (mass, centre, inertia) is welded to its parent's body as it sits at angle 0 (to
    none on the world) and zeroed in its own row; flags[r] = 1 and J[r] its spin moment.
    """
    n = mf.shape[0]
    folded = mf.copy()
    flags = np.zeros(n)
    spin = np.zeros(n)
    parents = mf[:, MF_PARENT].astype(np.int64)
    has_child = np.zeros(n, dtype=bool)
    has_child[parents[parents >= 0]] = True
    for r in range(n):
        if leaders[r] < 0 or int(mf[r, MF_TYPE]) != REVOLUTE or has_child[r]:
            continue
        moment = balanced(mf[r])
        if moment is None:
            continue
        p = int(parents[r])
        if p >= 0:
            rot = mf[r, MF_R : MF_R + 9].reshape(3, 3)
            inertia = mf[r, MF_I : MF_I + 9].reshape(3, 3)
            centre = rot @ mf[r, MF_C : MF_C + 3] + mf[r, MF_T : MF_T + 3]
            _add_rigid(folded[p], float(mf[r, MF_M]), centre, rot @ inertia @ rot.T)
        folded[r, MF_M] = 0.0
        folded[r, MF_C : MF_C + 3] = 0.0
        folded[r, MF_I : MF_I + 9] = 0.0
        flags[r] = 1.0
        spin[r] = moment
    return folded, flags, spin
