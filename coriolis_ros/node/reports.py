"""The node's log lines, rate-limited and aggregated (ROS-free: the log is passed in).

Two limits, both counted so the next line says how many were held back:

* per key (e.g. ``("rejected", "# joint names but # positions")``): one line per
  ``warning_period`` seconds (:class:`~coriolis_ros.node.stats.Throttle`);
* per kind (the key's first element: "rejected", "unknown", "stamp-future", ...): at most one
  line per ``min(KIND_PERIOD, warning_period)`` seconds, whatever the keys within it, so input
  that varies in every message (a different name list, a different bad value) cannot flood
  the log. ``warning_period`` 0 turns both off (every warning printed, for debugging).

Unknown joint names are reported as one line per new set of names (the names listed up to
ten, then "... and N more"), never one line per name.
"""

from __future__ import annotations

import time

from coriolis_ros.stream.joint_state_buffer import name_list

from .stats import Throttle

KIND_PERIOD = 1.0  # s: at most one line per kind of warning per second


def kind_of(key) -> str:
    return str(key[0]) if isinstance(key, tuple) else str(key)


class Reporter:
    """Warnings through `log` (an object with info, warning and error methods)."""

    def __init__(self, log, period: float, clock=time.monotonic):
        self.log = log
        self._clock = clock
        self._throttle = Throttle(float(period))
        self._kind_last: dict = {}
        self._kind_held: dict = {}

    @property
    def period(self) -> float:
        return self._throttle.period

    @period.setter
    def period(self, value: float) -> None:
        self._throttle.period = float(value)

    def reset(self) -> None:
        """Forget what was said (a new model: its first warnings are printed)."""
        self._throttle.reset()
        self._kind_last.clear()
        self._kind_held.clear()

    def allow(self, key, now: float) -> int:
        """0 to hold the line back, else 1 + the number held back for its key and kind."""
        kind = kind_of(key)
        floor = min(KIND_PERIOD, self._throttle.period)
        last = self._kind_last.get(kind)
        if last is not None and now - last < floor:
            self._kind_held[kind] = self._kind_held.get(kind, 0) + 1
            return 0
        allowed = self._throttle.allow(key, now)
        if not allowed:
            return 0
        self._kind_last[kind] = now
        return allowed + self._kind_held.pop(kind, 0)

    def warn(self, key, text: str, now: float | None = None, error: bool = False) -> bool:
        """Log `text` unless held back; True when it was logged."""
        allowed = self.allow(key, self._clock() if now is None else now)
        if allowed:
            held = allowed - 1
            note = f" ({held} similar suppressed)" if held else ""
            (self.log.error if error else self.log.warning)(text + note)
        return bool(allowed)

    def unknown_names(self, names, model_name: str, now: float | None = None) -> bool:
        """One line for a set of joint names the model does not have."""
        names = list(names)
        if not names:
            return False
        if len(names) == 1:
            text = (
                f"ignoring unknown joint '{names[0]}' in joint_states (not in model {model_name})"
            )
        else:
            text = (
                f"ignoring {len(names)} unknown joints in joint_states (not in model "
                f"{model_name}): {name_list(names)}"
            )
        return self.warn(("unknown",), text, now)
