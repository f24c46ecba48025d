"""The node's momentum observer, effort pass-through, reset_observer and the Slotine-Li answer.

* A simulated arm (the passivity demo's RK4 plant, a PD + gravity controller, a 10 N·m push on
  joint2) streamed into the node with its applied torque as effort while the node publishes at
  only 50 Hz (update_rate), so most inputs are skipped for output: every input is integrated
  (the node's count), each published external_effort equals the library's MomentumObserver run
  offline over *all* inputs at that stamp, the estimate converges to the push, and effort is
  the input's.
* Effort missing for some joints (empty, or NaN for two joints) pauses the observer with a
  message naming them; a stamp gap beyond observer_max_gap resets it (message, estimate back
  to zero); the reset_observer service; switching the observer off at run time; bad gains.
* compute_dynamics answers M q̈_r + C q̇_r + g for a reference (checked against Pinocchio) and
  refuses incomplete or bad references.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import (  # noqa: E402
    NodeProcess,
    Peer,
    PinReference,
    diag_values,
    small_robot_urdf,
    stamp_ns,
    write_params_file,
)

from coriolis_ros.demo.passivity_plant import Push, RigidBodyPlant  # noqa: E402
from coriolis_ros.dynamics import Dynamics, MomentumObserver  # noqa: E402
from coriolis_ros.robots import robot_urdf  # noqa: E402

EPOCH_NS = 1_700_000_000_000_000_000
GAIN = 40.0
PUSH = 10.0


def _simulated_states(count: int):
    """(stamp_ns, q, qd, tau) of arm7 held by gravity compensation + PD, pushed on joint2."""
    dyn = Dynamics.from_urdf(robot_urdf("arm7"))
    q0 = np.array([0.1, 0.4, -0.2, -1.2, 0.3, 0.8, 0.0])
    plant = RigidBodyPlant(dyn, q0, np.zeros(7), 1e-3, Push(joint=1, torque=PUSH, start=0.3))
    states = []
    for k in range(count):
        q, qd = plant.q.copy(), plant.qd.copy()
        tau = dyn.gravity(q) - 30.0 * (q - q0) - 3.0 * qd
        states.append((EPOCH_NS + k * 1_000_000, q, qd, tau))
        plant.step(tau)
    return dyn, states


def _set_params(peer, **values):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    params = []
    for name, value in values.items():
        if isinstance(value, bool):
            v = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
        elif isinstance(value, list):
            v = ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=value)
        else:
            v = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
        params.append(Parameter(name=name, value=v))
    client = peer.client(SetParameters, "/coriolis/set_parameters")
    return peer.call(client, SetParameters.Request(parameters=params)).results


def test_observer_integrates_every_input_while_outputs_are_skipped(ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    count = 1000
    dyn, states = _simulated_states(count)
    names = list(dyn.joint_names)
    params = {
        "robot_description": robot_urdf("arm7"),
        "observer_enabled": True,
        "observer_gain": GAIN,
        "update_rate": 50.0,  # outputs at 50 Hz: most inputs are skipped for output
        "input_queue_depth": 5000,
        "output_queue_depth": 1000,
        "diagnostics_period": 0.2,
    }
    params_file = write_params_file(tmp_path / "params.yaml", params)
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params_file=params_file)
        try:
            node.wait_ready("arm7")
            node.wait_for_log(r"momentum observer on arm7: K_O 40 1/s, max gap 0\.1 s")
            peer.collect_states(depth=1000)
            peer.collect_diagnostics()
            js = peer.joint_state_publisher(depth=1000)
            peer.wait_matched(js)
            # Prime the connection with a state without effort (observer paused, so it
            # integrates nothing) until the node answers.
            _, q, qd, _ = states[0]
            priming = peer.joint_state(names, q, qd, stamp_ns=EPOCH_NS - 10**9)
            first = peer.send_until_state(js, priming)
            assert len(first.effort) == 0 and len(first.external_effort) == 0
            node.wait_for_log(r"momentum observer paused: joint_states without effort for 7")
            peer.clear()

            start = time.monotonic()
            for k, (stamp, q, qd, tau) in enumerate(states):  # 500 Hz, paced
                js.publish(peer.joint_state(names, q, qd, tau, stamp_ns=stamp))
                delay = start + (k + 1) / 500.0 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)

            def integrated_all():
                d = peer.last_diagnostic()
                values = diag_values(d) if d is not None else {}
                return values if values.get("observer_integrated_total") == str(count) else None

            values = peer.wait_for(integrated_all, 20.0, "every input integrated")
            assert float(values["observer_resets_total"]) == 0
            assert int(values["skipped"]) > count // 2  # most inputs had no output of their own
            last_stamp = states[-1][0]
            peer.wait_for_state(lambda m: stamp_ns(m.header.stamp) == last_stamp, 10.0)
        finally:
            assert node.stop() == 0

    offline = MomentumObserver(dyn, GAIN)
    expected = {
        stamp: offline.update((stamp - EPOCH_NS) * 1e-9, q, qd, tau).copy()
        for stamp, q, qd, tau in states
    }
    efforts = {stamp: tau for stamp, _, _, tau in states}
    outputs = [(stamp_ns(m.header.stamp), m) for m, _ in peer.received()]
    outputs = [(s, m) for s, m in outputs if s in expected]
    assert 40 <= len(outputs) < count // 2  # ~50 Hz over 2 s, far fewer than the inputs
    for stamp, msg in outputs:
        np.testing.assert_array_equal(msg.effort, efforts[stamp])
        np.testing.assert_allclose(msg.external_effort, expected[stamp], rtol=0, atol=1e-9)
    final = np.asarray(outputs[-1][1].external_effort)
    push = np.zeros(7)
    push[1] = PUSH
    np.testing.assert_allclose(final, push, rtol=0, atol=0.05)  # 28 time constants after
    assert abs(expected[states[299][0]][1]) < 0.05  # nothing before the push


def test_observer_pause_gap_reset_service_and_parameters(ros_domain_env, tmp_path):
    from std_srvs.srv import Trigger

    domain_id, env = ros_domain_env
    urdf = small_robot_urdf("tiny", "tj")
    dyn = Dynamics.from_urdf(urdf)
    names = list(dyn.joint_names)
    n = len(names)
    params = {
        "robot_description": urdf,
        "observer_enabled": True,
        "observer_gain": [10.0, 20.0, 30.0, 40.0],
        "observer_max_gap": 0.1,
        "warning_period": 0.0,  # every message logged (no throttling) for the test
    }
    params_file = write_params_file(tmp_path / "params.yaml", params)
    rng = np.random.default_rng(7)
    q, qd, tau = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-5, 5, n)
    stamp = [EPOCH_NS]

    def state(effort, dt_ns=1_000_000):
        stamp[0] += dt_ns
        return peer.joint_state(names, q, qd, effort, stamp_ns=stamp[0])

    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params_file=params_file)
        try:
            node.wait_ready("tiny")
            node.wait_for_log(r"momentum observer on tiny: K_O per joint 10, 20, 30, 40 1/s")
            peer.collect_states()
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            reset = peer.client(Trigger, "reset_observer")

            msg = peer.send_until_state(js, state(tau))
            np.testing.assert_array_equal(msg.effort, tau)
            np.testing.assert_array_equal(msg.external_effort, np.zeros(n))  # starts at 0
            msg = peer.send_until_state(js, state(tau))
            estimate = np.asarray(msg.external_effort)
            assert len(estimate) == n and np.abs(estimate).max() > 0  # integrating

            # No effort at all, then NaN for two joints: paused, both fields empty.
            mark = len(node.log())
            msg = peer.send_until_state(js, state(()))
            assert len(msg.effort) == 0 and len(msg.external_effort) == 0
            node.wait_for_log(
                r"momentum observer paused: joint_states without effort for 4 joint\(s\): "
                + ", ".join(names),
                start=mark,
            )
            partial = tau.copy()
            partial[[1, 3]] = math.nan
            mark = len(node.log())
            msg = peer.send_until_state(js, state(partial))
            assert len(msg.effort) == 0 and len(msg.external_effort) == 0
            node.wait_for_log(
                rf"without effort for 2 joint\(s\): {names[1]}, {names[3]}", start=mark
            )
            # Effort again within the gap: running again (the pause bridged, no reset).
            msg = peer.send_until_state(js, state(tau))
            assert len(msg.external_effort) == n and np.abs(msg.external_effort).max() > 0
            assert not node.has_log("momentum observer reset")

            # A gap beyond observer_max_gap: reset with a message, estimate back to zero.
            mark = len(node.log())
            msg = peer.send_until_state(js, state(tau, dt_ns=250_000_000))
            np.testing.assert_array_equal(msg.external_effort, np.zeros(n))
            node.wait_for_log(
                r"momentum observer reset: 0\.25 s between joint state stamps is more than "
                r"observer_max_gap \(0\.1 s\)",
                start=mark,
            )
            msg = peer.send_until_state(js, state(tau))
            assert np.abs(msg.external_effort).max() > 0

            # reset_observer: the next state starts from zero.
            r = peer.call(reset, Trigger.Request())
            assert r.success and "reset" in r.message
            msg = peer.send_until_state(js, state(tau))
            np.testing.assert_array_equal(msg.external_effort, np.zeros(n))

            # A gain list of the wrong length is refused when set (with the model's size); the
            # observer keeps running with its gains.
            (bad,) = _set_params(peer, observer_gain=[1.0, 2.0])
            assert not bad.successful and "observer_gain has 2 values but" in bad.reason
            assert not node.has_log("momentum observer not running")
            msg = peer.send_until_state(js, state(tau))
            assert len(msg.external_effort) == n and len(msg.effort) == n
            # Bad values are refused outright.
            (bad,) = _set_params(peer, observer_gain=-1.0)
            assert not bad.successful and "positive" in bad.reason
            (bad,) = _set_params(peer, observer_max_gap=0.0)
            assert not bad.successful

            # Switched off at run time: no estimate, the service says why; effort still passes.
            assert all(r.successful for r in _set_params(peer, observer_gain=5.0))
            assert all(r.successful for r in _set_params(peer, observer_enabled=False))
            node.wait_for_log(r"momentum observer stopped")
            r = peer.call(reset, Trigger.Request())
            assert not r.success and "observer_enabled" in r.message
            msg = peer.send_until_state(js, state(tau))
            assert len(msg.external_effort) == 0
            np.testing.assert_array_equal(msg.effort, tau)
        finally:
            assert node.stop() == 0


def test_compute_dynamics_answers_the_slotine_li_torque(ros_domain_env, tmp_path):
    from coriolis_ros.srv import ComputeDynamics

    domain_id, env = ros_domain_env
    urdf = small_robot_urdf("tiny", "tj")
    dyn = Dynamics.from_urdf(urdf)
    names = list(dyn.joint_names)
    n = len(names)
    ref = PinReference(urdf)
    rng = np.random.default_rng(11)
    q, qd = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    qd_r, qdd_r = rng.uniform(-1, 1, n), rng.uniform(-2, 2, n)
    params_file = write_params_file(tmp_path / "params.yaml", {"robot_description": urdf})
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params_file=params_file)
        try:
            node.wait_ready("tiny")
            client = peer.client(ComputeDynamics, "compute_dynamics")

            def call(**extra):
                request = ComputeDynamics.Request(
                    joint_names=names, position=q.tolist(), velocity=qd.tolist(), **extra
                )
                return peer.call(client, request)

            r = call()
            assert r.success and len(r.slotine_li_torque) == 0
            r = call(reference_velocity=qd_r.tolist(), reference_acceleration=qdd_r.tolist())
            assert r.success, r.message
            terms = ref.evaluate(names, q, qd)  # Pinocchio: an independent implementation
            M = np.asarray(terms["mass_matrix"]).reshape(n, n)
            C = np.asarray(terms["coriolis_matrix"]).reshape(n, n)
            expected = M @ qdd_r + C @ qd_r + np.asarray(terms["gravity_force"])
            np.testing.assert_allclose(r.slotine_li_torque, expected, rtol=1e-9, atol=1e-9)

            for extra, reason in (
                ({"reference_velocity": qd_r.tolist()}, "reference_acceleration has 0 values"),
                (
                    {"reference_velocity": qd_r[:2].tolist(),
                     "reference_acceleration": qdd_r.tolist()},
                    "reference_velocity has 2 values, the model has 4",
                ),
                (
                    {"reference_velocity": [math.nan] * n,
                     "reference_acceleration": qdd_r.tolist()},
                    "reference_velocity has NaN",
                ),
                (
                    {"reference_velocity": qd_r.tolist(),
                     "reference_acceleration": [1e51] * n},
                    "reference_acceleration has NaN, infinite or values beyond",
                ),
            ):  # fmt: skip
                r = call(**extra)
                assert not r.success and reason in r.message, r.message
                assert len(r.slotine_li_torque) == 0
            # the bound itself is accepted
            r = call(reference_velocity=[1e50] * n, reference_acceleration=[0.0] * n)
            assert r.success, r.message
        finally:
            assert node.stop() == 0
