"""The sparse L^T L factorization of the mass matrix and its triangular solves.

Featherstone, *Rigid Body Dynamics Algorithms*, Section 6.5 (Tables 6.3 and 6.4): in a
tree numbered so that parent(i) < i, M_ij is nonzero only if i and j are on one path to
the world, and M = L^T L with L lower triangular keeps that pattern: L_ij != 0 only
for j an ancestor of i (or j = i).  The factorization walks, for each row k from the
tips down, only k's ancestors: O(sum of squared depths) instead of O(n^3), and no
fill-in.  Each solve with L or L^T is O(sum of depths).

The ancestors of every row are listed first (:func:`ancestors`, nearest first), so that
the loops read independent indices instead of chasing parents; the ancestors of an
ancestor i of k are the entries after i in k's list, which is what Table 6.3's inner
loop walks.  ``dense`` lists every j < i instead (parent i - 1): the same loops are then
the dense factorization, for the independent coordinates of coupled joints, whose
reduced M does not keep the tree's pattern.
"""

import math

from ..model import MF_PARENT
from .spatial import body_step

# A pivot at or below this fraction of M's largest diagonal entry is a singular M.
MASS_RCOND = 1e-14


@body_step
def ancestors(mf, dense, n, anc):
    """anc[i, 0] = the number d_i of ancestors of row i, anc[i, 1:1 + d_i] = them, nearest
    first (anc: n x (n + 1))."""
    for i in range(n):
        p = i - 1 if dense else int(mf[i, MF_PARENT])
        if p < 0:
            anc[i, 0] = 0.0
            continue
        d = int(anc[p, 0])
        anc[i, 1] = p
        for t in range(d):
            anc[i, 2 + t] = anc[p, 1 + t]
        anc[i, 0] = d + 1


@body_step
def ltl(H, anc):
    """Factor H = L^T L in place (L in the lower triangle, ancestors' columns only), with
    the ancestor lists of :func:`ancestors`.

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
        d = int(anc[k, 0])
        for t in range(d):
            H[k, int(anc[k, 1 + t])] /= a
        for t in range(d):  # H_ij -= H_ki H_kj for i an ancestor of k, j = i or i's ancestor
            i = int(anc[k, 1 + t])
            hki = H[k, i]
            H[i, i] -= hki * hki
            for s in range(t + 1, d):
                j = int(anc[k, 1 + s])
                H[i, j] -= hki * H[k, j]
    return True


@body_step
def solve_lt(anc, L, x):
    """x <- L^-T x (back-substitution, tips first)."""
    for i in range(L.shape[0] - 1, -1, -1):
        xi = x[i] / L[i, i]
        x[i] = xi
        for t in range(int(anc[i, 0])):
            j = int(anc[i, 1 + t])
            x[j] -= L[i, j] * xi


@body_step
def solve_l(anc, L, x):
    """x <- L^-1 x (forward substitution, base first)."""
    for i in range(L.shape[0]):
        s = x[i]
        for t in range(int(anc[i, 0])):
            j = int(anc[i, 1 + t])
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]
