"""One tick: the newest merged state in, one CoriolisState out (ROS-free: `publish` is passed
in).

Top to bottom: take the merged state (and the effort and the observer's estimate at it) under
the lock; report stale joints, old velocities and mimic joints off their leader; stop when
joints or the base state are missing; run the kernels into the message's own storage; refuse
anything non-finite; fill the stamp; publish; account.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from coriolis_ros.stream.joint_state_buffer import name_list


class Ticker:
    def __init__(self, state, reporter, params: dict, publish, scheduler_cost, stopping,
                 publish_contact=None):  # fmt: skip
        self.state = state
        self.reporter = reporter
        self.p = params  # the node's live parameter values
        self.publish = publish  # Publisher.publish: a message object or CDR bytes
        self.scheduler_cost = scheduler_cost  # called with each tick's CPU seconds
        self.stopping = stopping  # () -> True once the node shuts down
        self.publish_contact = publish_contact  # (stamp, node.contact.ContactResult)
        self._lock = threading.Lock()  # one tick at a time (inline or worker)

    def tick(self, since: float, inline: bool) -> None:
        """One tick on the newest merged state; a failure is counted and logged, never raised."""
        try:
            with self._lock:
                self._tick_once(since, inline)
        except Exception as exc:  # noqa: BLE001 -- a failed tick is reported, never fatal
            if self.stopping():
                return  # shutting down: publishing on a finished context fails
            with self.state.lock:
                self.state.counters.failed += 1
            self.reporter.warn(
                ("tick-failed",), f"tick failed: {type(exc).__name__}: {exc}", error=True
            )

    def _tick_once(self, since: float, inline: bool) -> None:
        cpu_start = time.thread_time()
        t_start = time.perf_counter()
        start = time.monotonic()
        timeout = float(self.p["joint_state_timeout"])
        state, warn = self.state, self.reporter.warn
        with state.lock:
            model = state.model
            if model is None:
                return
            buffer = model.buffer
            stale = buffer.stale(start, timeout)
            stale_velocity = buffer.stale_velocity(start, timeout)
            base_wait = ""
            mimic_off = None
            if model.mimic_check is not None and buffer.extra_pending:
                mimic_off = model.mimic_check.check()
                buffer.extra_pending = False
            extras = model.loop_check is not None and buffer.extra_pending  # take() clears it
            take = None
            if buffer.pending:
                take = buffer.take(model.q_joints, model.qd_joints)
                # The input's effort and the observer's estimate at this same state.
                has_effort = buffer.effort_complete
                if has_effort:
                    np.copyto(model.effort_joints, buffer.effort)
                feed = model.feed
                has_estimate = feed is not None and feed.valid
                if has_estimate:
                    np.copyto(model.out.view["external_effort"], feed.estimate)
                if not take.missing and model.base is not None:
                    stamp_ns = take.stamp.sec * 1_000_000_000 + take.stamp.nanosec
                    base_wait = model.base.fill(model.out.q, model.out.qd, stamp_ns)
                    if not base_wait and model.dyn.velocity_representation != "body":
                        out = model.out  # odometry's body twist -> the chosen representation
                        model.dyn.velocity_from_body(out.q, out.qd, out=out.qd)
                if take.missing or base_wait:
                    state.counters.withheld += take.pending
                else:
                    state.counters.skipped += take.pending - 1
            # Dependent joints received are compared with the closure of the next state
            # computed (this one's, below): not consumed by a message that brings no state.
            loop_seen = extras and take is not None and not (take.missing or base_wait)
            if loop_seen:
                model.loop_check.snapshot()
            buffer.extra_pending = extras and not loop_seen
            flags_version = state.flags_version
            residual_due = state.residual_due
        if stale:
            warn(
                ("stale",),
                f"stale joint_states: no value for more than {timeout:g} s from {name_list(stale)}",
                start,
            )
        if stale_velocity:
            warn(
                ("stale-velocity",),
                f"joint_states without velocity for more than {timeout:g} s for "
                f"{name_list(stale_velocity)}: still using their last velocity",
                start,
            )
        if mimic_off:
            worst = ", ".join(
                f"'{name}' = {value:.6g} (its leader implies {implied:.6g})"
                for name, value, implied in mimic_off[:5]
            )
            warn(
                ("mimic",),
                f"joint_states: mimic joint(s) off their leader by more than mimic_tolerance "
                f"{model.mimic_check.tolerance:g}: {worst}; not used (the leader's value is)",
                start,
            )
        if take is None:
            return
        if take.missing:
            warn(
                ("missing",),
                f"not publishing: waiting for joint_states of "
                f"{len(take.missing)} of {model.n} joints: {name_list(take.missing)}",
                start,
            )
            return
        if base_wait:
            warn(("base",), f"not publishing: {base_wait}", start)
            return
        if take.no_velocity:
            warn(
                ("no-velocity",),
                f"joint_states without velocity for {name_list(take.no_velocity)}: using 0",
                start,
            )
        output = model.output
        if output.flags_version != flags_version:
            problem = output.apply_flags(self.p, flags_version, self.p["frame_id"])
            if problem:
                warn(("wire",), f"publishing via message objects (slower): {problem}")

        t0 = time.perf_counter()
        try:
            model.out.compute(model.dyn, matrices=residual_due)
        except ValueError as exc:
            if not (loop_seen and self._close_from_received(model, exc)):
                raise
            model.out.compute(model.dyn, matrices=residual_due)
        t1 = time.perf_counter()
        stamp = take.stamp
        bad = model.out.nonfinite(has_effort, has_estimate)
        if bad:
            self._refuse(model, bad, stamp, start)
            return
        if loop_seen:
            self._check_loops(model, start)
        payload = output.payload(has_effort, has_estimate, stamp)
        t2 = time.perf_counter()
        self.publish(payload)
        t3 = time.perf_counter()
        done = time.monotonic()
        # The scheduler's measure: the state's tick, start to publish() return. The contact
        # stage below follows the state in whichever thread ran it; it is timed on its own.
        cost = time.thread_time() - cpu_start
        contact = has_estimate and model.contact is not None
        if contact:
            self._contact(model, stamp, start)
            t4 = time.perf_counter()

        residual = scale = None
        if residual_due:
            residual, scale = model.out.residual()
        with state.lock:
            state.counters.published += 1
            state.output_window.add(t1 - t0)
            state.tick_window.add(done - start)
            state.latency_window.add(done - take.receive_time)
            stages = state.stages
            stages.add("handoff_wait", 0.0 if inline else max(0.0, t_start - since))
            stages.add("kernels", t1 - t0)
            stages.add("message_fill", (t0 - t_start) + (t2 - t1))
            stages.add("publish", t3 - t2)
            if contact:
                stages.add("contact", t4 - t3)
            self.scheduler_cost(cost)
            if inline:
                state.inline_ticks += 1
            if residual is not None and state.model is model:
                state.residual, state.residual_scale = residual, scale
                state.residual_due = False

    def _contact(self, model, stamp, now: float) -> None:
        """Contact wrenches and the collision flag from the estimate just published."""
        result = model.contact.update(model.out.q, model.out.view["external_effort"])
        if result.changed:
            if result.in_collision:
                self.reporter.warn(("collision-start",), f"collision: {result.reason}", now)
            else:
                self.reporter.warn(("collision-end",), "collision released", now)
        if self.publish_contact is not None:
            self.publish_contact(stamp, result)

    @staticmethod
    def _close_from_received(model, refused: ValueError) -> bool:
        """The library refused to close the loops from its previous solution: if this state
        carried every dependent joint, close them by Newton from those values (False if it
        did not; a ValueError naming both refusals if that fails too)."""
        received = model.loop_check.received()
        if received is None:
            return False
        try:
            model.dyn.close_loops(model.out.q, dependent=received)
        except ValueError as exc:
            raise ValueError(f"{refused}; from the dependent joints received: {exc}") from None
        return True

    def _check_loops(self, model, now: float) -> None:
        """Dependent joints received off the closure: a warning (their values are not used)."""
        off = model.loop_check.compare(model.dyn.closed.dependent_positions())
        if off:
            worst = ", ".join(
                f"'{name}' = {value:.6g} (the closure gives {closed:.6g})"
                for name, value, closed in off[:5]
            )
            self.reporter.warn(
                ("loop",),
                f"joint_states: joint(s) of closed loops off the closure by more than "
                f"mimic_tolerance {model.loop_check.tolerance:g}: {worst}; not used",
                now,
            )

    def _refuse(self, model, bad: list, stamp, now: float) -> None:
        """Nothing non-finite is published: the state is counted as failed and reported."""
        reason = (
            f"{', '.join(bad)} not finite at the joint state stamped "
            f"{stamp.sec}.{stamp.nanosec:09d} s (model {model.name}: values overflow there)"
        )
        with self.state.lock:
            self.state.counters.failed += 1
        self.state.record_nonfinite(reason)
        self.reporter.warn(("nonfinite",), f"not publishing: {reason}", now, error=True)
