"""The stream semantics at their bounds, each on both sides: written to kill the mutants that
survived the rest of the suite (a comparison swapped, a bound moved by one, a check removed).
Pure unit tests of :mod:`coriolis_ros.stream` (no ROS, no kernels beyond the observer's)."""

from __future__ import annotations

import array
import math

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics, MomentumObserver
from coriolis_ros.stream import joint_state_buffer as jsb
from coriolis_ros.stream.joint_state_buffer import (
    ACCEPTED,
    FOLLOWERS_ONLY,
    FUTURE_STAMP,
    FUTURE_STAMP_TOLERANCE_NS,
    IGNORED,
    MAX_ABS,
    REJECTED,
    ZERO_STAMP,
    JointStateBuffer,
    check_arrays,
    name_list,
    resolve_request,
    stamp_problem,
)
from coriolis_ros.stream.loop_check import LoopCheck
from coriolis_ros.stream.mimic_check import MimicCheck
from coriolis_ros.stream.observer_feed import (
    DUPLICATE,
    OK,
    PAUSED,
    RESET_BACKWARDS,
    RESET_GAP,
    ObserverFeed,
    observer_gains,
)

BEYOND = float(np.nextafter(MAX_ABS, math.inf))


# ---------------------------------------------------------------- stamps


def test_zero_stamp_needs_both_fields_zero():
    assert stamp_problem(0, 0, 10**18) == ZERO_STAMP
    assert stamp_problem(0, 1, 10**18) is None
    assert stamp_problem(1, 0, 10**18) is None


def test_future_stamp_bound_both_sides():
    now = 1_700_000_000 * 10**9
    at = now + FUTURE_STAMP_TOLERANCE_NS
    assert stamp_problem(*divmod(at, 10**9), now) is None
    assert stamp_problem(*divmod(at + 1, 10**9), now) == FUTURE_STAMP
    assert stamp_problem(*divmod(now - 10**9, 10**9), now) is None  # the past is fine
    # a clock that has not started (0, or negative) disables the check; 1 ns enables it
    assert stamp_problem(10**9, 0, 0) is None and stamp_problem(10**9, 0, -5) is None
    assert stamp_problem(10**9, 0, 1) == FUTURE_STAMP
    assert FUTURE_STAMP_TOLERANCE_NS == 500_000_000


# ---------------------------------------------------------------- message checks


def test_lengths_both_sides():
    names = ["a", "b", "c"]
    q = np.zeros(3)
    assert check_arrays(names, q, np.empty(0)) is None
    assert check_arrays(names, q, np.zeros(3), 3) is None
    assert check_arrays(names, q, np.zeros(3), 0) is None  # no effort is fine
    assert check_arrays(names, np.zeros(2), np.empty(0)) == "3 joint names but 2 positions"
    assert check_arrays(names, np.zeros(4), np.empty(0)) == "3 joint names but 4 positions"
    assert check_arrays(names, q, np.zeros(2)) == "3 joint names but 2 velocities"
    assert check_arrays(names, q, np.zeros(4)) == "3 joint names but 4 velocities"
    assert check_arrays(names, q, np.empty(0), 2) == "3 joint names but 2 efforts"
    assert check_arrays(names, q, np.empty(0), 4) == "3 joint names but 4 efforts"
    assert check_arrays([], np.empty(0), np.empty(0)) is None


def test_duplicates_named_once_each():
    reason = check_arrays(["a", "b", "a", "b", "a", "c"], np.zeros(6), np.empty(0))
    assert reason == "duplicate joint names: a, b"
    assert check_arrays(["a", "b"], np.zeros(2), np.empty(0)) is None


@pytest.mark.parametrize("what", ["position", "velocity"])
def test_value_bound_both_sides(what):
    names = ["a", "b"]

    def check(x):
        vals = np.array([0.5, x])
        q, v = (vals, np.zeros(2)) if what == "position" else (np.zeros(2), vals)
        return check_arrays(names, q, v)

    assert check(MAX_ABS) is None and check(-MAX_ABS) is None
    assert check(BEYOND) == f"{what} beyond ±1e+50 for b"
    assert check(-BEYOND) == f"{what} beyond ±1e+50 for b"
    assert check(math.nan) == f"non-finite {what} (NaN/inf) for b"
    both = np.array([MAX_ABS, BEYOND])  # only the one beyond the bound is named
    q, v = (both, np.zeros(2)) if what == "position" else (np.zeros(2), both)
    assert check_arrays(names, q, v) == f"{what} beyond ±1e+50 for b"
    assert check(-math.inf) == f"non-finite {what} (NaN/inf) for b"


def test_name_list_limit_both_sides():
    assert name_list([f"j{k}" for k in range(10)]) == ", ".join(f"j{k}" for k in range(10))
    assert name_list([f"j{k}" for k in range(11)]).endswith("j9 ... and 1 more")
    assert name_list(["a", "b", "c"], limit=2) == "a, b ... and 1 more"


def test_as_float64_shares_memory_with_a_double_array():
    values = array.array("d", [1.0, 2.0])
    view = jsb.as_float64(values)
    values[0] = 5.0
    assert view[0] == 5.0
    assert jsb.as_float64(array.array("d")).shape == (0,)
    assert jsb.as_float64([1, 2]).dtype == np.float64


# ---------------------------------------------------------------- the buffer


def _buffer(extra=()):
    return JointStateBuffer(("a", "b", "c"), extra_names=extra)


@pytest.mark.parametrize("order", [["a", "b", "c"], ["c", "a", "b"]])
def test_known_layout_rechecks_every_bound(order):
    """A name list seen before takes the fast path: its checks must be the same."""
    buf = _buffer()
    ok = buf.update(order, [0.1, 0.2, 0.3], [1.0, 2.0, 3.0], 0, "s0", 0.0)
    assert ok.status == ACCEPTED
    cases = [
        ([0.1, 0.2], [], 0, "3 joint names but 2 positions"),
        ([0.1, 0.2, 0.3], [1.0], 0, "3 joint names but 1 velocities"),
        ([0.1, 0.2, 0.3], [], 2, "3 joint names but 2 efforts"),
        ([0.1, BEYOND, 0.3], [], 0, f"position beyond ±1e+50 for {order[1]}"),
        ([0.1, 0.2, math.nan], [], 0, f"non-finite position (NaN/inf) for {order[2]}"),
        ([0.1, 0.2, 0.3], [0.0, math.nan, 0.0], 0, f"non-finite velocity (NaN/inf) for {order[1]}"),
        ([0.1, 0.2, 0.3], [0.0, 0.0, -BEYOND], 0, f"velocity beyond ±1e+50 for {order[2]}"),
    ]
    for q, v, ne, reason in cases:
        result = buf.update(order, q, v, ne, "bad", 1.0)
        assert (result.status, result.reason) == (REJECTED, reason)
        assert buf.stamp == "s0" and buf.pending == 1  # nothing applied
    assert buf.update(order, [MAX_ABS, -MAX_ABS, 0.0], [MAX_ABS, 0, 0], 0, "s1", 2.0).status == (
        ACCEPTED
    )
    expect = dict(zip(order, [MAX_ABS, -MAX_ABS, 0.0], strict=True))
    assert buf.position.tolist() == [expect[n] for n in "abc"]


def test_effort_follows_its_message_and_completeness():
    buf = _buffer()
    buf.update(["a", "b", "c"], [0, 0, 0], [], 3, "s", 0.0, effort=[1.0, 2.0, 3.0])
    assert buf.effort_complete and buf.effort.tolist() == [1.0, 2.0, 3.0]
    buf.update(["b"], [0.5], [], 0, "s", 0.0)  # b named without effort: unknown now
    assert not buf.effort_complete and math.isnan(buf.effort[1])
    assert buf.effort[0] == 1.0 and buf.effort[2] == 3.0
    buf.update(["b"], [0.5], [], 1, "s", 0.0, effort=[math.nan])  # NaN means "not given"
    assert not buf.effort_complete
    buf.update(["b"], [0.5], [], 1, "s", 0.0, effort=[7.0])
    assert buf.effort_complete and buf.effort.tolist() == [1.0, 7.0, 3.0]
    buf.update(["a", "b", "c"], [0, 0, 0], [], 0, "s", 0.0)  # the whole model, no effort
    assert np.isnan(buf.effort).all() and not buf.effort_complete


def test_take_missing_then_no_velocity_then_complete():
    buf = _buffer()
    q, qd = np.zeros(3), np.zeros(3)
    buf.update(["a", "b"], [1.0, 2.0], [0.1, 0.2], 0, "s1", 0.0)
    take = buf.take(q, qd)
    assert take.missing == ("c",) and take.pending == 1 and q.tolist() == [0, 0, 0]
    buf.update(["c"], [3.0], [], 0, "s2", 1.0)
    take = buf.take(q, qd)
    assert take.missing == () and take.no_velocity == ("c",) and take.stamp == "s2"
    assert q.tolist() == [1.0, 2.0, 3.0] and qd.tolist() == [0.1, 0.2, 0.0]
    buf.update(["c"], [3.5], [0.3], 0, "s3", 2.0)
    take = buf.take(q, qd)
    assert take.no_velocity == () and qd.tolist() == [0.1, 0.2, 0.3] and take.pending == 1
    assert buf.take(q, qd).pending == 0


def test_stale_bounds_both_sides():
    buf = _buffer()
    buf.update(["a", "b", "c"], [0, 0, 0], [0, 0, 0], 0, "s", 10.0)
    buf.update(["a"], [0], [], 0, "s", 11.0)  # a's position newer, its velocity not
    assert buf.stale(10.5, 0.5) == () and buf.stale(10.5 + 1e-9, 0.5) == ("b", "c")
    assert buf.stale(100.0, 0.0) == () and buf.stale(100.0, -1.0) == ()  # off
    assert buf.stale_velocity(11.0, 1.0) == ()
    assert buf.stale_velocity(11.0 + 1e-9, 1.0) == ("a",)  # b, c are stale altogether
    assert buf.stale_velocity(100.0, 0.0) == ()
    assert JointStateBuffer(()).stale(5.0, 1.0) == ()
    assert _buffer().stale_velocity(5.0, 1.0) == ()  # never a velocity: reported by take


def test_unknown_and_follower_only_and_ignored():
    buf = _buffer(extra=("m",))
    r = buf.update(["a", "b", "c", "x"], [0, 0, 0, 0], [], 0, "s", 0.0)
    assert r.status == ACCEPTED and r.new_unknown == ["x"]
    r = buf.update(["a", "b", "c", "x"], [0, 0, 0, 0], [], 0, "s", 0.0)
    assert r.new_unknown == []  # warned once
    r = buf.update(["x", "a", "b", "c"], [0, 0, 0, 0], [], 0, "s", 0.0)
    assert r.new_unknown == []  # once per name, whatever the list
    assert buf.update(["y"], [0], [], 0, "s", 0.0).status == IGNORED
    before = buf.pending
    r = buf.update(["m"], [0.4], [], 0, "t", 0.0)
    assert r.status == FOLLOWERS_ONLY and buf.pending == before and buf.stamp == "s"
    assert buf.extra_position.tolist() == [0.4] and buf.extra_pending
    r = buf.update(["a", "m"], [0.1, 0.2], [], 0, "u", 0.0)
    assert r.status == ACCEPTED and buf.extra_position.tolist() == [0.2]


def test_layout_cache_is_bounded_at_64_and_still_correct():
    buf = JointStateBuffer(tuple(f"j{k}" for k in range(70)))
    for k in range(64):
        buf.update([f"j{k}"], [float(k)], [], 0, k, 0.0)
    assert len(buf._layouts) == 64  # at the bound: all kept
    buf.update(["j64"], [64.0], [], 0, 64, 0.0)
    assert len(buf._layouts) == 1  # past it: cleared, then the new one
    for k in range(65, 70):
        buf.update([f"j{k}"], [float(k)], [], 0, k, 0.0)
    assert buf.complete and buf.position.tolist() == [float(k) for k in range(70)]


def test_unknown_names_remembered_up_to_1000():
    buf = _buffer()
    for k in range(999):
        r = buf.update(["a", f"x{k}"], [0.0, 0.0], [], 0, "s", 0.0)
        assert r.new_unknown == [f"x{k}"]
    # below the bound, a message's new names are all remembered (999 + 3 = 1002)
    r = buf.update(["a", "y0", "y1", "y2"], [0.0] * 4, [], 0, "s", 0.0)
    assert r.new_unknown == ["y0", "y1", "y2"]
    # the memory is full: further names are not reported (a flood cannot grow it)
    assert buf.update(["a", "z"], [0.0, 0.0], [], 0, "s", 0.0).new_unknown == []
    assert len(buf._warned_unknown) == 1002


def test_unknown_name_memory_at_exactly_1000_and_one_over():
    assert jsb._MAX_WARNED == 1000
    buf = _buffer()
    first = [f"x{k}" for k in range(998)]
    assert buf.update(["a", *first], [0.0] * 999, [], 0, "s", 0.0).new_unknown == first
    # one below the bound (999 remembered): a new name is reported and remembered
    assert buf.update(["a", "x998"], [0.0, 0.0], [], 0, "s", 0.0).new_unknown == ["x998"]
    assert len(buf._warned_unknown) == 999
    r = buf.update(["x999", "a"], [0.0, 0.0], [], 0, "s", 0.0)
    assert r.status == ACCEPTED and r.new_unknown == ["x999"]
    assert len(buf._warned_unknown) == 1000  # exactly at the bound
    # at the bound: the 1001st name is neither reported nor remembered, and the message is
    # used as any other
    r = buf.update(["a", "x1000"], [0.25, 0.0], [], 0, "t", 0.0)
    assert r.status == ACCEPTED and r.new_unknown == [] and buf.position[0] == 0.25
    assert len(buf._warned_unknown) == 1000 and "x1000" not in buf._warned_unknown
    # names remembered before stay warned about once
    assert buf.update(["a", "x5", "b"], [0.0] * 3, [], 0, "s", 0.0).new_unknown == []


def test_resolve_request_both_sides():
    names = ("a", "b")
    q, qd, err = resolve_request(names, ["b", "a"], [2.0, 1.0], [0.2, 0.1])
    assert err == "" and q.tolist() == [1.0, 2.0] and qd.tolist() == [0.1, 0.2]
    q, qd, err = resolve_request(names, ["b", "a"], [2.0, 1.0])
    assert qd.tolist() == [0.0, 0.0]
    assert "unknown joint names: x" in resolve_request(names, ["a", "b", "x"], [0, 0, 0])[2]
    assert "missing joint names: b" in resolve_request(names, ["a"], [0])[2]
    assert "duplicate" in resolve_request(names, ["a", "a"], [0, 0])[2]
    # a joint that follows another is named as such, an unknown one as unknown
    both = resolve_request(names, ["a", "b", "r", "x"], [0] * 4, followers=("r",))[2]
    assert both == (
        "request: unknown joint names: x; r follow other joints (mimic joints, geared rotors, "
        "joints of closed loops): not coordinates, leave them out"
    )
    assert resolve_request(names, ["a", "b", "r"], [0] * 3, followers=("r",))[2].startswith(
        "request: r follow other joints"
    )


# ---------------------------------------------------------------- mimic check


def test_mimic_check_tolerance_both_sides():
    buf = JointStateBuffer(("lead",), extra_names=("m",))
    check = MimicCheck(buf, {"m": ("lead", 2.0, 0.5)}, 0.25)
    buf.update(["lead"], [1.0], [], 0, "s", 0.0)
    assert check.check() == []  # m never received: nothing to compare
    buf.update(["m"], [2.5 + 0.25], [], 0, "s", 0.0)
    assert check.check() == []  # at the tolerance
    buf.update(["m"], [2.5 - 0.2500001], [], 0, "s", 0.0)
    assert check.check() == [("m", 2.5 - 0.2500001, 2.5)]
    with pytest.raises(ValueError, match="exactly the mimic joints"):
        MimicCheck(buf, {"other": ("lead", 1.0, 0.0)}, 0.1)


# ---------------------------------------------------------------- loop check


def test_loop_check_tolerance_both_sides_in_the_closure_s_order():
    # the buffer tracks the dependent joints in another order than the closure gives them
    buf = JointStateBuffer(("crank",), extra_names=("rocker", "coupler"))
    check = LoopCheck(buf, ("coupler", "rocker"), 0.25)
    closure = np.array([1.0, -2.0])  # coupler, rocker
    buf.update(["crank"], [0.3], [], 0, "s", 0.0)
    check.snapshot()
    assert check.compare(closure) == []  # neither received: nothing to compare
    buf.update(["rocker", "coupler"], [-2.0 - 0.2500001, 1.0 + 0.25], [], 0, "s", 0.0)
    assert check.compare(closure) == []  # not yet snapshot
    check.snapshot()
    assert check.compare(closure) == [("rocker", -2.0 - 0.2500001, -2.0)]  # coupler: at 0.25
    buf.update(["rocker"], [-2.0 + 0.25], [], 0, "s", 0.0)
    check.snapshot()
    assert check.compare(closure) == []  # both at the tolerance, one from each side
    beyond = 1.25 + 0.2500001
    assert check.compare(np.array([beyond, -2.0])) == [("coupler", 1.25, beyond)]
    with pytest.raises(ValueError, match="exactly the dependent joints"):
        LoopCheck(buf, ("coupler",), 0.1)


def test_loop_check_current_and_a_recorded_row_s_values():
    """current(): the buffer's latest values in the closure's order once every dependent joint
    has one; compare_received(): a recorded row's values against its closure (the bag)."""
    buf = JointStateBuffer(("crank",), extra_names=("rocker", "coupler"))
    check = LoopCheck(buf, ("coupler", "rocker"), 0.25)
    buf.update(["rocker"], [-2.0], [], 0, "s", 0.0)
    assert check.current() is None  # the coupler has no value yet
    buf.update(["coupler"], [1.0], [], 0, "s", 0.0)
    assert check.current().tolist() == [1.0, -2.0]
    closure = np.array([1.0, -2.0])
    assert check.compare_received(np.array([1.25, -2.0]), closure) == []
    assert check.compare_received(np.array([1.0, -2.2500001]), closure) == [
        ("rocker", -2.2500001, -2.0)
    ]


def test_loop_check_does_not_need_the_followers_values():
    """A closed chain's followers (a rotor geared to the crank) are dependent joints the closure
    does not move: received() and current() need every other one, NaN for a follower not
    received; a recorded row's NaN is not compared, its value is."""
    buf = JointStateBuffer(("crank",), extra_names=("rotor", "coupler", "rocker"))
    check = LoopCheck(buf, ("coupler", "rocker", "rotor"), 0.25, followers=("rotor",))
    buf.update(["coupler"], [1.0], [], 0, "s", 0.0)
    check.snapshot()
    assert check.current() is None and check.received() is None  # the rocker is needed
    buf.update(["rocker"], [-2.0], [], 0, "s", 0.0)
    check.snapshot()
    for got in (check.current(), check.received()):
        assert got[:2].tolist() == [1.0, -2.0] and np.isnan(got[2])
    buf.update(["rotor"], [9.0], [], 0, "s", 0.0)
    check.snapshot()
    assert check.current().tolist() == check.received().tolist() == [1.0, -2.0, 9.0]
    closure = np.array([1.0, -2.0, 9.0])
    assert check.compare_received(np.array([1.0, -2.0, np.nan]), closure) == []
    assert check.compare_received(np.array([1.0, -2.0, 9.2500001]), closure) == [
        ("rotor", 9.2500001, 9.0)
    ]
    # without followers named, every dependent joint is needed (the rotor too)
    strict = JointStateBuffer(("crank",), extra_names=("rotor", "coupler", "rocker"))
    every = LoopCheck(strict, ("coupler", "rocker", "rotor"), 0.25)
    strict.update(["coupler", "rocker"], [1.0, -2.0], [], 0, "s", 0.0)
    every.snapshot()
    assert every.current() is None and every.received() is None


# ---------------------------------------------------------------- observer feed


@pytest.fixture(scope="module")
def dyn():
    from pathlib import Path

    import coriolis_ros

    return Dynamics.from_urdf((Path(coriolis_ros.__file__).parent / "robots" / "arm7.urdf")
                              .read_text())  # fmt: skip


def test_observer_gap_bound_both_sides_and_repeated_stamps(dyn):
    n = dyn.nv
    rng = np.random.default_rng(3)
    q, qd, tau = rng.uniform(-1, 1, n), rng.normal(size=n), rng.normal(size=n)
    feed = ObserverFeed(dyn, 10.0, 0.1)
    t0 = 1_700_000_000 * 10**9
    assert feed.update(t0, q, qd, tau) == OK and feed.stamp_ns == t0
    r = feed.estimate.copy()
    assert feed.update(t0, q, 2 * qd, 3 * tau) == DUPLICATE  # repeated stamp: nothing
    assert np.array_equal(feed.estimate, r)
    assert feed.update(t0 + 100_000_000, q, qd, tau) == OK  # exactly max_gap: integrated
    assert feed.update(t0 + 200_000_001, q, qd, tau) == RESET_GAP  # 1 ns more: restarts
    assert feed.last_gap == pytest.approx(0.100000001)
    assert feed.update(t0 + 200_000_000, q, qd, tau) == RESET_BACKWARDS
    assert feed.last_gap == pytest.approx(-1e-9)
    counts = feed.counts
    assert (counts[OK], counts[DUPLICATE], counts[RESET_GAP], counts[RESET_BACKWARDS]) == (
        2, 1, 1, 1
    )  # fmt: skip


def test_observer_equals_the_library_and_pauses_on_missing_effort(dyn):
    n = dyn.nv
    rng = np.random.default_rng(4)
    feed = ObserverFeed(dyn, 5.0, 1.0)
    ref = MomentumObserver(dyn, 5.0)
    t0 = 10**18
    for k in range(4):
        q, qd, tau = rng.uniform(-1, 1, n), rng.normal(size=n), rng.normal(size=n)
        stamp = t0 + k * 1_000_000
        if k == 2:
            bad = tau.copy()
            bad[3] = math.nan
            assert feed.update(stamp, q, qd, bad) == PAUSED and not feed.valid
            assert feed.missing_names(bad) == [dyn.joint_names[3]]
            bad[0] = MAX_ABS  # at the bound: not missing
            assert feed.missing_names(bad) == [dyn.joint_names[3]]
            bad[3] = BEYOND
            assert feed.update(stamp, q, qd, bad) == PAUSED
            continue
        tau[0] = MAX_ABS if k == 3 else tau[0]  # at the bound: used
        assert feed.update(stamp, q, qd, tau) == OK and feed.valid
        want = ref.update((stamp - t0) * 1e-9, q, qd, tau)
        assert np.array_equal(feed.estimate, want), k
    feed.reset()
    assert not feed.valid and feed.stamp_ns is None and not feed.estimate.any()


def test_observer_gain_error_names_the_bad_value():
    with pytest.raises(ValueError, match=r"got .*-2\.0"):
        observer_gains([1.0] * 6 + [-2.0], 7)


@pytest.mark.parametrize("value, ok", [
    (1.0, True), ([1.0] * 7, True), (1e-9, True), (0.0, False), (-1.0, False),
    (math.inf, False), (math.nan, False), (True, False), (None, False), ([1.0] * 6, False),
])  # fmt: skip
def test_observer_gains_both_sides(value, ok):
    if ok:
        assert observer_gains(value, 7).shape == (7,)
    else:
        with pytest.raises(ValueError):
            observer_gains(value, 7)


@pytest.mark.parametrize("gap, ok", [(1e-9, True), (3600.0, True), (0.0, False), (-1.0, False),
                                     (math.inf, False), (math.nan, False)])  # fmt: skip
def test_observer_max_gap_both_sides(dyn, gap, ok):
    if ok:
        assert ObserverFeed(dyn, 1.0, gap).max_gap == gap
    else:
        with pytest.raises(ValueError, match="observer_max_gap"):
            ObserverFeed(dyn, 1.0, gap)


def test_initial_flags_and_take_clears_the_extra_flag():
    buf = _buffer(extra=("m",))
    assert buf.effort_complete is False and buf.extra_pending is False
    assert buf.complete is False and buf.stamp is None and buf.pending == 0
    buf.update(["a", "b", "c", "m"], [0, 0, 0, 0.1], [], 0, "s", 0.0)
    assert buf.extra_pending is True
    buf.take(np.zeros(3), np.zeros(3))
    assert buf.extra_pending is False


def test_a_name_tuple_reuses_its_layout():
    buf = _buffer()
    for k in range(3):
        buf.update(("a", "b", "c"), [k, 0, 0], [], 0, k, 0.0)
    assert len(buf._layouts) == 1 and buf.position[0] == 2.0


def test_a_one_joint_model_starts_incomplete_without_velocity():
    buf = JointStateBuffer(("a",))
    assert not buf.complete
    take = buf.take(np.zeros(1), np.zeros(1))
    assert take.missing == ("a",)
    buf.update(["a"], [0.3], [], 0, "s", 0.0)
    take = buf.take(np.zeros(1), np.zeros(1))
    assert take.missing == () and take.no_velocity == ("a",)
    assert JointStateBuffer(()).complete  # no joint: complete from the start


def test_the_first_extra_name_is_tracked_beside_model_joints():
    buf = _buffer(extra=("m", "n"))
    buf.update(["a", "b", "c"], [0, 0, 0], [], 0, "s", 0.0)
    buf.take(np.zeros(3), np.zeros(3))
    assert not buf.extra_pending and not buf.extra_has_position.any()
    buf.update(["a", "m"], [0.1, 0.2], [], 0, "t", 1.0)  # m: the first extra (index n)
    assert buf.extra_pending and buf.extra_has_position.tolist() == [True, False]


def test_stale_velocity_bounds_on_each_side():
    buf = _buffer()
    buf.update(["a", "b", "c"], [0, 0, 0], [0, 0, 0], 0, "s", 10.0)
    buf.update(["b"], [0], [0], 0, "s", 10.5)  # b: position and velocity at 10.5
    buf.update(["a"], [0], [], 0, "s", 10.5)  # a: position at 10.5, velocity at 10.0
    buf.update(["c"], [0], [0], 0, "s", 11.0)  # c: fresh
    # a's velocity is older than 0.5 s while its position is exactly 0.5 s old: reported;
    # b's velocity is exactly 0.5 s old: not yet; c is fresh
    assert buf.stale_velocity(11.0, 0.5) == ("a",)
    # timeout 0 turns the check off, even for a joint whose position is new
    assert buf.stale_velocity(10.5, 0.0) == ()
    # stale: a and b exactly 0.5 s old are not stale
    assert buf.stale(11.0, 0.5) == ()
    other = _buffer()
    other.update(["a", "b", "c"], [0, 0, 0], [], 0, "s", 10.0)
    other.update(["a"], [0], [], 0, "s", 10.5)
    assert other.stale(11.0, 0.5) == ("b", "c")  # a exactly at the timeout: not stale


def test_seed_from_takes_over_shared_joints_only():
    old = _buffer()
    old.update(["a", "b", "c"], [1.0, 2.0, 3.0], [0.1, 0.2, 0.3], 3, "s", 5.0,
               effort=[7.0, 8.0, 9.0])  # fmt: skip
    new = JointStateBuffer(("c", "d", "a"))
    new.seed_from(old)
    assert new.position.tolist() == [3.0, 0.0, 1.0] and new.missing() == ("d",)
    assert new.velocity.tolist() == [0.3, 0.0, 0.1] and new.stamp == "s"
    assert new.effort[0] == 9.0 and math.isnan(new.effort[1]) and not new.effort_complete


def test_observer_pauses_without_base_state():
    from pathlib import Path

    import coriolis_ros
    from coriolis_ros.stream.base_state import BaseStateBuffer
    from coriolis_ros.stream.observer_feed import PAUSED_BASE

    urdf = (Path(coriolis_ros.__file__).parent / "robots" / "quadruped12.urdf").read_text()
    dyn = Dynamics.from_urdf(urdf, root_joint="floating")
    base = BaseStateBuffer("floating", dyn.root_link, 0.1)
    feed = ObserverFeed(dyn, 10.0, 0.1)
    assert feed.last_gap == 0.0 and feed.base_wait == ""
    assert set(feed.counts.values()) == {0}
    n = dyn.nv - 6
    z = np.zeros(n)
    assert feed.update_measured(10**18, base, z, z, z) == PAUSED_BASE
    assert feed.base_wait and not feed.valid and feed.counts[PAUSED_BASE] == 1
    base.update(dyn.root_link, "odom", [0, 0, 0.5], [0, 0, 0, 1], [0, 0, 0], [0, 0, 0], 10**18)
    assert feed.update_measured(10**18, base, z, z, z) == OK and feed.valid
    assert feed.counts[PAUSED_BASE] == 1
    # odometry too old for the next joint state: paused again, the estimate invalid
    assert feed.update_measured(10**18 + 200_000_000, base, z, z, z) == PAUSED_BASE
    assert not feed.valid and feed.counts[PAUSED_BASE] == 2
