"""coriolis_ros.dynamics against Pinocchio on real robots (example-robot-data) and random trees.

Both libraries parse the same URDF file (Pinocchio: ``buildModelFromXML``, fixed base, mimic
joints independent, gravity (0, 0, -9.81)).  Joints are matched by name; Pinocchio's
(cos, sin) storage of continuous joints is converted by the oracle.

Coverage decision for robots: every listed example-robot-data robot is fixed-base as published
(G1's floating joint is commented out in its URDF) and uses only revolute / continuous /
prismatic / fixed joints, so each is compared numerically; none is skipped.  The same robots
with a floating or planar base are compared in test_dynamics_floating.py.

Tolerance: ||A - B|| <= 1e-10 * max(1, ||B||) for every quantity.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from support.random_trees import paper_topologies
from support.oracle import (
    ERD_ROBOTS,
    PinOracle,
    assert_close,
    compare_all,
    erd_urdf,
    library_and_oracle,
    pinocchio_tree_depth,
    random_state,
    small_random_trees,
)

N_STATES = 3


@pytest.mark.parametrize("robot", sorted(ERD_ROBOTS))
def test_robot_matches_pinocchio(robot):
    path = str(erd_urdf(robot))
    dyn, oracle = library_and_oracle(path)
    assert sorted(dyn.joint_names) == sorted(oracle.pin_names)
    assert dyn.nv == oracle.model.nv == len(dyn.joint_names)
    assert len(set(dyn.joint_names)) == dyn.nv
    assert dyn.name == ET.parse(path).getroot().get("name")
    assert dyn.tree_depth == pinocchio_tree_depth(oracle)
    rng = np.random.default_rng(sum(map(ord, robot)))
    for s in range(N_STATES):
        q, qd, qdd = random_state(dyn.nv, rng)
        compare_all(dyn, oracle, q, qd, qdd, label=f"{robot} state {s}")


@pytest.mark.parametrize("robot", ["ur5", "kinova", "talos"])
def test_robot_large_angles_and_velocities(robot):
    """Angles far outside [-pi, pi] and fast motions (continuous joints wrap, nothing else)."""
    path = str(erd_urdf(robot))
    dyn, oracle = library_and_oracle(path)
    rng = np.random.default_rng(5)
    q = rng.uniform(-60.0, 60.0, size=dyn.nv)
    qd = rng.normal(0.0, 20.0, size=dyn.nv)
    qdd = rng.normal(0.0, 50.0, size=dyn.nv)
    compare_all(dyn, oracle, q, qd, qdd, label=f"{robot} large")


@pytest.mark.parametrize("robot", ["panda", "baxter"])
def test_robot_at_rest(robot):
    """q = 0, qd = 0: C = Mdot = 0 exactly-ish; inverse dynamics with qdd = 0 is gravity."""
    dyn, oracle = library_and_oracle(str(erd_urdf(robot)))
    n = dyn.nv
    z = np.zeros(n)
    M, Mdot, C = dyn.coriolis(z, z)
    assert_close(M, oracle.M(z), 1e-10, "M at zero")
    assert np.linalg.norm(C) == pytest.approx(0.0, abs=1e-14)
    assert np.linalg.norm(Mdot) == pytest.approx(0.0, abs=1e-14)
    assert_close(dyn.inverse_dynamics(z, z, z), oracle.g(z), 1e-10, "tau at rest")
    assert np.linalg.norm(oracle.g(z)) > 1.0  # the comparison above is not vacuous


def test_joint_order_is_consistent_across_outputs():
    """Each output uses dyn.joint_names order: a single-joint velocity excites that column."""
    dyn, oracle = library_and_oracle(str(erd_urdf("ur5")))
    rng = np.random.default_rng(9)
    q = rng.uniform(-math.pi, math.pi, size=dyn.nv)
    for k in range(dyn.nv):
        qd = np.zeros(dyn.nv)
        qd[k] = 1.0
        assert_close(dyn.coriolis_vectors(q, qd)[2], oracle.M(q)[:, k], 1e-10, f"M col {k}")


@pytest.mark.parametrize("name", sorted(small_random_trees()))
def test_small_random_trees_match_pinocchio(name):
    urdf = small_random_trees()[name]
    dyn, oracle = library_and_oracle(urdf)
    assert dyn.tree_depth == pinocchio_tree_depth(oracle)
    rng = np.random.default_rng(11)
    for s in range(N_STATES):
        q, qd, qdd = random_state(dyn.nv, rng)
        compare_all(dyn, oracle, q, qd, qdd, label=f"{name} state {s}")


@pytest.mark.parametrize("name", ["serial_chain", "binary_tree", "biped", "quadruped"])
def test_paper_topologies_match_pinocchio(name):
    urdf = paper_topologies()[name]
    dyn, oracle = library_and_oracle(urdf)
    assert dyn.nv == 20
    expected_depth = {"serial_chain": 20, "binary_tree": 5, "biped": 10, "quadruped": 5}[name]
    assert dyn.tree_depth == expected_depth == pinocchio_tree_depth(oracle)
    rng = np.random.default_rng(13)
    q, qd, qdd = random_state(dyn.nv, rng)
    compare_all(dyn, oracle, q, qd, qdd, label=name)


def test_custom_gravity_matches_pinocchio():
    from coriolis_ros.dynamics import Dynamics

    path = str(erd_urdf("kinova"))
    gravity = (1.5, -2.0, 3.25)
    dyn = Dynamics.from_urdf(path, gravity=gravity)
    oracle = PinOracle(path, order=dyn.joint_names, gravity=gravity)
    rng = np.random.default_rng(17)
    q, qd, qdd = random_state(dyn.nv, rng)
    assert_close(dyn.gravity(q), oracle.g(q), 1e-10, "g with custom gravity")
    assert_close(dyn.inverse_dynamics(q, qd, qdd), oracle.rnea(q, qd, qdd), 1e-10, "RNEA")
    # Gravity does not enter the Coriolis terms.
    dyn0, _ = library_and_oracle(path)
    assert_close(dyn.coriolis(q, qd)[2], dyn0.coriolis(q, qd)[2], 1e-12, "C gravity-free")


def _bundled_robots() -> list[str]:
    """The bundled trees Pinocchio reads as they are: those without <coupling> or <loop>
    elements, which Pinocchio ignores (those are compared in test_dynamics_rotors and
    test_dynamics_loops, reduced by their A)."""
    from coriolis_ros.robots import available_robots, robot_urdf

    return [
        name
        for name in available_robots()
        if "<coupling" not in robot_urdf(name) and "<loop" not in robot_urdf(name)
    ]


def test_bundled_robots_exist():
    assert _bundled_robots(), "no URDF bundled in coriolis_ros/robots"


@pytest.mark.parametrize("robot", _bundled_robots())
def test_bundled_robot_matches_pinocchio(robot):
    """The URDFs shipped in coriolis_ros/robots (used by the demo) against Pinocchio."""
    from coriolis_ros.robots import robot_path

    path = str(robot_path(robot))
    dyn, oracle = library_and_oracle(path)
    assert dyn.tree_depth == pinocchio_tree_depth(oracle)
    rng = np.random.default_rng(21)
    for s in range(N_STATES):
        q, qd, qdd = random_state(dyn.nv, rng)
        compare_all(dyn, oracle, q, qd, qdd, label=f"bundled {robot} state {s}")
        assert_close(
            dyn.christoffel(q), oracle.christoffel_fd(q), 1e-6, f"bundled {robot} Gamma vs FD"
        )
