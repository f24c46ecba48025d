"""The node's exit path: an executor failure while SIGINT/SIGTERM shuts the context down is a
normal exit only if the context is down at once or within the wait (node/main.py)."""

import time


from coriolis_ros.node.main import _shut_down_soon


class _Context:
    """rclpy.ok() is True for the first ``true_calls`` calls, then False."""

    def __init__(self, true_calls):
        self.calls = 0
        self.true_calls = true_calls

    def ok(self):
        self.calls += 1
        return self.calls <= self.true_calls


def test_a_context_already_down_is_a_normal_exit():
    ctx = _Context(0)
    assert _shut_down_soon(ctx, wait=0.5) is True
    assert ctx.calls == 1


def test_a_context_going_down_within_the_wait_is_a_normal_exit():
    ctx = _Context(3)  # down on the 4th look, about 30 ms in
    start = time.monotonic()
    assert _shut_down_soon(ctx, wait=2.0) is True
    assert ctx.calls == 4
    assert time.monotonic() - start < 1.0


def test_a_context_still_up_after_the_wait_is_a_real_failure():
    ctx = _Context(10**9)
    start = time.monotonic()
    assert _shut_down_soon(ctx, wait=0.1) is False
    assert 0.1 <= time.monotonic() - start < 1.0


def test_the_exit_watchdog_waits_for_the_shutdown_then_its_grace():
    """Once the context is down, a hung teardown still ends the process after the grace."""
    import threading

    from coriolis_ros.node.main import start_exit_watchdog

    ctx = _Context(5)  # down on the 6th look, about 5 polls in
    exited = threading.Event()
    start = time.monotonic()
    thread = start_exit_watchdog(ctx.ok, 0.2, exited.set, poll=0.01)
    assert exited.wait(5.0)
    elapsed = time.monotonic() - start
    assert 0.2 + 5 * 0.01 <= elapsed < 3.0  # not before the context is down plus the grace
    thread.join(1.0)
    assert not thread.is_alive()


def test_the_exit_watchdog_does_nothing_while_the_context_is_up():
    import threading

    from coriolis_ros.node.main import start_exit_watchdog

    exited, down = threading.Event(), threading.Event()
    thread = start_exit_watchdog(lambda: not down.is_set(), 0.0, exited.set, poll=0.01)
    assert not exited.wait(0.3)
    down.set()  # and now it does its part, so that the thread ends
    assert exited.wait(5.0)
    thread.join(1.0)
