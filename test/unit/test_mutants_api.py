"""Dynamics' own methods (api.py), each against what it must return: the description
accessors, the identity velocity conversions of a body-representation model, the velocity
map of a tree, clone of a closed chain, integrate's default step and bound, the list-input
retry of coriolis_times and slotine_li, and Safeea's method against Algorithm 2.

References: the URDF's own values, closed forms (a revolute joint integrates as q + v dt),
finite differences of the loop closure, and a second method (Algorithm 2 for Safeea's).
"""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.kernels.kinematics import MAX_ABS
from coriolis_ros.robots import robot_path

ARM = robot_path("arm7")


@pytest.fixture(scope="module")
def arm():
    return Dynamics.from_urdf(ARM)


@pytest.fixture(scope="module")
def geared():
    return Dynamics.from_urdf(robot_path("arm7_rotors"))


def test_description_accessors(arm):
    assert arm.root_joint == "fixed" and arm.root_link == "base_link"
    assert repr(arm) == f"Dynamics('arm7', nv=7, tree_depth={arm.tree_depth})"
    g = arm.gravity_vector
    np.testing.assert_array_equal(g, [0.0, 0.0, -9.81])
    g[2] = 0.0  # a copy: the model keeps its gravity
    assert arm.gravity_vector[2] == -9.81
    floating = Dynamics.from_urdf(ARM, root_joint="floating")
    assert floating.root_joint == "floating"
    assert repr(floating).startswith("Dynamics('arm7', nq=14, nv=13, ")
    assert arm.loops == () and arm.locked_joints == {}
    locked = Dynamics.from_urdf(ARM, locked_joints={"joint3": 0.25})
    assert locked.locked_joints == {"joint3": 0.25}


def test_body_representation_conversions_are_copies(arm):
    q, v = np.zeros(7), np.arange(7.0)
    for convert in (arm.velocity_from_body, arm.velocity_to_body):
        out = convert(q, v)
        np.testing.assert_array_equal(out, v)
        assert not np.shares_memory(out, v)


def test_velocity_map_of_a_tree_and_of_a_geared_tree(arm, geared):
    A, dA = arm.velocity_map(np.zeros(7))
    np.testing.assert_array_equal(A, np.eye(7))
    assert dA.shape == (7, 7, 7) and not dA.any()
    A, dA = geared.velocity_map(np.zeros(geared.nq))
    names, tree = geared.joint_names, geared.tree_joint_names
    assert A.shape == (len(tree), geared.nv) and dA.shape == (len(tree), geared.nv, geared.nv)
    assert not dA.any()
    for r, name in enumerate(tree):  # each row: its own column, or its leader's times ratio
        leader, ratio, _ = geared.coupled_joints.get(name, (name, 1.0, 0.0))
        want = np.zeros(geared.nv)
        want[names.index(leader)] = ratio
        np.testing.assert_array_equal(A[r], want)


def test_closed_chain_velocity_map_and_clone():
    dyn = Dynamics.from_urdf(robot_path("four_bar"))
    assert [loop.name for loop in dyn.loops] == [loop.name for loop in dyn.closed.closure.loops]
    assert len(dyn.loops) == 1
    y, h = np.array([0.4]), 1e-6
    A, _ = dyn.velocity_map(y)
    plus, minus = dyn.close_loops(y + h), dyn.close_loops(y - h)
    np.testing.assert_allclose(A[:, 0], (plus - minus) / (2 * h), atol=1e-7)
    other = dyn.clone()
    assert other.loops and other.nv == 1 and other.tree_joint_names == dyn.tree_joint_names


def test_coupled_joints_of_a_closed_chain_with_rotors():
    rotor = {"gear_ratio": -7.0, "inertia": [2e-5, 4e-5, 2e-5, 0.0, 0.0, 0.0]}
    leg = robot_path("leg_knee_linkage")
    dyn = Dynamics.from_urdf(leg, independent_joints=["hip", "knee_crank"], rotors={"hip": rotor})
    assert dyn.coupled_joints == {"hip_rotor": ("hip", -7.0, 0.0)}


def test_mimic_joints_name_leader_multiplier_and_offset():
    text = ARM.read_text().replace(
        '<joint name="joint7" type="continuous">',
        '<joint name="joint7" type="continuous"><mimic joint="joint6" multiplier="-2" '
        'offset="0.1"/>',
    )
    dyn = Dynamics.from_urdf(text)
    assert dyn.mimic_joints == {"joint7": ("joint6", -2.0, 0.1)}


def test_integrate_defaults_to_one_second_and_accepts_the_bound_itself(arm):
    q, v = np.full(7, 0.1), np.arange(7.0)
    np.testing.assert_allclose(arm.integrate(q, v), q + v, rtol=0, atol=1e-15)
    edge = np.zeros(7)
    edge[0] = MAX_ABS
    np.testing.assert_array_equal(arm.integrate(np.zeros(7), edge), edge)  # exactly ±1e50
    beyond = edge.copy()
    beyond[0] = np.nextafter(MAX_ABS, np.inf)
    with pytest.raises(ValueError, match="leaves the accepted range"):
        arm.integrate(np.zeros(7), beyond)


def test_integrate_names_a_follower_beyond_the_bound_with_its_offset(geared):
    name = next(iter(geared.coupled_joints))
    leader, ratio, offset = geared.coupled_joints[name]
    v = np.zeros(geared.nv)
    v[geared.joint_names.index(leader)] = 1.0
    dt = 1.5 * MAX_ABS / abs(ratio)  # the leader within the bound, its rotor 1.5e50
    with pytest.raises(ValueError) as info:
        geared.integrate(np.zeros(geared.nq), v, dt)
    assert f"follower joint {name!r} = {ratio!r} × {leader!r} + {offset!r} = " in str(info.value)


def test_list_inputs_take_the_retry_path(arm):
    rng = np.random.default_rng(3)
    q, qd, x, a = (rng.uniform(-1, 1, 7) for _ in range(4))
    want = arm.coriolis_times(q, qd, x).copy()
    np.testing.assert_array_equal(arm.coriolis_times(q.tolist(), qd.tolist(), x.tolist()), want)
    want = arm.slotine_li(q, qd, x, a).copy()
    got = arm.slotine_li(q.tolist(), qd.tolist(), x.tolist(), a.tolist())
    np.testing.assert_array_equal(got, want)


def test_safeea_agrees_with_algorithm_2(arm):
    q = np.random.default_rng(4).uniform(-1, 1, 7)
    g2 = arm.christoffel(q).copy()
    gs = arm.christoffel(q, method="safeea")
    assert np.abs(gs - g2).max() <= 1e-10 * np.abs(g2).max()
    assert not np.array_equal(gs, g2)  # another summation: Safeea's recursion ran
    assert np.abs(arm.christoffel(q, method="algorithm2") - g2).max() == 0.0


def test_safeea_refuses_a_floating_joint_inside_a_fixed_base_tree():
    text = ARM.read_text().replace('<joint name="joint4" type="revolute">',
                                   '<joint name="joint4" type="floating">')
    dyn = Dynamics.from_urdf(text)
    assert dyn.root_joint == "fixed"
    with pytest.raises(ValueError, match="this model has a floating or planar joint"):
        dyn.christoffel(dyn.neutral(), method="safeea")
