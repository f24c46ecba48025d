"""What the node knows at any moment, behind one lock, and its diagnostics snapshot (ROS-free).

:class:`NodeState` is shared by the joint_states intake, the tick, the services and the
diagnostics: the current model, the counters of what happened to every message, the
timing windows and the last problems reported. ``lock`` guards all of it (held briefly).
"""

from __future__ import annotations

import math
import threading

from coriolis_ros.stream.joint_state_buffer import FUTURE_STAMP, ZERO_STAMP

from . import diagnostics
from .observer_feed import PAUSED, RESET_BACKWARDS, RESET_GAP, RESET_JUMP
from .stats import Counters, StageTimes, WindowStats


class NodeState:
    def __init__(self, now: float):
        self.lock = threading.Lock()
        self.model = None  # the RobotModel in use, swapped as a whole
        self.counters = Counters()
        self.input_window = WindowStats(now)
        self.output_window = WindowStats(now)  # value: compute time of the tick
        self.tick_window = WindowStats(now)  # value: whole tick (take .. published)
        self.latency_window = WindowStats(now)  # value: message received .. published
        self.stages = StageTimes(now)  # per-stage durations of the hot path
        self.inline_ticks = 0  # ticks run in the callback itself, this diagnostics window
        self.stamp_problems = {ZERO_STAMP: 0, FUTURE_STAMP: 0}  # messages, since start
        self.last_rejection = ""
        self.model_error = ""
        self.nonfinite = 0  # results withheld or refused because not finite, since start
        self.last_nonfinite = ""
        self.nonfinite_recent = 0  # ... in the current diagnostics period
        self.residual = math.nan
        self.residual_scale = 1.0
        self.residual_due = True
        self.flags_version = 0

    def record_nonfinite(self, reason: str) -> None:
        with self.lock:
            self.nonfinite += 1
            self.nonfinite_recent += 1
            self.last_nonfinite = reason

    def snapshot(self, now: float, building: bool, params: dict):
        """(diagnostics.Snapshot, [(key, float), ...]) of the period that ends now; resets the
        period's windows."""
        with self.lock:
            model = self.model
            s = diagnostics.Snapshot(
                model_error=self.model_error,
                building=building,
                input_rate=self.input_window.rate(now),
                output_rate=self.output_window.rate(now),
                compute_mean=self.output_window.mean(),
                compute_max=self.output_window.max if self.output_window.count else math.nan,
                residual=self.residual,
                residual_scale=self.residual_scale,
                counters=self.counters.as_dict(),
                root_joint=params["root_joint"],
                last_rejection=self.last_rejection,
                update_rate=float(params["update_rate"]),
                nonfinite=self.nonfinite,
                nonfinite_recent=self.nonfinite_recent,
                last_nonfinite=self.last_nonfinite,
            )
            extra = [
                ("tick_time_mean_ms", self.tick_window.mean() * 1e3),
                ("tick_time_max_ms", self.tick_window.max * 1e3),
                ("latency_mean_ms", self.latency_window.mean() * 1e3),
                ("latency_max_ms", self.latency_window.max * 1e3),
                *self.stages.values_ms(),
                (
                    "inline_ticks_pct",
                    100.0 * self.inline_ticks / self.output_window.count
                    if self.output_window.count
                    else math.nan,
                ),
            ]
            feed = model.feed if model is not None else None
            extra += _observer_values(feed)
            self.inline_ticks = 0
            self.nonfinite_recent = 0
            self.stages.reset(now)
            for window in (
                self.input_window,
                self.output_window,
                self.tick_window,
                self.latency_window,
            ):
                window.reset(now)
            self.residual_due = True
            if model is not None:
                s.robot, s.dof, s.tree_depth = model.name, model.n, model.tree_depth
                s.model_warning = model.warning
                buffer = model.buffer
                if not buffer.complete:
                    s.missing = buffer.missing()
                else:
                    s.no_velocity = tuple(
                        n for n, ok in zip(buffer.joint_names, buffer.has_velocity) if not ok
                    )
                timeout = float(params["joint_state_timeout"])
                s.stale = buffer.stale(now, timeout)
                s.stale_velocity = buffer.stale_velocity(now, timeout)
                if model.base is not None:
                    s.odometry_received = model.base.received
                    s.odometry_rejected = model.base.rejected
            s.zero_stamps = self.stamp_problems[ZERO_STAMP]
            s.future_stamps = self.stamp_problems[FUTURE_STAMP]
        return s, extra


def _observer_values(feed) -> list:
    counts = feed.counts if feed is not None else {}
    return [
        ("observer_running", 1.0 if feed is not None else 0.0),
        (
            "observer_integrated_total",
            counts["ok"] + counts[RESET_GAP] + counts[RESET_BACKWARDS] + counts[RESET_JUMP]
            if counts
            else math.nan,
        ),
        ("observer_paused_total", counts.get(PAUSED, math.nan)),
        (
            "observer_resets_total",
            counts[RESET_GAP] + counts[RESET_BACKWARDS] + counts[RESET_JUMP]
            if counts
            else math.nan,
        ),
    ]
