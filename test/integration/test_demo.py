"""Tests of the demo (coriolis_ros.demo) and the bundled robots (coriolis_ros.robots).

* ROS-free units: trajectory generation, monitor statistics/formatting, runner environment and
  argument handling, the publisher loop with a fake publisher.
* Bundled URDFs: physically valid inertias that match the documented primitives, total masses as
  stated in their derivation comments (checked with Pinocchio), positive definite mass matrices,
  and the same M / C qd from coriolis_ros.dynamics as from Pinocchio.
* The whole demo (`python -m coriolis_ros.demo`): runs for --duration and stops by itself, or
  stops on SIGINT, with exit 0, monitor lines showing output and a rounding-level residual, and
  no process left behind.
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from coriolis_ros.demo import run as demo_run
from coriolis_ros.demo.publisher import _run_loop, load_urdf
from coriolis_ros.demo.stats import (
    DiagnosticsSummary,
    MonitorStats,
    coriolis_norms,
    format_report,
    percentile,
    summarize_diagnostics,
)
from coriolis_ros.demo.trajectory import JointSpec, SinusoidTrajectory, dof_joints_from_urdf
from coriolis_ros.robots import available_robots, robot_path, robot_urdf

ROBOTS = ("arm7", "quadruped12")


# ============================================================================ robots helper


def test_available_robots_lists_both_models():
    assert set(ROBOTS) <= set(available_robots())


@pytest.mark.parametrize("name", ROBOTS)
def test_robot_path_and_text_agree(name):
    path = robot_path(name)
    assert path.is_file() and path.suffix == ".urdf"
    assert path.read_text(encoding="utf-8") == robot_urdf(name)
    assert ET.fromstring(robot_urdf(name)).get("name") == name


@pytest.mark.parametrize("bad", ["nope", "", "../arm7", "arm7.urdf"])
def test_unknown_robot_name_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="bundled robots: .*arm7"):
        robot_path(bad)
    with pytest.raises(ValueError):
        robot_urdf(bad)


# ============================================================================ URDF physics


def _rpy_matrix(rpy):
    r, p, y = rpy
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _origin(elem):
    origin = elem.find("origin")
    if origin is None:
        return np.zeros(3), np.zeros(3)
    xyz = np.array([float(v) for v in origin.get("xyz", "0 0 0").split()])
    rpy = np.array([float(v) for v in origin.get("rpy", "0 0 0").split()])
    return xyz, rpy


def _primitive_inertia(mass, geometry):
    """Inertia about the centre of a homogeneous primitive, in the geometry frame."""
    (shape,) = list(geometry)
    if shape.tag == "box":
        x, y, z = (float(v) for v in shape.get("size").split())
        return mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    if shape.tag == "cylinder":
        r, h = float(shape.get("radius")), float(shape.get("length"))
        perp = mass * (3 * r * r + h * h) / 12.0
        return np.diag([perp, perp, mass * r * r / 2.0])  # URDF cylinders lie along z
    if shape.tag == "sphere":
        r = float(shape.get("radius"))
        return np.eye(3) * 2.0 * mass * r * r / 5.0
    raise AssertionError(f"unexpected geometry {shape.tag}")


def _massive_links(name):
    root = ET.fromstring(robot_urdf(name))
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is not None:
            yield link, inertial


def _inertia_tensor(inertial):
    i = {k: float(v) for k, v in inertial.find("inertia").attrib.items()}
    return np.array(
        [
            [i["ixx"], i["ixy"], i["ixz"]],
            [i["ixy"], i["iyy"], i["iyz"]],
            [i["ixz"], i["iyz"], i["izz"]],
        ]
    )


@pytest.mark.parametrize("name", ROBOTS)
def test_link_inertias_are_physically_valid(name):
    links = list(_massive_links(name))
    assert len(links) >= 8
    for link, inertial in links:
        mass = float(inertial.find("mass").get("value"))
        assert mass > 0, link.get("name")
        tensor = _inertia_tensor(inertial)
        principal = np.linalg.eigvalsh(tensor)
        assert principal.min() > 0, link.get("name")
        a, b, c = principal
        assert a + b >= c and a + c >= b and b + c >= a, link.get("name")


@pytest.mark.parametrize("name", ROBOTS)
def test_link_inertias_match_their_visual_primitive(name):
    """Each massive link's inertia is that of its (single) visual primitive: the derivation."""
    for link, inertial in _massive_links(name):
        visuals = link.findall("visual")
        assert len(visuals) == 1, link.get("name")
        mass = float(inertial.find("mass").get("value"))
        com, com_rpy = _origin(inertial)
        centre, rpy = _origin(visuals[0])
        np.testing.assert_allclose(com, centre, atol=1e-12, err_msg=link.get("name"))
        rot_inertial = _rpy_matrix(com_rpy)
        rot_visual = _rpy_matrix(rpy)
        expected = rot_visual @ _primitive_inertia(mass, visuals[0].find("geometry")) @ rot_visual.T
        given = rot_inertial @ _inertia_tensor(inertial) @ rot_inertial.T
        np.testing.assert_allclose(given, expected, rtol=2e-5, atol=1e-10, err_msg=link.get("name"))


def _stated_masses(name):
    text = robot_urdf(name)
    total = re.search(r"Total mass:[^\n]*?([\d.]+) kg", text)
    moving = re.search(r"Moving links[^\n]*?([\d.]+) kg", text)
    assert total and moving, "derivation comment must state the total and moving masses"
    return float(total.group(1)), float(moving.group(1))


@pytest.mark.parametrize("name, dof", [("arm7", 7), ("quadruped12", 12)])
def test_pinocchio_loads_with_the_documented_masses(name, dof):
    model = pin.buildModelFromUrdf(str(robot_path(name)))
    assert model.nv == dof
    total, moving = _stated_masses(name)
    # inertias[0] holds what is welded to the fixed root; the rest move.
    assert sum(inertia.mass for inertia in model.inertias) == pytest.approx(total, rel=1e-12)
    assert pin.computeTotalMass(model) == pytest.approx(moving, rel=1e-12)
    low, high = {"arm7": (15.0, 20.0), "quadruped12": (18.0, 25.0)}[name]
    assert low <= total <= high


@pytest.mark.parametrize("name", ROBOTS)
def test_mass_matrix_positive_definite_at_random_states(name):
    model = pin.buildModelFromUrdf(str(robot_path(name)))
    data = model.createData()
    joints = dof_joints_from_urdf(robot_urdf(name))
    names = [j.name for j in joints]
    rng = np.random.default_rng(7)
    for _ in range(50):
        q = rng.uniform([j.lower for j in joints], [j.upper for j in joints])
        q_pin, _, _ = _pinocchio_state(model, names, q, np.zeros(len(q)))
        mass = pin.crba(model, data, q_pin)
        mass = np.triu(mass) + np.triu(mass, 1).T
        assert np.linalg.eigvalsh(mass).min() > 1e-5


def _pinocchio_state(model, joint_names, q, qd):
    """Pinocchio (q, v) for joint-ordered q/qd (continuous joints as cos/sin)."""
    q_pin = np.zeros(model.nq)
    v_pin = np.zeros(model.nv)
    for i, name in enumerate(joint_names):
        jid = model.getJointId(name)
        iq, iv, nq = model.idx_qs[jid], model.idx_vs[jid], model.nqs[jid]
        if nq == 2:
            q_pin[iq : iq + 2] = (math.cos(q[i]), math.sin(q[i]))
        else:
            q_pin[iq] = q[i]
        v_pin[iv] = qd[i]
    perm = [model.idx_vs[model.getJointId(name)] for name in joint_names]
    return q_pin, v_pin, perm


@pytest.mark.parametrize("name", ROBOTS)
def test_dynamics_library_loads_the_robots_like_pinocchio(name):
    from coriolis_ros.dynamics import Dynamics

    dyn = Dynamics.from_urdf(str(robot_path(name)))
    assert dyn.name == name
    assert set(dyn.joint_names) == {j.name for j in dof_joints_from_urdf(robot_urdf(name))}
    model = pin.buildModelFromUrdf(str(robot_path(name)))
    data = model.createData()
    traj = SinusoidTrajectory(dof_joints_from_urdf(robot_urdf(name)), seed=3)
    order = [traj.names.index(j) for j in dyn.joint_names]
    for t in (0.0, 1.7, 4.2):
        q, qd = traj.sample(t)
        q, qd = q[order], qd[order]
        q_pin, v_pin, perm = _pinocchio_state(model, dyn.joint_names, q, qd)
        mass = pin.crba(model, data, q_pin)
        mass = np.triu(mass) + np.triu(mass, 1).T
        np.testing.assert_allclose(dyn.mass_matrix(q), mass[np.ix_(perm, perm)], atol=1e-10)
        gravity = pin.computeGeneralizedGravity(model, data, q_pin)
        coriolis_force = pin.rnea(model, data, q_pin, v_pin, np.zeros(model.nv)) - gravity
        m, mdot, c = dyn.coriolis(q, qd)
        np.testing.assert_allclose(c @ qd, coriolis_force[perm], atol=1e-10)
        np.testing.assert_allclose(mdot, c + c.T, atol=1e-10)
        assert np.linalg.norm(c) > 1e-3  # the demo trajectory moves: C is not trivially zero


# ============================================================================ trajectory


@pytest.mark.parametrize("name", ROBOTS)
def test_trajectory_stays_inside_limits_and_speed(name):
    joints = dof_joints_from_urdf(robot_urdf(name))
    traj = SinusoidTrajectory(joints, seed=11)
    lower = np.array([j.lower for j in joints])
    upper = np.array([j.upper for j in joints])
    speed = np.array([j.velocity for j in joints])
    times = np.random.default_rng(0).uniform(0, 3600, size=2000)
    for t in times:
        q, qd = traj.sample(t)
        assert np.all(q > lower) and np.all(q < upper)
        assert np.all(np.abs(qd) <= 0.9 * speed + 1e-12)


def test_trajectory_velocity_and_acceleration_are_derivatives():
    traj = SinusoidTrajectory(dof_joints_from_urdf(robot_urdf("arm7")), seed=5)
    h = 1e-5
    for t in (0.0, 0.37, 12.5, 301.0):
        q, qd = traj.sample(t)
        np.testing.assert_array_equal(q, traj.position(t))
        np.testing.assert_allclose(qd, traj.velocity(t), rtol=1e-12, atol=1e-14)
        fd_v = (traj.position(t + h) - traj.position(t - h)) / (2 * h)
        fd_a = (traj.velocity(t + h) - traj.velocity(t - h)) / (2 * h)
        np.testing.assert_allclose(qd, fd_v, atol=1e-7)
        np.testing.assert_allclose(traj.acceleration(t), fd_a, atol=1e-7)


def test_trajectory_moves_every_joint_and_depends_on_seed():
    joints = dof_joints_from_urdf(robot_urdf("quadruped12"))
    a = SinusoidTrajectory(joints, seed=1)
    b = SinusoidTrajectory(joints, seed=1)
    c = SinusoidTrajectory(joints, seed=2)
    np.testing.assert_array_equal(a.position(3.0), b.position(3.0))
    assert not np.allclose(a.position(3.0), c.position(3.0))
    samples = np.array([a.position(t) for t in np.linspace(0, 60, 600)])
    assert np.all(samples.max(axis=0) - samples.min(axis=0) > 0.05)


def test_trajectory_slows_down_to_respect_a_tight_velocity_limit():
    slow = [JointSpec("j", "revolute", -1.0, 1.0, 0.01)]
    traj = SinusoidTrajectory(slow, seed=0, freq_range=(1.0, 2.0))
    speeds = [abs(traj.velocity(t)[0]) for t in np.linspace(0, 1000, 5001)]
    assert max(speeds) <= 0.9 * 0.01 + 1e-15
    assert max(speeds) > 0.0


def test_dof_joints_from_urdf_reads_types_limits_and_order():
    joints = dof_joints_from_urdf(robot_urdf("arm7"))
    assert [j.name for j in joints] == [f"joint{i}" for i in range(1, 8)]
    assert joints[3] == JointSpec("joint4", "revolute", -3.0, -0.1, 2.2)
    assert joints[6].type == "continuous"
    assert (joints[6].lower, joints[6].upper) == (-math.pi, math.pi)
    names = [j.name for j in dof_joints_from_urdf(robot_urdf("quadruped12"))]
    assert len(names) == 12 and "FL_knee_joint" in names and "FL_foot_joint" not in names


def test_dof_joints_from_urdf_defaults_for_missing_limits():
    urdf = """<robot name="r"><link name="a"/><link name="b"/><link name="c"/>
      <joint name="p" type="prismatic"><parent link="a"/><child link="b"/></joint>
      <joint name="r" type="revolute"><parent link="b"/><child link="c"/>
        <limit lower="0" upper="0" effort="1" velocity="0"/></joint></robot>"""
    p, r = dof_joints_from_urdf(urdf)
    assert (p.type, p.lower, p.upper, p.velocity) == ("prismatic", -0.1, 0.1, 0.5)
    assert (r.lower, r.upper, r.velocity) == (-math.pi, math.pi, 2.0)


@pytest.mark.parametrize(
    "urdf, match",
    [
        ("<robot", "well-formed"),
        ("<model name='x'/>", "root element"),
        ("<robot><joint type='revolute'/></robot>", "without a name"),
        ("<robot><joint name='a' type='fixed'/><joint name='a' type='fixed'/></robot>", "two"),
        (
            "<robot><joint name='a' type='revolute'><limit lower='x' upper='1'/></joint></robot>",
            "not a number",
        ),
        (
            "<robot><joint name='a' type='revolute'><limit lower='1' upper='-1'/></joint></robot>",
            "empty range",
        ),
        (
            "<robot><joint name='a' type='revolute'><limit lower='nan' upper='1'/></joint></robot>",
            "not finite",
        ),
    ],
)
def test_dof_joints_from_urdf_rejects_bad_input(urdf, match):
    with pytest.raises(ValueError, match=match):
        dof_joints_from_urdf(urdf)


def test_trajectory_rejects_bad_arguments():
    joints = dof_joints_from_urdf(robot_urdf("arm7"))
    with pytest.raises(ValueError):
        SinusoidTrajectory([])
    with pytest.raises(ValueError):
        SinusoidTrajectory(joints, margin=1.0)
    with pytest.raises(ValueError):
        SinusoidTrajectory(joints, freq_range=(0.0, 1.0))
    with pytest.raises(ValueError):
        SinusoidTrajectory(joints, components=0)
    with pytest.raises(ValueError):
        SinusoidTrajectory(joints).sample(float("nan"))
    with pytest.raises(ValueError):
        JointSpec("j", "floating", -1, 1, 1)


# ============================================================================ publisher loop


class _FakeTime:
    def __init__(self, ns):
        self.ns = ns

    def to_msg(self):
        return self.ns


class _FakeClock:
    def __init__(self):
        self.ns = 0

    def now(self):
        self.ns += 1000
        return _FakeTime(self.ns)


class _FakeNode:
    def __init__(self):
        self.clock = _FakeClock()

    def get_clock(self):
        return self.clock


class _Header:
    stamp = None


class _FakeJointState:
    def __init__(self):
        self.header = _Header()
        self.name = []
        self.position = []
        self.velocity = []


class _FakeMonotonic:
    """A monotonic clock that only advances when the loop sleeps (or a test says so)."""

    def __init__(self, start=1000.0):
        self.now = start

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        assert seconds > 0
        self.now += seconds


class _RecordingPublisher:
    def __init__(self, clock, stop_after=None, lag_at=None, lag=0.0):
        self.clock = clock
        self.sent = []
        self.stop_after = stop_after
        self.lag_at, self.lag = lag_at, lag
        self.stop = []

    def publish(self, msg):
        self.sent.append(
            (self.clock(), msg.header.stamp, list(msg.name), list(msg.position), list(msg.velocity))
        )
        if len(self.sent) == self.lag_at:
            self.clock.now += self.lag  # the process was descheduled for a while
        if self.stop_after is not None and len(self.sent) >= self.stop_after:
            self.stop.append("done")


def _loop(traj, rate, duration=None, poll=None, **publisher_args):
    clock = _FakeMonotonic()
    pub = _RecordingPublisher(clock, **publisher_args)
    _run_loop(
        _FakeNode(),
        pub,
        traj,
        rate=rate,
        duration=duration,
        stop=pub.stop,
        msg_type=_FakeJointState,
        poll=None if poll is None else (lambda: poll(clock() - 1000.0)),
        monotonic=clock,
        sleep=clock.sleep,
    )
    t0 = 1000.0
    return [(t - t0, *rest) for t, *rest in pub.sent]


def test_publisher_loop_sends_trajectory_samples_at_the_rate():
    traj = SinusoidTrajectory(dof_joints_from_urdf(robot_urdf("quadruped12")), seed=4)
    sent = _loop(traj, rate=500.0, stop_after=40)
    assert len(sent) == 40
    times = np.array([s[0] for s in sent])
    np.testing.assert_allclose(times, np.arange(40) / 500.0, atol=1e-9)
    stamps = [s[1] for s in sent]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    for t, _, names, q, qd in sent:
        assert names == list(traj.names)
        np.testing.assert_allclose(q, traj.position(t), rtol=0, atol=1e-12)
        np.testing.assert_allclose(qd, traj.velocity(t), rtol=0, atol=1e-12)


def test_publisher_loop_polls_for_new_description_subscribers_every_half_second():
    traj = SinusoidTrajectory(dof_joints_from_urdf(robot_urdf("arm7")), seed=0)
    polled = []
    sent = _loop(traj, rate=100.0, duration=1.6, poll=polled.append)
    assert len(sent) == 160
    np.testing.assert_allclose(polled, [0.0, 0.5, 1.0, 1.5], atol=1e-9)


def test_publisher_loop_honours_duration():
    traj = SinusoidTrajectory(dof_joints_from_urdf(robot_urdf("arm7")), seed=0)
    sent = _loop(traj, rate=1000.0, duration=0.0505)
    assert len(sent) == 51  # t = 0, 1, ..., 50 ms


def test_publisher_loop_skips_ahead_instead_of_bursting_after_a_stall():
    traj = SinusoidTrajectory(dof_joints_from_urdf(robot_urdf("arm7")), seed=0)
    sent = _loop(traj, rate=500.0, stop_after=20, lag_at=5, lag=0.5)
    times = np.diff([s[0] for s in sent])
    assert times[4] >= 0.5  # the stall itself
    assert np.all(times[5:] >= 1 / 500.0 - 1e-9)  # no burst of catch-up messages afterwards


def test_load_urdf_accepts_names_and_files(tmp_path):
    assert load_urdf("arm7") == robot_urdf("arm7")
    custom = tmp_path / "mine.urdf"
    custom.write_text("<robot name='mine'/>", encoding="utf-8")
    assert load_urdf(str(custom)) == "<robot name='mine'/>"
    with pytest.raises(ValueError, match="unknown robot"):
        load_urdf("not_a_robot")
    with pytest.raises(ValueError, match="cannot read"):
        load_urdf(str(tmp_path / "missing.urdf"))


# ============================================================================ monitor statistics


def test_percentile_interpolates():
    values = list(range(1, 101))
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([3.0], 99) == 3.0
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_coriolis_norms():
    c = [0.0, 1.0, 2.0, 0.0]  # C = [[0, 1], [2, 0]]
    mdot = [0.0, 3.0, 3.0, 0.0]  # C + C^T
    c_norm, residual = coriolis_norms(2, c, mdot)
    assert c_norm == pytest.approx(math.sqrt(5.0))
    assert residual == 0.0
    _, residual = coriolis_norms(2, c, [1e-3, 3.0, 3.0, 0.0])
    assert residual == pytest.approx(1e-3)
    _, residual = coriolis_norms(2, c, [])
    assert math.isnan(residual)
    with pytest.raises(ValueError, match="coriolis_matrix"):
        coriolis_norms(2, c[:3], mdot)
    with pytest.raises(ValueError, match="mass_matrix_derivative"):
        coriolis_norms(2, c, mdot[:3])
    with pytest.raises(ValueError, match="non-finite"):
        coriolis_norms(2, [0.0, float("nan"), 0.0, 0.0], mdot)
    with pytest.raises(ValueError):
        coriolis_norms(-1, [], [])


def test_summarize_diagnostics_reads_the_node_keys():
    values = [
        ("robot", "arm7"),
        ("input_rate_hz", "499.5"),
        ("output_rate_hz", "498"),
        ("compute_time_mean_ms", "0.125"),
        ("compute_time_max_ms", "0.9"),
    ]
    s = summarize_diagnostics(values)
    assert s.input_rate_hz == 499.5 and s.output_rate_hz == 498.0
    assert s.compute_time_s == pytest.approx(0.125e-3)
    assert math.isnan(s.published) and math.isnan(s.skipped)  # keys absent
    counters = [("received", "1010"), ("published", "1000"), ("skipped", "7")]
    s = summarize_diagnostics([*values, *counters])
    assert (s.published, s.skipped) == (1000.0, 7.0)
    # the counters alone identify the node's status too
    assert summarize_diagnostics([("skipped", "3")]).skipped == 3.0
    s = summarize_diagnostics([("input_rate_hz", "nan"), ("compute_time_mean_ms", "fast")])
    assert math.isnan(s.input_rate_hz) and math.isnan(s.compute_time_s)
    assert math.isnan(s.output_rate_hz)
    assert summarize_diagnostics([("Hardware ID", "x")]) is None


def test_monitor_stats_window():
    sec = 1_000_000_000
    stats = MonitorStats(start_ns=10 * sec)
    c = np.array([[0.0, 2.0], [-1.0, 0.5]])
    for i in range(40):
        receive = 10 * sec + i * sec // 40
        mdot = c + c.T
        if i == 39:
            mdot = mdot + np.diag([1e-6, 0.0])
        stats.add_state(receive, receive - (i + 1) * 100_000, 2, c.ravel(), mdot.ravel())
    stats.add_state(11 * sec, 11 * sec, 2, [1.0], [])  # malformed: counted as bad
    for _ in range(30):
        stats.add_input()
    stats.set_diagnostics(DiagnosticsSummary(480.0, 470.0, 2e-4))
    rep = stats.report(12 * sec, count_inputs=True)
    assert rep.elapsed_s == pytest.approx(2.0)
    assert rep.output_rate_hz == pytest.approx(41 / 2.0)
    assert rep.input_rate_hz == pytest.approx(15.0)
    assert rep.bad_messages == 1
    assert rep.n == 2
    assert rep.c_norm == pytest.approx(math.sqrt(4 + 1 + 0.25))
    assert rep.residual_max == pytest.approx(1e-6)
    latencies = [(i + 1) * 1e-4 for i in range(40)]
    assert rep.latency_p50_s == pytest.approx(np.percentile(latencies, 50))
    assert rep.latency_p99_s == pytest.approx(np.percentile(latencies, 99))
    assert rep.compute_time_s == pytest.approx(2e-4)
    # the next window starts empty; the input rate now comes from diagnostics
    assert rep.received_total == 41
    rep = stats.report(13 * sec)
    assert rep.output_rate_hz == 0.0 and rep.input_rate_hz == 480.0 and rep.bad_messages == 0
    assert rep.received_total == 41  # a total, not per window
    assert math.isnan(rep.latency_p50_s) and math.isnan(rep.residual_max)
    with pytest.raises(ValueError):
        stats.report(13 * sec)


LINE_RE = re.compile(r"^\[coriolis monitor\] (t=.+)$")


def _fields(text):
    return dict(item.split("=", 1) for item in text.split())


def test_format_report_fields():
    stats = MonitorStats(0)
    stats.add_state(2_000_000, 1_000_000, 1, [0.5], [1.0])
    stats.set_diagnostics(DiagnosticsSummary(500.0, 499.0, 1.5e-4, published=812, skipped=3))
    line = format_report(stats.report(1_000_000_000))
    assert line.isascii()
    f = _fields(line)
    assert f["received"] == "1" and f["node_published"] == "812" and f["node_skipped"] == "3"
    assert f["t"] == "1.0s" and f["n"] == "1" and f["in"] == "500.0Hz" and f["out"] == "1.0Hz"
    assert f["latency_p50"] == "1.00ms" and f["compute"] == "0.150ms"
    assert float(f["|C|_F"]) == 0.5 and float(f["|Mdot-C-C^T|"]) == 0.0
    empty = _fields(format_report(MonitorStats(0).report(1)))
    assert empty["n"] == empty["in"] == empty["latency_p99"] == empty["|C|_F"] == "n/a"
    assert empty["received"] == "0" and empty["node_skipped"] == "n/a"


# ============================================================================ runner units


def test_demo_environment_forces_loopback_and_explicit_domain():
    env, notes = demo_run.demo_environment({"PATH": "/bin"})
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert env["ROS_DOMAIN_ID"] == "0" and env["PATH"] == "/bin"
    assert any("ROS_DOMAIN_ID" in n for n in notes)
    for wider in ("SUBNET", "SYSTEM_DEFAULT", "bogus"):
        env, notes = demo_run.demo_environment(
            {
                "ROS_AUTOMATIC_DISCOVERY_RANGE": wider,
                "ROS_DOMAIN_ID": "42",
                "ROS_STATIC_PEERS": "192.0.2.1",
            }
        )
        assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
        assert env["ROS_DOMAIN_ID"] == "42" and "ROS_STATIC_PEERS" not in env
        assert len(notes) == 2
    for narrow in ("LOCALHOST", "OFF"):
        env, notes = demo_run.demo_environment(
            {"ROS_AUTOMATIC_DISCOVERY_RANGE": narrow, "ROS_DOMAIN_ID": "7"}
        )
        assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == narrow and notes == []
    for bad in ("abc", "-1", "233"):
        with pytest.raises(ValueError, match="ROS_DOMAIN_ID"):
            demo_run.demo_environment({"ROS_DOMAIN_ID": bad})


REPO = Path(__file__).resolve().parents[2]


def _domain_under_run_sh(env):
    """(ROS_DOMAIN_ID, pid) seen by a command that `scripts/run.sh` (used by `make demo`) runs."""
    code = "import os; print(os.environ['ROS_DOMAIN_ID'], os.getpid())"
    out = subprocess.run(
        [str(REPO / "scripts" / "run.sh"), "python", "-c", code],
        env={**env, "CORIOLIS_VENV": sys.prefix},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    domain, pid = out.stdout.split()
    return int(domain), int(pid)


def test_make_demo_domain_is_what_the_demo_readme_says():
    """run.sh execs the command, so its $$ is the command's pid: the domain is pid % 100 + 1."""
    if not (Path(sys.prefix) / "bin" / "activate").is_file():
        pytest.skip("scripts/run.sh (make demo) runs in the project's venv; this is not a venv")
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}
    domain, pid = _domain_under_run_sh(env)
    assert domain == pid % 100 + 1 and 1 <= domain <= 100
    fixed, _ = _domain_under_run_sh({**env, "ROS_DOMAIN_ID": "42"})
    assert fixed == 42
    readme = (REPO / "coriolis_ros" / "demo" / "README.md").read_text()
    assert "`$$ % 100 + 1`" in readme and "1..100" in readme
    assert "ROS_DOMAIN_ID=42 make demo" in readme
    assert "the ROS default 0" in readme  # python -m coriolis_ros.demo without ROS_DOMAIN_ID
    # ... which is what the runner does (checked in test_demo_environment_...)


def test_demo_rejects_bad_arguments_before_starting_anything(capsys):
    assert demo_run.main(["--robot", "no_such_robot"]) == 2
    assert "unknown robot" in capsys.readouterr().err
    for args in (["--duration", "-1"], ["--duration", "nan"], ["--rate", "0"]):
        with pytest.raises(SystemExit) as exc:
            demo_run.main(args)
        assert exc.value.code == 2


# ============================================================================ the whole demo


@pytest.fixture(scope="module")
def warm_kernels():
    """Compile (or load from the on-disk cache) the kernels the node warms at model load
    before the demo runs: a cold compile takes longer than the demo's --duration (the node
    warms the frame and task-space kernels too, for its services)."""
    from coriolis_ros.dynamics import Dynamics

    for name in ROBOTS:
        dyn = Dynamics.from_urdf(str(robot_path(name)))
        dyn.warmup()
        dyn.warmup_frames()


def _demo_command(*args):
    return [sys.executable, "-m", "coriolis_ros.demo", *args]


def _monitor_lines(output):
    lines = []
    for line in output.splitlines():
        m = LINE_RE.match(line.strip())
        if m:
            lines.append(_fields(m.group(1)))
    return lines


def _child_pids(output):
    return [
        int(p)
        for p in re.findall(r"^\[coriolis demo\] started .+ \(pid (\d+)\)$", output, re.MULTILINE)
    ]


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _processes_in_domain(domain_id):
    """Live processes running coriolis_ros code with our ROS_DOMAIN_ID (grandchildren too)."""
    found = []
    marker = f"ROS_DOMAIN_ID={domain_id}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if b"coriolis_ros" in cmdline and marker in environ and _alive(int(entry)):
            found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found


def _check_monitor_output(output, dof):
    lines = _monitor_lines(output)
    assert lines, f"the monitor printed nothing:\n{output}"
    active = [f for f in lines if f["out"] != "n/a" and float(f["out"].removesuffix("Hz")) > 0]
    assert active, f"no monitor line with a non-zero output rate:\n{output}"
    for f in active:
        assert f["n"] == str(dof)
        assert float(f["|Mdot-C-C^T|"]) < 1e-9, f
        assert f["latency_p50"].endswith("ms") and f["latency_p99"].endswith("ms")
    # the trajectory moves the robot, so C is not zero; the node's diagnostics give compute time
    assert any(float(f["|C|_F"]) > 0 for f in active), f"C is identically zero:\n{output}"
    assert any(f["compute"] != "n/a" for f in active), f"no compute time:\n{output}"
    # the monitor's own total next to the node's published/skipped totals (its diagnostics)
    received = [int(f["received"]) for f in lines]
    assert received == sorted(received) and received[-1] > 0, output
    counted = [f for f in active if f["node_skipped"] != "n/a"]
    assert counted, f"no node_skipped from the node's diagnostics:\n{output}"
    for f in counted:
        assert int(f["node_skipped"]) >= 0 and int(f["node_published"]) >= 0, f
    assert max(int(f["node_published"]) for f in counted) > 0, output
    return active


@pytest.mark.parametrize("name, dof", [("arm7", 7), ("quadruped12", 12)])
def test_demo_runs_for_duration_and_exits_cleanly(
    name, dof, ros_domain_env, warm_kernels, tmp_path
):
    domain_id, env = ros_domain_env
    proc = subprocess.run(
        _demo_command("--robot", name, "--duration", "10"),
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    output = proc.stdout
    assert proc.returncode == 0, output
    assert "all processes stopped cleanly" in output
    assert f"ROS_DOMAIN_ID={domain_id}," in output  # says which domain it uses
    assert len(_child_pids(output)) == 3
    _check_monitor_output(output, dof)
    assert not [p for p in _child_pids(output) if _alive(p)]
    assert _processes_in_domain(domain_id) == []


def test_demo_stops_cleanly_on_sigint(ros_domain_env, warm_kernels, tmp_path):
    domain_id, env = ros_domain_env
    proc = subprocess.Popen(
        _demo_command("--robot", "arm7"),
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    chunks = []
    producing = threading.Event()

    def reader():
        for line in proc.stdout:
            chunks.append(line)
            m = LINE_RE.match(line.strip())
            if m and _fields(m.group(1))["out"] not in ("n/a", "0.0Hz"):
                producing.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        producing.wait(timeout=90)
        assert producing.is_set(), "".join(chunks)
        # let it run a little past the first output, then stop it like Ctrl-C would
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        returncode = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    thread.join(timeout=10)
    output = "".join(chunks)
    assert returncode == 0, output
    assert "stop requested" in output and "all processes stopped cleanly" in output
    pids = _child_pids(output)
    assert len(pids) == 3
    assert not [p for p in pids if _alive(p)], output
    assert _processes_in_domain(domain_id) == []
    _check_monitor_output(output, 7)
