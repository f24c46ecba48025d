"""Where a tick runs: inline in the callback that asked for it, or in the compute worker
(ROS-free).

With update_rate 0 the joint_states callback merges the message and, while a tick is cheap
compared with the input interval (``inline_tick_share``), runs the tick right there: no thread
hand-off, no GIL ping-pong. When ticks get expensive relative to the input (a large robot, a
busy machine) it hands them to the compute worker instead, which works on the newest merged
state; the messages merged meanwhile are counted as skipped, so the subscription queue keeps
draining and no input is lost unaccounted. With update_rate > 0 the timer asks instead, and
its period is the interval.
"""

from __future__ import annotations

import threading
import time

EMA = 0.05  # weight of the newest sample in the tick-cost and input-interval averages


class Scheduler:
    """Runs ``tick(since, inline)`` inline or in its worker thread (module docstring)."""

    def __init__(self, tick, inline_share: float):
        self._tick = tick
        self.inline_share = float(inline_share)
        self.timer_period = 0.0  # > 0: a timer asks for ticks at this period
        self.inline = True  # the last tick ran in the callback (or timer) itself
        # CPU s per tick (the ticking thread's CPU time, start to publish() return; EMA). CPU
        # time, not wall time: on a busy machine a preempted tick is not an expensive one, and
        # handing ticks to the compute thread then would only add GIL hand-offs.
        self.cost_ema = 0.0
        self.interval_ema = 1e-3  # s between joint_states messages (EMA)
        self._last_input = -float("inf")
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._wake_time = 0.0  # perf_counter when the worker was last woken
        self._worker = threading.Thread(target=self._work, name="coriolis-compute", daemon=True)

    def start(self) -> None:
        self._worker.start()

    def input_arrived(self, now: float) -> None:
        """A joint_states message arrived at `now` (monotonic s): update the interval."""
        interval = now - self._last_input
        self._last_input = now
        if interval < 1.0:
            self.interval_ema += EMA * (interval - self.interval_ema)

    def tick_cost(self, cpu_seconds: float) -> None:
        self.cost_ema += EMA * (cpu_seconds - self.cost_ema)

    def request(self, since: float) -> None:
        """Tick now in this thread when ticks are cheap, else wake the compute worker."""
        share = self.inline_share
        interval = self.timer_period if self.timer_period > 0 else self.interval_ema
        # Hysteresis: leave inline above `share`, come back below 0.7 * share.
        limit = share * interval if self.inline else 0.7 * share * interval
        self.inline = share > 0.0 and self.cost_ema <= limit
        if self.inline:
            self._tick(since, True)
        else:
            self._wake_time = time.perf_counter()
            self._wake.set()

    def _work(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                return
            self._tick(self._wake_time, False)

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._worker.is_alive():
            self._worker.join(timeout)
