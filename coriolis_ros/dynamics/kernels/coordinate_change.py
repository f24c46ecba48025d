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

A is never formed: it is two columns per full row (:data:`A_COL`, :data:`A_MUL`),
and the configuration map phi one row per full coordinate (:data:`PHI_SRC`,
:data:`PHI_MUL`, :data:`PHI_OFF`; multi-DoF joints' coordinates copy through).
Each product with A is one pass over the full entries, scattering into the
reduced ones: O(n^2) for matrices, O(n^3) for Gamma, no more than filling them.

Each kernel checks the reduced inputs (status codes of :mod:`.kinematics`, about
the reduced sizes), expands them into the caller's preallocated full-size
buffers ``xv`` (rows: q, qd, qdd, then three outputs) and ``xm`` / ``xg``, runs
the full-model kernel and scatters its results into the outputs.
"""

from .christoffel import christoffel
from .coriolis_matrix import coriolis_matrix
from .coriolis_vectors import coriolis_vectors
from .crba import mass_matrix
from .kinematics import (
    BAD_Q,
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
from .spatial import kernel, long_kernel

A_COL, A_MUL = 0, 1  # per full velocity row: reduced column, multiplier
PHI_SRC, PHI_MUL, PHI_OFF = 0, 1, 2  # per full coordinate: reduced index, multiplier, offset

# xv rows
_Q, _QD, _QDD, _OUT = 0, 1, 2, 3


@kernel
def reduced_sizes(A, phi):
    """(nv, nq) of the reduced coordinates: one past the largest column / source index."""
    nv, nq = 0, 0
    for r in range(A.shape[0]):
        nv = max(nv, int(A[r, A_COL]) + 1)
    for r in range(phi.shape[0]):
        nq = max(nq, int(phi[r, PHI_SRC]) + 1)
    return nv, nq


@kernel
def check_reduced(A, phi, xv, qbar, qdbar, qddbar):
    """0, or the status code of the first problem with the reduced inputs or the buffers."""
    nv, nq = reduced_sizes(A, phi)
    if xv.shape[0] < 6 or xv.shape[1] < A.shape[0] or xv.shape[1] < phi.shape[0]:
        return SIZE_WS
    if qbar.shape[0] != nq:
        return SIZE_Q
    if not all_finite(qbar):
        return BAD_Q
    if qdbar.shape[0] != nv:
        return SIZE_QD
    if qddbar.shape[0] != nv:
        return SIZE_QDD
    if not all_finite(qdbar):
        return BAD_QD
    if not all_finite(qddbar):
        return BAD_QDD
    return 0


@kernel
def check_position_only(A, phi, xv, qbar):
    _, nq = reduced_sizes(A, phi)
    if xv.shape[0] < 6 or xv.shape[1] < A.shape[0] or xv.shape[1] < phi.shape[0]:
        return SIZE_WS
    if qbar.shape[0] != nq:
        return SIZE_Q
    if not all_finite(qbar):
        return BAD_Q
    return 0


@kernel
def expand_position(phi, qbar, q):
    """q = phi(qbar): q_a = m_a qbar_src(a) + o_a."""
    for r in range(phi.shape[0]):
        q[r] = phi[r, PHI_MUL] * qbar[int(phi[r, PHI_SRC])] + phi[r, PHI_OFF]


@kernel
def expand_velocity(A, vbar, v):
    """v = A vbar."""
    for r in range(A.shape[0]):
        v[r] = A[r, A_MUL] * vbar[int(A[r, A_COL])]


@kernel
def reduce_vector(A, x, xbar):
    """xbar = A^T x."""
    for c in range(xbar.shape[0]):
        xbar[c] = 0.0
    for r in range(A.shape[0]):
        xbar[int(A[r, A_COL])] += A[r, A_MUL] * x[r]


@kernel
def reduce_matrix(A, X, Xbar):
    """Xbar = A^T X A."""
    nb = Xbar.shape[0]
    for r in range(nb):
        for c in range(nb):
            Xbar[r, c] = 0.0
    n = A.shape[0]
    for a in range(n):
        ca, ma = int(A[a, A_COL]), A[a, A_MUL]
        for b in range(n):
            Xbar[ca, int(A[b, A_COL])] += ma * A[b, A_MUL] * X[a, b]


@kernel
def reduce_tensor(A, G, Gbar):
    """Gbar_ijk = sum A_ai A_bj A_ck G_abc."""
    nb = Gbar.shape[0]
    for r in range(nb):
        for s in range(nb):
            for t in range(nb):
                Gbar[r, s, t] = 0.0
    n = A.shape[0]
    for a in range(n):
        ca, ma = int(A[a, A_COL]), A[a, A_MUL]
        for b in range(n):
            cb, mab = int(A[b, A_COL]), ma * A[b, A_MUL]
            for c in range(n):
                Gbar[ca, cb, int(A[c, A_COL])] += mab * A[c, A_MUL] * G[a, b, c]


@kernel
def expand_inputs(A, phi, xv, qbar, qdbar, qddbar):
    n, nq = A.shape[0], phi.shape[0]
    expand_position(phi, qbar, xv[_Q, :nq])
    expand_velocity(A, qdbar, xv[_QD, :n])
    expand_velocity(A, qddbar, xv[_QDD, :n])


@long_kernel
def reduced_coriolis(mf, A, phi, qbar, qdbar, ws, xv, xm, M, Mdot, C):
    """Mbar, Mdotbar, Cbar (Algorithm 1 on the full tree, then A^T . A)."""
    status = check_reduced(A, phi, xv, qbar, qdbar, qdbar)
    if status:
        return status
    nv, _ = reduced_sizes(A, phi)
    if not (square_ok(nv, M) and square_ok(nv, Mdot) and square_ok(nv, C)):
        return SIZE_OUT
    if not disjoint(M, Mdot, C):
        return OVERLAP
    n, nq = A.shape[0], phi.shape[0]
    expand_inputs(A, phi, xv, qbar, qdbar, qdbar)
    status = coriolis_matrix(mf, xv[_Q, :nq], xv[_QD, :n], ws, xm[0], xm[1], xm[2])
    if status:
        return status
    reduce_matrix(A, xm[0], M)
    reduce_matrix(A, xm[1], Mdot)
    reduce_matrix(A, xm[2], C)
    return 0


@long_kernel
def reduced_christoffel(mf, A, phi, qbar, ws, xv, xg, Gamma, method):
    """Gammabar; method 0: Algorithm 2, 1: Safeea's recursion (serial chains only)."""
    status = check_position_only(A, phi, xv, qbar)
    if status:
        return status
    nv, _ = reduced_sizes(A, phi)
    if Gamma.shape[0] != nv or Gamma.shape[1] != nv or Gamma.shape[2] != nv:
        return SIZE_OUT
    nq = phi.shape[0]
    expand_position(phi, qbar, xv[_Q, :nq])
    if method == 1:
        status = christoffel_safeea(mf, xv[_Q, :nq], ws, xg)
    else:
        status = christoffel(mf, xv[_Q, :nq], ws, xg)
    if status:
        return status
    reduce_tensor(A, xg, Gamma)
    return 0


@long_kernel
def reduced_mass_matrix(mf, A, phi, qbar, ws, xv, xm, M):
    """Mbar = A^T M A."""
    status = check_position_only(A, phi, xv, qbar)
    if status:
        return status
    nv, _ = reduced_sizes(A, phi)
    if not square_ok(nv, M):
        return SIZE_OUT
    nq = phi.shape[0]
    expand_position(phi, qbar, xv[_Q, :nq])
    status = mass_matrix(mf, xv[_Q, :nq], ws, xm[0])
    if status:
        return status
    reduce_matrix(A, xm[0], M)
    return 0


@kernel
def reduced_gravity(mf, gravity, A, phi, qbar, ws, xv, g):
    """gbar = A^T g."""
    status = check_position_only(A, phi, xv, qbar)
    if status:
        return status
    nv, _ = reduced_sizes(A, phi)
    if g.shape[0] != nv:
        return SIZE_OUT
    n, nq = A.shape[0], phi.shape[0]
    expand_position(phi, qbar, xv[_Q, :nq])
    status = generalized_gravity(mf, gravity, xv[_Q, :nq], ws, xv[_OUT, :n])
    if status:
        return status
    reduce_vector(A, xv[_OUT, :n], g)
    return 0


@kernel
def reduced_inverse_dynamics(mf, gravity, A, phi, qbar, qdbar, qddbar, ws, xv, tau):
    """taubar = A^T tau(phi(qbar), A qbardot, A qbarddot) (Adot = 0)."""
    status = check_reduced(A, phi, xv, qbar, qdbar, qddbar)
    if status:
        return status
    nv, _ = reduced_sizes(A, phi)
    if tau.shape[0] != nv:
        return SIZE_OUT
    n, nq = A.shape[0], phi.shape[0]
    expand_inputs(A, phi, xv, qbar, qdbar, qddbar)
    status = inverse_dynamics(mf, gravity, xv[_Q, :nq], xv[_QD, :n], xv[_QDD, :n], ws, xv[_OUT, :n])
    if status:
        return status
    reduce_vector(A, xv[_OUT, :n], tau)
    return 0


@kernel
def reduced_coriolis_vectors(mf, A, phi, qbar, qdbar, ws, xv, Cqd, CTqd, p):
    """A^T (C qd), A^T (C^T qd), A^T (M qd): Cbar qbardot, Cbar^T qbardot, pbar."""
    status = check_reduced(A, phi, xv, qbar, qdbar, qdbar)
    if status:
        return status
    nv, _ = reduced_sizes(A, phi)
    if Cqd.shape[0] != nv or CTqd.shape[0] != nv or p.shape[0] != nv:
        return SIZE_OUT
    if not disjoint(Cqd, CTqd, p):
        return OVERLAP
    n, nq = A.shape[0], phi.shape[0]
    expand_inputs(A, phi, xv, qbar, qdbar, qdbar)
    status = coriolis_vectors(
        mf, xv[_Q, :nq], xv[_QD, :n], ws, xv[_OUT, :n], xv[_OUT + 1, :n], xv[_OUT + 2, :n]
    )
    if status:
        return status
    reduce_vector(A, xv[_OUT, :n], Cqd)
    reduce_vector(A, xv[_OUT + 1, :n], CTqd)
    reduce_vector(A, xv[_OUT + 2, :n], p)
    return 0
