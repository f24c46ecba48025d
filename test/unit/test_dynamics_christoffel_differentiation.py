"""Gamma by differentiation (Wensing & Slotine, Section VI-D) against ``Dynamics.christoffel``
(Algorithm 2): a second, independent computation of the Christoffel symbols.

The oracle (``reference.christoffel_by_differentiation``) shares nothing with Algorithm 2: it
takes the Hessian of the velocity product c(v) = C(q, v) v of a plain-numpy RNEA (exact, c is
quadratic) and adds the torsion correction 1/2 M c (structure constants) that generalized speeds
need.  Checked here on fixed, floating and planar bases, rotor-coupled and mimic models (through
their constant map A), and after a change of inertial parameters; the oracle's own pieces (its
RNEA, its structure constants) are checked against Pinocchio and the se(3) commutator.

Tolerance: ||A - B|| <= 1e-10 max(1, ||B||).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.floating import MultiDofOracle, random_configuration
from support.oracle import assert_close, erd_urdf
from support.regressor import random_body

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.model import MF_I, MF_M
from coriolis_ros.dynamics.reference import (
    christoffel_by_differentiation,
    inverse_dynamics_reference,
    structure_constants,
)
from coriolis_ros.robots import robot_urdf
from support.random_trees import random_tree

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

TOL = 1e-10

PLAIN = [
    ("ur5", "ur5", "fixed"),
    ("panda", "panda", "fixed"),
    ("solo12", "solo12", "floating"),
    ("talos", "talos", "floating"),
    ("anymal_c-planar", "anymal_c", "planar"),
    ("binary_tree-9", "binary_tree-9", "fixed"),
    ("quadruped-13-floating", "quadruped-13", "floating"),
]


def _urdf(name: str) -> str:
    if "-" in name:
        topo, n = name.rsplit("-", 1)
        return random_tree(topo, int(n), seed=int(n) + 40)
    return str(erd_urdf(name))


def _dyn(name: str, root: str) -> Dynamics:
    return Dynamics.from_urdf(_urdf(name), root_joint=root, mimic="independent")


@pytest.mark.parametrize("label,name,root", PLAIN, ids=[p[0] for p in PLAIN])
def test_gamma_by_differentiation_equals_algorithm_2(label, name, root):
    dyn = _dyn(name, root)
    rng = np.random.default_rng(len(label))
    for s in range(2):
        q = random_configuration(dyn, rng, unit=True)
        G = dyn.christoffel(q)
        G_diff = christoffel_by_differentiation(dyn.tree, q)
        assert_close(G, G_diff, TOL, f"{label} {s} Gamma")
        # not vacuous: Gamma is large; with generalized speeds the torsion part is needed
        assert np.linalg.norm(G) > 1e-2
        torsion = G_diff - 0.5 * (G_diff + G_diff.transpose(0, 2, 1))
        if root == "fixed":
            assert np.abs(torsion).max() == 0.0
        else:
            assert np.linalg.norm(torsion) > 1e-3 * np.linalg.norm(G)
            assert np.linalg.norm(G - (G_diff - 2.0 * torsion)) > 1e-3 * np.linalg.norm(G)


@pytest.mark.parametrize("root", ["fixed", "floating"])
def test_gamma_by_differentiation_on_the_arm_with_rotors(root):
    dyn = Dynamics.from_urdf(robot_urdf("arm7_rotors"), root_joint=root)
    assert dyn.map is not None and len(dyn.tree_joint_names) > dyn.nv
    A = dyn.map.matrix()
    rng = np.random.default_rng(3)
    for s in range(2):
        qbar = random_configuration(dyn, rng, unit=True)
        G_diff = christoffel_by_differentiation(dyn.tree, dyn.full_position(qbar), A)
        assert_close(dyn.christoffel(qbar), G_diff, TOL, f"rotors {root} {s}")
    # the rotors matter: without them the symbols differ
    q = dyn.full_position(qbar)
    plain = christoffel_by_differentiation(dyn.tree, q, A, mf=_no_rotors(dyn))
    assert np.linalg.norm(plain - G_diff) > 1e-3 * np.linalg.norm(G_diff)


def _no_rotors(dyn) -> np.ndarray:
    mf = dyn.tree.mf.copy()
    for r, name in enumerate(dyn.tree_joint_names):
        if name.endswith("_rotor"):
            mf[r, MF_M : MF_I + 9] = 0.0  # mass, centre of mass, inertia
    return mf


def test_gamma_by_differentiation_on_mimic_joints():
    dyn = Dynamics.from_urdf(str(erd_urdf("panda")))  # the second finger follows the first
    assert dyn.mimic_joints
    rng = np.random.default_rng(4)
    qbar = random_configuration(dyn, rng, unit=True)
    G_diff = christoffel_by_differentiation(dyn.tree, dyn.full_position(qbar), dyn.map.matrix())
    assert_close(dyn.christoffel(qbar), G_diff, TOL, "panda mimic")


@pytest.mark.parametrize("root", ["fixed", "floating"])
def test_gamma_by_differentiation_after_a_parameter_change(root):
    dyn = _dyn("solo12", root)
    rng = np.random.default_rng(5)
    dyn.set_inertial_parameters(np.concatenate([random_body(rng) for _ in dyn.parameter_links]))
    q = random_configuration(dyn, rng, unit=True)
    G_diff = christoffel_by_differentiation(dyn.tree, q, mf=dyn.engine.mf)
    assert_close(dyn.christoffel(q), G_diff, TOL, f"solo12 {root} changed")
    assert np.linalg.norm(G_diff - christoffel_by_differentiation(dyn.tree, q)) > 1e-3


# ----------------------------------------------------------------------------- the oracle itself


@pytest.mark.parametrize("label,name,root", PLAIN, ids=[p[0] for p in PLAIN])
def test_reference_rnea_is_pinocchios(label, name, root):
    urdf = _urdf(name)
    dyn = Dynamics.from_urdf(urdf, root_joint=root, mimic="independent")
    oracle = MultiDofOracle(urdf, dyn, root)
    rng = np.random.default_rng(6)
    q = random_configuration(dyn, rng, unit=True)
    qd, qdd = rng.normal(size=(2, dyn.nv))
    tau = inverse_dynamics_reference(dyn.tree, q, qd, qdd)
    assert_close(tau, oracle.rnea(q, qd, qdd), TOL, label)


def _se3(xi):
    """The 4 x 4 matrix of the twist xi = (w, u)."""
    w, u = xi[:3], xi[3:]
    out = np.zeros((4, 4))
    out[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    out[:3, 3] = u
    return out


def test_structure_constants_are_the_se3_commutator():
    """[X_k, X_j] of a free flyer's body-twist fields is the matrix commutator of the twists."""
    dyn = Dynamics.from_urdf(str(erd_urdf("ur5")), root_joint="floating")
    c = structure_constants(dyn.tree)
    # the free flyer's rows: linear x, y, z, then angular x, y, z (child frame)
    basis = [np.eye(6)[k] for k in (3, 4, 5, 0, 1, 2)]  # as (w, u) twists
    for k in range(6):
        for j in range(6):
            comm = _se3(basis[k]) @ _se3(basis[j]) - _se3(basis[j]) @ _se3(basis[k])
            expected = sum(c[l, k, j] * _se3(basis[l]) for l in range(6))  # noqa: E741
            np.testing.assert_array_equal(comm, expected)
    assert np.abs(c[:, 6:, :]).max() == 0.0 and np.abs(c[:, :, 6:]).max() == 0.0
