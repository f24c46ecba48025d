"""ROS-free parts of the node: joint-state merging/validation, statistics, diagnostics, params."""

import array
import math
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from coriolis_ros.node import diagnostics
from coriolis_ros.node.conversions import float64_field, to_field
from coriolis_ros.stream.joint_state_buffer import (
    ACCEPTED,
    IGNORED,
    REJECTED,
    JointStateBuffer,
    resolve_request,
)
from coriolis_ros.node.params import PARAMETERS, validate
from coriolis_ros.node.stats import Throttle, WindowStats

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

NAMES = ("a", "b", "c")
REPO = Path(__file__).resolve().parents[2]


def _buffer():
    return JointStateBuffer(NAMES)


def _take(buf):
    q, qd = np.full(3, np.nan), np.full(3, np.nan)
    return buf.take(q, qd), q, qd


def test_partial_messages_merge_in_model_order():
    buf = _buffer()
    r = buf.update(["c", "a"], [3.0, 1.0], [30.0, 10.0], 0, "stamp1", now=1.0)
    assert r.status == ACCEPTED
    t, q, qd = _take(buf)
    assert t.missing == ("b",)
    assert np.isnan(q).all()  # nothing copied while incomplete
    buf.update(["b"], array.array("d", [2.0]), array.array("d", [20.0]), 0, "stamp2", now=2.0)
    t, q, qd = _take(buf)
    assert t.missing == () and t.stamp == "stamp2" and t.pending == 1
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(qd, [10.0, 20.0, 30.0])
    # Latest value per joint wins; other joints keep theirs.
    buf.update(["a"], [-1.0], [-10.0], 0, "s3", now=3.0)
    buf.update(["a", "c"], [-2.0, -3.0], [], 0, "s4", now=4.0)
    t, q, qd = _take(buf)
    assert t.pending == 2 and t.stamp == "s4" and t.receive_time == 4.0
    np.testing.assert_array_equal(q, [-2.0, 2.0, -3.0])
    np.testing.assert_array_equal(qd, [-10.0, 20.0, 30.0])  # empty velocity keeps the last


def test_empty_velocity_without_history_uses_zero_and_says_so():
    buf = _buffer()
    buf.update(["a", "b", "c"], [1.0, 2.0, 3.0], [], 0, None, now=0.0)
    t, q, qd = _take(buf)
    assert t.no_velocity == NAMES
    np.testing.assert_array_equal(qd, 0.0)
    buf.update(["b"], [2.0], [5.0], 0, None, now=0.0)
    t, _, qd = _take(buf)
    assert t.no_velocity == ("a", "c")
    np.testing.assert_array_equal(qd, [0.0, 5.0, 0.0])


@pytest.mark.parametrize(
    "names, pos, vel, eff, words",
    [
        (["a", "b"], [1.0], [], 0, "2 joint names but 1 positions"),
        (["a", "b"], [1.0, 2.0], [1.0], 0, "2 joint names but 1 velocities"),
        (["a", "b"], [1.0, 2.0], [], 3, "2 joint names but 3 efforts"),
        (["a", "a"], [1.0, 2.0], [], 0, "duplicate joint names: a"),
        (["a", "b"], [1.0, math.nan], [], 0, "non-finite position (NaN/inf) for b"),
        (["a", "b"], [1.0, 2.0], [math.inf, 0.0], 0, "non-finite velocity (NaN/inf) for a"),
        (["zz", "b"], [math.nan, 2.0], [], 0, "non-finite position (NaN/inf) for zz"),
        # Finite but absurd (a DBL_MAX sentinel): C q̇ ~ q̇² would overflow to inf/NaN.
        (["a", "b"], [1.0, 2.0], [0.0, 1.7e308], 0, "velocity beyond ±1e+50 for b"),
        (["a", "b"], [-1e200, 2.0], [], 0, "position beyond ±1e+50 for a"),
    ],
)
def test_bad_messages_are_rejected_whole(names, pos, vel, eff, words):
    buf = _buffer()
    buf.update(["a", "b", "c"], [1.0, 2.0, 3.0], [0.1, 0.2, 0.3], 0, "good", now=0.0)
    _take(buf)
    r = buf.update(names, pos, vel, eff, "bad", now=1.0)
    assert r.status == REJECTED
    assert words in r.reason
    t, q, qd = _take(buf)
    assert t.pending == 0 and t.stamp == "good"
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(qd, [0.1, 0.2, 0.3])


def test_unknown_names_are_ignored_and_reported_once():
    buf = _buffer()
    r = buf.update(["x", "a", "y"], [9.0, 1.0, 9.0], [], 0, None, now=0.0)
    assert r.status == ACCEPTED and r.new_unknown == ["x", "y"]
    r = buf.update(["x", "a", "y"], [9.0, 1.5, 9.0], [], 0, None, now=0.0)
    assert r.status == ACCEPTED and r.new_unknown == []
    r = buf.update(["x"], [9.0], [], 0, None, now=0.0)
    assert r.status == IGNORED
    assert buf.position[0] == 1.5


def test_alternating_layouts_from_two_publishers():
    buf = _buffer()
    for k in range(5):
        buf.update(["a", "b"], [k, k + 1.0], [], 0, k, now=k)
        buf.update(["c"], [k + 2.0], [], 0, k, now=k)
    t, q, _ = _take(buf)
    assert t.pending == 10
    np.testing.assert_array_equal(q, [4.0, 5.0, 6.0])


def test_stale_joints():
    buf = _buffer()
    assert buf.stale(10.0, 0.5) == ()  # never received: missing, not stale
    buf.update(["b"], [0.0], [], 0, None, now=9.0)
    assert buf.stale(10.0, 0.5) == ("b",)
    buf.update(["a", "b", "c"], [0.0] * 3, [], 0, None, now=10.0)
    buf.update(["b"], [0.0], [], 0, None, now=10.4)
    assert buf.stale(10.45, 0.5) == ()
    assert buf.stale(10.7, 0.5) == ("a", "c")
    assert buf.stale(10.7, 0.0) == ()  # disabled


def test_seed_from_keeps_shared_joints():
    old = _buffer()
    old.update(["a", "b", "c"], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0], 0, "s", now=1.0)
    new = JointStateBuffer(("c", "d"))
    new.seed_from(old)
    assert not new.complete and new.missing() == ("d",)
    new.update(["d"], [7.0], [8.0], 0, "t", now=2.0)
    q, qd = np.zeros(2), np.zeros(2)
    assert new.take(q, qd).missing == ()
    np.testing.assert_array_equal(q, [3.0, 7.0])
    np.testing.assert_array_equal(qd, [6.0, 8.0])


def test_resolve_request():
    q, qd, reason = resolve_request(NAMES, ["c", "a", "b"], [3.0, 1.0, 2.0], [])
    assert reason == ""
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(qd, 0.0)
    q, qd, _ = resolve_request(NAMES, ["b", "c", "a"], [2.0, 3.0, 1.0], [20.0, 30.0, 10.0])
    np.testing.assert_array_equal(qd, [10.0, 20.0, 30.0])
    for names, pos, vel, words in [
        (["a", "b"], [1.0, 2.0], [], "missing joint names: c"),
        (["a", "b", "c", "d"], [1.0] * 4, [], "unknown joint names: d"),
        (["a", "b", "c"], [1.0] * 2, [], "3 joint names but 2 positions"),
        (["a", "b", "c"], [1.0] * 3, [1.0], "3 joint names but 1 velocities"),
        (["a", "b", "c"], [1.0, math.inf, 1.0], [], "non-finite position"),
        (["a", "b", "c"], [1.0] * 3, [0.0, math.nan, 0.0], "non-finite velocity"),
        (["a", "a", "c"], [1.0] * 3, [], "duplicate joint names: a"),
        (["a", "b", "c"], [1.0] * 3, [0.0, 1e200, 0.0], "velocity beyond ±1e+50 for b"),
    ]:
        q, qd, reason = resolve_request(NAMES, names, pos, vel)
        assert q is None and qd is None
        assert words in reason, reason


def test_float64_field_is_a_view_of_the_message_storage():
    storage, view = float64_field(2, 3)
    assert isinstance(storage, array.array) and storage.typecode == "d" and len(storage) == 6
    view[1, 2] = 5.0
    assert storage[5] == 5.0
    field = to_field(np.arange(4.0).reshape(2, 2).T)  # non-contiguous input, row-major copy
    assert list(field) == [0.0, 2.0, 1.0, 3.0]


def test_throttle_and_windows():
    th = Throttle(2.0)
    assert th.allow("k", 0.0) == 1
    assert th.allow("k", 1.0) == 0
    assert th.allow("other", 1.0) == 1
    assert th.allow("k", 1.5) == 0
    assert th.allow("k", 2.5) == 3  # two suppressed since
    w = WindowStats(10.0)
    for v in (1.0, 3.0, 2.0):
        w.add(v)
    assert w.mean() == 2.0 and w.max == 3.0 and w.rate(11.5) == 2.0
    w.reset(12.0)
    assert w.count == 0 and math.isnan(w.mean())


def test_diagnostics_levels():
    level, message, values = diagnostics.evaluate(diagnostics.Snapshot())
    assert level == diagnostics.ERROR and message.startswith("no robot model")
    level, message, _ = diagnostics.evaluate(
        diagnostics.Snapshot(robot="r", dof=2, missing=("j2",))
    )
    assert level == diagnostics.WARN and "waiting for joints: j2" in message
    level, message, _ = diagnostics.evaluate(diagnostics.Snapshot(robot="r", dof=2, stale=("j1",)))
    assert level == diagnostics.WARN and "stale joints: j1" in message
    level, message, values = diagnostics.evaluate(
        diagnostics.Snapshot(
            robot="r", dof=2, residual=1e-14, residual_scale=3.0, counters={"received": 5}
        )
    )
    assert level == diagnostics.OK
    assert ("received", "5") in values and ("dof", "2") in values
    level, message, _ = diagnostics.evaluate(
        diagnostics.Snapshot(robot="r", dof=2, residual=1e-3, residual_scale=3.0)
    )
    assert level == diagnostics.ERROR and "self-check" in message


def test_parameter_validation():
    assert validate("gravity", [0.0, 0.0, -9.81]) is None
    assert "exactly 3" in validate("gravity", [0.0, -9.81])
    assert "exactly 3" in validate("gravity", [0.0, math.nan, 1.0])
    assert validate("update_rate", 500.0) is None
    assert ">= 0" in validate("update_rate", -1.0)
    assert validate("publish_gravity", False) is None
    assert validate("executor", "events") is None and validate("executor", "single") is None
    assert "events, single" in validate("executor", "multi")
    assert validate("inline_tick_share", 0.0) is None and validate("inline_tick_share", 1.0) is None
    assert "<= 1" in validate("inline_tick_share", 1.5)
    assert ">= 0" in validate("inline_tick_share", -0.1)


def _config_file() -> Path:
    """The installed config/coriolis.yaml (the launch file's default), else the source one."""
    try:
        from ament_index_python.packages import get_package_share_directory

        path = Path(get_package_share_directory("coriolis_ros")) / "config" / "coriolis.yaml"
    except (ImportError, LookupError):
        path = REPO / "config" / "coriolis.yaml"
    assert path.is_file(), path
    return path


def test_config_file_documents_every_parameter():
    yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read config/coriolis.yaml")
    text = _config_file().read_text()
    data = yaml.safe_load(text)
    (node_key,) = data
    params = data[node_key]["ros__parameters"]
    declared = {spec.name: spec for spec in PARAMETERS}
    assert set(params) == set(declared)
    for name, spec in declared.items():
        assert params[name] == spec.default, name
        assert f"# {name}:" in text or f"{name}:" in text
        # Every parameter has a comment line right above it.
        lines = text.splitlines()
        k = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{name}:"))
        assert lines[k - 1].strip().startswith("#"), f"{name} is not documented"


def test_largest_accepted_values_give_finite_results():
    """At ±MAX_ABS (the bound on accepted q, q̇) every term of a robot with a prismatic joint
    is still finite, so nothing the node accepts is published as inf/NaN."""
    from support.ros_helpers import small_robot_urdf

    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.stream.joint_state_buffer import MAX_ABS

    dyn = Dynamics.from_urdf(small_robot_urdf())
    assert "prismatic" in dyn.model.joint_types
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = rng.choice([-MAX_ABS, MAX_ABS], dyn.nv)
        qd = rng.choice([-MAX_ABS, MAX_ABS], dyn.nv)
        terms = [*dyn.coriolis(q, qd), *dyn.coriolis_vectors(q, qd), dyn.gravity(q)]
        assert all(np.isfinite(t).all() for t in terms)


def _peak_growth(step, iterations: int = 1000, rounds: int = 3) -> int:
    """Largest traced memory above the start while running `step` `iterations` times (bytes).

    Any temporary array of m float64 the step creates raises the peak by at least 8 m bytes
    (numpy reports its data allocations to tracemalloc), even though it is freed right away.
    The smallest of `rounds` rounds is returned: a temporary made on every tick shows in each
    round, a one-time allocation elsewhere in the process (caches of the rest of a test run)
    in one at most.
    """
    for k in range(10):
        step(k)  # warm: one-time caches
    growths = []
    for _ in range(rounds):
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            for k in range(iterations):
                step(k)
            growths.append(tracemalloc.get_traced_memory()[1] - base)
        finally:
            tracemalloc.stop()
    return min(growths)


def _messages(names, count, rng, velocity=True):
    """JointState-like (names list, position, velocity) as rclpy delivers them."""
    m = len(names)
    return [
        (
            list(names),
            array.array("d", rng.uniform(-1, 1, m).tobytes()),
            array.array("d", rng.uniform(-1, 1, m).tobytes() if velocity else b""),
        )
        for _ in range(count)
    ]


@pytest.mark.parametrize("layout", ["model order", "reversed", "partial", "unknown extra"])
def test_buffer_hot_path_allocates_no_arrays(layout):
    n = 8000  # one float64 array of n = 64 KB: far above Python-object noise (< 8 KB)
    names = [f"j{i}" for i in range(n)]
    buf = JointStateBuffer(names)
    msg_names = {
        "model order": names,
        "reversed": names[::-1],
        "partial": names[: n // 2],
        "unknown extra": ["x"] + names,
    }[layout]
    msgs = _messages(msg_names, 4, np.random.default_rng(0))
    buf.update(names, np.zeros(n), np.zeros(n), 0, 0, 0.0)  # complete from the start
    q, qd = np.empty(n), np.empty(n)

    def step(k):
        msg_names_k, position, velocity = msgs[k % 4]
        now = 1e-4 * k  # nothing goes stale (the stale report itself builds a name list)
        result = buf.update(msg_names_k, position, velocity, 0, k, now)
        assert result.status == ACCEPTED
        buf.take(q, qd)
        assert buf.stale(now, 0.5) == ()

    growth = _peak_growth(step)
    assert growth < 8 * n // 4, f"{growth} bytes: a temporary array of ~{growth // 8} doubles"
    name, pos, vel = msgs[999 % 4]
    order = [names.index(x) for x in name if x != "x"]
    skip = 1 if layout == "unknown extra" else 0
    np.testing.assert_array_equal(q[order], np.frombuffer(pos)[skip:])
    np.testing.assert_array_equal(qd[order], np.frombuffer(vel)[skip:])


def test_buffer_hot_path_detects_an_allocating_step():
    """The measurement above is sensitive: one n-array temporary per step is seen."""
    n = 8000
    data = np.zeros(n)
    assert _peak_growth(lambda k: data + 1.0, 10) >= 8 * n
    assert _peak_growth(lambda k: None, 10) < 8 * n // 4


def test_tick_allocates_no_arrays():
    """Merge, take and every kernel into TickOutputs: no array allocated per tick."""
    import sys

    sys.path.insert(0, str(REPO / "test"))
    from support.random_trees import binary_tree

    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.node.tick import TickOutputs

    dyn = Dynamics.from_urdf(binary_tree(512, seed=3))
    n = dyn.nv
    names = list(dyn.joint_names)
    buf = JointStateBuffer(names)
    out = TickOutputs(n)  # every field switched on
    msgs = _messages(names[::-1], 4, np.random.default_rng(1))

    def step(k):
        msg_names, position, velocity = msgs[k % 4]
        now = 1e-4 * k
        assert buf.update(msg_names, position, velocity, 0, k, now).status == ACCEPTED
        assert buf.stale(now, 0.5) == ()
        buf.take(out.q, out.qd)
        out.compute(dyn, matrices=True)

    growth = _peak_growth(step)
    # A temporary of n doubles (4 KB) would lift the peak by at least 8 n.
    assert growth < 8 * n, f"{growth} bytes: a temporary array of ~{growth // 8} doubles"
    M, Mdot, C = dyn.coriolis(out.q, out.qd)
    np.testing.assert_array_equal(out.view["coriolis_matrix"], C)
    np.testing.assert_array_equal(out.view["mass_matrix_derivative"], Mdot)
    np.testing.assert_allclose(out.view["momentum"], M @ out.qd, rtol=1e-10, atol=1e-12)


def test_stamp_problems():
    from coriolis_ros.stream.joint_state_buffer import (
        FUTURE_STAMP,
        FUTURE_STAMP_TOLERANCE_NS,
        ZERO_STAMP,
        stamp_problem,
    )

    now = 1_700_000_000 * 10**9
    assert stamp_problem(0, 0, now) == ZERO_STAMP
    assert stamp_problem(0, 1, now) is None  # not zero: 1 ns after the epoch
    assert stamp_problem(1_700_000_000, 0, now) is None
    ahead = now + FUTURE_STAMP_TOLERANCE_NS
    assert stamp_problem(*divmod(ahead, 10**9), now) is None  # at the tolerance: fine
    assert stamp_problem(*divmod(ahead + 1, 10**9), now) == FUTURE_STAMP
    assert stamp_problem(*divmod(ahead + 1, 10**9), 0) is None  # clock not started (sim time)


def test_old_velocity_is_reported_not_silently_used():
    buf = _buffer()
    buf.update(["a", "b", "c"], [1.0, 2.0, 3.0], [10.0, 20.0, 30.0], 0, None, now=0.0)
    buf.update(["a", "b", "c"], [1.1, 2.1, 3.1], [], 0, None, now=0.4)  # positions only
    assert buf.stale_velocity(0.5, 0.5) == ()  # exactly the timeout: not yet
    buf.update(["a", "b"], [1.2, 2.2], [], 0, None, now=0.6)
    buf.update(["c"], [3.2], [31.0], 0, None, now=0.6)
    assert buf.stale_velocity(0.6, 0.5) == ("a", "b")
    assert buf.stale_velocity(0.6, 0.0) == ()  # timeout 0 disables the check
    t, _, qd = _take(buf)
    np.testing.assert_array_equal(qd, [10.0, 20.0, 31.0])  # still the last velocities
    # Stale altogether (no position either) is `stale`'s report, not this one.
    assert buf.stale_velocity(1.0, 0.3) == ()
    assert buf.stale(1.0, 0.3) == ("a", "b", "c")
    buf.update(["a", "b"], [1.3, 2.3], [11.0, 21.0], 0, None, now=1.0)
    assert buf.stale_velocity(1.0, 0.5) == ()


def test_diagnostics_report_old_velocity_and_stamps():
    level, message, values = diagnostics.evaluate(
        diagnostics.Snapshot(robot="r", dof=2, stale_velocity=("j1",), zero_stamps=3)
    )
    assert level == diagnostics.WARN and "velocity older than the timeout for: j1" in message
    values = dict(values)
    assert values["joints_with_old_velocity"] == "j1" and values["zero_stamp_messages"] == "3"
    level, _, values = diagnostics.evaluate(diagnostics.Snapshot(robot="r", dof=2))
    assert level == diagnostics.OK and dict(values)["joints_with_old_velocity"] == ""


def test_floating_mimic_and_locked_parameter_validation():
    """The parameters added for floating bases, mimic and locked joints: both sides of bounds."""
    assert validate("root_joint", "fixed") is None and validate("root_joint", "planar") is None
    assert "fixed, floating, planar" in validate("root_joint", "free")
    assert validate("base_state_timeout", 1e-4) is None
    assert validate("base_state_timeout", 3600.0) is None
    assert ">= 0.0001" in validate("base_state_timeout", 0.9e-4)
    assert "<= 3600" in validate("base_state_timeout", 3600.5)
    assert validate("mimic", "follow") is None and validate("mimic", "independent") is None
    assert "follow, independent" in validate("mimic", "ignore")
    assert validate("mimic_tolerance", 0.0) is None and validate("mimic_tolerance", 1e3) is None
    assert ">= 0" in validate("mimic_tolerance", -1e-9)
    assert "<= 1000" in validate("mimic_tolerance", 1000.5)
    assert validate("locked_joints", []) is None and validate("locked_joints", ["a", "b"]) is None
    assert "twice" in validate("locked_joints", ["a", "a"])
    assert "list of joint names" in validate("locked_joints", ["a", ""])
    assert validate("locked_positions", [0.0, -1.5]) is None
    assert "finite" in validate("locked_positions", [0.0, float("nan")])
    assert "list of numbers" in validate("locked_positions", ["x"])
