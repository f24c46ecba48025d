"""Locked joints (``Dynamics.from_urdf(urdf, locked_joints={name: position})``) against
Pinocchio's ``buildReducedModel`` (the full model built with mimic=False, the locked joints and
the mimic joints of locked leaders welded at the same positions), on real robots and random
trees with revolute, continuous and prismatic joints; and the argument errors.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from support.random_trees import random_tree
from support.oracle import assert_close, erd_urdf

from coriolis_ros.dynamics import Dynamics

TOL = 1e-10


class ReducedOracle:
    """Pinocchio's buildReducedModel, in the library's joint order (1-DoF joints only)."""

    def __init__(self, urdf: str, locked: dict[str, float], order):
        if "<" in urdf:
            full = pin.buildModelFromXML(urdf, mimic=False)
        else:
            full = pin.buildModelFromUrdf(urdf, mimic=False)
        q_ref = pin.neutral(full)
        ids = []
        for name, value in locked.items():
            jid = full.getJointId(name)
            assert jid < full.njoints, name
            iq = full.idx_qs[jid]
            if full.joints[jid].nq == 2:  # continuous: (cos, sin)
                q_ref[iq : iq + 2] = math.cos(value), math.sin(value)
            else:
                q_ref[iq] = value
            ids.append(jid)
        self.model = pin.buildReducedModel(full, sorted(ids), q_ref)
        self.data = self.model.createData()
        m = self.model
        self.layout = []
        for name in order:
            jid = m.getJointId(name)
            assert jid < m.njoints, f"{name} not in the reduced model"
            self.layout.append((m.idx_qs[jid], m.joints[jid].nq, m.idx_vs[jid]))
        assert len(order) == m.nv
        self.V = [iv for _, _, iv in self.layout]

    def q(self, q):
        out = np.zeros(self.model.nq)
        for k, (iq, nq, _) in enumerate(self.layout):
            if nq == 2:
                out[iq : iq + 2] = math.cos(q[k]), math.sin(q[k])
            else:
                out[iq] = q[k]
        return out

    def v(self, v):
        out = np.zeros(self.model.nv)
        out[self.V] = v
        return out

    def compare(self, dyn, q, v, a, label):
        m, d, V = self.model, self.data, self.V
        qp, vp = self.q(q), self.v(v)
        Mp = pin.crba(m, d, qp)
        Mp = (np.triu(Mp) + np.triu(Mp, 1).T)[np.ix_(V, V)]
        Cp = pin.computeCoriolisMatrix(m, d, qp, vp)[np.ix_(V, V)]
        M, Mdot, C = dyn.coriolis(q, v)
        assert_close(M, Mp, TOL, f"{label} M")
        assert_close(C, Cp, TOL, f"{label} C")
        assert_close(Mdot, Cp + Cp.T, TOL, f"{label} Mdot")
        assert_close(dyn.gravity(q), pin.computeGeneralizedGravity(m, d, qp)[V], TOL, f"{label} g")
        tau = pin.rnea(m, d, qp, vp, self.v(a))[V]
        assert_close(dyn.inverse_dynamics(q, v, a), tau, TOL, f"{label} RNEA")
        n = len(V)
        G = dyn.christoffel(q)
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1.0
            Ck = pin.computeCoriolisMatrix(m, d, qp, self.v(e))[np.ix_(V, V)]
            assert_close(G[:, :, k], Ck, TOL, f"{label} Gamma[:, :, {k}]")


def check(urdf, locked, expected_locked=None, seed=0, **kwargs):
    dyn = Dynamics.from_urdf(urdf, locked_joints=locked, **kwargs)
    welded = expected_locked or locked
    assert dyn.locked_joints == pytest.approx(welded)
    assert not set(dyn.joint_names) & set(welded)
    oracle = ReducedOracle(urdf, welded, dyn.joint_names)
    rng = np.random.default_rng(seed)
    for s in range(2):
        q = rng.uniform(-math.pi, math.pi, dyn.nv)
        v, a = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
        oracle.compare(dyn, q, v, a, f"state {s}")
    return dyn


def test_panda_hand_locked_is_the_7_dof_arm():
    path = str(erd_urdf("panda"))
    locked = {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}
    dyn = check(path, locked, mimic="independent")
    assert dyn.joint_names == tuple(f"panda_joint{k}" for k in range(1, 8))


def test_locking_a_leader_locks_its_mimic_joints():
    path = str(erd_urdf("panda"))
    dyn = check(
        path,
        {"panda_finger_joint1": 0.03},
        expected_locked={"panda_finger_joint1": 0.03, "panda_finger_joint2": 0.03},
    )
    assert dyn.nv == 7 and not dyn.mimic_joints
    # consistent explicit positions for the mimic joint are accepted, others rejected
    both = {"panda_finger_joint1": 0.03, "panda_finger_joint2": 0.03}
    assert Dynamics.from_urdf(path, locked_joints=both).nv == 7
    with pytest.raises(ValueError, match="'panda_finger_joint2' mimics 'panda_finger_joint1'"):
        Dynamics.from_urdf(path, locked_joints={**both, "panda_finger_joint2": 0.01})
    with pytest.raises(ValueError, match="lock 'panda_finger_joint1'"):
        Dynamics.from_urdf(path, locked_joints={"panda_finger_joint2": 0.01})


@pytest.mark.parametrize(
    "robot, locked",
    [
        ("ur5", {"shoulder_lift_joint": -1.2, "wrist_2_joint": 0.7}),
        ("talos", {"arm_left_4_joint": -0.8, "arm_right_2_joint": 0.3, "torso_1_joint": 0.2}),
        ("baxter", {"left_e0": 0.5, "l_gripper_l_finger_joint": 0.01}),
        ("tiago", {"torso_lift_joint": 0.15}),  # prismatic
    ],
)
def test_real_robots_match_build_reduced_model(robot, locked):
    path = str(erd_urdf(robot))
    check(path, locked, seed=len(robot), mimic="independent")


@pytest.mark.parametrize("topology", ["serial", "binary", "biped", "quadruped"])
def test_random_trees_match_build_reduced_model(topology):
    urdf = random_tree(topology, 12, seed=90)
    names = Dynamics.from_urdf(urdf).joint_names
    rng = np.random.default_rng(len(topology))
    chosen = rng.choice(len(names), size=4, replace=False)
    locked = {names[k]: float(rng.uniform(-2.0, 2.0)) for k in chosen}
    check(urdf, locked, seed=3)


def test_locked_joint_moves_the_child_body():
    """Welding at a position is not welding at zero: gravity torque on the joint above changes."""
    path = str(erd_urdf("ur5"))
    a = Dynamics.from_urdf(path, locked_joints={"elbow_joint": 0.0})
    b = Dynamics.from_urdf(path, locked_joints={"elbow_joint": 1.5})
    q = np.zeros(5)
    assert np.linalg.norm(a.gravity(q) - b.gravity(q)) > 1.0


def test_empty_locked_joints_is_no_change():
    path = str(erd_urdf("kinova"))
    assert Dynamics.from_urdf(path, locked_joints={}).nv == Dynamics.from_urdf(path).nv


@pytest.mark.parametrize(
    "locked, match",
    [
        ({"nope": 0.0}, "unknown joint 'nope'"),
        ({"elbow_joint": float("nan")}, "position of joint 'elbow_joint' is not finite"),
        ({"elbow_joint": float("inf")}, "position of joint 'elbow_joint' is not finite"),
        ({"elbow_joint": "x"}, "position of joint 'elbow_joint' must be a number"),
        ({"elbow_joint": None}, "position of joint 'elbow_joint' must be a number"),
        ({3: 0.0}, "joint names must be strings"),
        (["elbow_joint"], "must be a mapping"),
        ({"ee_fixed_joint": 0.0}, "joint 'ee_fixed_joint' is fixed already"),
    ],
)
def test_bad_locked_joints_are_value_errors_naming_the_joint(locked, match):
    with pytest.raises(ValueError, match=match):
        Dynamics.from_urdf(str(erd_urdf("ur5")), locked_joints=locked)


def test_locking_a_multi_dof_joint_is_a_value_error():
    path = str(erd_urdf("solo12"))
    with pytest.raises(ValueError, match="'root_joint' is floating; locking multi-DoF joints"):
        Dynamics.from_urdf(path, root_joint="floating", locked_joints={"root_joint": 0.0})
    # single-DoF joints of a floating-base robot can be locked
    dyn = Dynamics.from_urdf(path, root_joint="floating", locked_joints={"FL_KFE": -1.0})
    assert dyn.nv == 6 + 11 and "FL_KFE" not in dyn.joint_names


def test_locked_edges_of_the_range():
    path = str(erd_urdf("ur5"))
    # huge but finite positions are accepted (a revolute angle wraps, nothing overflows)
    dyn = Dynamics.from_urdf(path, locked_joints={"elbow_joint": 1e6})
    assert np.all(np.isfinite(dyn.gravity(np.zeros(5))))
