"""Safeea's recursive Christoffel symbols (``dyn.christoffel(q, method="safeea")``).

Cross-checked against Algorithm 2 on every serial robot (UR5, Kinova, xArm7, the Panda arm with
its hand locked) and random serial chains of revolute, continuous and prismatic joints up to
30 DoF, at 1e-10 relative; against Pinocchio directly (Gamma[:, :, k] = C(q, e_k)) on two robots
so that the check does not rest on Algorithm 2 alone; and the rejections (tree, floating base,
unknown method).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from support.random_trees import TreeOptions, random_tree
from support.oracle import PinOracle, assert_close, erd_urdf

from coriolis_ros.dynamics import Dynamics

TOL = 1e-10
PANDA_HAND_LOCKED = {"panda_finger_joint1": 0.02}


def serial_robots():
    out = {name: (str(erd_urdf(name)), None) for name in ("ur5", "kinova", "xarm7")}
    out["panda_hand_locked"] = (str(erd_urdf("panda")), PANDA_HAND_LOCKED)
    return out


SERIAL = serial_robots()


@pytest.mark.parametrize("name", sorted(SERIAL))
def test_safeea_matches_algorithm_2_on_serial_robots(name):
    path, locked = SERIAL[name]
    dyn = Dynamics.from_urdf(path, locked_joints=locked)
    rng = np.random.default_rng(len(name))
    for s in range(3):
        q = rng.uniform(-math.pi, math.pi, dyn.nv) * (10.0 if s == 2 else 1.0)
        G2 = dyn.christoffel(q)
        GS = dyn.christoffel(q, method="safeea")
        assert np.linalg.norm(G2) > 1e-3  # not vacuous
        assert_close(GS, G2, TOL, f"{name} state {s}")
        assert_close(GS, GS.transpose(0, 2, 1), TOL, f"{name} symmetric")


@pytest.mark.parametrize("n", [1, 2, 3, 6, 12, 20, 30])
def test_safeea_matches_algorithm_2_on_random_serial_chains(n):
    for seed in range(2):
        urdf = random_tree("serial", n, seed=300 + 10 * n + seed)
        dyn = Dynamics.from_urdf(urdf)
        rng = np.random.default_rng(seed)
        q = rng.uniform(-math.pi, math.pi, dyn.nv)
        assert_close(dyn.christoffel(q, method="safeea"), dyn.christoffel(q), TOL, f"{n}/{seed}")


@pytest.mark.parametrize("joint_type", ["revolute", "prismatic"])
def test_safeea_on_chains_of_one_joint_type(joint_type):
    """All-prismatic chains make Gamma vanish; all-revolute ones exercise the paper's case."""
    urdf = random_tree("serial", 10, seed=5, options=TreeOptions(joint_types=(joint_type,)))
    dyn = Dynamics.from_urdf(urdf)
    q = np.random.default_rng(1).uniform(-1, 1, dyn.nv)
    G2 = dyn.christoffel(q)
    assert_close(dyn.christoffel(q, method="safeea"), G2, TOL, joint_type)
    if joint_type == "prismatic":
        assert np.linalg.norm(G2) == 0.0
    else:
        assert np.linalg.norm(G2) > 1e-3


@pytest.mark.parametrize("name", ["ur5", "xarm7"])
def test_safeea_matches_pinocchio(name):
    path = str(erd_urdf(name))
    dyn = Dynamics.from_urdf(path)
    oracle = PinOracle(path, order=dyn.joint_names)
    q = np.random.default_rng(2).uniform(-math.pi, math.pi, dyn.nv)
    G = dyn.christoffel(q, method="safeea")
    for k in range(dyn.nv):
        e = np.zeros(dyn.nv)
        e[k] = 1.0
        assert_close(G[:, :, k], oracle.C(q, e), TOL, f"{name} Gamma[:, :, {k}]")


def test_safeea_out_and_input_checks():
    dyn = Dynamics.from_urdf(str(erd_urdf("ur5")))
    q = np.linspace(-1, 1, 6)
    out = np.empty((6, 6, 6))
    assert dyn.christoffel(q, out=out, method="safeea") is out
    assert_close(out, dyn.christoffel(q), TOL, "out=")
    with pytest.raises(ValueError, match=r"q must have shape \(6,\)"):
        dyn.christoffel(np.zeros(5), method="safeea")
    with pytest.raises(ValueError, match="q has a NaN"):
        dyn.christoffel(np.full(6, np.nan), method="safeea")
    with pytest.raises(ValueError, match="wrong shape"):
        dyn.christoffel(q, out=np.empty((6, 6, 5)), method="safeea")


def test_safeea_through_a_mimic_reduction():
    """A serial chain whose last joint mimics another: Safeea on the tree, then A.A.A Gamma."""
    root = ET.fromstring(random_tree("serial", 6, seed=11))
    dof = [j for j in root.findall("joint") if j.get("type") != "fixed"]
    ET.SubElement(dof[-1], "mimic", joint=dof[1].get("name"), multiplier="-0.7", offset="0.2")
    text = ET.tostring(root, encoding="unicode")
    dyn = Dynamics.from_urdf(text)
    assert dyn.nv == 5
    q = np.random.default_rng(3).uniform(-1, 1, 5)
    assert_close(dyn.christoffel(q, method="safeea"), dyn.christoffel(q), TOL, "mimic chain")


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Dynamics.from_urdf(str(erd_urdf("panda"))), "branched tree"),
        (lambda: Dynamics.from_urdf(random_tree("binary", 7, seed=1)), "branched tree"),
        (
            lambda: Dynamics.from_urdf(str(erd_urdf("ur5")), root_joint="floating"),
            "floating or planar joint",
        ),
        (
            lambda: Dynamics.from_urdf(str(erd_urdf("ur5")), root_joint="planar"),
            "floating or planar joint",
        ),
    ],
)
def test_safeea_rejects_trees_and_floating_bases(make, match):
    dyn = make()
    with pytest.raises(ValueError, match=match):
        dyn.christoffel(dyn.neutral(), method="safeea")
    assert dyn.christoffel(dyn.neutral()).shape == (dyn.nv,) * 3  # the default still works


@pytest.mark.parametrize("method", ["Safeea", "algorithm1", "", None, 2])
def test_unknown_method_is_a_value_error(method):
    dyn = Dynamics.from_urdf(str(erd_urdf("ur5")))
    with pytest.raises(ValueError, match="method must be 'algorithm2' or 'safeea'"):
        dyn.christoffel(np.zeros(6), method=method)
