"""dynamics.constraints.reduce: the bound on its inputs, both sides, and the products exactly.

Every argument's entries must be within ±1e50, the library's bound on inputs: then A^T M A,
A^T C A + A^T M Adot and A^T g stay finite (|entries| <= n^2 1e150 here); a NaN, an infinity
or the next double beyond 1e50 is refused, naming the argument.  With entries that are small
integers the products are exact, so they are compared with == against sums written out here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from coriolis_ros.dynamics.constraints import reduce

MAX = 1e50
BEYOND = math.nextafter(MAX, math.inf)


def test_the_products_exactly_on_integers():
    M = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 4.0]])
    C = np.array([[0.0, 2.0, -1.0], [1.0, 0.0, 3.0], [-2.0, 1.0, 1.0]])
    A = np.array([[1.0, 0.0], [2.0, -1.0], [0.0, 3.0]])
    Adot = np.array([[0.0, 1.0], [-1.0, 0.0], [2.0, 1.0]])
    g = np.array([1.0, -2.0, 5.0])
    Mbar, Cbar, gbar = reduce(M, C, A, Adot, g)
    n, m = 3, 2
    want_M = [[sum(A[a, i] * M[a, b] * A[b, j] for a in range(n) for b in range(n))
               for j in range(m)] for i in range(m)]  # fmt: skip
    want_C = [[sum(A[a, i] * (C[a, b] * A[b, j] + M[a, b] * Adot[b, j])
                   for a in range(n) for b in range(n)) for j in range(m)]
              for i in range(m)]  # fmt: skip
    want_g = [sum(A[a, i] * g[a] for a in range(n)) for i in range(m)]
    assert Mbar.tolist() == want_M and Cbar.tolist() == want_C and gbar.tolist() == want_g
    assert reduce(M, C, A, Adot)[2] is None


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_entries_at_1e50_are_accepted_and_give_finite_products(sign):
    n = 3
    big = np.full((n, n), sign * MAX)
    Mbar, Cbar, gbar = reduce(big, big, big, big, big[0])
    for x in (Mbar, Cbar, gbar):
        assert np.all(np.isfinite(x)) and np.all(np.abs(x) > MAX)


@pytest.mark.parametrize("bad", [BEYOND, -BEYOND, math.inf, -math.inf, math.nan])
def test_an_entry_beyond_1e50_is_refused_naming_the_argument(bad):
    def args(which):
        out = {"M": np.eye(3), "C": np.eye(3), "A": np.eye(3)[:, :2], "Adot": np.zeros((3, 2)),
               "g": np.ones(3)}  # fmt: skip
        out[which] = out[which].copy()
        out[which].flat[-1] = bad
        return out

    for which in ("M", "C", "A", "Adot", "g"):
        message = f"^{which} has a NaN, infinite or huge \\(beyond ±1e\\+50\\) entry$"
        with pytest.raises(ValueError, match=message):
            reduce(**args(which))


def test_shapes_are_checked_against_m_rows_not_its_columns():
    """A 2 x 3 M is not square whichever of its sizes is n; a 3 x 3 M with a 2 x 3 C is."""
    with pytest.raises(ValueError, match=r"^M must be square, got shape \(2, 3\)$"):
        reduce(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1)), np.ones((2, 1)))
    with pytest.raises(ValueError, match=r"^M must be square, got shape \(3, 2\)$"):
        reduce(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 1)), np.ones((3, 1)))
    with pytest.raises(ValueError, match=r"^C must have the shape of M \(3, 3\), got \(2, 3\)$"):
        reduce(np.eye(3), np.ones((2, 3)), np.ones((3, 1)), np.ones((3, 1)))
