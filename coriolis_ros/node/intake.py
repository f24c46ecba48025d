"""joint_states and odometry in (ROS-free: the node passes the messages' fields).

:meth:`Intake.joint_state` merges one message into the model's buffer, feeds the momentum
observer on every accepted one (also those whose output is skipped later), counts what
happened and reports problems, and says whether a tick is due. :meth:`Intake.odometry`
keeps the newest valid base state.
"""

from __future__ import annotations

import re
import time

from coriolis_ros.stream.joint_state_buffer import (
    ACCEPTED,
    FOLLOWERS_ONLY,
    REJECTED,
    ZERO_STAMP,
    name_list,
    stamp_problem,
)

from .observer_feed import (
    PAUSED,
    PAUSED_BASE,
    RESET_BACKWARDS,
    RESET_GAP,
    RESET_JUMP,
)


class Intake:
    def __init__(self, state, reporter, scheduler, params: dict, clock_ns):
        self.state = state
        self.reporter = reporter
        self.scheduler = scheduler
        self.p = params
        self.clock_ns = clock_ns  # () -> the node's clock in ns (sim time aware)
        self.last_callback = None  # duration of the previous joint_states callback (s)

    def joint_state(self, names, position, velocity, effort, stamp, enter: float) -> bool:
        """Merge one JointState; True when it brought a new state (a tick is due)."""
        now = time.monotonic()
        state, observer_note = self.state, ()
        with state.lock:
            counters = state.counters
            counters.received += 1
            state.input_window.add()
            if self.last_callback is not None:
                state.stages.add("callback", self.last_callback)
            self.scheduler.input_arrived(now)
            model = state.model
            if model is None:
                counters.withheld += 1
                result = None
            else:
                result = model.buffer.update(
                    names, position, velocity, len(effort), stamp, now, effort
                )
                state.stages.add("buffer_update", time.perf_counter() - enter)
                status = result.status
                if status == ACCEPTED and model.feed is not None:
                    observed = time.perf_counter()
                    observer_note = self._observe(model, stamp)
                    state.stages.add("observer", time.perf_counter() - observed)
                if status == REJECTED:
                    counters.rejected += 1
                    state.last_rejection = result.reason
                elif status != ACCEPTED:  # ignored, or only joints that follow a leader
                    counters.ignored += 1
        warn = self.reporter.warn
        if result is None:
            warn(
                ("no-model",),
                "joint_states received but there is no robot model yet "
                "(waiting for robot_description)",
                now,
            )
            return False
        if result.new_unknown:
            self.reporter.unknown_names(result.new_unknown, model.name, now)
        if status == ACCEPTED:
            if observer_note:
                self._report_observer(observer_note, now)
            problem = stamp_problem(stamp.sec, stamp.nanosec, self.clock_ns())
            if problem is not None:
                self._report_stamp(problem, stamp, now)
            return True
        if status == REJECTED:
            key = ("rejected", re.sub(r"[0-9]+", "#", result.reason)[:60])
            warn(key, f"joint_states message rejected: {result.reason}", now)
        elif status == FOLLOWERS_ONLY:
            return True  # the tick checks them against their leader; no new state
        else:
            warn(
                ("ignored",),
                f"joint_states message ignored: it names no joint of model {model.name}",
                now,
            )
        return False

    def odometry(self, fields, now: float) -> None:
        """Keep the newest valid odometry of the root link (floating or planar root_joint).
        `fields`: (stamp_ns, frame_id, child_frame_id, pose (7,), twist (6,))."""
        stamp, frame_id, child, pose, twist = fields
        with self.state.lock:
            model = self.state.model
            if model is None or model.base is None:
                return  # no model yet: its root link is unknown
            accepted, note = model.base.update(
                child, frame_id, pose[:3], pose[3:], twist[:3], twist[3:], stamp
            )
        if note:
            what = "odometry" if accepted else "odometry rejected"
            kind = "odometry-note" if accepted else "odometry-rejected"
            self.reporter.warn((kind,), f"{what}: {note}", now)

    # ---------------------------------------------------------------- observer

    def _observe(self, model, stamp) -> tuple:
        """Integrate the merged state just updated (state.lock held); () or (event, detail)."""
        buffer = model.buffer
        if not buffer.complete:
            return ()
        feed = model.feed
        stamp_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        received = model.loop_check.current() if model.loop_check is not None else None
        try:
            event = feed.update_measured(
                stamp_ns, model.base, buffer.position, buffer.velocity, buffer.effort, received
            )
        except ValueError as exc:  # a jump of a closed chain without its dependent joints
            return ("failed", str(exc))
        if event == PAUSED:
            return (PAUSED, feed.missing_names(buffer.effort))
        if event == PAUSED_BASE:
            return (PAUSED_BASE, feed.base_wait)
        if event in (RESET_GAP, RESET_BACKWARDS, RESET_JUMP):
            return (event, feed.last_gap)
        return ()

    def _report_observer(self, note: tuple, now: float) -> None:
        event, detail = note
        key = (f"observer-{event}",)
        if event == PAUSED:
            text = (
                f"momentum observer paused: joint_states without effort for {len(detail)} "
                f"joint(s): {name_list(detail)} (external_effort stays empty until every "
                "joint has one)"
            )
        elif event == PAUSED_BASE:
            text = f"momentum observer paused: {detail}"
        elif event == RESET_GAP:
            text = (
                f"momentum observer reset: {detail:.4g} s between joint state stamps is more "
                f"than observer_max_gap ({float(self.p['observer_max_gap']):g} s); its "
                "estimate restarts from zero"
            )
        elif event == RESET_BACKWARDS:
            text = (
                f"momentum observer reset: joint state stamp went back by {-detail:.4g} s; its "
                "estimate restarts from zero"
            )
        elif event == RESET_JUMP:
            text = (
                "momentum observer reset: the closed chain jumped beyond continuation (closed "
                "again from the dependent joints received); its estimate restarts from zero"
            )
        else:
            text = f"momentum observer update failed: {detail}; no estimate until it runs again"
        self.reporter.warn(key, text, now)

    def _report_stamp(self, problem: str, stamp, now: float) -> None:
        """Zero or future-dated stamp: used as is (documented policy), throttled warning."""
        if problem == ZERO_STAMP:
            text = (
                "joint_states with a zero header.stamp: used as is, so coriolis_state is "
                "stamped 0 too (the publisher should stamp its messages)"
            )
        else:
            ahead = (stamp.sec * 1e9 + stamp.nanosec - self.clock_ns()) * 1e-9
            text = (
                f"joint_states stamped {ahead:.3f} s ahead of this node's clock: used as is "
                "(coriolis_state carries the same stamp); check the publisher's clock and "
                "use_sim_time"
            )
        with self.state.lock:
            self.state.stamp_problems[problem] += 1
        self.reporter.warn((f"stamp-{problem}",), text, now)
