"""Admissible Coriolis factorizations (Wensing & Slotine, Section IV, eq. 12) and the Coriolis
bound k_c (coriolis_ros.dynamics.factorizations, coriolis_ros.dynamics.bounds).

References independent of the code under test: the velocity product c = C qd from the RNEA
(``inverse_dynamics(q, qd, 0) - gravity(q)``, no Christoffel symbols involved), Mdot from
the library's Algorithm 1 (checked against Pinocchio elsewhere), numpy's SVD for matrix norms.
"""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from support.oracle import erd_urdf

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics import bounds as B
from coriolis_ros.dynamics import factorizations as F
from coriolis_ros.robots import robot_urdf
from support.urdf_text import POINT_MASS

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

TOL = 1e-10


def _models():
    return {
        "ur5": Dynamics.from_urdf(str(erd_urdf("ur5"))),
        "solo12": Dynamics.from_urdf(str(erd_urdf("solo12")), root_joint="floating"),
        "arm7_rotors": Dynamics.from_urdf(robot_urdf("arm7_rotors")),
        "panda": Dynamics.from_urdf(str(erd_urdf("panda"))),  # mimic finger, reduced
    }


@pytest.fixture(scope="module")
def models():
    return _models()


def state(dyn, seed):
    rng = np.random.default_rng(seed)
    return dyn.integrate(dyn.neutral(), rng.normal(size=dyn.nv)), rng.normal(size=dyn.nv)


def velocity_product(dyn, q, qd):
    return dyn.inverse_dynamics(q, qd, np.zeros(dyn.nv)) - dyn.gravity(q)


def skew_error(Mdot, C):
    S = Mdot - 2 * C
    return np.abs(S + S.T).max() / max(1.0, np.abs(Mdot).max())


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


@pytest.mark.parametrize("name", ["ur5", "solo12", "arm7_rotors", "panda"])
def test_admissible_factorizations_are_skew_with_the_same_dynamics(models, name):
    dyn = models[name]
    n = dyn.nv
    for seed in range(3):
        q, qd = state(dyn, seed)
        c = velocity_product(dyn, q, qd)
        psi = np.random.default_rng(10 + seed).normal(size=comb(n, 3)) * 3.0
        M, Mdot, Ct = F.coriolis_factorization(dyn, q, qd, psi=psi)
        _, _, C = dyn.coriolis(q, qd)
        assert skew_error(Mdot, Ct) <= TOL
        assert rel(Ct @ qd, c) <= TOL
        assert np.abs(Ct - C).max() > 1e-3  # a different factorization
        # eq. 12 term by term: sum psi_ijk S_ijk(qd)
        expected = C + sum(
            p * F.selector(n, *t, qd) for p, t in zip(psi, F.triples(n), strict=True)
        )
        assert rel(Ct, expected) <= TOL
        # the contorsion is totally antisymmetric, a dict gives the same
        K = F.admissible_contorsion(n, psi)
        assert F.contorsion_properties(K) == {
            "same_dynamics": True,
            "skew": True,
            "admissible": True,
        }
        some = dict(zip(F.triples(n)[:5], psi[:5], strict=True))
        K5 = F.admissible_contorsion(n, some)
        assert K5[F.triples(n)[0]] == psi[0]


def test_the_family_has_dimension_n_choose_3():
    for n in range(1, 7):
        basis = [F.admissible_contorsion(n, e).reshape(-1) for e in np.eye(comb(n, 3))]
        rank = np.linalg.matrix_rank(np.array(basis)) if basis else 0
        assert rank == comb(n, 3)
        # any totally antisymmetric tensor is in it: antisymmetrize a random one
        T = np.random.default_rng(n).normal(size=(n, n, n))
        A = sum(s * T.transpose(p) for p, s in F._PERMUTATIONS) / 6
        psi = [A[t] for t in F.triples(n)]
        np.testing.assert_allclose(F.admissible_contorsion(n, psi), A, atol=1e-14)
    # n <= 2: the Christoffel-consistent factorization is the only admissible one
    assert F.triples(2) == []


def test_inadmissible_contorsions_break_one_property(models):
    dyn = models["ur5"]
    n = dyn.nv
    q, qd = state(dyn, 7)
    c = velocity_product(dyn, q, qd)
    T = np.random.default_rng(3).normal(size=(n, n, n))
    only_jk = T - T.transpose(0, 2, 1)  # antisymmetric in its last two indices only
    only_ij = T - T.transpose(1, 0, 2)  # antisymmetric in its first two indices only
    assert F.contorsion_properties(only_jk) == {
        "same_dynamics": True, "skew": False, "admissible": False}  # fmt: skip
    assert F.contorsion_properties(only_ij) == {
        "same_dynamics": False, "skew": True, "admissible": False}  # fmt: skip
    _, Mdot, C1 = F.coriolis_factorization(dyn, q, qd, contorsion=only_jk)
    assert rel(C1 @ qd, c) <= TOL and skew_error(Mdot, C1) > 1e-2
    _, Mdot, C2 = F.coriolis_factorization(dyn, q, qd, contorsion=only_ij)
    assert skew_error(Mdot, C2) <= TOL and rel(C2 @ qd, c) > 1e-2
    # the textbook C = Mdot - 1/2 (d(M qd)/dq)^T: right dynamics, not skew
    Kg = F.gradient_contorsion(dyn, q)
    assert F.contorsion_properties(Kg)["same_dynamics"] and not F.contorsion_properties(Kg)["skew"]
    _, Mdot, Cg = F.coriolis_factorization(dyn, q, qd, contorsion=Kg)
    assert rel(Cg @ qd, c) <= TOL and skew_error(Mdot, Cg) > 1e-2
    # its definition, by central differences of M: C_g = sum_k dM/dq_k qd_k - 1/2 (dM/dq_i qd)_j
    h = 1e-6
    dM = np.array([(dyn.mass_matrix(q + h * e) - dyn.mass_matrix(q - h * e)) / (2 * h)
                   for e in np.eye(n)])  # fmt: skip
    expected = np.einsum("kij,k->ij", dM, qd) - 0.5 * np.einsum("ijk,k->ij", dM, qd)
    assert rel(Cg, expected) <= 1e-7
    with pytest.raises(ValueError, match="generalized coordinates"):
        F.gradient_contorsion(models["solo12"], models["solo12"].neutral())


def test_point_mass_cross_product_factorization():
    dyn = Dynamics.from_urdf(POINT_MASS, gravity=(0, 0, 0))
    q, v = np.array([0.3, -0.2, 0.1]), np.array([1.0, -2.0, 0.5])
    _, Mdot, C = dyn.coriolis(q, v)
    assert np.abs(C).max() == 0 and np.abs(Mdot).max() == 0
    _, _, Ct = F.coriolis_factorization(dyn, q, v, psi={(0, 1, 2): 1.5})
    hat = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    np.testing.assert_allclose(Ct, -1.5 * hat, atol=1e-15)
    np.testing.assert_allclose(Ct @ v, 0.0, atol=1e-14)


def test_factorization_inputs_refused(models):
    dyn = models["ur5"]
    q, qd = state(dyn, 0)
    with pytest.raises(ValueError, match="C\\(6, 3\\) = 20 entries"):
        F.admissible_contorsion(6, np.zeros(19))
    with pytest.raises(ValueError, match="distinct"):
        F.admissible_contorsion(6, {(0, 0, 1): 1.0})
    with pytest.raises(ValueError, match="below 6"):
        F.admissible_contorsion(6, {(0, 1, 6): 1.0})
    with pytest.raises(ValueError, match="finite"):
        F.admissible_contorsion(6, {(0, 1, 2): np.nan})
    with pytest.raises(ValueError, match="not both"):
        F.coriolis_factorization(dyn, q, qd, psi=np.zeros(20), contorsion=np.zeros((6, 6, 6)))
    with pytest.raises(ValueError, match="shape \\(6, 6, 6\\)"):
        F.coriolis_factorization(dyn, q, qd, contorsion=np.zeros((6, 6)))
    with pytest.raises(ValueError, match="NaN"):
        F.coriolis_factorization(dyn, q, qd, contorsion=np.full((6, 6, 6), np.inf))
    big = F.coriolis_factorization(dyn, q, np.full(6, 1e50), contorsion=np.full((6, 6, 6), 1e50))
    assert np.all(np.isfinite(big[2]))
    with pytest.raises(ValueError, match="distinct"):
        F.selector(6, 0, 1, 1, qd)
    # no option: the default, Christoffel-consistent C
    for a, b in zip(F.coriolis_factorization(dyn, q, qd), dyn.coriolis(q, qd), strict=True):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ the Coriolis bound


@pytest.mark.parametrize(
    "name,root", [("ur5", "fixed"), ("panda", "fixed"), ("solo12", "floating")]
)
def test_coriolis_bound_holds_and_is_not_loose(name, root):
    urdf = str(erd_urdf(name))
    dyn = Dynamics.from_urdf(urdf, root_joint=root)
    lo, hi = B.joint_limits(dyn, urdf)
    res = B.coriolis_bound(dyn, lo, hi, samples=1000, seed=0)
    n, off = dyn.nv, dyn.nq - lo.size
    assert res.samples >= 1000 and res.q_max.shape == (dyn.nq,)
    assert np.all(res.q_max[off:] >= lo) and np.all(res.q_max[off:] <= hi)
    # k_c is what coriolis_gain gives where it says, and k_lower is attained there
    assert B.coriolis_gain(dyn, res.q_max) == pytest.approx(res.k_c, rel=1e-12)
    C = dyn.coriolis(res.q_lower, res.v_lower)[2]
    assert np.linalg.norm(C, 2) == pytest.approx(res.k_lower, rel=1e-9)
    assert res.k_lower <= res.k_c * (1 + 1e-12) and res.ratio <= np.sqrt(n)
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(200):
        q = np.r_[dyn.neutral()[:off], lo + (hi - lo) * rng.random(lo.size)]
        k_q = B.coriolis_gain(dyn, q)
        for _ in range(5):
            v = rng.normal(size=n) * rng.uniform(0.01, 10)
            ratio = np.linalg.norm(dyn.coriolis(q, v)[2], 2) / np.linalg.norm(v)
            assert ratio <= k_q * (1 + 1e-12)  # the bound at q, exactly
            worst = max(worst, ratio)
    # an upper bound of the sampled max of ||C|| / ||qd|| over the box, and not a loose one
    assert worst <= res.k_c
    assert res.k_c <= 2.0 * worst, (res.k_c, worst)


def test_coriolis_bound_inputs():
    dyn = Dynamics.from_urdf(str(erd_urdf("ur5")))
    lo, hi = -np.ones(6), np.ones(6)
    with pytest.raises(ValueError, match="6 entries"):
        B.coriolis_bound(dyn, lo[:5], hi)
    with pytest.raises(ValueError, match="finite"):
        B.coriolis_bound(dyn, np.r_[np.nan, lo[1:]], hi)
    with pytest.raises(ValueError, match="lower\\[2\\] = 2.0 > upper\\[2\\]"):
        B.coriolis_bound(dyn, np.r_[lo[:2], 2.0, lo[3:]], hi)
    with pytest.raises(ValueError, match="samples"):
        B.coriolis_bound(dyn, lo, hi, samples=0)
    # a degenerate box is one configuration
    res = B.coriolis_bound(dyn, lo * 0, hi * 0, samples=3)
    assert res.k_c == pytest.approx(B.coriolis_gain(dyn, np.zeros(6)), rel=1e-12)
    point = Dynamics.from_urdf(POINT_MASS, gravity=(0, 0, 0))
    assert B.coriolis_bound(point, *B.joint_limits(point, POINT_MASS), samples=5).k_c == 0.0
    no_limit = POINT_MASS.replace('<limit lower="-10" upper="10" effort="1" velocity="1"/>', "", 1)
    with pytest.raises(ValueError, match="prismatic joint 'jx' has no"):
        B.joint_limits(point, no_limit)
