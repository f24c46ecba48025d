"""The spanning tree's M, Mdot, C and Gamma reduced to a closed chain's independent coordinates.

With qdot = A(y) ydot (A n x m, Wensing & Slotine, Section VI-C1, and the induced
factorization of their Theorem V.1 / eq. 20) and Adot = sum_k dA[:, :, k] ydot_k:

    Mbar = A^T M A,   Mbardot = Adot^T M A + A^T Mdot A + A^T M Adot,
    Cbar = A^T C A + A^T M Adot,
    Gammabar_ijk = sum_abc A_ai A_bj A_ck Gamma_abc + sum_ab A_ai M_ab dA_bjk.

One compiled call each instead of a dozen numpy products (:mod:`..closed_chain`); the
scratch arrays come from the caller, so nothing is allocated.  Each returns whether every
output entry is finite.
"""

import math

from numba import njit

# Compiled for one signature and cached by kernel_table.compile_frozen (closed_chain.py).
_OPTS = dict(cache=False, nogil=True, error_model="numpy")


@njit(**_OPTS)
def _finite2(X) -> bool:
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if not math.isfinite(X[i, j]):
                return False
    return True


@njit(**_OPTS)
def reduce_coriolis(M, Mdot, C, A, dA, yd, Adot, MA, Mbar, Mbardot, Cbar):
    """Mbar, Mbardot, Cbar from the tree's M, Mdot, C at the closed configuration.
    Scratch: Adot and MA (n x m)."""
    n, m = A.shape
    for a in range(n):
        for j in range(m):
            acc = 0.0
            for k in range(m):
                acc += dA[a, j, k] * yd[k]
            Adot[a, j] = acc
            acc = 0.0
            for b in range(n):
                acc += M[a, b] * A[b, j]
            MA[a, j] = acc
    for i in range(m):
        for j in range(m):
            mb = 0.0
            md = 0.0
            cb = 0.0
            for a in range(n):
                mb += A[a, i] * MA[a, j]
                md += Adot[a, i] * MA[a, j] + MA[a, i] * Adot[a, j]
                cb += MA[a, i] * Adot[a, j]
                for b in range(n):
                    w = A[a, i] * A[b, j]
                    md += w * Mdot[a, b]
                    cb += w * C[a, b]
            Mbar[i, j] = mb
            Mbardot[i, j] = md
            Cbar[i, j] = cb
    return _finite2(Mbar) and _finite2(Mbardot) and _finite2(Cbar)


@njit(**_OPTS)
def reduce_christoffel(G, M, A, dA, X, MA, out):
    """Gammabar from the tree's Gamma and M.  Scratch: X (n x n x m), MA (n x m)."""
    n, m = A.shape
    for a in range(n):  # X[a, b, k] = sum_c Gamma_abc A_ck
        for b in range(n):
            for k in range(m):
                acc = 0.0
                for c in range(n):
                    acc += G[a, b, c] * A[c, k]
                X[a, b, k] = acc
    for a in range(n):
        for j in range(m):
            acc = 0.0
            for b in range(n):
                acc += M[a, b] * A[b, j]
            MA[a, j] = acc
    for i in range(m):  # M symmetric: sum_ab A_ai M_ab dA_bjk = sum_b (M A)_bi dA_bjk
        for j in range(m):
            for k in range(m):
                acc = 0.0
                for a in range(n):
                    s = 0.0
                    for b in range(n):
                        s += A[b, j] * X[a, b, k]
                    acc += A[a, i] * s + MA[a, i] * dA[a, j, k]
                out[i, j, k] = acc
    finite = True
    for i in range(m):
        finite = finite and _finite2(out[i])
    return finite
