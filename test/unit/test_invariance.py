"""Where the robot stands changes nothing: a floating or planar base far from the world's origin.

The joint-space dynamics of a free-flyer (or planar) root with its twist in the base frame do
not depend on the base's position (translating the whole robot is a symmetry under uniform
gravity).  Every output at base positions up to 1e7 m (and at the input bound) must equal the
one at the origin to 1e-10 relative; the kernels leave a root joint's translation out of the
arithmetic, so they agree to the bit.  The reference values at the origin are checked against
Pinocchio first, and Pinocchio's own M, g and RNEA (computed in local frames) give the
independent check at a distance.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.floating import MultiDofOracle, random_configuration
from support.oracle import PinOracle, assert_close, erd_urdf
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import Dynamics, MomentumObserver

DISTANCES = [1.0, 1e3, 5e5, 1e6, 5e6, 1e7, 1e49]
TOL = 1e-10


def _placed(q, d, direction, root):
    out = q.copy()
    k = 3 if root == "floating" else 2
    out[:k] = d * np.asarray(direction)[:k]
    return out


def _terms(dyn, q, v, a):
    M, Mdot, C = dyn.coriolis(q, v)
    return {
        "M": M, "Mdot": Mdot, "C": C, "Gamma": dyn.christoffel(q), "g": dyn.gravity(q),
        "M alone": dyn.mass_matrix(q), "RNEA": dyn.inverse_dynamics(q, v, a),
        "C v, C^T v, M v": np.concatenate(dyn.coriolis_vectors(q, v)),
        "C x": dyn.coriolis_times(q, v, a), "Slotine-Li": dyn.slotine_li(q, v, a, v),
    }  # fmt: skip


def _batch_terms(dyn, Q, V, A):
    M, Mdot, C = dyn.coriolis_batch(Q, V)
    return {
        "M": M, "C": C, "Gamma": dyn.christoffel_batch(Q), "g": dyn.gravity_batch(Q),
        "RNEA": dyn.inverse_dynamics_batch(Q, V, A),
        "vectors": np.concatenate(dyn.coriolis_vectors_batch(Q, V), axis=1),
        "Slotine-Li": dyn.slotine_li_batch(Q, V, A, V),
    }  # fmt: skip


ROBOTS = [("talos_full", "floating"), ("solo12", "floating"), ("ur5", "planar")]


@pytest.mark.parametrize(("name", "root"), ROBOTS)
def test_far_from_the_origin_equals_at_the_origin(name, root):
    urdf = str(erd_urdf(name))
    dyn = Dynamics.from_urdf(urdf, root_joint=root, mimic="independent")
    oracle = MultiDofOracle(urdf, dyn, root)
    rng = np.random.default_rng(11)
    for _ in range(2):
        q = _placed(random_configuration(dyn, rng, unit=True), 0.0, (0, 0, 0), root)
        v, a = rng.normal(size=dyn.nv), rng.normal(size=dyn.nv)
        ref = _terms(dyn, q, v, a)
        assert_close(ref["M"], oracle.M(q), TOL, f"{name} M at the origin")
        assert_close(ref["C"], oracle.C(q, v), TOL, f"{name} C at the origin")
        assert_close(ref["RNEA"], oracle.rnea(q, v, a), TOL, f"{name} RNEA at the origin")
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        for d in DISTANCES:
            qd = _placed(q, d, direction, root)
            for key, value in _terms(dyn, qd, v, a).items():
                assert_close(value, ref[key], TOL, f"{name} {key} at {d:g} m")
            if d <= 1e7:  # Pinocchio's local-frame terms agree too (not its C: see docs)
                assert_close(ref["M"], oracle.M(qd), TOL, f"{name} pinocchio M at {d:g} m")
                assert_close(ref["g"], oracle.g(qd), TOL, f"{name} pinocchio g at {d:g} m")


def test_batches_far_from_the_origin():
    """The lane (4 states per pass) and per-state batch kernels read the same placement."""
    dyn = Dynamics.from_urdf(str(erd_urdf("solo12")), root_joint="floating")
    rng = np.random.default_rng(5)
    T = 9
    Q = np.stack([random_configuration(dyn, rng, unit=True) for _ in range(T)])
    Q[:, :3] = 0.0
    V, A = rng.normal(size=(T, dyn.nv)), rng.normal(size=(T, dyn.nv))
    ref = _batch_terms(dyn, Q, V, A)
    far = Q.copy()
    far[:, :3] = rng.choice([-1e7, 1e7, 3e6], size=(T, 3))
    for key, value in _batch_terms(dyn, far, V, A).items():
        assert_close(value, ref[key], TOL, f"batch {key} at 1e7 m")
    single = dyn.coriolis(far[3], V[3])[2]  # and the batch rows are the single-state results
    assert_close(ref["C"][3], single, TOL, "batch row vs single state")


def test_observer_far_from_the_origin():
    urdf = str(erd_urdf("solo12"))
    rng = np.random.default_rng(2)
    dyn = Dynamics.from_urdf(urdf, root_joint="floating")
    near, far = MomentumObserver(dyn, gain=20.0), MomentumObserver(dyn, gain=20.0)
    q = random_configuration(dyn, rng, unit=True)
    for k in range(20):
        t = 0.01 * k
        v, tau = rng.normal(size=dyn.nv), rng.normal(size=dyn.nv)
        q = dyn.integrate(q, v, 0.01)
        q0 = _placed(q, 0.0, (0, 0, 0), "floating")
        r0 = near.update(t, q0, v, tau).copy()
        r1 = far.update(t, _placed(q, 1e7, (0.6, 0.8, 0.0), "floating"), v, tau)
        assert_close(r1, r0, TOL, f"observer at 1e7 m, step {k}")


def test_coupled_and_planar_trees_far_from_the_origin():
    """Mimic joints that follow (the coupled kernels) and a URDF with its own root prismatic
    joint (a rail): a root joint's translation is left out whatever its type."""
    panda = Dynamics.from_urdf(str(erd_urdf("panda")), root_joint="floating")
    assert panda.mimic_joints
    rng = np.random.default_rng(3)
    q = random_configuration(panda, rng, unit=True)
    q[:3] = 0.0
    v, a = rng.normal(size=panda.nv), rng.normal(size=panda.nv)
    ref = _terms(panda, q, v, a)
    for key, value in _terms(panda, _placed(q, 1e7, (0, 0.6, 0.8), "floating"), v, a).items():
        assert_close(value, ref[key], TOL, f"panda {key} at 1e7 m")

    # a rail: the URDF's own root joint is prismatic, an arm rides on it
    parts = [link("base"), link("carriage"), link("l1"), link("l2")]
    parts += [joint("rail", "base", "carriage", "prismatic", axis="0.6 0.8 0", xyz="5 5 1"),
              joint("j1", "carriage", "l1"), joint("j2", "l1", "l2", axis="1 0 0")]  # fmt: skip
    urdf = robot(*parts)
    dyn = Dynamics.from_urdf(urdf)
    oracle = PinOracle(urdf)
    assert dyn.model.joint_types[0] == "prismatic" and dyn.model.parent[0] < 0
    q, v, a = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    ref = _terms(dyn, q, v, a)
    for d in (1e7, -1e49):
        moved = q + np.array([d, 0.0, 0.0])
        for key, value in _terms(dyn, moved, v, a).items():
            assert_close(value, ref[key], TOL, f"rail {key} at {d:g} m")
    assert_close(ref["M"], oracle.M(q + np.array([1e7, 0, 0])), TOL, "rail M vs pinocchio")


@pytest.mark.parametrize(("name", "root"), [("solo12", "floating"), ("ur5", "planar")])
def test_frames_stay_where_the_robot_stands(name, root):
    """Frames are absolute: a foot's placement follows the base (against Pinocchio at 1e3 m),
    while its Jacobian in the frame's own orientation is the same wherever the base is."""
    import pinocchio as pin

    urdf = str(erd_urdf(name))
    dyn = Dynamics.from_urdf(urdf, root_joint=root)
    oracle = MultiDofOracle(urdf, dyn, root)
    rng = np.random.default_rng(3)
    q0 = random_configuration(dyn, rng, unit=True)
    frame = dyn.frame_names[-1]
    fid = oracle.model.getFrameId(frame)
    J0 = dyn.frame_jacobian(_placed(q0, 0.0, (1, 1, 1), root), frame)
    for d in (1e3, 1e7):
        q = _placed(q0, d, (0.6, -0.8, 0.3), root)
        if d == 1e3:
            pin.framesForwardKinematics(oracle.model, oracle.data, oracle.q_pin(q))
            T = dyn.frame_placement(q, frame)
            assert_close(T, oracle.data.oMf[fid].homogeneous, 1e-12, f"{frame} at {d:g} m")
            J = np.asarray(pin.computeFrameJacobian(
                oracle.model, oracle.data, oracle.q_pin(q), fid, pin.ReferenceFrame.WORLD
            ))[:, oracle.v_index]  # fmt: skip
            assert_close(dyn.frame_jacobian(q, frame, reference="world"), J, 1e-12, "world J")
        assert_close(dyn.frame_jacobian(q, frame), J0, 1e-12, f"{frame} J at {d:g} m")


def test_potential_energy_counts_the_height_where_the_robot_stands():
    """The energy regressor's potential row is absolute: raising the base by h adds
    m_total |g| h (the kinetic row does not change)."""
    dyn = Dynamics.from_urdf(str(erd_urdf("solo12")), root_joint="floating")
    pi = dyn.inertial_parameters()
    mass = pi[0::10].sum()
    q0 = random_configuration(dyn, np.random.default_rng(4), unit=True)
    v = np.random.default_rng(5).uniform(-1, 1, dyn.nv)
    E0 = dyn.energy_regressor(q0, v) @ pi
    for h in (2.0, 1e6):
        q = q0.copy()
        q[2] += h
        E = dyn.energy_regressor(q, v) @ pi
        assert_close(E[0], E0[0], 1e-12, "kinetic energy")
        assert_close(E[1] - E0[1], mass * 9.81 * h, 1e-9, f"potential energy at +{h:g} m")
