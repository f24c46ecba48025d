"""Christoffel symbols (Algorithm 2) and the structural identities of C, M, Mdot.

Gamma is checked against the definition
    Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)
with dM/dq from central finite differences of **Pinocchio's** CRBA mass matrix (independent of
the library), tolerance 1e-6 norm-relative.  The exact identities (1e-10 norm-relative):
    C_ij = sum_k Gamma_ijk qd_k,   Gamma_ijk = Gamma_ikj,   Mdot = C + C^T,
    Mdot - 2C skew-symmetric,      C qd = RNEA(q, qd, 0) - g(q).
"""

from __future__ import annotations

import numpy as np
import pytest

from support.random_trees import TreeOptions, paper_topologies, random_tree
from support.oracle import (
    check_christoffel,
    check_identities,
    erd_urdf,
    library_and_oracle,
    random_state,
    small_random_trees,
)

ROBOTS = [
    "double_pendulum_continuous",
    "ur5",
    "panda",
    "xarm7",
    "kinova",
    "baxter",
    "solo12",
    "anymal_c",
    "go2",
    "g1",
    "talos",
    "romeo",
]


def _urdfs():
    cases = {f"robot:{r}": ("robot", r) for r in ROBOTS}
    for name in small_random_trees():
        cases[f"tree:{name}"] = ("tree", name)
    cases["tree:binary_tree_25_prismatic"] = ("prismatic", None)
    for name in paper_topologies():
        cases[f"paper:{name}"] = ("paper", name)
    return cases


CASES = _urdfs()


def _resolve(kind, name) -> str:
    if kind == "robot":
        return str(erd_urdf(name))
    if kind == "tree":
        return small_random_trees()[name]
    if kind == "paper":
        return paper_topologies()[name]
    opts = TreeOptions(joint_types=("prismatic", "revolute"))
    return random_tree("binary_tree", 25, seed=31, options=opts)


@pytest.mark.parametrize("case", sorted(CASES))
def test_christoffel_and_identities(case):
    urdf = _resolve(*CASES[case])
    dyn, oracle = library_and_oracle(urdf)
    rng = np.random.default_rng(sum(map(ord, case)))
    for s in range(2):
        q, qd, _ = random_state(dyn.nv, rng)
        check_christoffel(dyn, oracle, q, qd, f"{case} state {s}")
        check_identities(dyn, q, qd, f"{case} state {s}")


def test_christoffel_independent_of_velocity_history():
    """Gamma depends on q only: interleaving coriolis() calls at other states changes nothing."""
    dyn, _ = library_and_oracle(str(erd_urdf("panda")))
    rng = np.random.default_rng(3)
    q = random_state(dyn.nv, rng)[0]
    g1 = dyn.christoffel(q).copy()
    dyn.coriolis(*random_state(dyn.nv, rng)[:2])
    dyn.christoffel(random_state(dyn.nv, rng)[0])
    g2 = dyn.christoffel(q)
    np.testing.assert_array_equal(g1, g2)


def test_christoffel_first_joint_does_not_change_M():
    """Fixed base: M does not depend on the first joint of a chain, Gamma_ij0 + Gamma_ji0 = 0."""
    dyn, oracle = library_and_oracle(str(erd_urdf("ur5")))
    first = oracle.pin_names[0]  # Pinocchio's joint 1 is attached to the universe
    k = dyn.joint_names.index(first)
    q = np.random.default_rng(4).uniform(-3, 3, size=dyn.nv)
    gamma = dyn.christoffel(q)
    dMk = gamma[:, :, k] + gamma[:, :, k].T
    assert np.linalg.norm(dMk) <= 1e-10 * max(1.0, np.linalg.norm(gamma))
    assert np.linalg.norm(gamma) > 1e-3  # not vacuous
