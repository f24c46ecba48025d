"""Admissible Coriolis factorizations: the Christoffel-consistent C plus a contorsion.

Wensing & Slotine, "Coriolis factorizations and their connections to Riemannian geometry",
Section IV.  Every factorization C~ of the velocity product c(q, v) = C(q, v) v is a
connection, C~_ij = sum_k Gamma~_ijk v_k; it differs from the Christoffel-consistent one
(:meth:`Dynamics.coriolis`, Gamma = :meth:`Dynamics.christoffel`) by a contorsion tensor

    K = Gamma~ - Gamma,    C~(q, v) = C(q, v) + K(q) . v,   (K . v)_ij = sum_k K_ijk v_k.

In this library's index order (Gamma[i, j, k] = dC_ij / dv_k):

* C~ v = C v for every v (the same equations of motion, "geodesic agreement", Prop. III.2
  and IV.2) iff K is antisymmetric in its last two indices, K_ijk = -K_ikj;
* Mdot - 2 C~ is skew-symmetric (the passivity property; "metric compatibility",
  Prop. III.1 and IV.1) iff K . v is skew for every v, i.e. K_ijk = -K_jik, because
  Mdot - 2 C is skew already (Mdot = C + C^T).

A factorization is *admissible* (both properties, Corollary IV.1) iff K is totally
antisymmetric: a 3-form.  There is none but K = 0 for n <= 2 and a C(n, 3)-dimensional
family for n >= 3, spanned by the selector matrices of eq. 12,

    C~ = C + sum_{i<j<k} psi_ijk(q) S_ijk(v),
    S_ijk(v) = (e_i e_j^T - e_j e_i^T) v_k + (e_j e_k^T - e_k e_j^T) v_i
             + (e_k e_i^T - e_i e_k^T) v_j,

whose psi_ijk can be chosen freely (any function of q).  For a point mass in 3-D
(M = m 1, C = 0) this is C~ = psi (e_ijk v_k)_ij = -psi [v]x, the paper's cross-product
example of Section IV-A.

Plain numpy on top of the compiled C and Gamma; not a tick-path method (the fast path,
:meth:`Dynamics.coriolis`, stays the Christoffel-consistent one).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from math import comb

import numpy as np

from .kernels.kinematics import MAX_ABS


def triples(n: int) -> list[tuple[int, int, int]]:
    """The index triples i < j < k of eq. 12, in lexicographic order (C(n, 3) of them)."""
    return list(combinations(range(n), 3))


def selector(n: int, i: int, j: int, k: int, v) -> np.ndarray:
    """S_ijk(v) (n x n) of eq. 12: skew, and S_ijk(v) v = 0."""
    if len({i, j, k}) != 3 or not all(0 <= x < n for x in (i, j, k)):
        raise ValueError(f"i, j, k must be distinct indices below {n}, got {(i, j, k)}")
    v = _vector(v, n, "v")
    S = np.zeros((n, n))
    for a, b, c in ((i, j, k), (j, k, i), (k, i, j)):  # cyclic: e_a e_b^T - e_b e_a^T times v_c
        S[a, b] += v[c]
        S[b, a] -= v[c]
    return S


def admissible_contorsion(n: int, psi) -> np.ndarray:
    """The totally antisymmetric K (n, n, n) with K[i, j, k] = psi_ijk for i < j < k (and
    the signs of the permutation elsewhere): C + K . v = C + sum psi_ijk S_ijk(v) (eq. 12).

    ``psi``: a mapping {(i, j, k): value} over distinct indices (any order: the value is that
    of K at those indices), or C(n, 3) numbers in the order of :func:`triples`."""
    K = np.zeros((n, n, n))
    if isinstance(psi, Mapping):
        items = list(psi.items())
    else:
        values = np.array(psi, dtype=np.float64).reshape(-1)
        if values.shape != (comb(n, 3),):
            raise ValueError(f"psi must have C({n}, 3) = {comb(n, 3)} entries, got {values.size}")
        items = list(zip(triples(n), values, strict=True))
    for key, value in items:
        i, j, k = (int(x) for x in key)
        value = float(value)
        if len({i, j, k}) != 3 or not all(0 <= x < n for x in (i, j, k)):
            raise ValueError(f"psi's indices must be distinct and below {n}, got {(i, j, k)}")
        if not abs(value) <= MAX_ABS:
            raise ValueError(f"psi{(i, j, k)} must be finite, got {value!r}")
        for (a, b, c), sign in _PERMUTATIONS:
            idx = ((i, j, k)[a], (i, j, k)[b], (i, j, k)[c])
            K[idx] = sign * value
    return K


def contorsion_properties(K, atol: float = 1e-12) -> dict[str, bool]:
    """Which properties C + K . v has, from K alone (this library's index order):
    ``same_dynamics`` (K_ijk = -K_ikj: C~ v = C v), ``skew`` (K_ijk = -K_jik: Mdot - 2 C~
    skew), ``admissible`` (both: K totally antisymmetric)."""
    K = np.asarray(K, dtype=float)
    scale = atol * max(1.0, float(np.max(np.abs(K))) if K.size else 1.0)
    same = bool(np.max(np.abs(K + K.transpose(0, 2, 1)), initial=0.0) <= scale)
    skew = bool(np.max(np.abs(K + K.transpose(1, 0, 2)), initial=0.0) <= scale)
    return {"same_dynamics": same, "skew": skew, "admissible": same and skew}


def coriolis_factorization(dyn, q, qd, psi=None, contorsion=None):
    """(M, Mdot, C~) at (q, qd) with C~ = C + K . qd, C the Christoffel-consistent matrix of
    :meth:`Dynamics.coriolis` and K either :func:`admissible_contorsion` of ``psi`` (eq. 12)
    or a given ``contorsion`` (n, n, n) tensor at this q (admissible or not: see
    :func:`contorsion_properties`).  Neither: C~ = C."""
    M, Mdot, C = dyn.coriolis(q, qd)
    n = dyn.nv
    if psi is not None and contorsion is not None:
        raise ValueError("give psi or contorsion, not both")
    if psi is not None:
        K = admissible_contorsion(n, psi)
    elif contorsion is not None:
        K = np.array(contorsion, dtype=np.float64)
        if K.shape != (n, n, n):
            raise ValueError(f"contorsion must have shape {(n, n, n)}, got {K.shape}")
        if not np.all(np.abs(K) <= MAX_ABS):
            raise ValueError("contorsion has a NaN, infinite or huge entry")
    else:
        return M, Mdot, C
    # entries of K and qd within ±1e50: C + K qd stays finite (below n 1e100)
    return M, Mdot, C + K @ _vector(qd, n, "qd")


def gradient_contorsion(dyn, q) -> np.ndarray:
    """K of the textbook factorization C_g = Mdot - 1/2 (d(M v)/dq)^T, i.e.
    C_g,ij = sum_k dM_ij/dq_k v_k - 1/2 sum_k dM_jk/dq_i v_k (C_g v = c since
    v^T dM/dq_i v = d(v^T M v)/dq_i): K_ijk = 1/2 (Gamma_jik - Gamma_kij), antisymmetric in
    (j, k) only, so C_g gives the right dynamics but Mdot - 2 C_g is not skew (not
    admissible).  Defined with coordinate vector fields only (dM_ij/dq_k = Gamma_ijk +
    Gamma_jik): ValueError for a floating or planar base."""
    kinds = set(dyn.model.joint_types)
    if dyn.nq != dyn.nv or kinds & {"floating", "planar"}:
        raise ValueError(
            "gradient_contorsion needs generalized coordinates (no floating or planar joint)"
        )
    G = dyn.christoffel(q)
    return 0.5 * (G.transpose(1, 0, 2) - G.transpose(1, 2, 0))


def _vector(v, n: int, name: str) -> np.ndarray:
    arr = np.array(v, dtype=np.float64).reshape(-1)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {np.shape(v)}")
    if not np.all(np.abs(arr) <= MAX_ABS):
        raise ValueError(f"{name} has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) entry")
    return arr


# The six permutations of (0, 1, 2) with their signs.
_PERMUTATIONS = (
    ((0, 1, 2), 1.0),
    ((1, 2, 0), 1.0),
    ((2, 0, 1), 1.0),
    ((0, 2, 1), -1.0),
    ((2, 1, 0), -1.0),
    ((1, 0, 2), -1.0),
)

__all__ = [
    "admissible_contorsion",
    "contorsion_properties",
    "coriolis_factorization",
    "gradient_contorsion",
    "selector",
    "triples",
]
