"""Collision flag and contact wrenches from a residual (coriolis_ros.node.contact, ROS-free)."""

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
    w = np.array([0.0, 0.0, -20.0, 0.0, 0.0, 0.0])  # a 20 N push down on the tool
    effort = DYN.gravity(Q) - DYN.frame_jacobian(Q, "tcp").T @ w
    names = list(DYN.joint_names)
    for k in range(300):  # 0.3 s at 1 kHz: 30 time constants
        core.joint_state(names, Q, np.zeros(7), effort, stamp_ns=1_000_000_000 + k * 1_000_000)
    seen = [result for _, result in core.contact_results]
    assert len(seen) == 300, "one contact result per state"
    last = seen[-1]
    np.testing.assert_allclose(last.wrenches["tcp"][0], w, atol=1e-6)
    assert last.in_collision
    assert sum(r.changed for r in seen) == 1  # one collision event, no chatter
    assert "collision: |r| of" in core.log.text()


# ----------------------------------------------------------------- the worker (off the tick)


class _Recorder:
    """A stand-in monitor: returns the residual it was run on, and a flag when asked."""

    def __init__(self, fail=False, changed=False):
        self.fail, self.changed, self.seen = fail, changed, []

    def update(self, q, r):
        from coriolis_ros.node.contact import ContactResult

        if self.fail:
            raise RuntimeError("boom")
        self.seen.append((q.copy(), r.copy()))
        return ContactResult(in_collision=self.changed, changed=self.changed, reason="r0")


def _worker(stopping=lambda: False):
    from coriolis_ros.node.contact_worker import ContactWorker

    published, reports, errors = [], [], []
    worker = ContactWorker(lambda stamp, result: published.append((stamp, result)),
                           lambda result, now: reports.append((result, now)), stopping)  # fmt: skip
    worker.report_error = errors.append
    return worker, published, reports, errors


def test_the_worker_runs_the_monitor_on_a_copy_of_the_state_handed_over():
    worker, published, reports, _ = _worker()
    monitor = _Recorder(changed=True)
    q, r = np.arange(3.0), np.arange(3.0) + 10
    worker.submit(monitor, q, r, "stamp-1", 5.0)
    q[:], r[:] = -1.0, -2.0  # the tick reuses its storage right away
    assert monitor.seen == []  # nothing runs in submit
    assert worker.drain()
    np.testing.assert_array_equal(monitor.seen[0][0], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(monitor.seen[0][1], [10.0, 11.0, 12.0])
    assert [stamp for stamp, _ in published] == ["stamp-1"]
    assert [now for _, now in reports] == [5.0]  # the flag changed: reported
    assert (worker.done, worker.skipped) == (1, 0)
    assert not worker.drain()  # nothing waiting: nothing run, nothing published
    assert len(published) == 1 and worker.done == 1


def test_the_newest_state_wins_and_the_replaced_ones_are_counted():
    worker, published, reports, _ = _worker()
    monitor = _Recorder()
    for k in range(3):
        worker.submit(monitor, np.zeros(2), np.full(2, float(k)), f"s{k}", float(k))
    assert worker.drain()
    assert [stamp for stamp, _ in published] == ["s2"]
    np.testing.assert_array_equal(monitor.seen[-1][1], [2.0, 2.0])
    assert (worker.done, worker.skipped) == (1, 2)
    assert reports == []  # no change of the flag: no log line
    worker.submit(monitor, np.zeros(2), np.ones(2), "s3", 3.0)  # taken before the next one
    worker.drain()
    worker.submit(monitor, np.zeros(2), np.ones(2), "s4", 4.0)
    worker.drain()
    assert (worker.done, worker.skipped) == (3, 2)


def test_a_new_model_size_gets_new_storage():
    worker, published, _, _ = _worker()
    monitor = _Recorder()
    worker.submit(monitor, np.zeros(2), np.ones(2), "a", 0.0)
    worker.drain()
    worker.submit(monitor, np.zeros(5), np.arange(5.0), "b", 0.0)
    worker.drain()
    np.testing.assert_array_equal(monitor.seen[-1][1], np.arange(5.0))


def test_a_failing_update_is_counted_and_reported_never_raised():
    worker, published, _, errors = _worker()
    worker.submit(_Recorder(fail=True), np.zeros(2), np.ones(2), "a", 0.0)
    assert worker.drain()
    assert worker.failed == 1 and published == []
    assert errors == ["contact update failed: RuntimeError: boom"]


def test_nothing_is_published_or_reported_once_the_node_stops():
    stopping = [False]
    worker, published, _, errors = _worker(lambda: stopping[0])
    worker.submit(_Recorder(), np.zeros(2), np.ones(2), "a", 0.0)
    stopping[0] = True
    worker.drain()
    assert published == []
    worker.submit(_Recorder(fail=True), np.zeros(2), np.ones(2), "b", 0.0)
    worker.drain()
    assert worker.failed == 0 and errors == []  # a failure while stopping is not one


def test_the_worker_thread_publishes_and_stops():
    import threading

    from coriolis_ros.node.contact_worker import ContactWorker

    got = threading.Event()
    worker = ContactWorker(lambda stamp, result: got.set(), lambda result, now: None,
                           lambda: False)  # fmt: skip
    worker.start()
    try:
        worker.submit(_Recorder(), np.zeros(2), np.ones(2), "a", 0.0)
        assert got.wait(5.0), "the worker thread did not run the monitor"
    finally:
        worker.stop(2.0)
    assert not worker._thread.is_alive()


def test_submit_allocates_no_arrays_while_the_model_stays():
    import tracemalloc

    worker, _, _, _ = _worker()
    monitor = _Recorder()
    n = 8000  # 64 KB a copy: far above Python-object noise
    q, r = np.zeros(n), np.ones(n)
    worker.submit(monitor, q, r, "a", 0.0)  # the storage is made here, once
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in range(20):
            worker.submit(monitor, q, r, "a", 0.0)
        growth = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert growth < 8 * n // 2, f"submit allocated {growth} bytes"
