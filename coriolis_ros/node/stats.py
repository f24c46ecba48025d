"""Rate, timing and log-throttling helpers (ROS-free, clock passed in explicitly)."""

from __future__ import annotations

import math


class Counters:
    """What happened to every joint_states message (and to every tick).

    Every received message ends in exactly one of: rejected, ignored, withheld, skipped,
    published, failed (or is still pending). So, at rest:
    received == rejected + ignored + withheld + skipped + published + failed.
    """

    FIELDS = ("received", "rejected", "ignored", "withheld", "skipped", "published", "failed")

    def __init__(self):
        for name in self.FIELDS:
            setattr(self, name, 0)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.FIELDS}


class WindowStats:
    """Count events and sum/max a duration over a window that the reader resets."""

    def __init__(self, now: float):
        self.start = now
        self.count = 0
        self.total = 0.0
        self.max = 0.0

    def add(self, value: float = 0.0) -> None:
        self.count += 1
        self.total += value
        self.max = max(self.max, value)

    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan

    def rate(self, now: float) -> float:
        elapsed = now - self.start
        return self.count / elapsed if elapsed > 0 else 0.0

    def reset(self, now: float) -> None:
        self.start = now
        self.count = 0
        self.total = 0.0
        self.max = 0.0


class Throttle:
    """Allow one emission per key per `period` seconds; the first one always passes.

    `allow` returns how many emissions were suppressed since the last allowed one, plus one
    (so 0 means "suppress"), so a message can say "(N similar since)".
    """

    MAX_KEYS = 1000

    def __init__(self, period: float):
        self.period = period
        self._last: dict = {}
        self._suppressed: dict = {}

    def allow(self, key, now: float) -> int:
        last = self._last.get(key)
        if last is not None and now - last < self.period:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return 0
        if len(self._last) >= self.MAX_KEYS:  # bounded, whatever the input varies in
            self.reset()
        self._last[key] = now
        return self._suppressed.pop(key, 0) + 1

    def reset(self) -> None:
        self._last.clear()
        self._suppressed.clear()


def suppressed_note(allowed: int) -> str:
    """' (3 similar suppressed)' for allow() == 4, '' for 1."""
    return f" ({allowed - 1} similar suppressed)" if allowed > 1 else ""


# Stages of the joint_states -> coriolis_state path, in order (diagnostics keys
# stage_<name>_mean_ms / stage_<name>_max_ms):
#   callback       joint_states callback, entry to return (includes buffer_update)
#   buffer_update  validate + merge the message into the JointStateBuffer
#   handoff_wait   callback handing the state over -> the tick starting on it (0 when the tick
#                  runs inline in the callback)
#   kernels        the dynamics kernels of one tick
#   message_fill   everything else a tick does before publish (take, flags, stamp)
#   publish        rclpy publish() of the CoriolisState (serialisation + DDS write)
#   contact        after the publish: the contact wrenches, the collision flag and their
#                  messages (only with wrench_frames or collision thresholds and the observer)
STAGES = (
    "callback",
    "buffer_update",
    "observer",  # the momentum observer's update, in the joint_states callback
    "handoff_wait",
    "kernels",
    "message_fill",
    "publish",
    "contact",
)


class StageTimes:
    """One WindowStats of durations (s) per stage of STAGES; reset by the reader."""

    def __init__(self, now: float):
        self.windows = {stage: WindowStats(now) for stage in STAGES}

    def add(self, stage: str, seconds: float) -> None:
        self.windows[stage].add(seconds)

    def values_ms(self) -> list[tuple[str, float]]:
        """[(stage_<name>_mean_ms, value), (stage_<name>_max_ms, value), ...]; NaN if empty."""
        out = []
        for stage, w in self.windows.items():
            out.append((f"stage_{stage}_mean_ms", w.mean() * 1e3))
            out.append((f"stage_{stage}_max_ms", w.max * 1e3 if w.count else math.nan))
        return out

    def reset(self, now: float) -> None:
        for w in self.windows.values():
            w.reset(now)
