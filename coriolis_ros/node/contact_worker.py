"""Contact wrenches and the collision flag off the state tick, in their own thread (ROS-free).

The state tick publishes the CoriolisState, then hands the contact monitor
(:mod:`coriolis_ros.node.contact`) the state it used: ``submit`` copies q and the observer's
residual into preallocated storage and wakes the worker, no more. The worker runs the monitor
on the newest state handed over (the Jacobians, the least-squares wrenches, the thresholds)
and publishes its result, stamped with that state's stamp. So the least squares and the extra
messages never lengthen a state tick: the tick's cost, and with it the scheduler's choice of
running ticks inline, is the state's alone. The worker runs while the tick's thread waits for
the next message.

Newest wins: a state handed over while the previous one is still waiting is counted as
skipped (``skipped``); every state the worker takes is counted in ``done``. Both are in the
node's diagnostics (contact_updates_total, contact_skipped_total).
"""

from __future__ import annotations

import threading

import numpy as np


class ContactWorker:
    """Runs ``monitor.update`` on the newest submitted state, then ``publish(stamp, result)``;
    ``report(result, now)`` is called first for each result whose flag changed."""

    def __init__(self, publish, report, stopping):
        self.publish = publish  # (stamp, ContactResult)
        self.report = report  # (ContactResult, now)
        self.stopping = stopping  # () -> True once the node shuts down
        self.done = 0  # states the monitor ran on
        self.skipped = 0  # states replaced by a newer one before the worker took them
        self.failed = 0  # updates or publishes that raised (reported through report_error)
        self.report_error = None  # (text) for a failed update, when set
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pending = False
        # (monitor, q, residual) handed over / being worked on; storage reused while the sizes
        # stay the same (allocated again only for a new model).
        self._in = _Slot()
        self._work = _Slot()
        self._thread = threading.Thread(target=self._run, name="coriolis-contact", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, monitor, q, residual, stamp, now: float) -> None:
        """Hand over the state just published (copied: the caller may overwrite q and
        residual right away). Allocation-free while the model stays the same."""
        with self._lock:
            if self._pending:
                self.skipped += 1
            self._in.fill(monitor, q, residual, stamp, now)
            self._pending = True
        self._wake.set()

    def drain(self) -> bool:
        """Run the monitor on the state waiting, if any, in the calling thread (what the worker
        does; tests call it directly). True if there was one."""
        with self._lock:
            if not self._pending:
                return False
            self._work.fill(self._in.monitor, self._in.q, self._in.r, self._in.stamp,
                            self._in.now)  # fmt: skip
            self._pending = False
            self.done += 1
        slot = self._work
        try:
            result = slot.monitor.update(slot.q, slot.r)
            if result.changed:
                self.report(result, slot.now)
            if not self.stopping():
                self.publish(slot.stamp, result)
        except Exception as exc:  # noqa: BLE001 -- a failed update is reported, never fatal
            if self.stopping():
                return True  # shutting down: publishing on a finished context fails
            with self._lock:
                self.failed += 1
            if self.report_error is not None:
                self.report_error(f"contact update failed: {type(exc).__name__}: {exc}")
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                return
            self.drain()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)


class _Slot:
    """One state for the monitor: its q and residual in storage of their own."""

    def __init__(self):
        self.monitor = None
        self.q = np.empty(0)
        self.r = np.empty(0)
        self.stamp = None
        self.now = 0.0

    def fill(self, monitor, q, residual, stamp, now: float) -> None:
        if self.q.shape != np.shape(q):
            self.q = np.empty(np.shape(q))
        if self.r.shape != np.shape(residual):
            self.r = np.empty(np.shape(residual))
        np.copyto(self.q, q)
        np.copyto(self.r, residual)
        self.monitor, self.stamp, self.now = monitor, stamp, now


def collision_reporter(reporter):
    """``report`` for :class:`ContactWorker`: a log line when a collision starts (with what
    exceeded its threshold) and when it is released, through the node's Reporter."""

    def report(result, now: float) -> None:
        if result.in_collision:
            reporter.warn(("collision-start",), f"collision: {result.reason}", now)
        else:
            reporter.warn(("collision-end",), "collision released", now)

    return report
