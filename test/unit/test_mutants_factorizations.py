"""factorizations: the selector matrices and the contorsion written out by hand from their
definitions (eq. 12 of Wensing & Slotine, the Levi-Civita symbol), every index and value
bound on both sides, the properties' tolerance on both sides, the refusals of
gradient_contorsion.

References: S_012(v) and K = psi eps_ijk written out entry by entry; tolerances built from
powers of two, so that the asymmetry tested is exactly the bound or the next value.
"""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics import factorizations as F
from support.urdf_text import POINT_MASS

BIG = 1e50  # the library's bound on inputs (docs/invariance.md)
ABOVE = np.nextafter(BIG, np.inf)

PLANAR = (
    '<robot name="p"><link name="world"/><link name="body"><inertial><mass value="2"/>'
    '<inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    '<joint name="slide" type="planar"><parent link="world"/><child link="body"/>'
    '<axis xyz="0 0 1"/></joint></robot>'
)


def levi_civita(n, i, j, k, value):
    """value eps over (i, j, k), written out: + for the cyclic orders, - for the others."""
    K = np.zeros((n, n, n))
    for a, b, c in ((i, j, k), (j, k, i), (k, i, j)):
        K[a, b, c] = value
    for a, b, c in ((i, k, j), (k, j, i), (j, i, k)):
        K[a, b, c] = -value
    return K


@pytest.fixture(scope="module")
def point_mass():
    return Dynamics.from_urdf(POINT_MASS, gravity=(0, 0, 0))


def test_triples_are_the_increasing_index_triples():
    assert F.triples(3) == [(0, 1, 2)]
    assert F.triples(4) == [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]
    assert F.triples(2) == [] and F.triples(0) == []


def test_selector_written_out():
    v = np.array([2.0, -3.0, 5.0])
    # (e0 e1^T - e1 e0^T) v2 + (e1 e2^T - e2 e1^T) v0 + (e2 e0^T - e0 e2^T) v1
    want = np.array([[0.0, 5.0, 3.0], [-5.0, 0.0, 2.0], [-3.0, -2.0, 0.0]])
    np.testing.assert_array_equal(F.selector(3, 0, 1, 2, v), want)
    # an odd permutation of the indices changes the sign, an even one does not
    np.testing.assert_array_equal(F.selector(3, 1, 0, 2, v), -want)
    np.testing.assert_array_equal(F.selector(3, 1, 2, 0, v), want)
    S = F.selector(4, 0, 1, 3, [1.0, 2.0, 7.0, 4.0])  # v2 is not read
    assert S[0, 1] == 4.0 and S[1, 3] == 1.0 and S[3, 0] == 2.0
    np.testing.assert_array_equal(S, -S.T)
    assert np.count_nonzero(S) == 6


@pytest.mark.parametrize("ijk", [(-1, 0, 1), (0, 1, 4), (0, 1, 5), (0, 0, 1), (2, 1, 2)])
def test_selector_refuses_indices_outside_or_repeated(ijk):
    with pytest.raises(ValueError, match=r"distinct indices below 4"):
        F.selector(4, *ijk, np.ones(4))


def test_selector_takes_the_extreme_indices_and_values():
    S = F.selector(4, 3, 0, 1, [0.0, 0.0, 0.0, -BIG])
    # (e3 e0^T - e0 e3^T) v1 + (e0 e1^T - e1 e0^T) v3 + (e1 e3^T - e3 e1^T) v0
    assert S[0, 1] == -BIG and S[1, 0] == BIG and np.count_nonzero(S) == 2
    with pytest.raises(ValueError, match="v has a NaN, infinite or huge"):
        F.selector(4, 3, 0, 1, [0.0, 0.0, 0.0, -ABOVE])
    with pytest.raises(ValueError, match=r"v must have shape \(4,\)"):
        F.selector(4, 3, 0, 1, np.ones(3))


def test_admissible_contorsion_is_the_levi_civita_symbol():
    np.testing.assert_array_equal(F.admissible_contorsion(3, [2.5]), levi_civita(3, 0, 1, 2, 2.5))
    # the value is K's at the indices given, in any order
    np.testing.assert_array_equal(
        F.admissible_contorsion(4, {(3, 1, 0): -1.5}), levi_civita(4, 3, 1, 0, -1.5)
    )
    psi = [1.0, 2.0, 3.0, 4.0]
    want = sum(levi_civita(4, *t, p) for t, p in zip(F.triples(4), psi, strict=True))
    np.testing.assert_array_equal(F.admissible_contorsion(4, psi), want)
    np.testing.assert_array_equal(F.admissible_contorsion(4, np.reshape(psi, (2, 2))), want)
    np.testing.assert_array_equal(F.admissible_contorsion(2, []), np.zeros((2, 2, 2)))


@pytest.mark.parametrize("size", [3, 5])
def test_admissible_contorsion_counts_psi(size):
    with pytest.raises(ValueError, match=rf"C\(4, 3\) = 4 entries, got {size}"):
        F.admissible_contorsion(4, np.ones(size))


@pytest.mark.parametrize("ijk", [(-1, 0, 1), (0, 1, 4), (0, 1, 5), (1, 1, 2)])
def test_admissible_contorsion_refuses_indices_outside_or_repeated(ijk):
    with pytest.raises(ValueError, match=r"distinct and below 4"):
        F.admissible_contorsion(4, {ijk: 1.0})


def test_admissible_contorsion_takes_values_up_to_the_bound():
    K = F.admissible_contorsion(3, {(0, 1, 2): BIG})
    assert K[0, 1, 2] == BIG and K[1, 0, 2] == -BIG
    assert F.admissible_contorsion(3, [-BIG])[0, 1, 2] == -BIG
    for bad in (ABOVE, -ABOVE, np.inf, np.nan):
        with pytest.raises(ValueError, match=r"psi\(0, 1, 2\) must be finite"):
            F.admissible_contorsion(3, [bad])


def test_contorsion_properties_tolerance_both_sides():
    atol = 2.0**-40

    def props(i0, i1, a, b):  # K[i0] = a, K[i1] = b, the rest 0
        K = np.zeros((3, 3, 3))
        K[i0], K[i1] = a, b
        return F.contorsion_properties(K, atol=atol)

    # |K| <= 1: the bound is atol itself
    assert props((0, 1, 2), (0, 2, 1), 1.0, -1.0 + atol)["same_dynamics"]
    assert not props((0, 1, 2), (0, 2, 1), 1.0, -1.0 + 1.5 * atol)["same_dynamics"]
    assert props((0, 1, 2), (1, 0, 2), 1.0, -1.0 + atol)["skew"]
    assert not props((0, 1, 2), (1, 0, 2), 1.0, -1.0 + 1.5 * atol)["skew"]
    # |K| = 4: relative to it
    assert props((0, 1, 2), (0, 2, 1), 4.0, -4.0 + 4 * atol)["same_dynamics"]
    assert not props((0, 1, 2), (0, 2, 1), 4.0, -4.0 + 4.5 * atol)["same_dynamics"]
    assert props((0, 1, 2), (1, 0, 2), 4.0, -4.0 + 4 * atol)["skew"]
    assert not props((0, 1, 2), (1, 0, 2), 4.0, -4.0 + 4.5 * atol)["skew"]
    # the default tolerance, 1e-12
    K = np.zeros((3, 3, 3))
    K[0, 1, 2], K[0, 2, 1] = 1.0, -1.0 + 0.9e-12
    assert F.contorsion_properties(K)["same_dynamics"]
    K[0, 2, 1] = -1.0 + 1.5e-12
    assert not F.contorsion_properties(K)["same_dynamics"]
    # nothing at all: every property holds
    assert F.contorsion_properties(np.zeros((0, 0, 0))) == {
        "same_dynamics": True, "skew": True, "admissible": True}  # fmt: skip
    assert F.contorsion_properties(np.zeros((2, 2, 2)))["admissible"]


def test_factorization_of_a_point_mass_is_the_contorsion_times_v(point_mass):
    q, v = np.array([0.1, 0.2, 0.3]), np.array([1.0, -2.0, 0.5])
    M, Mdot, C = F.coriolis_factorization(point_mass, q, v, psi=[3.0])
    np.testing.assert_array_equal(M, 2.0 * np.eye(3))
    assert not Mdot.any()
    # K . v with K = 3 eps: C~_ij = 3 eps_ijk v_k
    want = 3.0 * np.array([[0.0, v[2], -v[1]], [-v[2], 0.0, v[0]], [v[1], -v[0], 0.0]])
    np.testing.assert_array_equal(C, want)
    K = np.zeros((3, 3, 3))
    K[1, 0, 2] = 2.0  # not admissible: still applied as given
    _, _, C = F.coriolis_factorization(point_mass, q, v, contorsion=K)
    np.testing.assert_array_equal(C, [[0, 0, 0], [2.0 * v[2], 0, 0], [0, 0, 0]])
    _, _, C = F.coriolis_factorization(point_mass, q, v, contorsion=np.full((3, 3, 3), -BIG))
    assert np.all(np.isfinite(C))
    for bad in (ABOVE, -ABOVE):
        with pytest.raises(ValueError, match="contorsion has a NaN, infinite or huge"):
            F.coriolis_factorization(point_mass, q, v, contorsion=np.full((3, 3, 3), bad))
    with pytest.raises(ValueError, match=r"qd has a NaN, infinite or huge"):
        F.coriolis_factorization(point_mass, q, [ABOVE, 0, 0], psi=[1.0])
    with pytest.raises(ValueError, match=r"contorsion must have shape \(3, 3, 3\)"):
        F.coriolis_factorization(point_mass, q, v, contorsion=np.zeros((3, 3, 2)))
    with pytest.raises(ValueError, match="not both"):
        F.coriolis_factorization(point_mass, q, v, psi=[1.0], contorsion=K)
    _, _, C = F.coriolis_factorization(point_mass, q, v)
    assert not C.any()


def test_gradient_contorsion_needs_generalized_coordinates(point_mass):
    K = F.gradient_contorsion(point_mass, np.zeros(3))  # M constant: no contorsion
    assert K.shape == (3, 3, 3) and not K.any()
    planar = Dynamics.from_urdf(PLANAR)
    assert planar.nq == planar.nv  # refused for its joint type, not its sizes
    with pytest.raises(ValueError, match="generalized coordinates"):
        F.gradient_contorsion(planar, planar.neutral())
    free = Dynamics.from_urdf(POINT_MASS, root_joint="floating")
    with pytest.raises(ValueError, match="generalized coordinates"):
        F.gradient_contorsion(free, free.neutral())
