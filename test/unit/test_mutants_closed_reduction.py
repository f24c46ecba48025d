"""kernels.closed_reduction: the reductions against numpy's products, and their finite flag.

The closed-chain tests reach these kernels only with finite trees' terms, so the flag that
says whether every output entry is finite was never seen False: here a single non-finite
entry of the tree's Gamma or M, in any output row, makes it False, and finite terms give
True with the formulas of the module's docstring (Wensing & Slotine, Section VI-C1) computed
by numpy's einsum.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.oracle import assert_close

from coriolis_ros.dynamics.kernels.closed_reduction import reduce_christoffel, reduce_coriolis

N, M_ = 4, 2  # tree coordinates, independent coordinates


def _terms(seed: int):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(N, N, N))
    B = rng.normal(size=(N, N))
    M = B @ B.T + N * np.eye(N)
    Mdot = rng.normal(size=(N, N))
    Mdot = Mdot + Mdot.T
    C = rng.normal(size=(N, N))
    A = rng.normal(size=(N, M_))
    dA = rng.normal(size=(N, M_, M_))
    yd = rng.normal(size=M_)
    return G, M, Mdot, C, A, dA, yd


def _christoffel(G, M, A, dA):
    out = np.empty((M_, M_, M_))
    ok = reduce_christoffel(G, M, A, dA, np.empty((N, N, M_)), np.empty((N, M_)), out)
    return ok, out


def test_reduced_christoffel_is_the_formula_and_finite():
    G, M, _, _, A, dA, _ = _terms(1)
    ok, out = _christoffel(G, M, A, dA)
    expected = np.einsum("ai,bj,ck,abc->ijk", A, A, A, G) + np.einsum("ai,ab,bjk->ijk", A, M, dA)
    assert ok is True
    assert_close(out, expected, 1e-12, "Gammabar")


@pytest.mark.parametrize("i", range(M_))
def test_an_overflow_in_one_output_row_makes_the_christoffel_flag_false(i):
    """Finite terms whose product overflows in out[i, j, j] only (j the other index): Gamma
    zero, A's column i and dA[:, j, j] about 1e200, so that sum_ab A_ai M_ab dA_bjj is
    about 1e400 and every other entry stays finite. The flag is False whichever row
    overflows, and True for the same terms scaled to 1e100 (finite, no overflow)."""
    _, M, _, _, A, dA, _ = _terms(2)
    j = 1 - i
    G = np.zeros((N, N, N))
    for scale, finite in ((1e100, True), (1e200, False)):
        A2, dA2 = A.copy(), dA.copy()
        A2[:, i] *= scale
        dA2[:, j, j] *= scale
        ok, out = _christoffel(G, M, A2, dA2)
        assert ok is finite
        assert np.isfinite(out[j]).all()
        assert bool(np.isfinite(out[i]).all()) == finite
        assert np.isfinite(np.delete(out[i].reshape(-1), j * M_ + j)).all()


def test_reduced_coriolis_terms_are_the_formulas_and_their_flag():
    G, M, Mdot, C, A, dA, yd = _terms(3)
    Adot = np.einsum("ajk,k->aj", dA, yd)
    outs = [np.empty((M_, M_)) for _ in range(3)]

    def run(M, Mdot, C):
        return reduce_coriolis(M, Mdot, C, A, dA, yd, np.empty((N, M_)), np.empty((N, M_)),
                               *outs)  # fmt: skip

    assert run(M, Mdot, C) is True
    assert_close(outs[0], A.T @ M @ A, 1e-12, "Mbar")
    assert_close(outs[1], Adot.T @ M @ A + A.T @ Mdot @ A + A.T @ M @ Adot, 1e-12, "Mbardot")
    assert_close(outs[2], A.T @ C @ A + A.T @ M @ Adot, 1e-12, "Cbar")
    for which in range(3):  # one non-finite entry in M, Mdot or C: the flag is False
        terms = [M.copy(), Mdot.copy(), C.copy()]
        terms[which][1, 2] = np.inf
        assert run(*terms) is False
