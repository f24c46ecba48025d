"""The closed-loop passivity demo (coriolis_ros.demo.passivity*); its plant is MuJoCo.

* ROS-free: the library-model plant kept for the node's tests (RigidBodyPlant: forward
  dynamics against RNEA, RK4's order, the push schedule); the controller's torque against
  M q̈_r + C q̇_r + g − κ M s from the matrices, and the controller hook; the closed loop on
  the MuJoCo plant: its storage function decays as e^(−2κt) and obeys the energy balance
  V̇ = −2κ V + sᵀ τ_ext with a joint push (where a C that is not Christoffel-consistent would
  show); bounds of tracking and of the offline observer in the in-process loop; bad arguments;
  the wrong-parameter and adaptive options and their passing to the child processes.
  (test_closed_loop_mujoco.py: the oracle check of MuJoCo against the library, the plant, and
  the loop with a force on a link.)
* The whole demo headless (`python -m coriolis_ros.demo.passivity`, four processes): exit 0,
  a PNG, every state answered, the ROS loop reproducing the in-process loop, tracking bounds,
  the node's observer estimating the push applied in MuJoCo (coriolis_state.external_effort),
  and the energy balance.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from coriolis_ros.demo import passivity_analysis as analysis
from coriolis_ros.demo.passivity_common import Scenario, scenario_argv
from coriolis_ros.demo import passivity_controller
from coriolis_ros.demo.passivity_controller import SlotineLiController
from coriolis_ros.demo.passivity_plant import Push, RigidBodyPlant
from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_urdf

ROBOTS = ("arm7", "quadruped12")


def _random_state(dyn, rng):
    return rng.uniform(-1.5, 1.5, dyn.nv), rng.uniform(-2.0, 2.0, dyn.nv)


# ============================================================================ plant


@pytest.mark.parametrize("robot", ROBOTS)
def test_forward_dynamics_inverts_rnea(robot):
    dyn = Dynamics.from_urdf(robot_urdf(robot))
    rng = np.random.default_rng(3)
    plant = RigidBodyPlant(dyn, np.zeros(dyn.nv), np.zeros(dyn.nv))
    qdd = np.zeros(dyn.nv)
    for _ in range(10):
        q, qd = _random_state(dyn, rng)
        tau = rng.normal(0.0, 5.0, dyn.nv)
        plant.acceleration(q, qd, tau, qdd)
        back = dyn.inverse_dynamics(q, qd, qdd)  # RNEA: M qdd + C qd + g
        np.testing.assert_allclose(back, tau, rtol=0, atol=1e-10 * (1 + np.abs(tau).max()))


def _kinetic(dyn, q, qd):
    return 0.5 * qd @ dyn.mass_matrix(q) @ qd


def test_rk4_conserves_kinetic_energy_without_gravity_and_converges_at_fourth_order():
    dyn = Dynamics.from_urdf(robot_urdf("arm7"), gravity=(0.0, 0.0, 0.0))
    rng = np.random.default_rng(5)
    q0, qd0 = _random_state(dyn, rng)
    energy0 = _kinetic(dyn, q0, qd0)
    errors = []
    for dt in (4e-3, 2e-3):
        plant = RigidBodyPlant(dyn, q0, qd0, dt)
        for _ in range(int(round(0.4 / dt))):
            plant.step(np.zeros(dyn.nv))
        assert plant.t == pytest.approx(0.4)
        errors.append(abs(_kinetic(dyn, plant.q, plant.qd) - energy0) / energy0)
    assert errors[1] < 1e-7
    assert errors[0] / errors[1] > 10  # 4th order: 16 when halving the step (asymptotically)
    # and it moved: a frozen plant would conserve energy too
    assert np.abs(plant.q - q0).max() > 0.05


def test_push_schedule_and_external_torque():
    push = Push(joint=1, torque=-3.0, start=0.002, end=0.004)
    dyn = Dynamics.from_urdf(robot_urdf("arm7"))
    plant = RigidBodyPlant(dyn, np.zeros(7), np.zeros(7), 1e-3, push)
    seen = []
    for _ in range(6):
        seen.append(plant.external_torque().copy())
        plant.step(dyn.gravity(plant.q.copy()))
    assert [s[1] for s in seen] == [0.0, 0.0, -3.0, -3.0, 0.0, 0.0]
    assert all(np.count_nonzero(s) <= 1 for s in seen)
    assert Push(0, 1.0, 0.5).active(1e9)  # no end: stays on


@pytest.mark.parametrize(
    "kwargs",
    [
        {"joint": 0, "torque": math.nan, "start": 0.0},
        {"joint": 0, "torque": 1.0, "start": -0.1},
        {"joint": 0, "torque": 1.0, "start": 1.0, "end": 1.0},
        {"joint": 0, "torque": 1.0, "start": 1.0, "end": math.inf},
    ],
)
def test_bad_push_is_a_value_error(kwargs):
    with pytest.raises(ValueError, match="push"):
        Push(**kwargs)


def test_plant_rejects_bad_arguments():
    dyn = Dynamics.from_urdf(robot_urdf("arm7"))
    z = np.zeros(7)
    with pytest.raises(ValueError, match="dt"):
        RigidBodyPlant(dyn, z, z, 0.0)
    with pytest.raises(ValueError, match="dt"):
        RigidBodyPlant(dyn, z, z, 0.2)
    RigidBodyPlant(dyn, z, z, 0.1)  # the bound itself is accepted
    with pytest.raises(ValueError, match="q0"):
        RigidBodyPlant(dyn, np.zeros(6), z)
    with pytest.raises(ValueError, match="qd0"):
        RigidBodyPlant(dyn, z, np.full(7, np.nan))
    with pytest.raises(ValueError, match="push joint"):
        RigidBodyPlant(dyn, z, z, push=Push(7, 1.0, 0.0))
    plant = RigidBodyPlant(dyn, z, z, push=Push(6, 1.0, 0.0))
    with pytest.raises(ValueError, match="tau"):
        plant.step(np.full(7, np.inf))
    with pytest.raises(ValueError, match="tau"):
        plant.step(np.zeros(8))
    assert plant.step_count == 0  # rejected steps change nothing
    floating = Dynamics.from_urdf(robot_urdf("quadruped12"), root_joint="floating")
    with pytest.raises(ValueError, match="fixed-base"):
        RigidBodyPlant(floating, np.zeros(floating.nq), np.zeros(floating.nv))


# ============================================================================ controller


@pytest.mark.parametrize("robot", ROBOTS)
def test_controller_torque_against_the_matrices(robot):
    scenario = Scenario(robot=robot, push_joint="")
    dyn = scenario.dynamics()
    reference = scenario.reference(dyn)
    lam, kappa = 7.0, 25.0
    controller = SlotineLiController(dyn, reference, lam, kappa)
    rng = np.random.default_rng(11)
    for t in (0.0, 0.37, 2.9):
        q = reference.position(t) + rng.normal(0, 0.05, dyn.nv)
        qd = reference.velocity(t) + rng.normal(0, 0.2, dyn.nv)
        tau = controller.torque(t, q, qd).copy()
        e = q - reference.position(t)
        ed = qd - reference.velocity(t)
        qd_r = reference.velocity(t) - lam * e
        qdd_r = reference.acceleration(t) - lam * ed
        s = qd - qd_r
        M, _, C = dyn.coriolis(q, qd)
        expected = M @ qdd_r + C @ qd_r + dyn.gravity(q) - kappa * M @ s
        np.testing.assert_allclose(tau, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
        np.testing.assert_allclose(controller.s, s, rtol=0, atol=1e-14)
        np.testing.assert_allclose(controller.e, e, rtol=0, atol=1e-14)


@pytest.mark.parametrize(
    "lam, kappa, match",
    [
        (0.0, 30.0, "lam"),
        (-1.0, 30.0, "lam"),
        (np.ones(3), 30.0, "lam"),
        (10.0, 0.0, "kappa"),
        (10.0, np.ones(7), "kappa"),
        (10.0, math.inf, "kappa"),
        (10.0, True, "kappa"),
    ],
)
def test_controller_rejects_bad_gains(lam, kappa, match):
    scenario = Scenario()
    dyn = scenario.dynamics()
    with pytest.raises(ValueError, match=match):
        SlotineLiController(dyn, scenario.reference(dyn), lam, kappa)


def test_scenario_rejects_bad_values():
    with pytest.raises(ValueError, match="kappa"):
        Scenario(kappa=-1.0)
    with pytest.raises(ValueError, match="margin"):
        Scenario(margin=1.0)
    scenario = Scenario(push_body="", push_joint="elbow")
    with pytest.raises(ValueError, match="not a joint of arm7"):
        scenario.push(scenario.dynamics())
    with pytest.raises(ValueError, match="push force"):
        Scenario(push_force="1,x,3")


def test_parameter_error_options():
    """--parameter-error, --parameter-seed, --adapt-gain: bounds on both sides, the draw
    reproducible per seed, and passed on to the children by scenario_argv."""
    for ok in (0.0, 0.5, 0.99):
        Scenario(parameter_error=ok)
    for bad in (-0.1, 1.0, 1.5, math.nan, math.inf):
        with pytest.raises(ValueError, match="parameter_error must be in"):
            Scenario(parameter_error=bad)
    Scenario(adapt_gain=0.0)
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="adapt_gain"):
            Scenario(adapt_gain=bad)
    dyn = Scenario().dynamics()
    assert Scenario().controller_model(dyn) is dyn  # no error: the model itself
    a, b = Scenario(parameter_error=0.3), Scenario(parameter_error=0.3, parameter_seed=4)
    np.testing.assert_array_equal(a.parameter_factors(dyn), a.parameter_factors(dyn))
    assert set(a.parameter_factors(dyn)) <= {0.7, 1.3}
    assert np.any(a.parameter_factors(dyn) != b.parameter_factors(dyn))
    model = a.controller_model(dyn)
    np.testing.assert_allclose(model.inertial_parameters(), a.controller_parameters(dyn),
                               rtol=1e-14, atol=1e-16)  # fmt: skip
    np.testing.assert_array_equal(dyn.inertial_parameters(), Scenario().controller_parameters(dyn))
    # what the runner passes to the controller and the plant
    from coriolis_ros.demo import passivity

    args = passivity.build_parser().parse_args(
        ["--controller", "adaptive", "--parameter-error", "0.5", "--parameter-seed", "9",
         "--adapt-gain", "12.5", "--push-end", "-1"])  # fmt: skip
    child = passivity_controller.build_parser().parse_args([*scenario_argv(args), "--log", "x.npz"])
    assert Scenario.from_args(child) == Scenario.from_args(args)
    assert Scenario.from_args(child).parameter_seed == 9
    assert Scenario.from_args(child).adapt_gain == 12.5


def test_controller_hook():
    """Controllers are looked up by the scenario's name; a new one registers itself."""
    scenario = Scenario()
    dyn = scenario.dynamics()
    reference = scenario.reference(dyn)
    assert isinstance(passivity_controller.make_controller(dyn, reference, scenario),
                      SlotineLiController)  # fmt: skip
    with pytest.raises(ValueError, match="unknown controller 'no_such'"):
        passivity_controller.make_controller(dyn, reference, Scenario(controller="no_such"))
    with pytest.raises(ValueError, match="new and non-empty"):
        passivity_controller.register_controller("slotine_li", lambda *a: None)

    class Hold:  # the protocol: torque(t, q, qd), e, s, optionally log_row()
        def __init__(self, dyn, reference, scenario):
            self.dyn, self.e, self.s = dyn, np.zeros(dyn.nv), np.zeros(dyn.nv)

        def torque(self, t, q, qd):
            return self.dyn.gravity(q)

    class Stiff(Hold):  # D = 20 N·m·s on a wrist of 4e-4 kg·m², one step late: diverges
        def torque(self, t, q, qd):
            return self.dyn.gravity(q) - 20.0 * qd

    passivity_controller.register_controller("test_hold", Hold)
    passivity_controller.register_controller("test_stiff", Stiff)
    try:
        plant_log, ctrl_log = analysis.simulate(Scenario(controller="test_hold"), 0.05)
        assert np.all(np.isfinite(plant_log["q"])) and ctrl_log["tau"].any()
        assert np.abs(plant_log["qd"]).max() < 0.1  # held: gravity compensated
        # a divergence is an error, never a run that MuJoCo silently reset to q = 0
        with pytest.raises(ValueError, match="MuJoCo simulation diverged"):
            analysis.simulate(Scenario(controller="test_stiff"), 0.05)
    finally:
        del passivity_controller.CONTROLLERS["test_hold"]
        del passivity_controller.CONTROLLERS["test_stiff"]


# ============================================================================ closed loop


def _storage(dyn, plant_log, ctrl_log):
    return analysis.storage(dyn, plant_log["q"], ctrl_log["s"])


def test_storage_decays_as_exp_minus_two_kappa_t_without_push():
    """V̇ = −2κ V exactly in continuous time.  The controller samples at dt and holds its
    torque (first-order error in dt), so the decay must follow e^(−2κt) over four decades to
    within a few percent and twice as closely when dt is halved."""
    scenario = Scenario(push_start=100.0, push_end=None, kappa=20.0)
    dyn = scenario.dynamics()
    deviations = []
    for dt in (2e-4, 1e-4):
        plant_log, ctrl_log = analysis.simulate(scenario, 0.23, dt=dt, delay_steps=0)
        V = _storage(dyn, plant_log, ctrl_log)
        t = plant_log["stamp_ns"] * 1e-9
        assert V[0] > 1e-2  # starts at rest on a moving reference: s(0) = -qd_d(0) != 0
        assert V[-1] / V[0] < 1e-3
        deviations.append(np.abs(V / (V[0] * np.exp(-2.0 * scenario.kappa * t)) - 1.0).max())
    assert deviations[0] < 0.05
    assert 1.8 < deviations[0] / deviations[1] < 2.2


def test_energy_balance_with_a_push():
    """V(t) − V(0) = ∫ (−2κ V + sᵀ τ_ext) dt, within the quadrature's error."""
    scenario = Scenario(push_body="", push_joint="joint4", push_torque=-6.0, push_start=0.05,
                        push_end=0.2)  # fmt: skip
    dyn = scenario.dynamics()
    plant_log, ctrl_log = analysis.simulate(scenario, 0.3, dt=2e-4, delay_steps=0)
    V = _storage(dyn, plant_log, ctrl_log)
    t = plant_log["stamp_ns"] * 1e-9
    s = ctrl_log["s"]
    # τ_ext is held over [t_k, t_k+1): left-point rule for the supply, trapezoid for V.
    supply = np.einsum("ij,ij->i", s, plant_log["tau_ext"])
    dV = -2.0 * scenario.kappa * V
    h = np.diff(t)
    supplied = np.concatenate(([0.0], np.cumsum(supply[:-1] * h)))
    dissipated = np.concatenate(([0.0], np.cumsum(0.5 * (dV[1:] + dV[:-1]) * h)))
    balance = V - V[0] - supplied - dissipated
    scale = np.abs(supplied).max() + np.abs(dissipated).max()
    assert np.abs(supplied).max() > 1e-3  # the push did work on the robot
    assert np.abs(balance).max() < 0.01 * scale


def test_closed_loop_tracking_and_offline_observer_bounds():
    """A 10 N·m step on joint2 (qfrc_applied in MuJoCo)."""
    scenario = Scenario(push_body="", push_start=1.5, push_end=2.5)
    dyn = scenario.dynamics()
    plant_log, ctrl_log = analysis.simulate(scenario, 3.5)
    result = analysis.analyze(dyn, scenario, plant_log, ctrl_log, None, observer_gain=50.0)
    summary = result["summary"]
    assert summary["tracking"]["settled"]["max_abs_rad"] < 2e-3
    assert summary["tracking"]["after"]["max_abs_rad"] < 2e-3
    # the push is felt (10 N·m against K = κ M: tens of mrad), and recovered from
    assert summary["tracking"]["push"]["max_abs_rad"] > 1e-2
    np.testing.assert_array_equal(plant_log["tau_ext"][:, 1].max(), 10.0)
    est = summary["offline_observer"]
    assert est["applied_max"] == 10.0
    assert est["error_max"] < 0.2  # every joint, from 10 time constants after the step
    assert est["before_push_max_abs"] < 0.05
    assert est["rise_time_s"] == pytest.approx(1.0 / 50.0, abs=2e-3)  # time constant 1/K_O


# ============================================================================ whole demo


def test_passivity_demo_headless(ros_domain_env, tmp_path):
    _, env = ros_domain_env
    summary_path = tmp_path / "summary.json"
    png = tmp_path / "demo.png"
    duration, push_start = 3.0, 1.5
    cmd = [
        sys.executable,
        "-P",
        "-m",
        "coriolis_ros.demo.passivity",
        "--duration",
        str(duration),
        "--push-start",
        str(push_start),
        "--push-end",
        "-1",
        "--output",
        str(png),
        "--summary",
        str(summary_path),
        "--log-dir",
        str(tmp_path / "logs"),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert png.is_file() and png.stat().st_size > 20_000
    summary = json.loads(summary_path.read_text())
    steps = int(round(duration * 1000)) + 1
    assert summary["states_published"] == steps
    assert summary["states_answered_by_controller"] == steps
    assert summary["commands_missed"] == 0
    assert summary["command_age_ms"]["max"] == pytest.approx(1.0)  # one step, every time
    assert summary["tracking"]["settled"]["max_abs_rad"] < 2e-3
    assert summary["tracking"]["push"]["max_abs_rad"] > 1e-2
    assert summary["node_messages"] > 0
    # The node's observer (coriolis_state.external_effort) finds the push applied in MuJoCo
    # (20 N on link4: its joint torques J(q)ᵀ f change as the arm moves).
    assert summary["node_messages_at_plant_stamps"] > 0.5 * summary["node_messages"]
    node = summary["node_observer"]
    peak = node["applied_max"]
    assert peak > 3.0
    assert node["error_max"] < 0.05 * peak
    assert node["error_vs_first_order_max"] < 0.02 * peak
    assert node["before_push_max_abs"] < 0.01 * peak
    assert node["rise_time_s"] == pytest.approx(1.0 / 50.0, abs=3e-3)
    assert summary["node_minus_offline_max"] < 1e-6
    # The energy balance of the closed loop, on the states that went over ROS.
    balance = summary["energy_balance"]
    assert balance["push_supply_J"] > 0.5
    assert balance["residual_max_J"] < 1e-5 * balance["scale_J"]
    assert summary["plant_energy_balance"]["residual_max_J"] < 1e-8

    # The ROS loop is the in-process loop: same states to rounding, so the transport lost or
    # reordered nothing and every command was applied one step late.
    plant_log = dict(np.load(tmp_path / "logs" / "plant.npz"))
    sim_plant, _ = analysis.simulate(Scenario(push_start=push_start, push_end=None), duration)
    np.testing.assert_allclose(plant_log["q"], sim_plant["q"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(plant_log["tau"], sim_plant["tau"], rtol=0, atol=1e-7)
