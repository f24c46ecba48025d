"""The plain-numpy reference (dynamics/reference.py) against Pinocchio, piece by piece.

The reference is the library's oracle; here it is checked against an independent one:
  * the spatial algebra against Pinocchio's ``Motion``, ``Force``, ``Inertia`` and ``SE3``
    (Pinocchio orders motion vectors (linear, angular), the reference (angular, linear));
  * rotations against Pinocchio's ``rpyToMatrix`` and ``Quaternion``;
  * Algorithm 1 (M, Mdot, C) against ``crba`` and ``computeCoriolisMatrix`` (Mdot = C + C^T),
    Algorithm 2 and Gamma by differentiation against C(q, e_k) = Gamma[:, :, k] of Pinocchio,
    the RNEA against ``rnea`` (another gravity, other inertias), on small random trees with a
    fixed, floating and planar root;
  * the joints' Lie brackets against se(2) worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from support.floating import MultiDofOracle, random_configuration
from support.random_trees import random_tree

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics import reference as ref
from coriolis_ros.dynamics.model import FREE, MF_I, MF_M, PLANAR, PRISMATIC, REVOLUTE
from coriolis_ros.robots import robot_path

TOL = 1e-10


def motion(x):
    """The reference's (angular, linear) as Pinocchio's Motion (linear, angular)."""
    return pin.Motion(np.r_[x[3:], x[:3]])


def force(x):
    return pin.Force(np.r_[x[3:], x[:3]])


def ours(m):
    """A Pinocchio Motion or Force as (angular, linear)."""
    v = np.array(m.vector)
    return np.r_[v[3:], v[:3]]


def close(a, b, tol=TOL):
    scale = max(float(np.abs(b).max()), 1.0)
    assert float(np.abs(np.asarray(a) - b).max()) <= tol * scale, np.abs(np.asarray(a) - b).max()


# ----------------------------------------------------------------- spatial algebra


def test_cross_products_are_pinocchios():
    rng = np.random.default_rng(0)
    for _ in range(3):
        v, w, f, p, r = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6), \
            rng.normal(size=3), rng.normal(size=3)  # fmt: skip
        close(ref.skew(p) @ r, np.cross(p, r))
        close(ref.crm(v) @ w, ours(motion(v).cross(motion(w))))
        close(ref.crf(v) @ f, ours(motion(v).cross(force(f))))
        close(ref.crf_bar(f) @ v, ours(motion(v).cross(force(f))))  # (f x*) v = (v x*) f


def test_spatial_inertia_is_pinocchios():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 3))
    Ic, m, c = A @ A.T + np.eye(3), 2.5, rng.normal(size=3)
    P = np.array(pin.Inertia(m, c, Ic).matrix())  # (linear, angular) blocks
    perm = [3, 4, 5, 0, 1, 2]
    close(ref.spatial_inertia(m, c, Ic), P[np.ix_(perm, perm)])


def test_body_factor_from_pinocchios_cross_products():
    """B = 1/2 [(v x*) I + (I v) x* - I (v x)], each product by Pinocchio."""
    rng = np.random.default_rng(2)
    A = rng.normal(size=(3, 3))
    inertia = ref.spatial_inertia(1.7, rng.normal(size=3), A @ A.T + np.eye(3))
    v = rng.normal(size=6)
    eye = np.eye(6)
    vxf = np.column_stack([ours(motion(v).cross(force(e))) for e in eye])  # (v x*)
    vxm = np.column_stack([ours(motion(v).cross(motion(e))) for e in eye])  # (v x)
    h = inertia @ v
    hx = np.column_stack([ours(motion(e).cross(force(h))) for e in eye])  # (h x*) e = e x* h
    close(ref.body_factor(v, inertia), 0.5 * (vxf @ inertia + hx - inertia @ vxm))


def test_motion_transform_is_pinocchios_inverse_action():
    rng = np.random.default_rng(3)
    E = pin.rpy.rpyToMatrix(*rng.uniform(-np.pi, np.pi, 3))  # new <- old
    r = rng.normal(size=3)  # the new origin in old coordinates
    X = ref.xform(E, r)
    placement = pin.SE3(E.T, r)  # the new frame in the old one
    for _ in range(2):
        w = rng.normal(size=6)
        close(X @ w, ours(placement.actInv(motion(w))))


def test_rotations_are_pinocchios():
    for t in (-2.0, 0.3, 1.0):
        close(ref._rot_z(t), pin.rpy.rpyToMatrix(0.0, 0.0, t), 1e-15)
    x, y, z, w = 0.4, -1.2, 0.7, 2.1  # not unit: normalized first
    expected = pin.Quaternion(w, x, y, z).normalized().toRotationMatrix()
    close(ref._quaternion(x, y, z, w), expected, 1e-15)


def test_joint_subspaces_and_poses():
    e = np.eye(6)
    assert np.array_equal(ref.PHI[REVOLUTE], e[:, [2]])  # angular z
    assert np.array_equal(ref.PHI[PRISMATIC], e[:, [5]])  # linear z
    assert np.array_equal(ref.PHI[FREE], e[:, [3, 4, 5, 0, 1, 2]])  # linear, then angular
    assert np.array_equal(ref.PHI[PLANAR], e[:, [3, 4, 2]])  # linear x, y, angular z
    R, p = ref._joint_pose(REVOLUTE, [0.5])
    close(R, pin.rpy.rpyToMatrix(0, 0, 0.5), 1e-15)
    assert np.array_equal(p, np.zeros(3))
    R, p = ref._joint_pose(PRISMATIC, [0.5])
    assert np.array_equal(R, np.eye(3)) and np.array_equal(p, [0.0, 0.0, 0.5])
    R, p = ref._joint_pose(FREE, [1.0, 2.0, 3.0, 0.0, 0.0, 2.0, 0.0])
    close(R, pin.rpy.rpyToMatrix(0, 0, np.pi), 1e-15)
    assert np.array_equal(p, [1.0, 2.0, 3.0])
    R, p = ref._joint_pose(PLANAR, [1.0, 2.0, -0.4])
    close(R, pin.rpy.rpyToMatrix(0, 0, -0.4), 1e-15)
    assert np.array_equal(p, [1.0, 2.0, 0.0])
    with pytest.raises(NotImplementedError, match="joint type 7 is not supported"):
        ref._joint_pose(7, [0.0])


# ----------------------------------------------------------------- the algorithms


CASES = {
    "fixed": ("binary_tree", 5, 21, "fixed"),
    "floating": ("serial_chain", 3, 22, "floating"),
    "planar": ("biped", 5, 23, "planar"),
}


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    topo, n, seed, root = CASES[request.param]
    urdf = random_tree(topo, n, seed=seed)
    dyn = Dynamics.from_urdf(urdf, root_joint=root)
    oracle = MultiDofOracle(urdf, dyn, root)
    rng = np.random.default_rng(seed)
    q = random_configuration(dyn, rng)  # a non-unit quaternion: normalized by both
    return dyn, oracle, q, rng.normal(size=dyn.nv), urdf, root


def test_algorithm_1_is_pinocchios(case):
    dyn, oracle, q, qd, *_ = case
    M, Mdot, C = ref.coriolis_reference(dyn.model, q, qd)
    Cp = oracle.C(q, qd)
    close(M, oracle.M(q))
    close(C, Cp)
    close(Mdot, Cp + Cp.T)


def test_algorithm_2_is_pinocchios_coriolis_per_velocity(case):
    dyn, oracle, q, _, *_ = case
    Gamma = ref.christoffel_reference(dyn.model, q)
    for k in range(dyn.nv):
        close(Gamma[:, :, k], oracle.C(q, np.eye(dyn.nv)[k]))


def test_gamma_by_differentiation_is_pinocchios(case):
    dyn, oracle, q, _, *_ = case
    Gamma = ref.christoffel_by_differentiation(dyn.model, q)
    for k in range(dyn.nv):
        close(Gamma[:, :, k], oracle.C(q, np.eye(dyn.nv)[k]))


def test_rnea_with_another_gravity_and_other_inertias(case):
    """Gravity (world frame) as given, and ``mf`` overriding the inertias: body rows scaled
    by 1, 2, 3, ... against Pinocchio's inertias scaled alike."""
    dyn, oracle, q, qd, urdf, root = case
    qdd = np.random.default_rng(9).normal(size=dyn.nv)
    g = np.array([0.3, -1.1, -7.0])
    oracle.model.gravity.linear = g
    try:
        close(ref.inverse_dynamics_reference(dyn.model, q, qd, qdd, g), oracle.rnea(q, qd, qdd))
        mf = dyn.model.mf.copy()
        model = oracle.model
        saved = [pin.Inertia(model.inertias[j]) for j in range(model.njoints)]
        for b, (_, first, nv, _) in enumerate(dyn.model.joints()):
            factor = 1.0 + b
            mf[first : first + nv, MF_M] *= factor
            mf[first : first + nv, MF_I : MF_I + 9] *= factor
            name = dyn.joint_names[first].rsplit("/", 1)[0] if nv > 1 else dyn.joint_names[first]
            jid = model.getJointId(name)
            inertia = model.inertias[jid]
            model.inertias[jid] = pin.Inertia(factor * inertia.mass, inertia.lever,
                                              factor * inertia.inertia)  # fmt: skip
        oracle.data = model.createData()
        tau = ref.inverse_dynamics_reference(dyn.model, q, qd, qdd, g, mf)
        close(tau, oracle.rnea(q, qd, qdd))
        # the model's own gravity by default (Pinocchio's, as built)
        for j, inertia in enumerate(saved):
            model.inertias[j] = inertia
        model.gravity.linear = np.array([0.0, 0.0, -9.81])
        oracle.data = model.createData()
        close(ref.inverse_dynamics_reference(dyn.model, q, qd, qdd), oracle.rnea(q, qd, qdd))
    finally:
        oracle.model.gravity.linear = np.array([0.0, 0.0, -9.81])


def test_planar_structure_constants_are_se2():
    """Planar root (vx, vy, w) in the child frame: [X_w, X_vx] = X_vy, [X_w, X_vy] = -X_vx,
    [X_vx, X_vy] = 0; the single-DoF joints' fields commute."""
    dyn = Dynamics.from_urdf(random_tree("serial_chain", 2, seed=3), root_joint="planar")
    c = ref.structure_constants(dyn.model)
    expected = np.zeros((5, 5, 5))
    expected[1, 2, 0], expected[1, 0, 2] = 1.0, -1.0  # c[l, k, j]: [X_k, X_j] = c[l] X_l
    expected[0, 2, 1], expected[0, 1, 2] = -1.0, 1.0
    close(c, expected, 1e-15)


def test_models_with_couplings_are_refused():
    dyn = Dynamics.from_urdf(robot_path("arm7_rotors"))
    assert dyn.model.couplings  # the premise
    with pytest.raises(NotImplementedError, match="plain trees"):
        ref.christoffel_reference(dyn.model, np.zeros(dyn.model.nq))


def test_bodies_are_pinocchios_joints(case):
    """_bodies per joint: its parent (the world is -1, the value the algorithms' loops stop
    at) and its velocity rows, against Pinocchio's parents and velocity indices. (The body
    frames differ from Pinocchio's joint frames: the reference turns each to its axis.)"""
    dyn, oracle, q, *_ = case
    parent, rows, Phi, _, _ = ref._bodies(dyn.model, q)
    model = oracle.model
    ids, names = [], []
    for _, first, nv, _ in dyn.model.joints():
        name = dyn.joint_names[first].rsplit("/", 1)[0] if nv > 1 else dyn.joint_names[first]
        names.append(name)
        ids.append(model.getJointId(name))
    assert len(parent) == len(rows) == len(Phi) == model.njoints - 1
    for b, jid in enumerate(ids):
        up = model.parents[jid]
        assert parent[b] == (-1 if up == 0 else ids.index(up)), names[b]
        first, nv = dyn.model.joints()[b][1:3]
        assert rows[b] == slice(first, first + nv)
        start = model.idx_vs[jid]
        assert list(oracle.v_index[rows[b]]) == list(range(start, start + nv))
        assert Phi[b].shape == (6, nv)
    assert parent.count(-1) == 1 and min(parent) == -1
