"""The node's log lines, rate-limited (ROS-free: the log is passed in).

One line per key (e.g. ``("rejected", "# joint names but # positions")``) per
``warning_period`` seconds (:class:`~coriolis_ros.node.stats.Throttle`); the next line says
how many were held back.
"""

from __future__ import annotations

import time

from .stats import Throttle, suppressed_note


class Reporter:
    """Warnings through `log` (an object with info, warning and error methods)."""

    def __init__(self, log, period: float, clock=time.monotonic):
        self.log = log
        self._clock = clock
        self._throttle = Throttle(float(period))

    @property
    def period(self) -> float:
        return self._throttle.period

    @period.setter
    def period(self, value: float) -> None:
        self._throttle.period = float(value)

    def reset(self) -> None:
        """Forget what was said (a new model: its first warnings are printed)."""
        self._throttle.reset()

    def warn(self, key, text: str, now: float | None = None, error: bool = False) -> bool:
        """Log `text` unless held back; True when it was logged."""
        allowed = self._throttle.allow(key, self._clock() if now is None else now)
        if allowed:
            (self.log.error if error else self.log.warning)(text + suppressed_note(allowed))
        return bool(allowed)

    def unknown_names(self, names, model_name: str, now: float | None = None) -> bool:
        for name in names:
            self.log.warning(
                f"ignoring unknown joint '{name}' in joint_states (not in model {model_name})"
            )
        return bool(names)
