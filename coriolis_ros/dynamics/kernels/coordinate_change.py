"""Changes of generalized coordinates q = phi(qbar), qdot = A qbardot, for mimic joints.

Echeandia & Wensing (journal version, Section 3.3, eqs. 22-27; Wensing & Slotine,
Theorem V.1): with A = dq/dqbar,

    Mbar = A^T M A,   Cbar = A^T C A + A^T M Adot,   gbar = A^T g,   taubar = A^T tau,

and the Christoffel-consistent C maps to the Christoffel-consistent Cbar.  A mimic
joint follows its leader, q_a = m_a qbar_col(a) + o_a, so A is constant (Adot = 0)
and each of its rows has one nonzero: the multiplier m_a in the leader's column
(independent rows: 1 in their own column).  Then also

    Mdotbar = A^T Mdot A,   Gammabar_ijk = sum A_ai A_bj A_ck Gamma_abc,
    (Cbar qbardot) = A^T (C qdot),   (Cbar^T qbardot) = A^T (C^T qdot),   pbar = A^T p.

A is never formed: it is two numbers per full row (reduced column, multiplier),
and the configuration map phi three per full coordinate (reduced index,
multiplier, offset; multi-DoF joints' coordinates copy through).  Each product
with A is one pass over the full entries, scattering into the reduced ones:
O(n^2) for matrices, O(n^3) for Gamma, no more than filling them.

A reduced kernel takes the same arguments as the full one (every array argument
costs the dispatcher ~0.1 us): what it needs beyond them lives in the rows of the
workspace ``ws`` after the model's n rows, which the full kernels never touch,
read as one flat float64 array ``xw`` (:func:`tail`), laid out by
:func:`xw_size` for n rows and nq coordinates:

    [nvbar, nqbar | A: n x (column, multiplier) | perm (n): the full row of each
    reduced column, then the mimic rows | phi: nq x (index, multiplier, offset) |
    q (nq) | qd, qdd, three output vectors (n each) | three n x n matrices | one
    n x n x n tensor | fold: n2, identity, A2 and perm of the compact tree (3 n), the
    number of spin lines, the spin table (n x SPIN_WIDTH), the compact rows (n x MF_WIDTH)]

The fold part (:mod:`..rotor_fold`, written by :func:`write_fold`) serves C and Gamma only:
balanced rotors welded to their parents and dropped from the tree (the compact tree of n2
rows), their spin added in closed form from the spin table.

The products gather the independent rows' entries (perm) and then add the few
mimic rows' contributions, which is cheaper than scattering every entry.
:func:`reduced_coriolis` needs no full-size matrices at all: Algorithm 1's sweep
writes through A directly (:func:`.coriolis_matrix.sweep`).

The map part is written once by :func:`write_map`; the rest is scratch.  Each
kernel checks the reduced inputs (status codes of :mod:`.kinematics`, about the
reduced sizes), expands them into the full-size buffers, runs the full-model
kernel and scatters its results into the caller's outputs.
"""

from ..model import MF_WIDTH
from ..rotor_fold import SPIN_WIDTH
from .christoffel import christoffel_through_map
from .coriolis_matrix import sweep
from .coriolis_times import coriolis_times
from .coriolis_vectors import coriolis_vectors
from .crba import mass_matrix
from .kinematics import (
    MAX_ABS,
    BAD_Q,
    check_inputs,
    check_position,
    config_size,
    BAD_QD,
    BAD_QDD,
    OVERLAP,
    SIZE_OUT,
    SIZE_Q,
    SIZE_QD,
    SIZE_QDD,
    SIZE_WS,
    all_finite,
    disjoint,
    square_ok,
)
from .rnea import generalized_gravity, inverse_dynamics
from .safeea import christoffel_safeea
from .slotine_li import BAD_ARG4, SIZE_ARG4, slotine_li
# No runtime (as the tree's kernels): the views of the workspace's extra rows are handed out
# by helpers inlined into their callers (spatial.view_helper).
from .spatial import WS_WIDTH, kernel, long_kernel, view_helper

_HEAD = 2  # nvbar, nqbar


@kernel
def xw_size(n, nq):
    """Length of the flat workspace for a model of n rows and nq coordinates."""
    return fold_offset(n, nq) + 3 + 3 * n + SPIN_WIDTH * n + n * MF_WIDTH


@kernel
def fold_offset(n, nq):
    """Offset in xw of the fold part (module docstring)."""
    return _HEAD + 3 * n + 3 * nq + nq + 5 * n + 3 * n * n + n * n * n


def write_fold(xw, n: int, nq: int, rows, A2, perm, identity: bool, table) -> None:
    """Store :func:`..rotor_fold.compact`'s result in xw's fold part."""
    f = fold_offset.py_func(n, nq)
    n2 = rows.shape[0]
    xw[f], xw[f + 1] = n2, 1.0 if identity else 0.0
    xw[f + 2 : f + 2 + 2 * n2] = A2.reshape(-1)
    xw[f + 2 + 2 * n2 : f + 2 + 3 * n2] = perm
    s = f + 2 + 3 * n
    xw[s] = table.shape[0]
    xw[s + 1 : s + 1 + table.size] = table.reshape(-1)
    r = s + 1 + SPIN_WIDTH * n
    xw[r : r + rows.size] = rows.reshape(-1)


@kernel
def fold_layout(xw, n, nq):
    """(f, n2, map offset (-1: the identity), spin table offset) of xw's fold part."""
    f = fold_offset(n, nq)
    return f, int(xw[f]), -1 if xw[f + 1] != 0.0 else f + 2, f + 2 + 3 * n


@view_helper
def compact_rows(xw, f, n, n2):
    """The compact tree's rows (n2, MF_WIDTH) in xw's fold part at offset f."""
    r = f + 3 + 3 * n + SPIN_WIDTH * n
    return xw[r : r + n2 * MF_WIDTH].reshape((n2, MF_WIDTH))


@kernel
def offsets(n, nq):
    """Offsets in xw of A, phi, q, the five n-vectors, the matrices, the tensor."""
    a = _HEAD
    p = a + 3 * n  # after A and perm
    q = p + 3 * nq
    v = q + nq
    m = v + 5 * n
    g = m + 3 * n * n
    return a, p, q, v, m, g


def write_map(xw, A, phi, independent_rows, nqbar: int) -> None:
    """Store the map in the head of xw: A (n, 2) (column, multiplier), phi (nq, 3), and
    the full row of each reduced column (``independent_rows``, nvbar entries)."""
    nvbar = len(independent_rows)
    n, nq = A.shape[0], phi.shape[0]
    a, p, _, _, _, _ = offsets.py_func(n, nq)  # plain Python: nothing to compile
    xw[0], xw[1] = nvbar, nqbar
    xw[a : a + 2 * n] = A.reshape(-1)
    # a reduced column's own row: the one row mapping to it with multiplier 1 that is not
    # a mimic (independent rows come first in their column: CoordinateMap lists them)
    independent = [int(r) for r in independent_rows]
    mimic = [r for r in range(n) if r not in set(independent)]
    xw[a + 2 * n : a + 3 * n] = independent + mimic
    xw[p : p + 3 * nq] = phi.reshape(-1)


def ws_rows(n: int, nq: int) -> int:
    """Rows of a workspace (WS_WIDTH columns) holding the model's n rows, then xw."""
    return n + -(-xw_size.py_func(n, nq) // WS_WIDTH)


@kernel
def layout(mf, xw):
    """(n, nq, nvbar, nqbar), or n = -1 if xw does not fit the model."""
    n = mf.shape[0]
    nq = config_size(mf)
    if xw.shape[0] < xw_size(n, nq) or xw[0] < 1.0:
        return -1, nq, 0, 0
    return n, nq, int(xw[0]), int(xw[1])


@kernel
def check_reduced(mf, xw, qbar, qdbar, qddbar):
    """0, or the status code of the first problem with xw or the reduced inputs."""
    n, nq, nvbar, nqbar = layout(mf, xw)
    if n < 0:
        return SIZE_WS
    if qbar.shape[0] != nqbar:
        return SIZE_Q
    if not all_finite(qbar):
        return BAD_Q
    if qdbar.shape[0] != nvbar:
        return SIZE_QD
    if qddbar.shape[0] != nvbar:
        return SIZE_QDD
    if not all_finite(qdbar):
        return BAD_QD
    if not all_finite(qddbar):
        return BAD_QDD
    return 0


@kernel
def check_position_only(mf, xw, qbar):
    n, nq, nvbar, nqbar = layout(mf, xw)
    if n < 0:
        return SIZE_WS
    if qbar.shape[0] != nqbar:
        return SIZE_Q
    if not all_finite(qbar):
        return BAD_Q
    return 0


@kernel
def expand_position(xw, p, nq, qbar, q):
    """q = phi(qbar): q_r = m_r qbar_src(r) + o_r."""
    for r in range(nq):
        k = p + 3 * r
        q[r] = xw[k + 1] * qbar[int(xw[k])] + xw[k + 2]


@kernel
def expand_velocity(xw, a, n, vbar, v):
    """v = A vbar."""
    for r in range(n):
        v[r] = xw[a + 2 * r + 1] * vbar[int(xw[a + 2 * r])]


@kernel
def reduce_vector(xw, a, n, x, xbar):
    """xbar = A^T x: the independent rows' entries, plus m_r x_r for each mimic row r."""
    nb = xbar.shape[0]
    pm = a + 2 * n
    for c in range(nb):
        xbar[c] = x[int(xw[pm + c])]
    for t in range(nb, n):
        r = int(xw[pm + t])
        xbar[int(xw[a + 2 * r])] += xw[a + 2 * r + 1] * x[r]


@kernel
def reduce_matrix(xw, a, n, X, Xbar):
    """Xbar = A^T X A: the independent block, then the mimic rows and columns.

    Xbar[ci, cj] = sum over full rows r -> ci, s -> cj of m_r m_s X[r, s]: the pair of
    independent rows (gathered), pairs with a mimic row r (any s), and pairs of an
    independent row with a mimic column s.
    """
    nb = Xbar.shape[0]
    pm = a + 2 * n
    for ci in range(nb):
        ri = int(xw[pm + ci])
        for cj in range(nb):
            Xbar[ci, cj] = X[ri, int(xw[pm + cj])]
    for t in range(nb, n):
        r = int(xw[pm + t])
        cr, mr = int(xw[a + 2 * r]), xw[a + 2 * r + 1]
        for s in range(n):
            Xbar[cr, int(xw[a + 2 * s])] += mr * xw[a + 2 * s + 1] * X[r, s]
        for ci in range(nb):
            Xbar[ci, cr] += mr * X[int(xw[pm + ci]), r]


@kernel
def reduce_tensor(xw, a, n, G, Gbar):
    """Gbar_ijk = sum A_ai A_bj A_ck G_abc (a scatter: O(n^3) like filling Gamma)."""
    nb = Gbar.shape[0]
    for r in range(nb):
        for s in range(nb):
            for t in range(nb):
                Gbar[r, s, t] = 0.0
    for i in range(n):
        ci, mi = int(xw[a + 2 * i]), xw[a + 2 * i + 1]
        for j in range(n):
            cj, mij = int(xw[a + 2 * j]), mi * xw[a + 2 * j + 1]
            for k in range(n):
                Gbar[ci, cj, int(xw[a + 2 * k])] += mij * xw[a + 2 * k + 1] * G[i, j, k]


@view_helper
def vector(xw, v, n, which):
    """The which-th full n-vector buffer (0: qd, 1: qdd, 2-4: outputs)."""
    return xw[v + which * n : v + (which + 1) * n]


@view_helper
def matrix(xw, m, n, which):
    return xw[m + which * n * n : m + (which + 1) * n * n].reshape((n, n))


@long_kernel
def reduced_coriolis(mf, qbar, qdbar, ws, M, Mdot, C):
    """Mbar, Mdotbar, Cbar: Algorithm 1 on the full tree, each entry written through A."""
    xw = ws[mf.shape[0] :].reshape(-1)  # the rows after the model's, as one flat array
    status = check_reduced(mf, xw, qbar, qdbar, qdbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if not (square_ok(nvbar, M) and square_ok(nvbar, Mdot) and square_ok(nvbar, C)):
        return SIZE_OUT
    if not disjoint(M, Mdot, C):
        return OVERLAP
    # Algorithm 1 on the compact tree, the folded rotors' spin from the spin table
    f, n2, a2, s0 = fold_layout(xw, n, nq)
    if a2 < 0:  # direct: on (qbar, qbardot) as given; a literal -1 compiles out the map
        status = check_direct(xw, ws, f, n, n2, s0, qbar, qdbar, True)
        if status:
            return status
        sweep(compact_rows(xw, f, n, n2), qbar, qdbar, ws, M, Mdot, C, xw, -1, True, s0)
        return 0
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd = xw[oq : oq + nq], vector(xw, v, n, 0)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    status = check_inputs(mf, ws, q, qd, qd)  # the model, quaternions, overflow of m q
    if status:
        return status
    qc = vector(xw, v, n, 1)  # the compact rows' velocities, through the compact map
    expand_velocity(xw, f + 2, n2, qdbar, qc)
    sweep(compact_rows(xw, f, n, n2), q, qc, ws, M, Mdot, C, xw, a2, True, s0)
    return 0


@kernel
def check_direct(xw, ws, f, n, n2, s0, qbar, qdbar, velocity):
    """What check_inputs finds on the expanded (q, qd), for a direct compact tree: the
    folded rotors' positions m_q qbar[src] + offset (BAD_Q), the quaternions (on the compact
    rows, whose MF_Q index qbar), the rotors' velocities m qbardot[column] (BAD_QD, if
    ``velocity``); qbar and qbardot themselves are checked already."""
    lines = int(xw[s0])
    for t in range(lines):
        y = s0 + 1 + SPIN_WIDTH * t
        if not abs(xw[y + 9] * qbar[int(xw[y + 8])] + xw[y + 10]) <= MAX_ABS:
            return BAD_Q
    status = check_position(compact_rows(xw, f, n, n2), ws, qbar)
    if status or not velocity:
        return status
    for t in range(lines):
        y = s0 + 1 + SPIN_WIDTH * t
        if not abs(xw[y + 7] * qdbar[int(xw[y + 6])]) <= MAX_ABS:
            return BAD_QD
    return 0


@long_kernel
def reduced_christoffel(mf, qbar, ws, Gamma):
    """Gammabar from Algorithm 2."""
    return christoffel_through_A(mf, qbar, ws, Gamma, 0)


@long_kernel
def reduced_christoffel_safeea(mf, qbar, ws, Gamma):
    """Gammabar from Safeea's recursion (serial chains only: the API checks)."""
    return christoffel_through_A(mf, qbar, ws, Gamma, 1)


@kernel
def christoffel_through_A(mf, qbar, ws, Gamma, method):
    """Gammabar; method 0: Algorithm 2, 1: Safeea's recursion."""
    xw = ws[mf.shape[0] :].reshape(-1)  # the rows after the model's, as one flat array
    status = check_position_only(mf, xw, qbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if Gamma.shape[0] != nvbar or Gamma.shape[1] != nvbar or Gamma.shape[2] != nvbar:
        return SIZE_OUT
    a, p, oq, _, _, g = offsets(n, nq)
    f, n2, a2, s0 = fold_layout(xw, n, nq)
    if method == 0 and a2 < 0:  # on the compact tree, read straight from qbar, plus the spin
        status = check_direct(xw, ws, f, n, n2, s0, qbar, qbar, False)
        if status:
            return status
        return christoffel_through_map(compact_rows(xw, f, n, n2), qbar, ws, Gamma, xw, -1, s0)
    q = xw[oq : oq + nq]
    expand_position(xw, p, nq, qbar, q)
    if method == 0:  # Algorithm 2, each entry written through A: no full-size tensor
        status = check_position(mf, ws, q)
        if status:
            return status
        return christoffel_through_map(compact_rows(xw, f, n, n2), q, ws, Gamma, xw, a2, s0)
    Gf = xw[g : g + n * n * n].reshape((n, n, n))
    status = christoffel_safeea(mf, q, ws, Gf)
    if status:
        return status
    reduce_tensor(xw, a, n, Gf, Gamma)
    return 0


@long_kernel
def reduced_mass_matrix(mf, qbar, ws, M):
    """Mbar = A^T M A."""
    xw = ws[mf.shape[0] :].reshape(-1)  # the rows after the model's, as one flat array
    status = check_position_only(mf, xw, qbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if not square_ok(nvbar, M):
        return SIZE_OUT
    a, p, oq, _, m, _ = offsets(n, nq)
    q = xw[oq : oq + nq]
    expand_position(xw, p, nq, qbar, q)
    Mf = matrix(xw, m, n, 0)
    status = mass_matrix(mf, q, ws, Mf)
    if status:
        return status
    reduce_matrix(xw, a, n, Mf, M)
    return 0


@kernel
def reduced_gravity(mf, gravity, qbar, ws, g):
    """gbar = A^T g."""
    xw = ws[mf.shape[0] :].reshape(-1)  # the rows after the model's, as one flat array
    status = check_position_only(mf, xw, qbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if g.shape[0] != nvbar:
        return SIZE_OUT
    a, p, oq, v, _, _ = offsets(n, nq)
    q = xw[oq : oq + nq]
    expand_position(xw, p, nq, qbar, q)
    gf = vector(xw, v, n, 2)
    status = generalized_gravity(mf, gravity, q, ws, gf)
    if status:
        return status
    reduce_vector(xw, a, n, gf, g)
    return 0


@kernel
def reduced_inverse_dynamics(mf, gravity, qbar, qdbar, qddbar, ws, tau):
    """taubar = A^T tau(phi(qbar), A qbardot, A qbarddot) (Adot = 0)."""
    xw = ws[mf.shape[0] :].reshape(-1)  # the rows after the model's, as one flat array
    status = check_reduced(mf, xw, qbar, qdbar, qddbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if tau.shape[0] != nvbar:
        return SIZE_OUT
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd, qdd = xw[oq : oq + nq], vector(xw, v, n, 0), vector(xw, v, n, 1)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    expand_velocity(xw, a, n, qddbar, qdd)
    tf = vector(xw, v, n, 2)
    status = inverse_dynamics(mf, gravity, q, qd, qdd, ws, tf)
    if status:
        return status
    reduce_vector(xw, a, n, tf, tau)
    return 0


@kernel
def reduced_coriolis_vectors(mf, qbar, qdbar, ws, Cqd, CTqd, p):
    """A^T (C qd), A^T (C^T qd), A^T (M qd): Cbar qbardot, Cbar^T qbardot, pbar."""
    xw = ws[mf.shape[0] :].reshape(-1)  # the rows after the model's, as one flat array
    status = check_reduced(mf, xw, qbar, qdbar, qdbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if Cqd.shape[0] != nvbar or CTqd.shape[0] != nvbar or p.shape[0] != nvbar:
        return SIZE_OUT
    if not disjoint(Cqd, CTqd, p):
        return OVERLAP
    a, ph, oq, v, _, _ = offsets(n, nq)
    q, qd = xw[oq : oq + nq], vector(xw, v, n, 0)
    expand_position(xw, ph, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    x0, x1, x2 = vector(xw, v, n, 2), vector(xw, v, n, 3), vector(xw, v, n, 4)
    status = coriolis_vectors(mf, q, qd, ws, x0, x1, x2)
    if status:
        return status
    reduce_vector(xw, a, n, x0, Cqd)
    reduce_vector(xw, a, n, x1, CTqd)
    reduce_vector(xw, a, n, x2, p)
    return 0


@kernel
def reduced_coriolis_times(mf, qbar, qdbar, xbar, ws, ybar):
    """Cbar xbar = A^T C(phi(qbar), A qbardot) A xbar (Adot = 0)."""
    xw = ws[mf.shape[0] :].reshape(-1)  # the rows after the model's, as one flat array
    status = check_reduced(mf, xw, qbar, qdbar, xbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if ybar.shape[0] != nvbar:
        return SIZE_OUT
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd, x = xw[oq : oq + nq], vector(xw, v, n, 0), vector(xw, v, n, 1)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    expand_velocity(xw, a, n, xbar, x)
    y = vector(xw, v, n, 2)
    status = coriolis_times(mf, q, qd, x, ws, y)
    if status:
        return status
    reduce_vector(xw, a, n, y, ybar)
    return 0


@kernel
def reduced_slotine_li(mf, gravity, qbar, qdbar, qd_rbar, qdd_rbar, ws, taubar):
    """A^T (M A qdd_rbar + C A qd_rbar + g) at (phi(qbar), A qbardot) (Adot = 0)."""
    xw = ws[mf.shape[0] :].reshape(-1)  # the rows after the model's, as one flat array
    status = check_reduced(mf, xw, qbar, qdbar, qd_rbar)
    if status:
        return status
    n, nq, nvbar, _ = layout(mf, xw)
    if qdd_rbar.shape[0] != nvbar:
        return SIZE_ARG4
    if not all_finite(qdd_rbar):
        return BAD_ARG4
    if taubar.shape[0] != nvbar:
        return SIZE_OUT
    a, p, oq, v, _, _ = offsets(n, nq)
    q, qd = xw[oq : oq + nq], vector(xw, v, n, 0)
    qd_r, qdd_r = vector(xw, v, n, 1), vector(xw, v, n, 3)
    expand_position(xw, p, nq, qbar, q)
    expand_velocity(xw, a, n, qdbar, qd)
    expand_velocity(xw, a, n, qd_rbar, qd_r)
    expand_velocity(xw, a, n, qdd_rbar, qdd_r)
    tau = vector(xw, v, n, 2)
    status = slotine_li(mf, gravity, q, qd, qd_r, qdd_r, ws, tau)
    if status:
        return status
    reduce_vector(xw, a, n, tau, taubar)
    return 0
