"""Equations of motion under holonomic constraints, by a change of coordinates.

For a closed chain or a parallel mechanism, build a spanning tree (a URDF whose
loop-closing joints are cut), compute M, C, g of the tree with :class:`Dynamics`,
and describe the constrained motion by independent speeds u: qdot = A(q) u, the
columns of A spanning the null space of the loop-closure Jacobian K(q)
(K A = 0; for the usual choice of independent joints qdot = [1; -K_d^-1 K_i] u).
Then (Echeandia & Wensing, journal version, Section 3.3, eqs. 23-25; Wensing &
Slotine, "Coriolis factorizations and their connections to Riemannian geometry",
Theorem V.1 and eq. 20):

    Mbar = A^T M A,    Cbar = A^T C A + A^T M Adot,    gbar = A^T g,

and the constrained equations of motion are Mbar udot + Cbar u + gbar = A^T tau.
The constraint forces drop out because A^T K^T = 0.  If C is the tree's
Christoffel-consistent factorization, Cbar is the constrained system's (the
induced connection of Theorem V.1): Mbardot = Cbar + Cbar^T along the constrained
motion, and Cbar u is the velocity-product force whatever A is (constant or not).

This is plain dense linear algebra for arbitrary A, not on any tick path; mimic
joints (a constant A with one nonzero per row) are reduced inside the kernels
instead (:mod:`coriolis_ros.dynamics.mimic`).
"""

from __future__ import annotations

import numpy as np

from .kernels.kinematics import MAX_ABS


def reduce(M, C, A, Adot, g=None):
    """(Mbar, Cbar, gbar) = (A^T M A, A^T C A + A^T M Adot, A^T g); gbar is None without g.

    ``M`` and ``C`` are (n, n), ``A`` and ``Adot`` (n, m) with m <= n, ``g`` (n,) or
    None.  Every entry must be within ±1e50 (NaN and infinities are not), so that the products
    stay finite; ``ValueError`` names the argument otherwise.
    """
    M = _matrix(M, "M")
    n = len(M)
    if M.shape != (n, n):
        raise ValueError(f"M must be square, got shape {M.shape}")
    C = _matrix(C, "C")
    if C.shape != (n, n):
        raise ValueError(f"C must have the shape of M {M.shape}, got {C.shape}")
    A = _matrix(A, "A")
    if A.shape[0] != n or A.shape[1] > n or A.shape[1] == 0:
        raise ValueError(f"A must have shape ({n}, m) with 1 <= m <= {n}, got {A.shape}")
    Adot = _matrix(Adot, "Adot")
    if Adot.shape != A.shape:
        raise ValueError(f"Adot must have the shape of A {A.shape}, got {Adot.shape}")
    MA = M @ A
    Mbar = A.T @ MA
    Cbar = A.T @ (C @ A) + A.T @ (M @ Adot)
    gbar = None
    if g is not None:
        g = np.array(g, dtype=np.float64)
        if g.shape != (n,):
            raise ValueError(f"g must have shape ({n},), got {g.shape}")
        if not np.all(np.abs(g) <= MAX_ABS):
            raise ValueError(f"g has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) entry")
        gbar = A.T @ g
    return Mbar, Cbar, gbar


def _matrix(x, name: str) -> np.ndarray:
    try:
        arr = np.array(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 2-D array of numbers: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {arr.shape}")
    if not np.all(np.abs(arr) <= MAX_ABS):
        raise ValueError(f"{name} has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) entry")
    return arr
