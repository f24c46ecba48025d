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
