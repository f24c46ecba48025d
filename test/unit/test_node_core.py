"""The node's ROS-free core (intake, scheduler, tick, services, builder, reports) without ROS:
wired as the node wires it (node_core_helpers.Core), checked against the library."""

import threading
import time
from types import SimpleNamespace

import numpy as np

from support.node_core_helpers import Core, ListLog
from support.ros_helpers import library_terms, small_robot_urdf

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.node.reports import Reporter
from coriolis_ros.node.scheduler import Scheduler
from support.node_core import XACRO

URDF = small_robot_urdf()


def _state(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)


def test_a_joint_state_is_published_with_the_library_terms():
    core = Core(URDF)
    dyn = Dynamics.from_urdf(URDF)
    names = list(dyn.joint_names)
    q, qd = _state(len(names))
    assert "ready: tiny, 4 DoF" in core.log.text()
    assert core.joint_state(names[::-1], q[::-1], qd[::-1], stamp_ns=5_000_000_123)
    ((stamp, fields),) = core.published
    assert (stamp.sec, stamp.nanosec) == (5, 123)
    np.testing.assert_array_equal(fields["position"], q)
    for name, expected in library_terms(dyn, q, qd).items():
        np.testing.assert_allclose(fields[name].reshape(expected.shape), expected, rtol=1e-12,
                                   atol=1e-12, err_msg=name)  # fmt: skip
    assert "effort" not in fields and "external_effort" not in fields
    assert core.state.counters.published == 1


def test_partial_and_bad_messages_are_counted_and_reported():
    core = Core(URDF)
    names = list(core.model.joint_names)
    assert core.joint_state(names[:2], [0.1, 0.2])  # merged: the tick waits for the rest
    assert core.published == []
    assert core.state.counters.withheld == 1
    assert "waiting for joint_states of 2 of 4 joints" in core.log.text()
    assert not core.joint_state(names, [0.1, 0.2, np.nan, 0.3])
    assert core.state.counters.rejected == 1
    assert "non-finite position" in core.state.last_rejection
    assert not core.joint_state(["ghost"], [0.0])
    assert core.state.counters.ignored == 1
    assert "ignoring unknown joint 'ghost'" in core.log.text()


def test_scheduler_ticks_inline_while_cheap_then_in_the_worker():
    ran = []
    done = threading.Event()

    def tick(since, inline):
        ran.append((inline, threading.current_thread().name))
        done.set()

    scheduler = Scheduler(tick, inline_share=0.5)
    scheduler.start()
    try:
        scheduler.request(0.0)
        assert ran[-1] == (True, threading.current_thread().name)
        for _ in range(200):  # ticks cost 10 ms, messages arrive every 1 ms
            scheduler.tick_cost(0.01)
        done.clear()
        scheduler.request(0.0)
        assert done.wait(5.0)
        assert ran[-1] == (False, "coriolis-compute")
        # share 0: always the worker, whatever the cost
        scheduler.inline_share, scheduler.cost_ema = 0.0, 0.0
        done.clear()
        scheduler.request(0.0)
        assert done.wait(5.0) and ran[-1][0] is False
    finally:
        scheduler.stop()


def test_services_answer_from_the_library_and_refuse_bad_requests():
    core = Core(URDF)
    dyn = Dynamics.from_urdf(URDF)
    names = list(dyn.joint_names)
    q, qd = _state(len(names), 3)
    request = SimpleNamespace(joint_names=names, position=q, velocity=qd, base_position=[],
                              base_velocity=[], reference_velocity=[],
                              reference_acceleration=[])  # fmt: skip
    response = core.services.dynamics(request, SimpleNamespace())
    assert response.success, response.message
    for name, expected in library_terms(dyn, q, qd).items():
        np.testing.assert_allclose(np.asarray(getattr(response, name)).reshape(expected.shape),
                                   expected, rtol=1e-12, atol=1e-12)  # fmt: skip
    request.joint_names = [*names[:-1], "ghost"]
    response = core.services.dynamics(request, SimpleNamespace())
    assert not response.success and "unknown joint names: ghost" in response.message
    empty = Core()
    response = empty.services.dynamics(request, SimpleNamespace())
    assert not response.success and "no robot model yet" in response.message
    christoffel = SimpleNamespace(joint_names=names, position=q, base_position=[])
    response = core.services.christoffel(christoffel, SimpleNamespace(header=SimpleNamespace()))
    assert response.success
    np.testing.assert_allclose(np.asarray(response.symbols), dyn.christoffel(q).ravel(),
                               rtol=1e-12, atol=1e-12)  # fmt: skip


def test_task_space_service_answers_from_the_library_and_refuses_by_name():
    from coriolis_ros.robots import robot_urdf

    urdf = robot_urdf("arm7")
    core = Core(urdf)
    dyn = Dynamics.from_urdf(urdf)
    names = list(dyn.joint_names)
    q = np.array([0.3, -0.7, 0.2, -1.6, 0.4, 1.1, -0.3])
    qd = np.linspace(-0.5, 0.5, 7)
    request = SimpleNamespace(joint_names=names, position=q, velocity=qd, base_position=[],
                              base_velocity=[], frame="tcp", reference="", rows=[0, 1, 2],
                              damping=0.0)  # fmt: skip
    response = core.services.task_space(request, SimpleNamespace())
    assert response.success, response.message
    Lam, mu, J, Jd = dyn.task_space(q, qd, "tcp", rows=[0, 1, 2])
    for name, expected in (("task_inertia", Lam), ("task_coriolis", mu), ("jacobian", J),
                           ("jacobian_dot", Jd)):  # fmt: skip
        np.testing.assert_allclose(np.asarray(getattr(response, name)).reshape(expected.shape),
                                   expected, rtol=1e-12, atol=1e-12, err_msg=name)  # fmt: skip
    assert list(response.rows) == [0, 1, 2] and list(response.joint_names) == names
    request.frame = "nowhere"
    response = core.services.task_space(request, SimpleNamespace())
    assert not response.success and "nowhere" in response.message
    request.frame, request.rows = "link2", []  # a 6-D task on two joints: singular
    response = core.services.task_space(request, SimpleNamespace())
    assert not response.success and "link2" in response.message
    request.damping = 1e-3  # damped: answered
    assert core.services.task_space(request, SimpleNamespace()).success


def test_builder_keeps_the_old_model_when_a_description_is_refused():
    core = Core(URDF)
    core.builder.request("robot.urdf", "topic /robot_description")
    assert "not URDF XML" in core.state.model_error
    floating = URDF.replace('type="revolute"', 'type="floating"', 1)
    core.builder.build(floating, "topic /robot_description")
    assert "floating or planar" in core.state.model_error
    assert core.model.name == "tiny"
    assert "rejected (keeping model tiny)" in core.log.text()
    core.builder.build(URDF, "again")
    assert core.state.model_error == "" and "unchanged, model kept" in core.log.text()


def test_reporter_throttles_per_key():
    log = ListLog()
    clock = [0.0]
    reporter = Reporter(log, 2.0, clock=lambda: clock[0])
    assert reporter.warn(("rejected", "a"), "first")
    assert not reporter.warn(("rejected", "a"), "again")
    clock[0] = 2.5
    assert reporter.warn(("rejected", "a"), "later")
    assert log.lines[-1] == ("warning", "later (1 similar suppressed)")
    reporter.period = 0.0
    assert reporter.warn(("rejected", "a"), "no throttle", now=2.5)
    assert reporter.warn(("rejected", "b"), "no throttle either", now=2.5)


def test_reporter_one_line_per_second_per_kind_whatever_the_keys():
    log = ListLog()
    reporter = Reporter(log, 2.0)
    # 1000 different reasons within 0.999 s: one line; the next second's line counts the rest.
    for k in range(1000):
        reporter.warn(("rejected", f"reason {k}"), f"rejected {k}", now=10.0 + k * 0.999e-3)
    assert [t for _, t in log.lines] == ["rejected 0"]
    assert not reporter.warn(("rejected", "new"), "x", now=10.999)  # just under 1 s
    assert reporter.warn(("rejected", "new"), "rejected new", now=11.0)  # 1 s: allowed
    assert log.lines[-1] == ("warning", "rejected new (1000 similar suppressed)")
    # Another kind is not held back by this one.
    assert reporter.warn(("stale",), "stale", now=11.0)
    # warning_period below 1 s lowers the kind limit with it (0: none).
    reporter.period = 0.25
    assert not reporter.warn(("rejected", "b"), "b", now=11.2)
    assert reporter.warn(("rejected", "b"), "b", now=11.25)


def test_twenty_thousand_unknown_names_are_one_line():
    core = Core(URDF)
    names = list(core.model.joint_names)
    ghosts = [f"ghost_{k}" for k in range(20_000)]
    core.joint_state([*names, *ghosts], np.zeros(len(names) + len(ghosts)))
    lines = [t for _, t in core.log.lines if "unknown" in t]
    assert len(lines) == 1, lines[:3]
    assert lines[0].startswith("ignoring 20000 unknown joints in joint_states (not in model tiny)")
    assert "ghost_0, ghost_1" in lines[0] and "... and 19990 more" in lines[0]
    assert len(core.published) == 1  # the model's joints are used
    # The same set again: nothing new; a new set within the second: held back, then counted.
    core.joint_state([*names, *ghosts], np.zeros(len(names) + len(ghosts)))
    core.joint_state([*names, "other"], np.zeros(len(names) + 1))
    assert len([t for _, t in core.log.lines if "unknown" in t]) == 1
    # One unknown name: named on its own.
    log = ListLog()
    Reporter(log, 2.0).unknown_names(["ghost"], "tiny", now=0.0)
    assert log.lines == [("warning", "ignoring unknown joint 'ghost' in joint_states (not in "
                                     "model tiny)")]  # fmt: skip


def test_builder_thread_builds_in_the_background():
    core = Core()
    core.builder.start()
    try:
        core.builder.request(URDF, "parameter robot_description")
        deadline = time.monotonic() + 60
        while core.model is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert core.model is not None and core.model.n == 4
        assert not core.builder.building
    finally:
        core.builder.stop()


# ---------------------------------------------------------------- nothing non-finite leaves


def test_tick_outputs_find_every_nonfinite_field_and_pass_huge_finite_ones():
    from coriolis_ros.node.tick import TickOutputs

    out = TickOutputs(3)
    assert out.nonfinite(effort=True, external_effort=True) == []
    out.view["coriolis_matrix"][2, 1] = 1.7e308  # finite: published
    out.view["momentum"][0] = -1.7e308
    assert out.nonfinite() == []
    for name, value in (("mass_matrix", np.nan), ("gravity_force", np.inf),
                        ("coriolis_force", -np.inf), ("position", np.nan)):  # fmt: skip
        out.view[name].reshape(-1)[-1] = value
        assert out.nonfinite() == [name], name
        out.view[name].reshape(-1)[-1] = 0.0
    out.view["external_effort"][1] = np.nan
    assert out.nonfinite() == [] and out.nonfinite(external_effort=True) == ["external_effort"]
    out.view["external_effort"][1] = 0.0
    # A field switched off is not published, so not checked.
    flags = {
        param: param != "publish_gravity"
        for _, param, _ in __import__(
            "coriolis_ros.node.params", fromlist=["OUTPUT_FIELDS"]
        ).OUTPUT_FIELDS
    }
    out.set_flags(flags)
    out.view["gravity_force"][0] = np.nan
    assert out.nonfinite() == []


def test_a_nonfinite_tick_is_withheld_counted_and_diagnosed():
    from coriolis_ros.node import diagnostics

    core = Core(URDF)
    names = list(core.model.joint_names)
    out = core.model.out
    compute = out.compute

    def overflowing(dyn, matrices=False):
        compute(dyn, matrices)
        out.view["coriolis_force"][1] = np.inf

    out.compute = overflowing
    core.joint_state(names, [0.1] * 4, [0.2] * 4, stamp_ns=7_000_000_001)
    assert core.published == []
    assert core.state.counters.failed == 1 and core.state.counters.published == 0
    assert (
        "not publishing: coriolis_force not finite at the joint state stamped "
        "7.000000001 s" in core.log.text()
    )
    snapshot, _ = core.state.snapshot(time.monotonic(), False, core.p)
    level, message, values = diagnostics.evaluate(snapshot)
    assert level == diagnostics.WARN and "non-finite result(s) withheld" in message
    assert dict(values)["nonfinite_results"] == "1"
    out.compute = compute  # finite again: published, and the next period is OK
    core.joint_state(names, [0.1] * 4, [0.2] * 4, stamp_ns=7_000_000_002)
    assert len(core.published) == 1
    snapshot, _ = core.state.snapshot(time.monotonic(), False, core.p)
    assert diagnostics.evaluate(snapshot)[0] == diagnostics.OK


def test_a_nonfinite_service_answer_is_refused_with_the_reason():
    core = Core(URDF)
    names = list(core.model.joint_names)
    dyn = core.model.service_dyn
    request = SimpleNamespace(joint_names=names, position=[0.1] * 4, velocity=[0.2] * 4,
                              base_position=[], base_velocity=[], reference_velocity=[],
                              reference_acceleration=[])  # fmt: skip
    gravity = dyn.gravity
    dyn.gravity = lambda q: np.full(4, np.nan)
    response = core.services.dynamics(request, SimpleNamespace())
    assert not response.success and "gravity_force not finite" in response.message
    assert not hasattr(response, "mass_matrix")  # nothing filled
    assert core.state.nonfinite == 1
    dyn.gravity = gravity
    assert core.services.dynamics(request, SimpleNamespace()).success
    christoffel = dyn.christoffel
    dyn.christoffel = lambda q: np.full((4, 4, 4), np.inf)
    request = SimpleNamespace(joint_names=names, position=[0.1] * 4, base_position=[])
    response = core.services.christoffel(request, SimpleNamespace(header=SimpleNamespace()))
    assert not response.success and "symbols not finite" in response.message
    dyn.christoffel = christoffel
    response = core.services.christoffel(request, SimpleNamespace(header=SimpleNamespace()))
    assert response.success


# ---------------------------------------------------------------- joints that follow a leader


def test_a_message_of_only_mimic_joints_gives_no_new_state():
    from support.ros_helpers import panda_urdf

    from coriolis_ros.stream.joint_state_buffer import FOLLOWERS_ONLY, JointStateBuffer

    core = Core(panda_urdf())
    model = core.model
    names = list(model.joint_names)  # finger_joint2 follows finger_joint1: not among them
    assert "panda_finger_joint2" in model.mimic and "panda_finger_joint2" not in names
    q = np.linspace(0.0, 0.04, len(names))
    core.joint_state(names, q, np.zeros(len(names)), stamp_ns=10)
    assert len(core.published) == 1
    # Only the mimic joint, off its leader: checked and reported, no new state, no output.
    due = core.joint_state(["panda_finger_joint2"], [0.5], stamp_ns=11)
    assert due is True  # the tick runs the check
    assert len(core.published) == 1
    assert core.state.counters.ignored == 1
    assert "mimic joint(s) off their leader" in core.log.text()
    assert model.buffer.stamp.nanosec == 10 and model.buffer.pending == 0
    # The other side: the mimic joint with its leader is a new state.
    core.joint_state(["panda_finger_joint1", "panda_finger_joint2"], [0.01, 0.01], stamp_ns=12)
    assert len(core.published) == 2 and core.published[-1][0].nanosec == 12
    # The buffer alone: same status, nothing pending.
    buf = JointStateBuffer(("a",), extra_names=("m",))
    assert buf.update(["m"], [1.0], [], 0, "s", 0.0).status == FOLLOWERS_ONLY
    assert buf.pending == 0 and buf.stamp is None and buf.extra_pending
    assert buf.extra_position[0] == 1.0
    assert buf.update(["a", "m"], [2.0, 1.0], [], 0, "t", 0.0).status == "accepted"
    assert buf.pending == 1 and buf.stamp == "t"


# ---------------------------------------------------------------- parameters


def test_a_set_that_would_be_refused_later_is_refused_when_made(tmp_path):
    from coriolis_ros.node.param_checks import check_set

    core = Core(URDF)
    good, xacro, text = tmp_path / "good.urdf", tmp_path / "robot.xacro", tmp_path / "notes.txt"
    good.write_text(URDF)
    xacro.write_text(XACRO)
    text.write_text("a robot, one day")
    g = (0.0, 0.0, -9.81)

    reason, loaded = check_set({"robot_description_file": str(good)}, core.p, core.model, g)
    assert reason is None and loaded["robot_description_file"][1].nv == 4
    for path, words in ((xacro, "xacro"), (text, "not URDF XML"),
                        (tmp_path / "none.urdf", "no such file")):  # fmt: skip
        reason, loaded = check_set({"robot_description_file": str(path)}, core.p, core.model, g)
        assert reason is not None and words in reason and loaded == {}, reason
    reason, _ = check_set({"robot_description": XACRO}, core.p, core.model, g)
    assert "xacro" in reason
    assert check_set({"robot_description": URDF}, core.p, core.model, g)[0] is None
    # observer_gain against the model's size, both sides; and the plain range checks
    on = {**core.p, "observer_enabled": True}
    assert check_set({"observer_gain": [1.0] * 4}, on, core.model, g)[0] is None
    reason, _ = check_set({"observer_gain": [1.0] * 3}, on, core.model, g)
    assert "observer_gain has 3 values but the model has 4" in reason
    assert check_set({"observer_gain": [1.0] * 3}, core.p, core.model, g)[0] is None  # off
    reason, _ = check_set({"observer_enabled": True, "observer_gain": [1.0] * 5}, core.p,
                          core.model, g)  # fmt: skip
    assert "5 values" in reason
    assert check_set({"update_rate": 10000.0}, core.p, core.model, g)[0] is None
    assert "<= 10000" in check_set({"update_rate": 10000.5}, core.p, core.model, g)[0]


def test_unknown_parameters_are_named_with_the_nearest_valid_name():
    from coriolis_ros.node.param_checks import nearest_name, unknown_parameter_lines
    from coriolis_ros.node.params import SPECS

    assert nearest_name("update_rat") == "update_rate"
    assert nearest_name("obsever_gain") == "observer_gain"
    assert nearest_name("zzzz") is None
    given = ["update_rat", "use_sim_time", "qos_overrides./x.publisher.depth", "zzzz",
             "update_rate"]  # fmt: skip
    lines = unknown_parameter_lines(given, SPECS)
    assert lines == [
        "unknown parameter 'update_rat' ignored; did you mean 'update_rate'?",
        "unknown parameter 'zzzz' ignored (see config/coriolis.yaml)",
    ]
    assert unknown_parameter_lines(list(SPECS), SPECS) == []


# ---------------------------------------------------------------- observer on a floating base


def test_the_observer_runs_on_a_floating_base_like_the_library():
    from coriolis_ros.dynamics import MomentumObserver
    from coriolis_ros.robots import robot_path

    urdf = robot_path("quadruped12").read_text()
    core = Core(urdf, root_joint="floating", observer_enabled=True, observer_gain=10.0)
    model = core.model
    assert model.feed is not None and "odometry of" in core.log.text()
    dyn = Dynamics.from_urdf(urdf, root_joint="floating")
    reference = MomentumObserver(dyn, 10.0)
    joints = list(model.measured_names)
    m, rng = len(joints), np.random.default_rng(11)
    t0 = 1_700_000_000_000_000_000
    for k in range(5):
        stamp_ns = t0 + k * 2_000_000
        pose = np.array([1.0 + 0.01 * k, -2.0, 0.4, 0.0, 0.0, np.sin(0.05 * k), np.cos(0.05 * k)])
        twist = rng.uniform(-0.5, 0.5, 6)
        core.intake.odometry((stamp_ns, "odom", dyn.root_link, pose, twist), 0.0)
        q, qd, tau = rng.uniform(-1, 1, m), rng.uniform(-1, 1, m), rng.uniform(-5, 5, m)
        core.joint_state(joints, q, qd, tau, stamp_ns=stamp_ns)
        expected = reference.update(
            (stamp_ns - t0) * 1e-9, np.concatenate((pose, q)), np.concatenate((twist, qd)),
            np.concatenate((np.zeros(6), tau)),
        )  # fmt: skip
        _, fields = core.published[-1]
        np.testing.assert_allclose(fields["external_effort"], expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(fields["effort"][:6], 0.0)
    assert np.abs(expected).max() > 0  # it integrates, base rows included
    # The other side: a joint state 0.2 s from the newest odometry (base_state_timeout 0.1 s)
    # pauses the observer (and the output), with a line saying why.
    core.joint_state(joints, q, qd, tau, stamp_ns=stamp_ns + 200_000_000)
    assert not model.feed.valid and model.feed.counts["paused_base"] == 1
    assert "momentum observer paused: odometry is 0.200 s apart" in core.log.text()


def test_a_singular_mass_matrix_is_logged_and_diagnosed_naming_the_joint():
    from coriolis_ros.node import diagnostics

    start = URDF.index('<link name="l4">')
    end = URDF.index("</link>", start) + len("</link>")
    massless = URDF[:start] + '<link name="l4"/>' + URDF[end:]  # tj4 moves nothing
    core = Core(massless)
    warned = [t for level, t in core.log.lines if level == "warning" and "move no mass" in t]
    assert len(warned) == 1 and "M is singular at the neutral configuration" in warned[0]
    assert "): tj4 move no mass" in warned[0]
    snapshot, _ = core.state.snapshot(time.monotonic(), False, core.p)
    level, message, values = diagnostics.evaluate(snapshot)
    assert level == diagnostics.WARN and "move no mass" in message
    assert "move no mass" in dict(values)["model_warning"]
    core.builder.build(URDF, "topic /robot_description")  # every link has mass again
    snapshot, _ = core.state.snapshot(time.monotonic(), False, core.p)
    assert dict(diagnostics.evaluate(snapshot)[2])["model_warning"] == ""
