"""Inertial parameters (``inertial_parameters``, ``set_inertial_parameters``) and the regressors
(``regressor``: the Slotine-Li one, Y pi = M qdd_r + C qd_r + g; ``energy_regressor``).

References, all independent of the code under test:

* Pinocchio built from the same URDF: its bodies' ``toDynamicParameters`` (the parameter
  vector and its order), ``computeJointTorqueRegressor`` (the regressor with qd_r = qd), M, C,
  g, RNEA, Gamma and the energies; after a change of parameters, Pinocchio *rebuilt* with the
  new ones (``Inertia.FromDynamicParameters``), against every method of the library (single
  calls, batches, the momentum observer's first step);
* models with coupled joints (mimic fingers, geared rotors): Pinocchio on the whole tree
  (every joint independent), reduced with the constant map A (Ybar = A^T Y);
* the pseudo-inertia test (Wensing, Kim and Slotine 2017) on bodies built to be inside or
  just outside the physically consistent set.

Tolerance: ||A - B|| <= 1e-10 max(1, ||B||).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pinocchio as pin  # test-only dependency
import pytest
from support.api_inputs import HAND_URDF, _bad_inputs, _wrong_buffers
from support.floating import MultiDofOracle, random_configuration
from support.oracle import ERD_ROBOTS, assert_close, erd_urdf
from support.rotors import strip_couplings

from coriolis_ros.dynamics import Dynamics, MomentumObserver
from coriolis_ros.robots import robot_urdf
from support.random_trees import TOPOLOGIES, random_tree
from support.regressor import _pack, random_body

TOL = 1e-10
# (label, URDF, root joint): fixed and floating bases, a humanoid, a quadruped
ROBOTS = [
    ("ur5", "ur5", "fixed"),
    ("panda", "panda", "fixed"),
    ("talos_full", "talos_full", "floating"),
    ("solo12", "solo12", "floating"),
    ("anymal_c", "anymal_c", "floating"),
]
TREES = [(f"{t}-{n}", t, n, "fixed") for t in TOPOLOGIES for n in (1, 7, 24)] + [
    ("quadruped-13-floating", "quadruped", 13, "floating"),
    ("biped-9-planar", "biped", 9, "planar"),
]


def _urdf(kind: str, name_or_topo: str, n: int = 0) -> str:
    if kind == "erd":
        return str(erd_urdf(name_or_topo))
    return random_tree(name_or_topo, n, seed=17 * n + TOPOLOGIES.index(name_or_topo))


def _pair(urdf: str, root: str):
    dyn = Dynamics.from_urdf(urdf, root_joint=root, mimic="independent")
    return dyn, MultiDofOracle(urdf, dyn, root)


def _pin_columns(dyn, oracle) -> np.ndarray:
    """Pinocchio's regressor columns in the order of the library's bodies (by joint name)."""
    cols = []
    for name in dyn.parameter_joints:
        jid = oracle.model.getJointId(name)
        assert jid < oracle.model.njoints, name
        cols.extend(range(10 * (jid - 1), 10 * jid))
    return np.array(cols)


def _pin_parameters(dyn, oracle) -> np.ndarray:
    m = oracle.model
    return np.concatenate(
        [m.inertias[m.getJointId(name)].toDynamicParameters() for name in dyn.parameter_joints]
    )


def _set_pin_parameters(dyn, oracle, pi) -> None:
    """Rebuild Pinocchio's bodies from pi (and a fresh Data)."""
    m = oracle.model
    for b, name in enumerate(dyn.parameter_joints):
        m.inertias[m.getJointId(name)] = pin.Inertia.FromDynamicParameters(pi[10 * b : 10 * b + 10])
    oracle.data = m.createData()


def _state(dyn, rng):
    q = random_configuration(dyn, rng, unit=True)
    return q, *(rng.normal(0.0, 1.5, dyn.nv) for _ in range(3))


# ----------------------------------------------------------------------------- the parameters


@pytest.mark.parametrize("robot", sorted(ERD_ROBOTS))
def test_parameters_are_pinocchios_and_round_trip(robot):
    urdf = str(erd_urdf(robot))
    dyn, oracle = _pair(urdf, "fixed")
    pi = dyn.inertial_parameters()
    assert pi.shape == (10 * len(dyn.parameter_links),)
    assert len(dyn.parameter_links) == oracle.model.njoints - 1  # one body per moving joint
    assert_close(pi, _pin_parameters(dyn, oracle), 1e-12, f"{robot} pi")
    dyn.set_inertial_parameters(pi)  # every URDF body of the suite is physically consistent
    assert_close(dyn.inertial_parameters(), pi, 1e-12, f"{robot} round trip")


@pytest.mark.parametrize("label,robot,root", ROBOTS[2:])
def test_floating_base_body_comes_first(label, robot, root):
    urdf = str(erd_urdf(robot))
    dyn, oracle = _pair(urdf, root)
    assert dyn.parameter_joints[0] == "root_joint"
    assert dyn.parameter_links[0] == dyn.root_link
    assert dyn.parameter_joints[1:] == tuple(n for n in dyn.tree_joint_names if "/" not in n)
    assert_close(dyn.inertial_parameters(), _pin_parameters(dyn, oracle), 1e-12, label)


def test_parameter_links_follow_the_tree_with_coupled_joints():
    """With rotors, the followers' bodies are parameters too (after their leaders' rows)."""
    dyn = Dynamics.from_urdf(robot_urdf("arm7_rotors"))
    assert dyn.parameter_joints == dyn.tree_joint_names
    assert len(dyn.parameter_joints) == 14 and dyn.nv == 7
    assert dyn.parameter_links[-1] == "joint1_rotor"
    panda = Dynamics.from_urdf(str(erd_urdf("panda")))  # mimic fingers follow
    assert "panda_finger_joint2" in panda.parameter_joints
    assert "panda_finger_joint2" not in panda.joint_names


def _changed(dyn, oracle, rng):
    """New random consistent parameters for every body, set in both."""
    pi = np.concatenate([random_body(rng) for _ in dyn.parameter_links])
    dyn.set_inertial_parameters(pi)
    _set_pin_parameters(dyn, oracle, pi)
    return pi


@pytest.mark.parametrize("label,robot,root", ROBOTS)
def test_every_method_uses_new_parameters(label, robot, root):
    dyn, oracle = _pair(str(erd_urdf(robot)), root)
    rng = np.random.default_rng(len(label))
    q, qd, qdd, x = _state(dyn, rng)
    before = dyn.inverse_dynamics(q, qd, qdd).copy()
    old_clone = dyn.clone()
    pi = _changed(dyn, oracle, rng)
    assert_close(dyn.inertial_parameters(), pi, 1e-12, f"{label} read back")
    M, Mdot, C = dyn.coriolis(q, qd)
    Mp, Cp, gp = oracle.M(q), oracle.C(q, qd), oracle.g(q)
    assert_close(M, Mp, TOL, f"{label} M")
    assert_close(dyn.mass_matrix(q), Mp, TOL, f"{label} crba")
    assert_close(C, Cp, TOL, f"{label} C")
    assert_close(Mdot, Cp + Cp.T, TOL, f"{label} Mdot")
    assert_close(dyn.gravity(q), gp, TOL, f"{label} g")
    tau = oracle.rnea(q, qd, qdd)
    assert_close(dyn.inverse_dynamics(q, qd, qdd), tau, TOL, f"{label} RNEA")
    assert np.linalg.norm(tau - before) > 1e-3 * np.linalg.norm(tau)  # the change is visible
    assert_close(dyn.slotine_li(q, qd, x, qdd), Mp @ qdd + Cp @ x + gp, TOL, f"{label} SL")
    Cqd, CTqd, p = dyn.coriolis_vectors(q, qd)
    assert_close(p, Mp @ qd, TOL, f"{label} p")
    assert_close(CTqd, Cp.T @ qd, TOL, f"{label} C^T qd")
    if dyn.nv <= 20:
        e = np.eye(dyn.nv)
        G = np.stack([oracle.C(q, e[k]) for k in range(dyn.nv)], axis=2)
        assert_close(dyn.christoffel(q), G, TOL, f"{label} Gamma")
    # batches
    Q = np.stack([q, random_configuration(dyn, rng, unit=True)])
    V, A = rng.normal(size=(2, 2, dyn.nv))
    for t in range(2):
        expected = oracle.rnea(Q[t], V[t], A[t])
        assert_close(dyn.inverse_dynamics_batch(Q, V, A)[t], expected, TOL, f"{label} batch")
        assert_close(dyn.coriolis_batch(Q, V)[0][t], oracle.M(Q[t]), TOL, f"{label} M batch")
        assert_close(dyn.gravity_batch(Q)[t], oracle.g(Q[t]), TOL, f"{label} g batch")
    # a clone made now copies the new values; one made before keeps the old
    assert_close(dyn.clone().inverse_dynamics(q, qd, qdd), tau, TOL, f"{label} new clone")
    np.testing.assert_array_equal(old_clone.inverse_dynamics(q, qd, qdd), before)


def test_observer_uses_new_parameters():
    """The observer's second step, from Pinocchio's p = M qd and w = tau + C^T qd - g of the
    rebuilt model (the observer's discrete law, MomentumObserver docstring)."""
    dyn, oracle = _pair(str(erd_urdf("panda")), "fixed")
    rng = np.random.default_rng(8)
    _changed(dyn, oracle, rng)
    gain, h = 20.0, 0.01
    obs = MomentumObserver(dyn, gain)
    states = [(q, qd, tau) for q, qd, tau, _ in (_state(dyn, rng) for _ in range(2))]
    obs.update(0.0, *states[0])
    r = obs.update(h, *states[1])

    def p_w(q, qd, tau):
        return oracle.M(q) @ qd, tau + oracle.C(q, qd).T @ qd - oracle.g(q)

    (p0, w0), (p1, w1) = p_w(*states[0]), p_w(*states[1])
    expected = (1.0 - np.exp(-gain * h)) * ((p1 - p0) / h - 0.5 * (w0 + w1))
    assert_close(r, expected, TOL, "observer residual")


def test_coupled_model_uses_new_parameters():
    """Rotors: Mbar = A^T M A and the regressor of Pinocchio's whole tree, rebuilt."""
    text = robot_urdf("arm7_rotors")
    dyn = Dynamics.from_urdf(text)
    tree = Dynamics(dataclasses.replace(dyn.tree, couplings=(), mimic=()))
    oracle = MultiDofOracle(strip_couplings(text), tree, "fixed")
    rng = np.random.default_rng(9)
    pi = np.concatenate([random_body(rng) for _ in dyn.parameter_links])
    dyn.set_inertial_parameters(pi)
    _set_pin_parameters(tree, oracle, pi)
    A = dyn.map.matrix()
    qbar = rng.uniform(-2, 2, dyn.nq)
    qd, x, a = rng.normal(size=(3, dyn.nv))
    q = dyn.full_position(qbar)
    Mp = A.T @ oracle.M(q) @ A
    assert_close(dyn.mass_matrix(qbar), Mp, TOL, "rotors Mbar")
    Cp = A.T @ oracle.C(q, A @ qd) @ A
    gp = A.T @ oracle.g(q)
    expected = Mp @ a + Cp @ x + gp
    assert_close(dyn.slotine_li(qbar, qd, x, a), expected, TOL, "rotors Slotine-Li")
    assert_close(dyn.regressor(qbar, qd, x, a) @ pi, expected, TOL, "rotors Y pi")


def _consistent_inside_and_out(rng):
    """(label, body, consistent?) pairs on both sides of the set's boundary."""
    m, c = 1.5, np.array([0.1, -0.2, 0.05])

    def body(moments, mass=m):
        Ic = np.diag(moments)  # principal moments about the CoM
        return _pack(mass, mass * c, Ic + mass * (c @ c * np.eye(3) - np.outer(c, c)))

    yield "valid", body([0.1, 0.12, 0.15]), True
    yield "triangle inequality just met", body([0.1, 0.1, 0.199]), True
    yield "triangle inequality just broken", body([0.1, 0.1, 0.201]), False
    yield "negative moment", body([-0.01, 0.1, 0.1]), False
    yield "negative mass", body([0.1, 0.12, 0.15], mass=-1.0), False
    yield "tiny positive mass", body([0.1, 0.12, 0.15], mass=1e-9), True
    yield "massless with inertia", _pack(0.0, np.zeros(3), np.diag([0.1, 0.1, 0.1])), False
    yield "all zero (no body)", np.zeros(10), True


def test_inconsistent_body_is_refused_by_name_and_nothing_changes():
    dyn = Dynamics.from_urdf(str(erd_urdf("ur5")))
    rng = np.random.default_rng(10)
    q, qd, qdd, _ = _state(dyn, rng)
    for label, body, consistent in _consistent_inside_and_out(rng):
        for b in (0, 3, 5):
            pi = np.concatenate([random_body(rng) for _ in dyn.parameter_links])
            pi[10 * b : 10 * b + 10] = body
            saved = dyn.inertial_parameters()
            tau = dyn.inverse_dynamics(q, qd, qdd).copy()
            if consistent:
                dyn.set_inertial_parameters(pi)
                assert_close(dyn.inertial_parameters(), pi, 1e-9, label)
                continue
            link = dyn.parameter_links[b]
            with pytest.raises(ValueError, match=rf"link '{re.escape(link)}'.*not physically"):
                dyn.set_inertial_parameters(pi)
            np.testing.assert_array_equal(dyn.inertial_parameters(), saved)
            np.testing.assert_array_equal(dyn.inverse_dynamics(q, qd, qdd), tau)
            dyn.set_inertial_parameters(pi, check_physical=False)  # stored without the check
            assert_close(dyn.inertial_parameters(), pi, 1e-9, f"{label} unchecked")


def test_unchecked_parameters_still_match_pinocchio():
    dyn, oracle = _pair(str(erd_urdf("ur5")), "fixed")
    rng = np.random.default_rng(11)
    pi = np.concatenate([random_body(rng) for _ in dyn.parameter_links])
    pi[10 * 2] = -2.0  # a negative mass
    dyn.set_inertial_parameters(pi, check_physical=False)
    _set_pin_parameters(dyn, oracle, pi)
    q, qd, qdd, _ = _state(dyn, rng)
    assert_close(dyn.inverse_dynamics(q, qd, qdd), oracle.rnea(q, qd, qdd), TOL, "negative m")


def test_bad_parameter_vectors_are_refused_whatever_the_check():
    dyn = Dynamics.from_urdf(str(erd_urdf("ur5")))
    good = dyn.inertial_parameters()
    size = good.size
    for check in (True, False):
        for bad, pattern in (
            (good[:-1], rf"shape \({size},\)"),
            (np.append(good, 1.0), rf"shape \({size},\)"),
            (good.reshape(-1, 10), rf"shape \({size},\)"),
            (["a"] * size, "numbers"),
            (None, "shape"),
        ):
            with pytest.raises(ValueError, match=pattern):
                dyn.set_inertial_parameters(bad, check_physical=check)
        for value in (np.nan, np.inf, -np.inf, 1.01e50, -1e300):
            for k in (0, 14, size - 1):
                bad = good.copy()
                bad[k] = value
                link = dyn.parameter_links[k // 10]
                with pytest.raises(ValueError, match=rf"pi\[{k}\].*link '{link}'.*finite"):
                    dyn.set_inertial_parameters(bad, check_physical=check)
        # zero mass and a first moment: no centre of mass to store, even unchecked
        bad = good.copy()
        bad[20], bad[22] = 0.0, 0.3
        with pytest.raises(ValueError, match="zero mass and a nonzero first moment"):
            dyn.set_inertial_parameters(bad, check_physical=check)
        np.testing.assert_array_equal(dyn.inertial_parameters(), good)
    # the bound itself is accepted (unchecked: a huge mass at the link origin)
    big = good.copy()
    big[10] = 1e50
    big[11:14] = 0.0
    dyn.set_inertial_parameters(big, check_physical=False)
    assert dyn.inertial_parameters()[10] == 1e50
    # a tiny mass with a large first moment cannot be held (its centre beyond 1e50)
    far = good.copy()
    far[10], far[11] = 1e-60, 1e-5
    with pytest.raises(ValueError, match="beyond"):
        dyn.set_inertial_parameters(far, check_physical=False)


# ----------------------------------------------------------------------------- the regressor


def _check_regressor(dyn, oracle, rng, label, states=2):
    pi = dyn.inertial_parameters()
    cols = _pin_columns(dyn, oracle)
    assert_close(pi, _pin_parameters(dyn, oracle), 1e-12, f"{label} pi")
    for s in range(states):
        q, qd, qdd, x = _state(dyn, rng)
        Y = dyn.regressor(q, qd, x, qdd)
        assert Y.shape == (dyn.nv, pi.size)
        Cp = oracle.C(q, qd)
        expected = oracle.M(q) @ qdd + Cp @ x + oracle.g(q)
        assert_close(Y @ pi, expected, TOL, f"{label} {s} Y pi vs Pinocchio M qdd_r + C qd_r + g")
        assert_close(Y @ pi, dyn.slotine_li(q, qd, x, qdd), TOL, f"{label} {s} Y pi vs slotine_li")
        Yp = pin.computeJointTorqueRegressor(
            oracle.model, oracle.data, oracle.q_pin(q), oracle.v_pin(qd), oracle.v_pin(qdd)
        )
        Yp = np.asarray(Yp).reshape(dyn.nv, -1)[oracle.v_index][:, cols]  # nv = 1: a vector
        assert_close(dyn.regressor(q, qd, qd, qdd), Yp, TOL, f"{label} {s} vs Pinocchio's")


@pytest.mark.parametrize("label,robot,root", ROBOTS, ids=[r[0] for r in ROBOTS])
def test_regressor_on_robots(label, robot, root):
    dyn, oracle = _pair(str(erd_urdf(robot)), root)
    _check_regressor(dyn, oracle, np.random.default_rng(len(label) + 20), label)


@pytest.mark.parametrize("label,topo,n,root", TREES, ids=[t[0] for t in TREES])
def test_regressor_on_random_trees(label, topo, n, root):
    dyn, oracle = _pair(_urdf("tree", topo, n), root)
    _check_regressor(dyn, oracle, np.random.default_rng(n + 30), label)


def test_regressor_does_not_depend_on_the_parameters():
    dyn, oracle = _pair(str(erd_urdf("solo12")), "floating")
    rng = np.random.default_rng(12)
    q, qd, qdd, x = _state(dyn, rng)
    Y = dyn.regressor(q, qd, x, qdd).copy()
    pi = _changed(dyn, oracle, rng)
    np.testing.assert_array_equal(dyn.regressor(q, qd, x, qdd), Y)
    expected = oracle.M(q) @ qdd + oracle.C(q, qd) @ x + oracle.g(q)
    assert_close(Y @ pi, expected, TOL, "Y pi after the change")
    _check_regressor(dyn, oracle, rng, "solo12 changed", states=1)


@pytest.mark.parametrize("model", ["arm7_rotors", "panda_mimic", "floating_rotors"])
def test_regressor_of_coupled_models(model):
    """Ybar = A^T Y of the whole tree (Pinocchio's, every joint independent)."""
    if model == "panda_mimic":
        text, root = erd_urdf("panda").read_text(), "fixed"
    else:
        text = robot_urdf("arm7_rotors")
        root = "floating" if model == "floating_rotors" else "fixed"
    dyn = Dynamics.from_urdf(text, root_joint=root)
    assert dyn.map is not None
    tree = Dynamics(dataclasses.replace(dyn.tree, couplings=(), mimic=()))
    oracle = MultiDofOracle(strip_couplings(text), tree, root)
    A = dyn.map.matrix()
    pi = dyn.inertial_parameters()
    assert_close(pi, _pin_parameters(tree, oracle), 1e-12, f"{model} pi")
    cols = _pin_columns(tree, oracle)
    rng = np.random.default_rng(13)
    for s in range(2):
        qbar = random_configuration(dyn, rng, unit=True)
        qd, qdd, x = rng.normal(size=(3, dyn.nv))
        q = dyn.full_position(qbar)
        Y = dyn.regressor(qbar, qd, x, qdd)
        Cp = A.T @ oracle.C(q, A @ qd) @ A
        expected = A.T @ oracle.M(q) @ A @ qdd + Cp @ x + A.T @ oracle.g(q)
        assert_close(Y @ pi, expected, TOL, f"{model} {s} Y pi")
        assert_close(Y @ pi, dyn.slotine_li(qbar, qd, x, qdd), TOL, f"{model} {s} slotine_li")
        Yp = pin.computeJointTorqueRegressor(
            oracle.model, oracle.data, oracle.q_pin(q),
            oracle.v_pin(A @ qd), oracle.v_pin(A @ qdd),
        )  # fmt: skip
        Yp = A.T @ np.asarray(Yp)[oracle.v_index][:, cols]
        assert_close(dyn.regressor(qbar, qd, qd, qdd), Yp, TOL, f"{model} {s} vs Pinocchio's")


# ----------------------------------------------------------------------------- energies


@pytest.mark.parametrize("label,robot,root", ROBOTS, ids=[r[0] for r in ROBOTS])
def test_energy_regressor(label, robot, root):
    dyn, oracle = _pair(str(erd_urdf(robot)), root)
    rng = np.random.default_rng(14)
    for _ in range(2):
        pi = dyn.inertial_parameters()
        q, qd, _, _ = _state(dyn, rng)
        E = dyn.energy_regressor(q, qd)
        assert E.shape == (2, pi.size)
        qp, vp = oracle.q_pin(q), oracle.v_pin(qd)
        T = pin.computeKineticEnergy(oracle.model, oracle.data, qp, vp)
        U = pin.computePotentialEnergy(oracle.model, oracle.data, qp)
        assert_close(E[0] @ pi, T, TOL, f"{label} kinetic")
        assert_close(E[1] @ pi, U, TOL, f"{label} potential")
        assert_close(E[0] @ pi, 0.5 * qd @ dyn.mass_matrix(q) @ qd, TOL, f"{label} 1/2 qd M qd")
        _changed(dyn, oracle, rng)  # then the same with new parameters


def test_energy_regressor_of_a_coupled_model():
    dyn = Dynamics.from_urdf(robot_urdf("arm7_rotors"))
    rng = np.random.default_rng(15)
    qbar, qd = rng.normal(size=(2, dyn.nv))
    E = dyn.energy_regressor(qbar, qd)
    pi = dyn.inertial_parameters()
    assert_close(E[0] @ pi, 0.5 * qd @ dyn.mass_matrix(qbar) @ qd, TOL, "rotors kinetic")
    # the potential energy's gradient is g (a central difference, O(h^2))
    h, grad = 1e-6, np.empty(dyn.nv)
    for k in range(dyn.nv):
        e = np.eye(dyn.nv)[k] * h
        up, down = dyn.energy_regressor(qbar + e, qd), dyn.energy_regressor(qbar - e, qd)
        grad[k] = (up[1] - down[1]) @ pi / (2 * h)
    assert_close(grad, dyn.gravity(qbar), 1e-7, "dU/dq = g")


# ----------------------------------------------------------------------------- API


@pytest.fixture(scope="module")
def hand():
    return Dynamics.from_urdf(HAND_URDF)


NAMES = ("q", "qd", "qd_ref", "qdd_ref")


def test_regressor_input_validation_names_the_argument(hand):
    n = hand.nv
    good = [np.linspace(-1, 1, n) * (k + 1) for k in range(4)]
    reference = hand.regressor(*good).copy()
    for position, arg in enumerate(NAMES):
        for label, bad, pattern in _bad_inputs(n):
            args = list(good)
            args[position] = bad
            with pytest.raises(ValueError) as info:
                hand.regressor(*args)
            msg = str(info.value)
            assert re.search(rf"(?<![\w_]){arg}(?![\w_])", msg), f"{label} {arg}: {msg}"
            assert re.search(pattern, msg, re.IGNORECASE), f"{label} {arg}: {msg}"
        for value in (1e51, -1e300):
            args = [a.copy() for a in good]
            args[position][n // 2] = value
            with pytest.raises(ValueError, match=rf"(?<![\w_]){arg}(?![\w_]).*1e\+50"):
                hand.regressor(*args)
    for position, arg in enumerate(NAMES[:2]):
        for label, bad, pattern in _bad_inputs(n):
            args = list(good[:2])
            args[position] = bad
            with pytest.raises(ValueError, match=pattern):
                hand.energy_regressor(*args)
    np.testing.assert_array_equal(hand.regressor(*good), reference)
    big = [good[0]] + [np.full(n, 1e50)] * 3  # the largest accepted rates: finite numbers
    assert np.all(np.isfinite(hand.regressor(*big)))
    assert np.all(np.isfinite(hand.energy_regressor(*big[:2])))


def test_regressor_out_buffers(hand):
    n, size = hand.nv, hand.inertial_parameters().size
    rng = np.random.default_rng(16)
    args = [rng.normal(size=n) for _ in range(4)]
    expected = hand.regressor(*args).copy()
    buf = np.full((n, size), np.nan)
    assert hand.regressor(*args, out=buf) is buf
    np.testing.assert_array_equal(buf, expected)
    energy = hand.energy_regressor(*args[:2]).copy()
    ebuf = np.full((2, size), np.nan)
    assert hand.energy_regressor(*args[:2], out=ebuf) is ebuf
    np.testing.assert_array_equal(ebuf, energy)
    for label, bad, pattern in _wrong_buffers((n, size)):
        with pytest.raises(ValueError, match=pattern):
            hand.regressor(*args, out=bad)
    for label, bad, pattern in _wrong_buffers((2, size)):
        with pytest.raises(ValueError, match=pattern):
            hand.energy_regressor(*args[:2], out=bad)
    # lists and strided views are converted
    np.testing.assert_array_equal(hand.regressor(*[a.tolist() for a in args]), expected)


def test_closed_loops_have_parameters_but_no_regressor():
    """A closed chain's coordinates are not a constant map of the tree's: no regressor; its
    parameters are the spanning tree's bodies and changing them changes its dynamics."""
    dyn = Dynamics.from_urdf(robot_urdf("four_bar"))
    assert dyn.loops
    q = np.full(dyn.nq, 0.3)
    qd = np.full(dyn.nv, 0.5)
    for call in (lambda: dyn.regressor(q, qd, qd, qd), lambda: dyn.energy_regressor(q, qd)):
        with pytest.raises(ValueError, match="closed loops"):
            call()
    pi = dyn.inertial_parameters()
    assert pi.size == 10 * len(dyn.parameter_links) > 0
    M = dyn.mass_matrix(q).copy()
    dyn.set_inertial_parameters(2.0 * pi)  # every body twice as heavy: M doubles
    assert_close(dyn.mass_matrix(q), 2.0 * M, TOL, "four-bar M with 2 pi")
    assert_close(dyn.clone().mass_matrix(q), 2.0 * M, TOL, "four-bar clone")
