"""Random kinematic trees (paper Section 5 topologies) up to 60 DoF.

Each tree mixes revolute / continuous / prismatic joints with random axes, random joint and
inertial frames, fixed joints (merged) and massless links.  Checks: every output against
Pinocchio (1e-10 norm-relative), the identities, Gamma against finite differences of
Pinocchio's M (1e-6), and Mdot against finite differences in time of the library's own M:
(M(q + h qd) - M(q - h qd)) / 2h.
"""

from __future__ import annotations

import numpy as np
import pytest

from support.random_trees import TOPOLOGIES, TreeOptions, expected_tree_depth, random_tree
from support.oracle import (
    assert_close,
    check_christoffel,
    check_identities,
    compare_all,
    library_and_oracle,
    pinocchio_tree_depth,
    random_state,
)

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

SIZES = [1, 2, 5, 13, 30, 60]
CASES = [(topo, n) for topo in TOPOLOGIES for n in SIZES] + [("biped_arms", 24), ("biped_arms", 60)]


def _tree(topo: str, n: int) -> str:
    seed = 1000 * n + TOPOLOGIES.index(topo.replace("_arms", ""))
    return random_tree(topo.replace("_arms", ""), n, seed=seed, arms=topo.endswith("_arms"))


@pytest.mark.parametrize("topo,n", CASES, ids=[f"{t}-{n}" for t, n in CASES])
def test_random_tree(topo, n):
    urdf = _tree(topo, n)
    dyn, oracle = library_and_oracle(urdf)
    assert dyn.nv == n
    depth = expected_tree_depth(topo.replace("_arms", ""), n, arms=topo.endswith("_arms"))
    assert dyn.tree_depth == depth == pinocchio_tree_depth(oracle)
    rng = np.random.default_rng(n)
    for s in range(2):
        label = f"{topo}-{n} state {s}"
        q, qd, qdd = random_state(n, rng)
        compare_all(dyn, oracle, q, qd, qdd, label=label)
        check_identities(dyn, q, qd, label)
        if n <= 30 or s == 0:
            check_christoffel(dyn, oracle, q, qd, label)
        h = 1e-6
        Mdot_fd = (dyn.mass_matrix(q + h * qd) - dyn.mass_matrix(q - h * qd)) / (2 * h)
        assert_close(dyn.coriolis(q, qd)[1], Mdot_fd, 1e-6, f"{label} Mdot vs FD in time")


@pytest.mark.parametrize("jtype", ["revolute", "continuous", "prismatic"])
def test_single_joint_type_trees(jtype):
    """Trees made of one joint type only (all-prismatic trees have a q-dependent M too)."""
    opts = TreeOptions(joint_types=(jtype,))
    for k, topo in enumerate(TOPOLOGIES):
        urdf = random_tree(topo, 12, seed=500 + k, options=opts)
        dyn, oracle = library_and_oracle(urdf)
        rng = np.random.default_rng(k)
        q, qd, qdd = random_state(12, rng)
        label = f"{jtype} {topo}"
        compare_all(dyn, oracle, q, qd, qdd, label=label)
        check_identities(dyn, q, qd, label)
        check_christoffel(dyn, oracle, q, qd, label)


def test_aligned_axes_and_no_extras():
    """Signed coordinate axes only, no fixed joints, no massless links, unshuffled XML."""
    opts = TreeOptions(
        mount_probability=0.0,
        leaf_fixed_probability=0.0,
        massless_probability=0.0,
        aligned_axis_probability=1.0,
        shuffle=False,
    )
    for k, topo in enumerate(TOPOLOGIES):
        urdf = random_tree(topo, 10, seed=700 + k, options=opts)
        dyn, oracle = library_and_oracle(urdf)
        q, qd, qdd = random_state(10, np.random.default_rng(k))
        compare_all(dyn, oracle, q, qd, qdd, label=f"aligned {topo}")


def test_many_seeds_small_trees():
    """Breadth: 40 different small random trees, one state each, against Pinocchio."""
    for seed in range(40):
        topo = TOPOLOGIES[seed % 4]
        n = 3 + seed % 6
        urdf = random_tree(topo, n, seed=9000 + seed)
        dyn, oracle = library_and_oracle(urdf)
        q, qd, qdd = random_state(n, np.random.default_rng(seed))
        compare_all(dyn, oracle, q, qd, qdd, label=f"seed {seed} {topo}-{n}")
        assert_close(dyn.christoffel(q), oracle.christoffel_fd(q), 1e-6, f"seed {seed} Gamma vs FD")


def test_generator_is_deterministic_and_seed_sensitive():
    a = random_tree("quadruped", 16, seed=3)
    assert a == random_tree("quadruped", 16, seed=3)
    assert a != random_tree("quadruped", 16, seed=4)
