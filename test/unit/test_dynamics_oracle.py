"""Self-tests of the Pinocchio oracle (``support/oracle.py``) against mathematics only
(finite differences of Pinocchio's own mass matrix, index algebra), so that a later
disagreement between the library and the oracle cannot come from the oracle's glue code."""

from __future__ import annotations


import numpy as np

import pytest

from support.random_trees import random_tree
from support.oracle import (
    ERD_ROBOTS,
    PinOracle,
    _christoffel_explicit,
    assert_close,
    erd_urdf,
    oracle_for_erd,
    random_state,
    small_random_trees,
)


# ----------------------------------------------------------------------------- oracle self-tests
# These check the reference implementation and glue above against mathematics (no library code).


def test_oracle_christoffel_index_algebra():
    rng = np.random.default_rng(0)
    d = rng.normal(size=(4, 4, 4))
    d = d + d.transpose(1, 0, 2)  # dM_ij/dq_k is symmetric in i, j
    oracle = PinOracle(random_tree("serial", 4, seed=1))
    oracle.dM_fd = lambda q, h=1e-5: d  # type: ignore[method-assign]
    np.testing.assert_allclose(oracle.christoffel_fd(None), _christoffel_explicit(d), atol=1e-15)


@pytest.mark.parametrize("name", ["double_pendulum_continuous", "kinova", "panda"])
def test_oracle_pinocchio_C_is_christoffel_consistent_on_robots(name):
    oracle = oracle_for_erd(name)
    rng = np.random.default_rng(1)
    q, qd, _ = random_state(oracle.n, rng)
    gam = oracle.christoffel_fd(q)
    assert_close(oracle.C(q, qd), np.einsum("ijk,k->ij", gam, qd), 1e-6, f"{name} C vs FD Gamma")
    assert_close(oracle.Mdot(q, qd), oracle.Mdot_fd(q, qd), 1e-6, f"{name} C+C^T vs FD Mdot")


@pytest.mark.parametrize("urdf_name", sorted(small_random_trees()))
def test_oracle_pinocchio_consistency_on_random_trees(urdf_name):
    urdf = small_random_trees()[urdf_name]
    rng = np.random.default_rng(2)
    # A random permutation of joint order exercises the name mapping.
    base = PinOracle(urdf)
    order = tuple(base.pin_names[k] for k in rng.permutation(base.n))
    oracle = PinOracle(urdf, order=order)
    q, qd, qdd = random_state(oracle.n, rng)
    M = oracle.M(q)
    assert np.allclose(M, M.T)
    assert np.all(np.linalg.eigvalsh(M) > 0), "generated tree has a singular mass matrix"
    # Permutation glue: the permuted oracle is the permuted base oracle.
    perm = [base.pin_names.index(nm) for nm in order]
    q_base = np.empty(base.n)
    q_base[perm] = q
    assert_close(M, base.M(q_base)[np.ix_(perm, perm)], 1e-14, "permuted M")
    gam = oracle.christoffel_fd(q)
    C = oracle.C(q, qd)
    assert_close(C, np.einsum("ijk,k->ij", gam, qd), 1e-6, "Pinocchio C vs FD Gamma")
    assert_close(C @ qd, oracle.nle_no_gravity(q, qd), 1e-10, "C qd vs RNEA")
    assert_close(
        oracle.rnea(q, qd, qdd), M @ qdd + C @ qd + oracle.g(q), 1e-10, "RNEA = M qdd + C qd + g"
    )
    assert_close(oracle.Mdot(q, qd), oracle.Mdot_fd(q, qd), 1e-6, "C + C^T vs FD Mdot")


def test_oracle_continuous_joint_conversion():
    # The same pendulum as revolute and as continuous joints gives the same dynamics at any angle.
    rev = PinOracle(erd_urdf("double_pendulum"))
    cont = PinOracle(erd_urdf("double_pendulum_continuous"), order=rev.names)
    q = np.array([2.5, -1.7])
    qd = np.array([0.3, -1.1])
    assert_close(cont.M(q), rev.M(q), 1e-14, "M")
    assert_close(cont.C(q, qd), rev.C(q, qd), 1e-14, "C")
    assert_close(cont.g(q), rev.g(q), 1e-14, "g")
    assert np.linalg.norm(rev.g(q)) > 0.1


def test_oracle_erd_robots_all_present():
    for name in ERD_ROBOTS:
        oracle = oracle_for_erd(name)
        assert oracle.n >= 2, name
