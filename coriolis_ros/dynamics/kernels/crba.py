"""Composite-rigid-body algorithm for the mass matrix in world coordinates.

M_ij = Phi_i . IC_j Phi_j for every ancestor i of j (Featherstone, RBDA ch. 6).
"""

from ..model import MF_PARENT
from .kinematics import (
    check_position,
    SIZE_OUT,
    forward_positions,
    square_ok,
)
from .spatial import (
    WS_IC,
    WS_S,
    add_rows,
    body_step,
    dot6,
    inertia_times,
    kernel,
    long_kernel,
)


@body_step
def _column(mf, ws, j, M):
    """Column j of M and its mirror row: M_ij = Phi_i . IC_j Phi_j for j and each ancestor i
    (IC_j complete)."""
    f0, f1, f2, f3, f4, f5 = inertia_times(
        ws, j, WS_IC,
        ws[j, WS_S], ws[j, WS_S + 1], ws[j, WS_S + 2],
        ws[j, WS_S + 3], ws[j, WS_S + 4], ws[j, WS_S + 5],
    )  # fmt: skip
    i = j
    while i >= 0:
        mij = dot6(ws, i, WS_S, f0, f1, f2, f3, f4, f5)
        M[i, j] = mij
        M[j, i] = mij
        i = int(mf[i, MF_PARENT])


@long_kernel
def mass_matrix(mf, q, ws, M):
    """Fill M; returns 0 or a status code (kinematics.BAD_*, SIZE_*)."""
    n = mf.shape[0]
    status = check_position(mf, ws, q)
    if status:
        return status
    if not square_ok(n, M):
        return SIZE_OUT
    forward_positions(mf, q, ws)
    for r in range(n):
        for c in range(n):
            M[r, c] = 0.0
    for j in range(n - 1, -1, -1):
        _column(mf, ws, j, M)
        b = int(mf[j, MF_PARENT])
        if b >= 0:
            add_rows(ws, b, j, WS_IC, 10)
    return 0


@kernel
def mass_from_composites(mf, ws, M):
    """Fill M (n x n) from the motion axes and complete composite inertias already in ws, as
    :func:`.christoffel.christoffel` leaves them (its composite pass, line 22 hoisted, runs
    before its sweep, which only reads them): :func:`mass_matrix`'s loop without its forward
    pass and accumulation.  The composites are summed in the same order, so M is the same to
    the bit."""
    n = mf.shape[0]
    for r in range(n):
        for c in range(n):
            M[r, c] = 0.0
    for j in range(n - 1, -1, -1):
        _column(mf, ws, j, M)
