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

(:func:`.kernels.christoffel.spin_terms`; when the rotor hangs from its leader's parent and
the compact rows are the coordinates, they fall on Algorithm 2's own triples and the sweep
adds them, :func:`.kernels.christoffel.sweep`).  With the rotors folded, C and Gamma run on the
*compact* tree, the folded tree without the rotors' rows (:func:`compact`): each rotor is a
line of a spin table on its parent, and a robot whose every coupling is a folded rotor has
compact rows that are its independent coordinates, one to one, so the sweeps run exactly as
on a plain tree (no change of coordinates), plus the spin.  Equal transverse moments are
what make I_r's world value angle-independent; a rotor without them, or with anything else
off round-off, is not folded and runs as a body of its own.
"""

from __future__ import annotations

import numpy as np

from .armature import _add_rigid
from .model import JOINT_NQ, MF_C, MF_I, MF_M, MF_PARENT, MF_Q, MF_R, MF_T, MF_TYPE, REVOLUTE

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
    if row[MF_M] != 0.0 and float(np.hypot(row[MF_C], row[MF_C + 1])) > OFF_AXIS:
        return None
    return float(inertia[2, 2])


def fold(mf: np.ndarray, leaders: np.ndarray, followers: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(folded mf, fold flags (n), J (n)) for a tree's packed rows ``mf`` and, per row, its
    cluster leader (the row whose ancestor walk it joins, or -1) and whether it follows
    another row (a coupled or mimic row).

    A row r is folded if it follows, hangs from its leader's parent or from the world (the
    armature model's spinning discs), is revolute, has no child rows and is balanced: its
    body (mass, centre, inertia) is welded to its parent's body as it sits at angle 0 (to
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
        if not followers[r] or (leaders[r] < 0 and parents[r] >= 0):
            continue
        if int(mf[r, MF_TYPE]) != REVOLUTE or has_child[r]:
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


# A spin table line: parent, leader (compact rows), J, axis (3), column, multiplier, and the
# rotor's position as m_q qbar[src] + offset: src, m_q, offset
SPIN_WIDTH = 11


def compact(folded, flags, spin, A, phi, independent_rows):
    """The compact tree: (rows (n2, MF_WIDTH), its map A2 (n2, 2) and perm (n2), direct,
    spin table (n_spin, SPIN_WIDTH)), from :func:`fold`'s result, the tree's maps A (n, 2:
    column, multiplier per row) and phi (nq, 3: source, multiplier, offset per coordinate)
    and the row of each reduced column.

    Rows are the unfolded rows in tree order, parents renumbered (a folded row is a leaf, so
    no kept row hangs from one). perm lists each reduced column's own row, then the other
    kept rows (the layout of :mod:`.kernels.coordinate_change`). direct: the kept rows are
    the reduced coordinates, one to one, in order (A and phi the identity on them); their
    MF_Q then index the reduced q, so the kernels run on (qbar, qbardot) as given, with no
    change of coordinates. A spin line holds the rotor's parent and leader as compact rows
    (-1: the world), J, its axis in the parent's frame, its reduced column and multiplier,
    and its position's source, multiplier and offset (for the bound on its value)."""
    n = folded.shape[0]
    kept = [r for r in range(n) if flags[r] == 0.0]
    index = {r: i for i, r in enumerate(kept)}
    rows = folded[kept].copy()
    for i, r in enumerate(kept):
        parent = int(folded[r, MF_PARENT])
        rows[i, MF_PARENT] = index[parent] if parent >= 0 else -1.0
    A2 = np.asarray(A, dtype=np.float64)[kept].copy()
    own = [index[int(r)] for r in independent_rows]
    perm = np.array(own + [i for i in range(len(kept)) if i not in set(own)], dtype=np.float64)
    direct = len(kept) == len(own) and all(
        int(A2[i, 0]) == i and A2[i, 1] == 1.0 for i in range(len(kept))
    )
    if direct:  # positions too: each kept joint's coordinates read straight from qbar
        for i, r in enumerate(kept):
            first = int(folded[r, MF_Q])
            size = JOINT_NQ[int(folded[r, MF_TYPE])]
            src = phi[first, 0]
            rows[i, MF_Q] = src
            direct = direct and all(
                phi[first + c, 0] == src + c and phi[first + c, 1] == 1.0
                and phi[first + c, 2] == 0.0
                for c in range(size)
            )  # fmt: skip
    table = np.zeros((int(flags.sum()), SPIN_WIDTH))
    t = 0
    for r in range(n):
        if flags[r] == 0.0:
            continue
        parent = int(folded[r, MF_PARENT])
        leader = int(independent_rows[int(A[r, 0])])
        axis = folded[r, MF_R : MF_R + 9].reshape(3, 3)[:, 2]
        q_row = phi[int(folded[r, MF_Q])]
        table[t] = (index[parent] if parent >= 0 else -1, index[leader], spin[r], *axis,
                    A[r, 0], A[r, 1], *q_row)  # fmt: skip
        t += 1
    if not direct:  # the kept rows read the full tree's q (expanded by the kernels)
        rows[:, MF_Q] = folded[kept, MF_Q]
    return rows, A2, perm, direct, table
