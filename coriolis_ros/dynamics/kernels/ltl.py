"""The sparse L^T L factorization of the mass matrix and its triangular solves.

Featherstone, *Rigid Body Dynamics Algorithms*, Section 6.5 (Tables 6.3 and 6.4): in a
tree numbered so that parent(i) < i, M_ij is nonzero only if i and j are on one path to
the world, and M = L^T L with L lower triangular keeps that pattern: L_ij != 0 only
for j an ancestor of i (or j = i).  The factorization walks, for each row k from the
tips down, only k's ancestors: O(sum of squared depths) instead of O(n^3), and no
fill-in.  Each solve with L or L^T is O(sum of depths).

``lam(mf, i, dense)`` is the parent used: the tree's (``dense`` false), or i - 1, for
which the same loops are the dense factorization (independent coordinates of coupled
joints, whose reduced M does not keep the tree's pattern).
"""

import math

from ..model import MF_PARENT
from .spatial import body_step

# A pivot at or below this fraction of M's largest diagonal entry is a singular M.
MASS_RCOND = 1e-14


@body_step
def lam(mf, i, dense):
    return i - 1 if dense else int(mf[i, MF_PARENT])


@body_step
def ltl(mf, dense, H):
    """Factor H = L^T L in place (L in the lower triangle, ancestors' columns only).

    Returns False if a pivot is not above MASS_RCOND times H's largest diagonal entry.
    """
    n = H.shape[0]
    scale = 0.0
    for k in range(n):
        scale = max(scale, H[k, k])
    floor = MASS_RCOND * scale
    for k in range(n - 1, -1, -1):
        if not H[k, k] > floor:
            return False
        a = math.sqrt(H[k, k])
        H[k, k] = a
        i = lam(mf, k, dense)
        while i >= 0:
            H[k, i] /= a
            i = lam(mf, i, dense)
        i = lam(mf, k, dense)
        while i >= 0:
            j = i
            hki = H[k, i]
            while j >= 0:
                H[i, j] -= hki * H[k, j]
                j = lam(mf, j, dense)
            i = lam(mf, i, dense)
    return True


@body_step
def solve_lt(mf, dense, L, x):
    """x <- L^-T x (back-substitution, tips first)."""
    for i in range(L.shape[0] - 1, -1, -1):
        xi = x[i] / L[i, i]
        x[i] = xi
        j = lam(mf, i, dense)
        while j >= 0:
            x[j] -= L[i, j] * xi
            j = lam(mf, j, dense)


@body_step
def solve_l(mf, dense, L, x):
    """x <- L^-1 x (forward substitution, base first)."""
    for i in range(L.shape[0]):
        s = x[i]
        j = lam(mf, i, dense)
        while j >= 0:
            s -= L[i, j] * x[j]
            j = lam(mf, j, dense)
        x[i] = s / L[i, i]
