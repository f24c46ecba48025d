"""ObserverFeed (coriolis_ros.node.observer_feed): the node's momentum-observer bookkeeping.

Driven by the passivity demo's plant (RK4 forward dynamics with a known push) and checked
against the library's MomentumObserver run offline over the same states: convergence to the
injected torque, pauses on missing effort (bridged, or reset beyond the gap), stamp gaps on
both sides of the bound, stamps going back, repeated stamps, reset, gains, allocation-free
updates.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from coriolis_ros.demo.passivity_plant import Push, RigidBodyPlant
from coriolis_ros.dynamics import Dynamics, MomentumObserver
from coriolis_ros.node import observer_feed as of
from coriolis_ros.robots import robot_urdf

EPOCH_NS = 1_795_000_000_123_456_789  # stamps like a real clock's
DT_NS = 1_000_000
GAIN = 40.0
PUSH_TORQUE = 4.0


@pytest.fixture(scope="module")
def dyn():
    return Dynamics.from_urdf(robot_urdf("arm7"))


@pytest.fixture(scope="module")
def run(dyn):
    """States of the arm held by gravity compensation plus a PD, pushed on joint3 from 0.1 s."""
    push = Push(joint=2, torque=PUSH_TORQUE, start=0.1)
    q0 = np.array([0.1, 0.4, -0.2, -1.2, 0.3, 0.8, 0.0])
    plant = RigidBodyPlant(dyn, q0, np.zeros(7), 1e-3, push)
    states = []
    for k in range(500):
        q, qd = plant.q.copy(), plant.qd.copy()
        tau = dyn.gravity(q) - 20.0 * (q - q0) - 2.0 * qd
        states.append((EPOCH_NS + k * DT_NS, q, qd, tau))
        plant.step(tau)
    return states


def _offline(dyn, states, gain=GAIN):
    obs = MomentumObserver(dyn, gain)
    t0 = states[0][0]
    return [obs.update((s - t0) * 1e-9, q, qd, tau).copy() for s, q, qd, tau in states]


def test_converges_to_the_injected_torque_and_matches_the_offline_observer(dyn, run):
    feed = of.ObserverFeed(dyn, GAIN, max_gap=0.1)
    assert not feed.valid
    for stamp, q, qd, tau in run:
        assert feed.update(stamp, q, qd, tau) == of.OK
        assert feed.valid and feed.stamp_ns == stamp
    expected = np.zeros(7)
    expected[2] = PUSH_TORQUE
    # 0.4 s after the push = 16 time constants: the first-order response has settled
    np.testing.assert_allclose(feed.estimate, expected, rtol=0, atol=2e-3 * PUSH_TORQUE)
    np.testing.assert_allclose(feed.estimate, _offline(dyn, run)[-1], rtol=0, atol=1e-9)
    assert feed.counts[of.OK] == len(run)


def test_missing_effort_pauses_and_a_short_pause_is_bridged(dyn, run):
    feed = of.ObserverFeed(dyn, GAIN, max_gap=0.05)
    used = []
    for k, (stamp, q, qd, tau) in enumerate(run):
        if 150 <= k < 170:  # 20 ms without effort on joint2 and joint6
            effort = tau.copy()
            effort[[1, 5]] = np.nan
            assert feed.update(stamp, q, qd, effort) == of.PAUSED
            assert not feed.valid
            assert feed.missing_names(effort) == ["joint2", "joint6"]
            continue
        assert feed.update(stamp, q, qd, tau) == of.OK
        used.append((stamp, q, qd, tau))
    assert feed.counts[of.PAUSED] == 20 and feed.counts[of.RESET_GAP] == 0
    # the same as the library's observer over the states that had efforts (one 21 ms step)
    np.testing.assert_allclose(feed.estimate, _offline(dyn, used)[-1], rtol=0, atol=1e-9)
    assert feed.estimate[2] == pytest.approx(PUSH_TORQUE, abs=0.05)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, 1.01e50])
def test_unusable_effort_counts_as_missing(dyn, run, bad):
    feed = of.ObserverFeed(dyn, GAIN, max_gap=0.05)
    stamp, q, qd, tau = run[0]
    effort = tau.copy()
    effort[6] = bad
    assert feed.update(stamp, q, qd, effort) == of.PAUSED
    assert feed.missing_names(effort) == ["joint7"]
    effort[6] = 1e50  # the bound itself is usable
    assert feed.update(stamp, q, qd, effort) == of.OK


@pytest.mark.parametrize("gap_ms, resets", [(30, False), (31, True)])
def test_stamp_gap_on_both_sides_of_the_bound(dyn, run, gap_ms, resets):
    feed = of.ObserverFeed(dyn, GAIN, max_gap=0.030)
    kept = [s for k, s in enumerate(run) if not (300 < k < 300 + gap_ms)]
    events = [feed.update(*s) for s in kept]
    if resets:
        assert events.count(of.RESET_GAP) == 1 and feed.last_gap == pytest.approx(0.031)
        restart = events.index(of.RESET_GAP)
        np.testing.assert_allclose(feed.estimate, _offline(dyn, kept[restart:])[-1], atol=1e-9)
    else:
        assert set(events) == {of.OK}
        np.testing.assert_allclose(feed.estimate, _offline(dyn, kept)[-1], atol=1e-9)


def test_reset_restarts_from_zero(dyn, run):
    feed = of.ObserverFeed(dyn, GAIN, max_gap=0.05)
    for s in run[:300]:
        feed.update(*s)
    assert abs(feed.estimate[2]) > 1.0
    feed.reset()
    assert not feed.valid and feed.stamp_ns is None and not feed.estimate.any()
    assert feed.update(*run[300]) == of.OK
    assert not feed.estimate.any()  # the first state after a reset sets p(0): r = 0
    for s in run[301:]:
        feed.update(*s)
    np.testing.assert_allclose(feed.estimate, _offline(dyn, run[300:])[-1], atol=1e-9)


def test_stamp_going_back_resets_and_repeated_stamp_is_ignored(dyn, run):
    feed = of.ObserverFeed(dyn, GAIN, max_gap=0.05)
    for s in run[:200]:
        feed.update(*s)
    before = feed.estimate.copy()
    stamp, q, qd, tau = run[199]
    assert feed.update(stamp, q + 0.01, qd, tau) == of.DUPLICATE
    np.testing.assert_array_equal(feed.estimate, before)
    assert feed.update(run[100][0], *run[200][1:]) == of.RESET_BACKWARDS
    assert feed.last_gap < 0 and not feed.estimate.any()


@pytest.mark.parametrize(
    "gain, match",
    [
        (0.0, "positive"),
        (-5.0, "positive"),
        (math.nan, "positive"),
        ([1.0, 2.0], "2 values but the model has 7"),
        (True, "positive number"),
        (None, "positive number"),
    ],
)
def test_bad_gains(dyn, gain, match):
    with pytest.raises(ValueError, match=match):
        of.ObserverFeed(dyn, gain, 0.1)


def test_gains_scalar_or_per_joint(dyn):
    np.testing.assert_array_equal(of.ObserverFeed(dyn, 30.0, 0.1).gain, np.full(7, 30.0))
    per_joint = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
    np.testing.assert_array_equal(of.ObserverFeed(dyn, per_joint, 0.1).gain, per_joint)
    np.testing.assert_array_equal(of.ObserverFeed(dyn, [25.0], 0.1).gain, np.full(7, 25.0))


@pytest.mark.parametrize("max_gap", [0.0, -1.0, math.inf, math.nan])
def test_bad_max_gap(dyn, max_gap):
    with pytest.raises(ValueError, match="observer_max_gap"):
        of.ObserverFeed(dyn, 10.0, max_gap)


def test_updates_allocate_nothing(dyn, run):
    feed = of.ObserverFeed(dyn, GAIN, max_gap=0.05)
    for s in run[:10]:
        feed.update(*s)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for s in run[10:400]:
            feed.update(*s)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "lineno") if stat.size_diff > 0)
    assert grown < 2000  # bytes: no per-update arrays (390 updates of 7-vectors would be > 20 kB)


def test_observer_parameters_validation():
    import array

    from coriolis_ros.node.params import validate

    assert validate("observer_gain", 50.0) is None
    assert validate("observer_gain", 3) is None
    assert validate("observer_gain", [10.0, 20.0]) is None
    assert validate("observer_gain", array.array("d", [1.0, 2.0])) is None
    for bad in (0.0, -1.0, math.inf, math.nan, [], [1.0, 0.0], True, "fast", [1.0, "a"]):
        assert validate("observer_gain", bad) is not None, bad
    assert validate("observer_enabled", True) is None
    assert validate("observer_enabled", 1) is not None
    assert validate("observer_max_gap", 1e-6) is None
    assert validate("observer_max_gap", 3600.0) is None
    assert validate("observer_max_gap", 0.0) is not None
    assert validate("observer_max_gap", 3601.0) is not None


def test_a_closed_chain_s_jump_resets_the_feed_or_restarts_it_from_the_received_joints():
    """A revolute-crank four-bar at rest with effort g - 0.7 (r -> 0.7), then 300 rad away
    with effort g: without the dependent joints the update is refused and the feed reset (no
    estimate); with them, it restarts from r = 0 there (reset_jump) and goes on. Reference: at
    rest r converges to g - effort."""
    plain = Dynamics.from_urdf(robot_urdf("four_bar"))
    urdf = robot_urdf("four_bar").replace(
        '<joint name="crank" type="continuous">',
        '<joint name="crank" type="revolute"><limit lower="-1e4" upper="1e4" effort="10" '
        'velocity="10"/>',
    )
    far = 300.3
    angle = float(np.arctan2(np.sin(far), np.cos(far)))
    received = plain.close_loops([angle], guess=[angle, 0.0, 0.5])[1:]
    g, g_far = plain.gravity([0.3])[0], plain.gravity([angle])[0]
    zero = np.zeros(1)
    for given in (None, received):
        feed = of.ObserverFeed(Dynamics.from_urdf(urdf), 50.0, 0.1)
        for k in range(300):
            assert feed.update(EPOCH_NS + k * DT_NS, np.array([0.3]), zero,
                               np.array([g - 0.7])) == of.OK  # fmt: skip
        assert feed.valid and abs(feed.estimate[0] - 0.7) < 1e-6
        stamp = EPOCH_NS + 300 * DT_NS
        if given is None:
            with pytest.raises(ValueError, match="moved by 300"):
                feed.update(stamp, np.array([far]), zero, np.array([g_far]))
            assert not feed.valid and feed.estimate[0] == 0.0 and feed.stamp_ns is None
            continue
        event = feed.update(stamp, np.array([far]), zero, np.array([g_far]), given)
        assert event == of.RESET_JUMP and feed.valid and feed.estimate[0] == 0.0
        assert feed.counts[of.RESET_JUMP] == 1
        for k in range(301, 400):
            assert feed.update(EPOCH_NS + k * DT_NS, np.array([far]), zero,
                               np.array([g_far]), given) == of.OK  # fmt: skip
        assert abs(feed.estimate[0]) < 1e-9
