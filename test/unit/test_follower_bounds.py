"""The library bounds the coordinates of joints that follow a leader like every other (±1e50).

A follower (a geared rotor, a mimic joint) has q = m q_leader + o and qd = m qd_leader; the
kernels run on the full tree, so that value is what must stay within the range whose outputs
are known finite.  On both sides of the follower's bound, for a rotor (``arm7_rotors``, ratio
100) and a mimic joint (a small URDF, multiplier -250 and offset 0.5), in every method:

* just inside (the largest leader value whose follower is within ±1e50, computed here with
  plain IEEE arithmetic): finite results, and M, C, g, tau and Gamma equal to Pinocchio on the
  spanning tree reduced by A = dq/dqbar (the followers at their huge values included);
* just outside (the next double): ``ValueError`` naming the follower, its leader and both
  values, asserted in full.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from support.oracle import PinOracle, assert_close
from support.rotors import coupled_joints_from_xml, strip_couplings
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import Dynamics, MomentumObserver
from coriolis_ros.robots import robot_urdf

MAX = 1e50
TOL = 1e-10
MIMIC = robot(
    link("base", None), link("l1"), link("l2"), link("l3"),
    joint("j1", "base", "l1"),
    joint("j2", "l1", "l2", extra='\n    <mimic joint="j1" multiplier="-250" offset="0.5"/>'),
    joint("j3", "l2", "l3", axis="0 1 0"),
    name="mimic_chain",
)  # fmt: skip


def last_inside(m: float, o: float = 0.0) -> float:
    """The largest x > 0 with |m x + o| <= 1e50 in double arithmetic (as the kernels round)."""
    x = MAX / abs(m)
    while abs(m * x + o) <= MAX:
        x = math.nextafter(x, math.inf)
    while not abs(m * x + o) <= MAX:
        x = math.nextafter(x, 0.0)
    return x


class Case:
    """A model, its follower under test, and Pinocchio on its spanning tree with A."""

    def __init__(self, label, urdf, tree_urdf, follower):
        self.label = label
        self.dyn = Dynamics.from_urdf(urdf)
        self.follower = follower
        self.leader, self.m, self.o = self.dyn.coupled_joints[follower]
        self.col = self.dyn.joint_names.index(self.leader)
        tree = self.dyn.tree_joint_names
        self.oracle = PinOracle(tree_urdf, order=tree)
        self.A = np.zeros((len(tree), self.dyn.nv))
        self.offset = np.zeros(len(tree))
        for r, name in enumerate(tree):
            leader, m, o = self.dyn.coupled_joints.get(name, (name, 1.0, 0.0))
            self.A[r, self.dyn.joint_names.index(leader)] = m
            self.offset[r] = o
        self.q_in = last_inside(self.m, self.o)  # positions: with the offset
        self.v_in = last_inside(self.m)  # velocities and accelerations: A alone
        rng = np.random.default_rng(5)
        self.q = rng.uniform(-2.0, 2.0, self.dyn.nv)
        self.qd = rng.normal(0.0, 1.0, self.dyn.nv)
        self.qdd = rng.normal(0.0, 2.0, self.dyn.nv)

    def with_leader(self, x, value):
        x = x.copy()
        x[self.col] = value
        return x

    def q_message(self, what, value):
        follower = self.m * value + self.o
        return (
            f"{what}: follower joint {self.follower!r} = {self.m!r} × {self.leader!r} + "
            f"{self.o!r} = {follower!r} is beyond ±1e+50 (its leader {self.leader!r} is "
            f"{value!r}; a follower's coordinate is bounded like every other)"
        )

    def v_message(self, what, value):
        return (
            f"{what}: follower joint {self.follower!r} = {self.m!r} × {self.leader!r} = "
            f"{self.m * value!r} is beyond ±1e+50 (its leader {self.leader!r} is {value!r}; "
            "a follower's coordinate is bounded like every other)"
        )


@pytest.fixture(scope="module", params=["rotor", "mimic"])
def case(request):
    if request.param == "rotor":
        text = robot_urdf("arm7_rotors")
        assert coupled_joints_from_xml(text)["joint1_rotor"] == ("joint1", 100.0)
        return Case("rotor", text, strip_couplings(text), "joint1_rotor")
    return Case("mimic", MIMIC, MIMIC, "j2")  # Pinocchio reads the mimic joint as a DoF


def test_the_bound_found_here_is_tight(case):
    assert abs(case.m * case.q_in + case.o) <= MAX
    beyond = math.nextafter(case.q_in, math.inf)
    assert abs(case.m * beyond + case.o) > MAX
    assert MAX / abs(case.m) / 2 < case.q_in < MAX  # the leader alone is far inside


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_leader_position_just_inside_gives_pinocchio(case, sign):
    dyn, A = case.dyn, case.A
    qbar = case.with_leader(case.q, sign * case.q_in)
    q, qd, qdd = A @ qbar + case.offset, A @ case.qd, A @ case.qdd
    row = dyn.tree_joint_names.index(case.follower)
    assert MAX / 2 < abs(q[row]) <= MAX  # the follower is at the bound
    o = case.oracle
    M_ref, C_ref, g_ref = A.T @ o.M(q) @ A, A.T @ o.C(q, qd) @ A, A.T @ o.g(q)
    M, Mdot, C = dyn.coriolis(qbar, case.qd)
    assert_close(M, M_ref, TOL, "M")
    assert_close(C, C_ref, TOL, "C")
    assert_close(Mdot, C_ref + C_ref.T, TOL, "Mdot")
    assert_close(dyn.mass_matrix(qbar), M_ref, TOL, "mass_matrix")
    assert_close(dyn.gravity(qbar), g_ref, TOL, "g")
    tau = A.T @ o.rnea(q, qd, qdd)
    assert_close(dyn.inverse_dynamics(qbar, case.qd, case.qdd), tau, TOL, "tau")
    n = len(dyn.tree_joint_names)
    G_full = np.stack([o.C(q, np.eye(n)[k]) for k in range(n)], axis=2)
    G_ref = np.einsum("ai,bj,ck,abc->ijk", A, A, A, G_full)
    assert_close(dyn.christoffel(qbar), G_ref, TOL, "Gamma")
    full = dyn.full_position(qbar)
    assert_close(full, q, 1e-15, "full_position")
    for x in (
        *dyn.coriolis_vectors(qbar, case.qd),
        dyn.coriolis_times(qbar, case.qd, case.qdd),
        dyn.slotine_li(qbar, case.qd, case.qd, case.qdd),
        dyn.regressor(qbar, case.qd, case.qd, case.qdd),
        dyn.energy_regressor(qbar, case.qd),
        dyn.frame_placement(qbar, dyn.frame_names[-1]),
        dyn.frame_jacobian(qbar, dyn.frame_names[-1]),
        dyn.gravity_batch(np.vstack([case.q, qbar])),
        dyn.coriolis_batch(np.vstack([case.q, qbar]), np.vstack([case.qd, case.qd]))[2],
        MomentumObserver(dyn, 10.0).update(0.0, qbar, case.qd, np.zeros(dyn.nv)),
    ):
        assert np.all(np.isfinite(x))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_leader_velocity_just_inside_gives_pinocchio(case, sign):
    dyn, A, o = case.dyn, case.A, case.oracle
    vbar = case.with_leader(case.qd, sign * case.v_in)
    q, qd = A @ case.q + case.offset, A @ vbar
    C_ref = A.T @ o.C(q, qd) @ A
    assert_close(dyn.coriolis(case.q, vbar)[2], C_ref, TOL, "C")
    assert_close(dyn.coriolis_vectors(case.q, vbar)[0], C_ref @ vbar, TOL, "C qd")
    tau = A.T @ o.rnea(q, A @ case.qd, qd)  # the bound on the acceleration
    assert_close(dyn.inverse_dynamics(case.q, case.qd, vbar), tau, TOL, "tau (qdd)")
    assert_close(dyn.full_velocity(vbar), qd, 1e-15, "full_velocity")
    for x in (
        dyn.coriolis_times(case.q, case.qd, vbar),
        dyn.slotine_li(case.q, case.qd, vbar, vbar),
        dyn.regressor(case.q, vbar, vbar, vbar),
        dyn.energy_regressor(case.q, vbar),
        dyn.frame_jacobians(case.q, vbar, dyn.frame_names[-1])[1],
        dyn.regressor_batch(*(np.vstack([case.qd, vbar]),) * 4),
        dyn.energy_regressor_batch(np.vstack([case.q, case.q]), np.vstack([case.qd, vbar])),
    ):
        assert np.all(np.isfinite(x))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_leader_position_just_outside_is_refused_naming_the_follower(case, sign):
    dyn, v, a = case.dyn, case.qd, case.qdd
    value = sign * math.nextafter(case.q_in, math.inf)
    qbar = case.with_leader(case.q, value)
    frame = dyn.frame_names[-1]
    calls = {
        "coriolis": lambda: dyn.coriolis(qbar, v),
        "christoffel": lambda: dyn.christoffel(qbar),
        "mass_matrix": lambda: dyn.mass_matrix(qbar),
        "gravity": lambda: dyn.gravity(qbar),
        "inverse_dynamics": lambda: dyn.inverse_dynamics(qbar, v, a),
        "coriolis_vectors": lambda: dyn.coriolis_vectors(qbar, v),
        "coriolis_times": lambda: dyn.coriolis_times(qbar, v, a),
        "slotine_li": lambda: dyn.slotine_li(qbar, v, v, a),
        "regressor": lambda: dyn.regressor(qbar, v, v, a),
        "energy_regressor": lambda: dyn.energy_regressor(qbar, v),
        "frame_placement": lambda: dyn.frame_placement(qbar, frame),
        "frame_jacobian": lambda: dyn.frame_jacobian(qbar, frame),
        "full_position": lambda: dyn.full_position(qbar),
        "velocity_map": lambda: dyn.velocity_map(qbar),
        "integrate": lambda: dyn.integrate(qbar, np.zeros(dyn.nv)),
        "observer": lambda: MomentumObserver(dyn, 10.0).update(0.0, qbar, v, np.zeros(dyn.nv)),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == case.q_message("q", value), name
    Q = np.vstack([case.q, case.q, qbar])
    V = np.vstack([v, v, v])
    for name, call in {
        "gravity_batch": lambda: dyn.gravity_batch(Q),
        "christoffel_batch": lambda: dyn.christoffel_batch(Q),
        "coriolis_batch": lambda: dyn.coriolis_batch(Q, V),
        "inverse_dynamics_batch": lambda: dyn.inverse_dynamics_batch(Q, V, V),
        "energy_regressor_batch": lambda: dyn.energy_regressor_batch(Q, V),
    }.items():
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == case.q_message("Q row 2", value), name


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_leader_velocity_just_outside_is_refused_naming_the_follower(case, sign):
    dyn, q, v = case.dyn, case.q, case.qd
    value = sign * math.nextafter(case.v_in, math.inf)
    x = case.with_leader(v, value)
    frame = dyn.frame_names[-1]
    calls = {
        ("qd", "coriolis"): lambda: dyn.coriolis(q, x),
        ("qd", "coriolis_vectors"): lambda: dyn.coriolis_vectors(q, x),
        ("qd", "inverse_dynamics"): lambda: dyn.inverse_dynamics(q, x, v),
        ("qdd", "inverse_dynamics"): lambda: dyn.inverse_dynamics(q, v, x),
        ("x", "coriolis_times"): lambda: dyn.coriolis_times(q, v, x),
        ("qd_ref", "slotine_li"): lambda: dyn.slotine_li(q, v, x, v),
        ("qdd_ref", "slotine_li"): lambda: dyn.slotine_li(q, v, v, x),
        ("qd", "regressor"): lambda: dyn.regressor(q, x, v, v),
        ("qd_ref", "regressor"): lambda: dyn.regressor(q, v, x, v),
        ("qdd_ref", "regressor"): lambda: dyn.regressor(q, v, v, x),
        ("qd", "energy_regressor"): lambda: dyn.energy_regressor(q, x),
        ("qd", "frame_jacobians"): lambda: dyn.frame_jacobians(q, x, frame),
        ("qd", "full_velocity"): lambda: dyn.full_velocity(x),
        ("qd", "integrate"): lambda: dyn.integrate(q, x),
        ("qd", "observer"): lambda: MomentumObserver(dyn, 10.0).update(0.0, q, x, v),
    }
    for (what, name), call in calls.items():
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == case.v_message(what, value), name
    Q, V, X = np.vstack([q, q]), np.vstack([v, v]), np.vstack([v, x])
    for what, call in {
        "V": lambda: dyn.coriolis_batch(Q, X),
        "A": lambda: dyn.inverse_dynamics_batch(Q, V, X),
        "QdR": lambda: dyn.slotine_li_batch(Q, V, X, V),
        "QddR": lambda: dyn.regressor_batch(Q, V, V, X),
        "V ": lambda: dyn.energy_regressor_batch(Q, X),
    }.items():
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == case.v_message(f"{what.strip()} row 1", value), what


def test_integrate_refuses_a_result_that_puts_a_follower_beyond(case):
    dyn = case.dyn
    start = case.with_leader(np.zeros(dyn.nv), 0.5 * case.q_in)
    step = case.with_leader(np.zeros(dyn.nv), 0.5 * case.q_in)  # within the velocity bound
    end = dyn.integrate(start, step, 1.0)  # lands exactly on the last value inside: fine
    assert end[case.col] == case.q_in
    with pytest.raises(ValueError) as info:
        dyn.integrate(start, step, 1.5)
    value = 0.5 * case.q_in + 1.5 * (0.5 * case.q_in)
    assert str(info.value) == case.q_message("q (+) v dt (dt = 1.5)", value)


def test_a_leader_beyond_the_bound_itself_keeps_the_usual_message(case):
    q = case.with_leader(case.q, math.nextafter(MAX, math.inf))
    with pytest.raises(ValueError) as info:
        case.dyn.coriolis(q, case.qd)
    assert str(info.value) == "q has a NaN, infinite or huge (beyond ±1e+50) entry"
    with pytest.raises(ValueError) as info:
        case.dyn.full_velocity(case.with_leader(case.qd, math.nan))
    assert str(info.value) == "qd has a NaN, infinite or huge (beyond ±1e+50) entry"
