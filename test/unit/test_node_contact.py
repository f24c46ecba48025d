"""Collision flag and contact wrenches from a residual (coriolis_ros.node.contact, ROS-free)."""

import time

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.node.contact import ContactMonitor
from coriolis_ros.robots import robot_path

DYN = Dynamics.from_urdf(robot_path("arm7"))
Q = np.array([0.3, -0.7, 0.2, -1.6, 0.4, 1.1, -0.3])


def test_a_wrench_at_the_tcp_is_recovered_from_the_residual_it_causes():
    w = np.array([3.0, -1.0, 5.0, 0.2, -0.1, 0.3])  # force (N), moment (N m), world axes
    J = DYN.frame_jacobian(Q, "tcp")  # independent of the code under test's least squares
    monitor = ContactMonitor(DYN, ["tcp", "link1"])
    result = monitor.update(Q, J.T @ w)
    got, cond = result.wrenches["tcp"]
    np.testing.assert_allclose(got, w, rtol=1e-9, atol=1e-9)
    assert 1.0 <= cond < 1e6
    assert "link1" in result.unobservable  # one joint below it: no 6-D wrench
    assert not result.in_collision  # no thresholds set


def test_joint_threshold_with_hysteresis_on_both_sides():
    monitor = ContactMonitor(DYN, [], joint_threshold=[1.0] * 7, release_ratio=0.5)
    r = np.zeros(7)
    r[3] = 1.0  # at the threshold: not over it
    assert not monitor.update(Q, r).in_collision
    r[3] = 1.0001
    hit = monitor.update(Q, r)
    assert hit.in_collision and hit.changed and "joint4" in hit.reason
    r[3] = 0.5001  # above the release level: still in collision, no change
    held = monitor.update(Q, r)
    assert held.in_collision and not held.changed and held.reason == ""
    r[3] = 0.5  # at the release level: released
    gone = monitor.update(Q, r)
    assert not gone.in_collision and gone.changed


def test_force_threshold_at_a_frame():
    J = DYN.frame_jacobian(Q, "tcp")
    monitor = ContactMonitor(DYN, ["tcp"], force_threshold=10.0, release_ratio=0.8)
    below = monitor.update(Q, J.T @ np.array([0.0, 0.0, 9.99, 0, 0, 0]))
    assert not below.in_collision
    above = monitor.update(Q, J.T @ np.array([0.0, 0.0, 10.01, 0, 0, 0]))
    assert above.in_collision and "force at tcp" in above.reason
    assert monitor.update(Q, J.T @ np.array([0.0, 8.5, 0.0, 0, 0, 0])).in_collision  # > 8 N
    assert not monitor.update(Q, J.T @ np.array([0.0, 7.9, 0.0, 0, 0, 0])).in_collision


def test_a_zero_threshold_switches_that_joint_off():
    monitor = ContactMonitor(DYN, [], joint_threshold=[0, 0, 0, 1.0, 0, 0, 0])
    assert not monitor.update(Q, np.array([50.0, 0, 0, 0.9, 0, 0, 0])).in_collision
    assert monitor.update(Q, np.array([0, 0, 0, 1.1, 0, 0, 0])).in_collision


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"frames": ["nowhere"]}, "unknown frame"),
        ({"joint_threshold": [1.0] * 6}, "has 6 values but the model has 7"),
        ({"joint_threshold": [-1.0]}, "finite and >= 0"),
        ({"joint_threshold": [np.nan]}, "finite and >= 0"),
        ({"force_threshold": -0.1}, ">= 0 N"),
        ({"force_threshold": np.inf}, ">= 0 N"),
        ({"release_ratio": 0.0}, r"\(0, 1\]"),
        ({"release_ratio": 1.0001}, r"\(0, 1\]"),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs, message):
    frames = kwargs.pop("frames", [])
    with pytest.raises(ValueError, match=message):
        ContactMonitor(DYN, frames, **kwargs)


def test_the_bounds_themselves_are_accepted():
    ContactMonitor(DYN, [], joint_threshold=[0.0], force_threshold=0.0, release_ratio=1.0)


def test_the_node_core_publishes_the_wrench_and_the_flag_from_its_observer():
    """A robot held still against a wrench at its tcp: the effort it applies is g - J^T w. The
    node's observer estimates J^T w, the contact monitor turns it into w and a collision."""
    from support.node_core_helpers import Core

    from coriolis_ros.robots import robot_urdf

    core = Core(robot_urdf("arm7"), observer_enabled=True, observer_gain=100.0,
                wrench_frames=["tcp"], collision_joint_threshold=[0.5])  # fmt: skip
    seen = []
    core.ticker.publish_contact = lambda stamp, result: seen.append(result)
    w = np.array([0.0, 0.0, -20.0, 0.0, 0.0, 0.0])  # a 20 N push down on the tool
    effort = DYN.gravity(Q) - DYN.frame_jacobian(Q, "tcp").T @ w
    names = list(DYN.joint_names)
    for k in range(300):  # 0.3 s at 1 kHz: 30 time constants
        core.joint_state(names, Q, np.zeros(7), effort, stamp_ns=1_000_000_000 + k * 1_000_000)
    assert seen, "no contact result published"
    last = seen[-1]
    np.testing.assert_allclose(last.wrenches["tcp"][0], w, atol=1e-6)
    assert last.in_collision
    assert sum(r.changed for r in seen) == 1  # one collision event, no chatter
    assert "collision: |r| of" in core.log.text()


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@pytest.mark.parametrize("where", ["contact", "publish"])
def test_the_scheduler_measures_the_state_tick_not_the_contact_stage(where):
    """The contact stage runs after the state is published: its CPU time is reported as a stage
    of its own and is not the tick cost that decides inline ticks; the publish is."""
    from support.node_core_helpers import Core

    from coriolis_ros.robots import robot_urdf

    core = Core(robot_urdf("arm7"), observer_enabled=True, wrench_frames=["tcp"])
    monitor = core.model.contact
    slow_update = monitor.update

    def update(q, r):
        _burn(0.004)
        return slow_update(q, r)

    if where == "contact":
        monitor.update = update
    else:
        publish = core.ticker.publish
        core.ticker.publish = lambda payload: (_burn(0.004), publish(payload))
    effort = DYN.gravity(Q)
    for k in range(60):
        core.joint_state(DYN.joint_names, Q, np.zeros(7), effort, 1_000_000_000 + k * 1_000_000)
    _, extra = core.state.snapshot(time.monotonic(), False, core.p)
    values = dict(extra)
    if where == "contact":
        assert values["stage_contact_mean_ms"] >= 4.0
        assert core.scheduler.cost_ema < 0.003  # 60 ticks of EMA 0.05 reach 95 % of a cost
    else:
        assert values["stage_contact_mean_ms"] < 4.0
        assert core.scheduler.cost_ema > 0.0038
