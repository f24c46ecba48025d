"""ROS 2 node `coriolis`: publishes C(q, q̇), M, Ṁ, g, C q̇, Cᵀ q̇, p from joint states.

A thin adapter: all dynamics come from `coriolis_ros.dynamics.Dynamics`. Threads:

* the executor runs the subscriptions, services and timers: with executor_threads 1,
  rclpy.experimental.EventsExecutor (parameter executor: events, the default; far less CPU per
  callback than the SingleThreadedExecutor, executor: single); > 1 = MultiThreadedExecutor
  with separate callback groups. Services use their own Dynamics instance (own workspace);
* the tick (take the newest merged state, run the kernels into preallocated arrays, publish a
  prebuilt serialised message) runs inside the joint_states callback (or the update_rate
  timer) while its CPU time is below inline_tick_share of the input interval;
* otherwise one compute worker runs it, on the newest merged state (a backlog is never worked
  through: messages merged while it was busy are counted as skipped);
* one model builder parses a new robot_description and warms the kernels up, then swaps the
  model in atomically; ticks keep running on the old model meanwhile.

Run: `make run URDF=robot.urdf`, `python -m coriolis_ros.node --ros-args -p
robot_description_file:=robot.urdf` or `ros2 run coriolis_ros coriolis_node`.
"""

from __future__ import annotations

import ast
import math
import re
import sys
import threading
import time

import numpy as np
import rclpy
import rclpy.logging
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import (
    ExternalShutdownException,
    MultiThreadedExecutor,
    SingleThreadedExecutor,
)
from rclpy.exceptions import ParameterException
from rclpy.experimental import EventsExecutor
from rclpy.logging import get_logger
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from coriolis_ros.msg import CoriolisState
from coriolis_ros.srv import ComputeDynamics, GetChristoffelSymbols

from . import diagnostics
from coriolis_ros.stream.base_state import BASE_SIZES, BaseStateBuffer, request_base
from .conversions import empty_field, to_field
from coriolis_ros.stream.joint_state_buffer import (
    ACCEPTED,
    FUTURE_STAMP,
    IGNORED,
    MAX_ABS,
    REJECTED,
    ZERO_STAMP,
    JointStateBuffer,
    name_list,
    resolve_request,
    stamp_problem,
)
from coriolis_ros.stream.mimic_check import MimicCheck
from .odometry import parse_odometry
from .observer_feed import PAUSED, RESET_BACKWARDS, RESET_GAP, ObserverFeed
from .params import OUTPUT_FIELDS, PARAMETERS, validate
from .stats import Counters, StageTimes, Throttle, WindowStats, suppressed_note
from .tick import TickOutputs
from .wire import WireState

NODE_NAME = "coriolis"
_ARRAY_TYPES = {"string": Parameter.Type.STRING_ARRAY, "double": Parameter.Type.DOUBLE_ARRAY}
_EMA = 0.05  # weight of the newest sample in the tick-cost and input-interval averages
_LEVELS = {
    diagnostics.OK: DiagnosticStatus.OK,
    diagnostics.WARN: DiagnosticStatus.WARN,
    diagnostics.ERROR: DiagnosticStatus.ERROR,
    diagnostics.STALE: DiagnosticStatus.STALE,
}

# A fixed-base model (root_joint fixed) takes no base state: base fields must stay empty.
FIXED_BASE_REQUEST = (
    "base_position/base_velocity given, but the model has a fixed base (root_joint: fixed)"
)


class _Model:
    """One robot model with everything a tick needs, swapped in as a whole.

    The result buffers (`out`, a TickOutputs) are numpy views of the array.array objects stored
    in `msg`, so the kernels write straight into the message that is published.
    """

    def __init__(self, dyn, service_dyn, urdf: str, base_state_timeout: float,
                 mimic_tolerance: float):  # fmt: skip
        self.dyn = dyn
        self.service_dyn = service_dyn  # separate instance: services never touch dyn
        self.service_lock = threading.Lock()
        self.urdf = urdf
        self.name = dyn.name
        self.joint_names = tuple(dyn.joint_names)
        self.n = dyn.nv
        self.tree_depth = dyn.tree_depth
        # A floating or planar root leads q and v: its state comes from odometry (`base`),
        # the joints' from joint_states (`buffer`), each written into its part of q and qd.
        self.root_joint = dyn.root_joint
        nqb, nvb = BASE_SIZES[self.root_joint]
        self.position_names = tuple(dyn.position_names) if nvb else ()
        self.measured_names = self.joint_names[nvb:]  # the joints read from joint_states
        # Joints that follow their leader (mimic joints, geared rotors): tracked in
        # joint_states, checked, never used.
        self.mimic = dyn.coupled_joints
        self.buffer = JointStateBuffer(self.measured_names, extra_names=tuple(self.mimic))
        self.mimic_check = (
            MimicCheck(self.buffer, self.mimic, mimic_tolerance) if self.mimic else None
        )
        self.base = (
            BaseStateBuffer(self.root_joint, dyn.root_link, base_state_timeout) if nvb else None
        )
        self.out = TickOutputs(self.n, dyn.nq)
        self.q_joints, self.qd_joints = self.out.q[nqb:], self.out.qd[nvb:]
        self.effort_joints = self.out.view["effort"][nvb:]  # a floating base's stay zero
        self.feed: ObserverFeed | None = None  # the momentum observer (observer_enabled)
        # check_fields=True: the setters then keep an array.array('d') by reference (without
        # it they copy), so the views in `out` stay the message's storage.
        self.msg = CoriolisState(check_fields=True)
        self.msg.joint_names = list(self.joint_names)
        self.msg.position_names = list(self.position_names)
        self.msg.position = self.out.storage["position"]
        self.msg.velocity = self.out.storage["velocity"]
        self.flags_version = -1
        # WireState per (effort published, external_effort published): the message as CDR
        # bytes, filled each tick; None: publish the message object.
        self.wires = None

    def apply_flags(self, flags: dict, version: int, frame_id: str) -> str:
        """Switch fields on/off; '' or why the serialised fast path is not used."""
        published = self.out.set_flags(flags)
        for field_name, on in published.items():
            setattr(self.msg, field_name, self.out.storage[field_name] if on else empty_field())
        self.msg.header.frame_id = frame_id
        self.flags_version = version
        sizes = {"position": self.out.nq, "velocity": self.n}
        sizes.update((f, len(self.out.storage[f])) for f, on in published.items() if on)
        try:
            wires = {}
            for effort in (False, True):
                for external in (False, True):
                    more = {"effort": self.n} if effort else {}
                    if external:
                        more["external_effort"] = self.n
                    wires[effort, external] = WireState(
                        self.joint_names, {**sizes, **more}, frame_id, self.position_names
                    )
            self.wires = wires
        except Exception as exc:  # noqa: BLE001 -- publish the message object instead
            self.wires = None
            return f"{type(exc).__name__}: {exc}"
        return ""


def _descriptor(spec) -> ParameterDescriptor:
    text = spec.description
    if spec.constraints:
        text += f" ({spec.constraints})"
    d = ParameterDescriptor(
        description=text, read_only=spec.read_only, dynamic_typing=spec.dynamic_typing
    )
    if spec.constraints:
        d.additional_constraints = spec.constraints
    if spec.minimum is not None:
        if isinstance(spec.default, float):
            d.floating_point_range = [
                FloatingPointRange(
                    from_value=float(spec.minimum), to_value=float(spec.maximum), step=0.0
                )
            ]
        else:
            d.integer_range = [
                IntegerRange(from_value=int(spec.minimum), to_value=int(spec.maximum), step=1)
            ]
    return d


class CoriolisNode(Node):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._p = {}
        for spec in PARAMETERS:
            # An empty array has no type of its own: declare those by type (unset means []).
            default = _ARRAY_TYPES[spec.array_type] if spec.array_type else spec.default
            value = self.declare_parameter(spec.name, default, _descriptor(spec)).value
            self._p[spec.name] = [] if spec.array_type and value is None else value
        for name, value in self._p.items():
            reason = validate(name, value)
            if reason is not None:
                raise ValueError(reason)
        if len(self._p["locked_joints"]) != len(self._p["locked_positions"]):
            raise ValueError(
                f"locked_joints has {len(self._p['locked_joints'])} names but locked_positions "
                f"{len(self._p['locked_positions'])} values"
            )
        self._gravity = tuple(float(v) for v in self._p["gravity"])

        self._lock = threading.Lock()  # model pointer, buffer, counters, statistics
        self._model: _Model | None = None
        self._counters = Counters()
        now = time.monotonic()
        self._input_window = WindowStats(now)
        self._output_window = WindowStats(now)  # value: compute time of the tick
        self._tick_window = WindowStats(now)  # value: whole tick (take .. published)
        self._latency_window = WindowStats(now)  # value: message received .. published
        self._stages = StageTimes(now)  # per-stage durations of the hot path
        self._last_callback = None  # duration of the previous joint_states callback (s)
        self._last_input = -math.inf
        self._interval_ema = 1e-3  # s between joint_states messages (EMA)
        # CPU s per tick (this thread's CPU time, start to publish() return; EMA). CPU time, not
        # wall time: on a busy machine a preempted tick is not an expensive one, and handing
        # ticks to the compute thread then would only add GIL hand-offs.
        self._tick_cost_ema = 0.0
        self._inline = True  # the last tick ran in the callback (or timer) itself
        self._inline_ticks = 0  # in the current diagnostics window
        self._inline_share = float(self._p["inline_tick_share"])
        self._timer_period = 0.0
        self._tick_lock = threading.Lock()  # one tick at a time (inline or worker)
        self._wake_time = 0.0  # perf_counter when the worker was last woken
        self._clock = self.get_clock()
        self._stamp_problems = {ZERO_STAMP: 0, FUTURE_STAMP: 0}  # messages, since start
        self._throttle = Throttle(self._p["warning_period"])
        self._last_rejection = ""
        self._model_error = ""
        self._residual = math.nan
        self._residual_scale = 1.0
        self._residual_due = True
        self._flags_version = 0
        self._stop = threading.Event()

        # Compute worker.
        self._wake = threading.Event()
        self._worker = threading.Thread(target=self._work, name="coriolis-compute", daemon=True)
        # Model builder (latest request wins).
        self._build_cond = threading.Condition()
        self._build_request: tuple[str, str] | None = None
        self._building = False
        self._builder = threading.Thread(
            target=self._build_loop, name="coriolis-model", daemon=True
        )

        self._state_group = MutuallyExclusiveCallbackGroup()
        self._description_group = MutuallyExclusiveCallbackGroup()
        self._service_group = ReentrantCallbackGroup()
        self._timer_group = MutuallyExclusiveCallbackGroup()
        self._diag_group = MutuallyExclusiveCallbackGroup()

        self._pub = self.create_publisher(
            CoriolisState,
            "coriolis_state",
            QoSProfile(
                depth=self._p["output_queue_depth"],
                reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.VOLATILE,
                history=HistoryPolicy.KEEP_LAST,
            ),
        )
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        # Best effort is matched by reliable and best-effort publishers alike.
        self.create_subscription(
            JointState,
            "joint_states",
            self._on_joint_state,
            QoSProfile(
                depth=self._p["input_queue_depth"],
                reliability=ReliabilityPolicy.BEST_EFFORT,
                durability=DurabilityPolicy.VOLATILE,
                history=HistoryPolicy.KEEP_LAST,
            ),
            callback_group=self._state_group,
        )
        if self._p["root_joint"] != "fixed":
            from nav_msgs.msg import Odometry

            # Same group as joint_states: the two never run at once; ticks take the lock. Raw
            # bytes: rclpy's conversion of a whole Odometry to Python objects costs as much as a
            # tick; odometry_wire reads the few fields used.
            self.create_subscription(
                Odometry,
                "odom",
                self._on_odometry,
                QoSProfile(
                    depth=self._p["input_queue_depth"],
                    reliability=ReliabilityPolicy.BEST_EFFORT,
                    durability=DurabilityPolicy.VOLATILE,
                    history=HistoryPolicy.KEEP_LAST,
                ),
                callback_group=self._state_group,
                raw=True,
            )
        self.create_subscription(
            String,
            "robot_description",
            self._on_description,
            QoSProfile(
                depth=1,
                reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.TRANSIENT_LOCAL,
                history=HistoryPolicy.KEEP_LAST,
            ),
            callback_group=self._description_group,
        )
        self.create_service(
            GetChristoffelSymbols,
            "get_christoffel_symbols",
            self._srv_christoffel,
            callback_group=self._service_group,
        )
        self.create_service(
            ComputeDynamics,
            "compute_dynamics",
            self._srv_dynamics,
            callback_group=self._service_group,
        )
        self.create_service(
            Trigger,
            "reset_observer",
            self._srv_reset_observer,
            callback_group=self._service_group,
        )
        self._tick_timer = None
        self._diag_timer = None
        self._make_tick_timer()
        self._make_diag_timer()
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)

        self._worker.start()
        self._builder.start()
        if self._p["robot_description_file"]:
            self._request_file(self._p["robot_description_file"])
        elif self._p["robot_description"]:
            self._request_model(self._p["robot_description"], "parameter robot_description")
        else:
            self.get_logger().info(
                f"waiting for a URDF on topic {self.resolve_topic_name('robot_description')}"
            )

    # ------------------------------------------------------------------ parameters

    def _validate_parameters(self, parameters) -> SetParametersResult:
        for p in parameters:
            reason = validate(p.name, p.value)
            if reason is not None:
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def _apply_parameters(self, parameters) -> None:
        changed = set()
        for p in parameters:
            if p.name in self._p:
                self._p[p.name] = p.value
                changed.add(p.name)
        if changed & {param for _, param, _ in OUTPUT_FIELDS} or "frame_id" in changed:
            with self._lock:
                self._flags_version += 1
        if "update_rate" in changed:
            self._make_tick_timer()
        if "diagnostics_period" in changed:
            self._make_diag_timer()
        if "inline_tick_share" in changed:
            self._inline_share = float(self._p["inline_tick_share"])
        if "mimic_tolerance" in changed:
            model = self._model
            if model is not None and model.mimic_check is not None:
                model.mimic_check.tolerance = float(self._p["mimic_tolerance"])
        if "warning_period" in changed:
            self._throttle.period = self._p["warning_period"]
        if changed & {"observer_enabled", "observer_gain"}:
            self._restart_observer("parameters changed")
        elif "observer_max_gap" in changed:
            with self._lock:
                feed = self._model.feed if self._model is not None else None
                if feed is not None:
                    feed.set_max_gap(float(self._p["observer_max_gap"]))
        if "robot_description" in changed and self._p["robot_description"]:
            self._request_model(self._p["robot_description"], "parameter robot_description")
        if "robot_description_file" in changed and self._p["robot_description_file"]:
            self._request_file(self._p["robot_description_file"])

    def _make_tick_timer(self) -> None:
        if self._tick_timer is not None:
            self.destroy_timer(self._tick_timer)
            self._tick_timer = None
        rate = float(self._p["update_rate"])
        if rate > 0.0:
            self._timer_period = 1.0 / rate
            self._tick_timer = self.create_timer(
                self._timer_period, self._on_tick_timer, callback_group=self._timer_group
            )

    def _make_diag_timer(self) -> None:
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
        self._diag_timer = self.create_timer(
            float(self._p["diagnostics_period"]),
            self._publish_diagnostics,
            callback_group=self._diag_group,
        )

    # ------------------------------------------------------------------ logging helpers

    def _warn(self, key, text: str, now: float | None = None, error: bool = False) -> None:
        allowed = self._throttle.allow(key, time.monotonic() if now is None else now)
        if allowed:
            log = self.get_logger().error if error else self.get_logger().warning
            log(text + suppressed_note(allowed))

    # ------------------------------------------------------------------ robot model

    def _on_description(self, msg: String) -> None:
        self._request_model(msg.data, f"topic {self.resolve_topic_name('robot_description')}")

    def _request_file(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8") as f:
                urdf = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            self._report_bad_description(f"file {path}", f"cannot read: {exc}")
            return
        self._request_model(urdf, f"file {path}")

    def _request_model(self, urdf: str, source: str) -> None:
        if not urdf.strip():
            self.get_logger().warning(f"ignoring empty robot_description from {source}")
            return
        # The description is data: text that is not XML is refused here, never read as a path
        # (the library would open it), so publishing on the topic opens no file.
        if not urdf.lstrip("\ufeff \t\r\n").startswith("<"):
            self._report_bad_description(
                source,
                "not URDF XML (a robot description is XML text; a file is read only from "
                "the robot_description_file parameter)",
            )
            return
        with self._build_cond:
            self._build_request = (urdf, source)
            self._building = True
            self._build_cond.notify()

    def _build_loop(self) -> None:
        while not self._stop.is_set():
            with self._build_cond:
                while self._build_request is None and not self._stop.is_set():
                    self._build_cond.wait(0.5)
                if self._stop.is_set():
                    return
                urdf, source = self._build_request
                self._build_request = None
            try:
                self._build(urdf, source)
            except Exception as exc:  # noqa: BLE001 -- the builder never dies; old model kept
                self._report_bad_description(source, f"{type(exc).__name__}: {exc}")
            with self._build_cond:
                self._building = self._build_request is not None

    def _report_bad_description(self, source: str, reason: str) -> None:
        with self._lock:
            self._model_error = reason
            kept = self._model
        what = f"keeping model {kept.name}" if kept else "still no robot model"
        self.get_logger().error(f"robot_description from {source} rejected ({what}): {reason}")

    def _build(self, urdf: str, source: str) -> None:
        from coriolis_ros.dynamics import Dynamics, URDFError
        from coriolis_ros.dynamics.couplings import load_rotors

        current = self._model
        if current is not None and current.urdf == urdf:
            with self._lock:
                self._model_error = ""  # an earlier rejected description is superseded
            self.get_logger().info(f"robot_description from {source} unchanged, model kept")
            return
        root_joint = self._p["root_joint"]
        try:
            locked = dict(zip(self._p["locked_joints"], self._p["locked_positions"], strict=True))
            rotors_file = self._p["rotors_file"]
            dyn = Dynamics.from_urdf(
                urdf,
                gravity=self._gravity,
                root_joint=root_joint,
                mimic=self._p["mimic"],
                locked_joints=locked or None,
                rotors=load_rotors(rotors_file) if rotors_file else None,
            )
        except (URDFError, ValueError) as exc:  # ValueError: a locked joint the URDF lacks
            self._report_bad_description(source, str(exc))
            return
        skip = BASE_SIZES[root_joint][1]  # the rows of the node's own root joint
        types = zip(dyn.joint_names[skip:], dyn.model.joint_types[skip:], strict=True)
        multi_dof = sorted({n.rsplit("/", 1)[0] for n, t in types if t in ("floating", "planar")})
        if multi_dof:
            self._report_bad_description(
                source,
                f"joint(s) {', '.join(repr(n) for n in multi_dof)} are floating or planar: the "
                "node reads single-DoF joints from joint_states, and a floating or planar base "
                "only through the root_joint parameter (with odometry)",
            )
            return
        if self._stop.is_set():
            return
        service_dyn = dyn.clone()  # own workspace: services never touch the tick's instance
        start = time.perf_counter()
        dyn.warmup()
        service_dyn.warmup()
        model = _Model(
            dyn,
            service_dyn,
            urdf,
            float(self._p["base_state_timeout"]),
            float(self._p["mimic_tolerance"]),
        )
        model.out.q[:] = dyn.neutral()  # a valid configuration (unit quaternion) to warm up on
        model.out.compute(model.dyn)  # one real tick on the new buffers, off the tick path
        model.feed = self._make_feed(model)
        warmup = time.perf_counter() - start
        with self._lock:
            old = self._model
            if old is not None:
                model.buffer.seed_from(old.buffer)  # shared joints keep their values
                if model.base is not None and old.base is not None:
                    model.base.seed_from(old.base)
            self._model = model
            self._model_error = ""
            self._residual = math.nan
            self._throttle.reset()
        if old is not None:
            self.get_logger().info(
                f"robot model replaced: {old.name} ({old.n} DoF) -> {model.name} "
                f"({model.n} DoF) from {source}"
            )
        if model.base is None:
            root = f"root link '{dyn.root_link}' fixed to the world"
        else:
            topic = self.resolve_topic_name("odom")
            root = (
                f"root link '{dyn.root_link}' on a {model.root_joint} joint "
                f"(base state from {topic}, nav_msgs/Odometry)"
            )
        if model.mimic:
            root += (
                f"; {len(model.mimic)} mimic or coupled joint(s) follow their leader (left out of "
                f"joint_names; checked in joint_states, never used): {name_list(model.mimic)}"
            )
        self.get_logger().info(
            f"ready: {model.name}, {model.n} DoF, warm-up {warmup:.2f} s (from {source}); {root}"
        )

    # ------------------------------------------------------------------ momentum observer

    def _make_feed(self, model: _Model) -> ObserverFeed | None:
        """The observer for `model` when observer_enabled (None, with a log line, if it cannot
        run). Loads its kernels: call it off the tick path."""
        if not self._p["observer_enabled"]:
            return None
        if model.base is not None:
            self.get_logger().warning(
                "momentum observer not running: it supports fixed-base models only "
                f"(root_joint is {model.root_joint})"
            )
            return None
        try:
            feed = ObserverFeed(
                model.dyn, self._p["observer_gain"], float(self._p["observer_max_gap"])
            )
        except ValueError as exc:
            self.get_logger().error(f"momentum observer not running: {exc}")
            return None
        gains = np.unique(feed.gain)
        gain = f"{gains[0]:g}" if len(gains) == 1 else "per joint " + ", ".join(
            f"{k:g}" for k in feed.gain
        )
        self.get_logger().info(
            f"momentum observer on {model.name}: K_O {gain} 1/s, max gap "
            f"{feed.max_gap:g} s (needs JointState.effort for every joint)"
        )
        return feed

    def _restart_observer(self, why: str) -> None:
        model = self._model
        if model is None:
            return
        feed = self._make_feed(model)
        with self._lock:
            if self._model is model:
                model.feed = feed
        if feed is None and not self._p["observer_enabled"]:
            self.get_logger().info(f"momentum observer stopped ({why})")

    def _observe(self, model: _Model, stamp) -> tuple:
        """Integrate the merged state that has just been updated (call with self._lock held).
        Returns () or (event, detail) for the log."""
        buffer = model.buffer
        if not buffer.complete:
            return ()
        feed = model.feed
        stamp_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        try:
            event = feed.update(stamp_ns, buffer.position, buffer.velocity, buffer.effort)
        except ValueError as exc:  # the buffer has checked q and qd: not expected
            return ("failed", str(exc))
        if event == PAUSED:
            return (PAUSED, feed.missing_names(buffer.effort))
        if event in (RESET_GAP, RESET_BACKWARDS):
            return (event, feed.last_gap)
        return ()

    def _report_observer(self, note: tuple, now: float) -> None:
        event, detail = note
        if event == PAUSED:
            self._warn(
                ("observer", PAUSED),
                f"momentum observer paused: joint_states without effort for {len(detail)} "
                f"joint(s): {name_list(detail)} (external_effort stays empty until every "
                "joint has one)",
                now,
            )
        elif event == RESET_GAP:
            self._warn(
                ("observer", RESET_GAP),
                f"momentum observer reset: {detail:.4g} s between joint state stamps is more "
                f"than observer_max_gap ({float(self._p['observer_max_gap']):g} s); its "
                "estimate restarts from zero",
                now,
            )
        elif event == RESET_BACKWARDS:
            self._warn(
                ("observer", RESET_BACKWARDS),
                f"momentum observer reset: joint state stamp went back by {-detail:.4g} s; its "
                "estimate restarts from zero",
                now,
            )
        else:
            self._warn(("observer", "failed"), f"momentum observer update failed: {detail}", now)

    # ------------------------------------------------------------------ joint states
    #
    # Hot path. With update_rate 0 the joint_states callback merges the message and, while a
    # tick is cheap compared with the input interval (inline_tick_share), runs the tick right
    # there: no thread hand-off, no GIL ping-pong. When ticks get expensive relative to the
    # input (a large robot, a busy machine) it hands them to the compute worker instead, which
    # works on the newest merged state and counts the messages merged meanwhile as skipped, so
    # the subscription queue keeps draining and no input is lost unaccounted.

    def _on_joint_state(self, msg: JointState) -> None:
        enter = time.perf_counter()
        now = time.monotonic()
        observer_note = ()
        with self._lock:
            counters = self._counters
            counters.received += 1
            self._input_window.add()
            if self._last_callback is not None:
                self._stages.add("callback", self._last_callback)
            interval = now - self._last_input
            self._last_input = now
            if interval < 1.0:
                self._interval_ema += _EMA * (interval - self._interval_ema)
            model = self._model
            if model is None:
                counters.withheld += 1
                result = None
            else:
                effort = msg.effort
                result = model.buffer.update(
                    msg.name, msg.position, msg.velocity, len(effort), msg.header.stamp, now,
                    effort,
                )  # fmt: skip
                self._stages.add("buffer_update", time.perf_counter() - enter)
                status = result.status
                if status == ACCEPTED and model.feed is not None:
                    # Every accepted message, whether its tick runs or is skipped later.
                    observed = time.perf_counter()
                    observer_note = self._observe(model, msg.header.stamp)
                    self._stages.add("observer", time.perf_counter() - observed)
                if status == REJECTED:
                    counters.rejected += 1
                    self._last_rejection = result.reason
                elif status == IGNORED:
                    counters.ignored += 1
        if result is None:
            self._warn(
                "no-model",
                "joint_states received but there is no robot model yet "
                "(waiting for robot_description)",
                now,
            )
        elif status == ACCEPTED:
            if result.new_unknown:
                self._report_unknown(result.new_unknown, model)
            if observer_note:
                self._report_observer(observer_note, now)
            stamp = msg.header.stamp
            problem = stamp_problem(stamp.sec, stamp.nanosec, self._clock.now().nanoseconds)
            if problem is not None:
                self._report_stamp(problem, stamp, now)
            if self._tick_timer is None:
                self._request_tick(enter)
        elif status == REJECTED:
            key = ("rejected", re.sub(r"[0-9]+", "#", result.reason)[:60])
            self._warn(key, f"joint_states message rejected: {result.reason}", now)
        else:
            self._report_unknown(result.new_unknown, model)
            self._warn(
                "ignored",
                f"joint_states message ignored: it names no joint of model {model.name}",
                now,
            )
        self._last_callback = time.perf_counter() - enter

    def _on_odometry(self, raw: bytes) -> None:
        """Keep the newest valid odometry of the root link (floating or planar root_joint)."""
        now = time.monotonic()
        try:
            stamp, frame_id, child, pose, twist = parse_odometry(raw)
        except Exception as exc:  # noqa: BLE001 -- undecodable bytes: reported, never fatal
            self._warn("odometry-bytes", f"odometry rejected: cannot decode it ({exc})", now)
            return
        with self._lock:
            model = self._model
            if model is None or model.base is None:
                return  # no model yet: its root link is unknown
            accepted, note = model.base.update(
                child, frame_id, pose[:3], pose[3:], twist[:3], twist[3:], stamp
            )
        if note:
            what = "odometry" if accepted else "odometry rejected"
            self._warn(("odometry", accepted), f"{what}: {note}", now)

    def _report_stamp(self, problem: str, stamp, now: float) -> None:
        """Zero or future-dated stamp: used as is (documented policy), throttled warning."""
        if problem == ZERO_STAMP:
            text = (
                "joint_states with a zero header.stamp: used as is, so coriolis_state is "
                "stamped 0 too (the publisher should stamp its messages)"
            )
        else:
            ahead = (stamp.sec * 1e9 + stamp.nanosec - self._clock.now().nanoseconds) * 1e-9
            text = (
                f"joint_states stamped {ahead:.3f} s ahead of this node's clock: used as is "
                "(coriolis_state carries the same stamp); check the publisher's clock and "
                "use_sim_time"
            )
        with self._lock:
            self._stamp_problems[problem] += 1
        self._warn(("stamp", problem), text, now)

    def _report_unknown(self, names, model) -> None:
        for name in names:
            self.get_logger().warning(
                f"ignoring unknown joint '{name}' in joint_states (not in model {model.name})"
            )

    def _on_tick_timer(self) -> None:
        self._request_tick(time.perf_counter())

    def _request_tick(self, since: float) -> None:
        """Tick now in this thread when ticks are cheap, else wake the compute worker."""
        share = self._inline_share
        cost, interval = self._tick_cost_ema, self._interval_ema
        if self._tick_timer is not None:
            interval = self._timer_period
        # Hysteresis: leave inline above `share`, come back below 0.7 * share.
        limit = share * interval if self._inline else 0.7 * share * interval
        self._inline = share > 0.0 and cost <= limit
        if self._inline:
            self._tick(since, inline=True)
        else:
            self._wake_time = time.perf_counter()
            self._wake.set()

    # ------------------------------------------------------------------ compute worker

    def _work(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                return
            self._tick(self._wake_time, inline=False)

    def _tick(self, since: float, inline: bool) -> None:
        """One tick on the newest merged state; a failure is counted and logged, never raised."""
        try:
            with self._tick_lock:
                self._tick_once(since, inline)
        except Exception as exc:  # noqa: BLE001 -- a failed tick is reported, never fatal
            if self._stop.is_set() or not self.context.ok():
                return  # shutting down: publishing on a finished context fails
            with self._lock:
                self._counters.failed += 1
            self._warn("tick-failed", f"tick failed: {type(exc).__name__}: {exc}", error=True)

    def _tick_once(self, since: float, inline: bool) -> None:
        cpu_start = time.thread_time()
        t_start = time.perf_counter()
        start = time.monotonic()
        timeout = float(self._p["joint_state_timeout"])
        with self._lock:
            model = self._model
            if model is None:
                return
            buffer = model.buffer
            stale = buffer.stale(start, timeout)
            stale_velocity = buffer.stale_velocity(start, timeout)
            base_wait = ""
            mimic_off = None
            if model.mimic_check is not None and buffer.extra_pending:
                mimic_off = model.mimic_check.check()  # before take, which clears the flag
            if buffer.pending == 0:
                take = None
            else:
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
                if take.missing or base_wait:
                    self._counters.withheld += take.pending
                else:
                    self._counters.skipped += take.pending - 1
            flags_version = self._flags_version
            residual_due = self._residual_due
        if stale:
            self._warn(
                "stale",
                f"stale joint_states: no value for more than {timeout:g} s from {name_list(stale)}",
                start,
            )
        if stale_velocity:
            self._warn(
                "stale-velocity",
                f"joint_states without velocity for more than {timeout:g} s for "
                f"{name_list(stale_velocity)}: still using their last velocity",
                start,
            )
        if mimic_off:
            worst = ", ".join(
                f"'{name}' = {value:.6g} (its leader implies {implied:.6g})"
                for name, value, implied in mimic_off[:5]
            )
            self._warn(
                "mimic",
                f"joint_states: mimic joint(s) off their leader by more than mimic_tolerance "
                f"{model.mimic_check.tolerance:g}: {worst}; not used (the leader's value is)",
                start,
            )
        if take is None:
            return
        if take.missing:
            self._warn(
                "missing",
                f"not publishing: waiting for joint_states of "
                f"{len(take.missing)} of {model.n} joints: {name_list(take.missing)}",
                start,
            )
            return
        if base_wait:
            self._warn("base", f"not publishing: {base_wait}", start)
            return
        if take.no_velocity:
            self._warn(
                "no-velocity",
                f"joint_states without velocity for {name_list(take.no_velocity)}: using 0",
                start,
            )
        if model.flags_version != flags_version:
            problem = model.apply_flags(self._p, flags_version, self._p["frame_id"])
            if problem:
                self._warn("wire", f"publishing via message objects (slower): {problem}")

        t0 = time.perf_counter()
        model.out.compute(model.dyn, matrices=residual_due)
        t1 = time.perf_counter()
        stamp = take.stamp
        wires = model.wires
        if wires is not None:
            wire = wires[has_effort, has_estimate]
            wire.fill(model.out.view, stamp.sec, stamp.nanosec)
            payload = wire.payload()
        else:
            msg, storage = model.msg, model.out.storage
            msg.header.stamp = stamp
            msg.effort = storage["effort"] if has_effort else empty_field()
            msg.external_effort = storage["external_effort"] if has_estimate else empty_field()
            payload = msg
        t2 = time.perf_counter()
        self._pub.publish(payload)
        t3 = time.perf_counter()
        done = time.monotonic()

        residual = scale = None
        if residual_due:
            residual, scale = model.out.residual()
        cost = time.thread_time() - cpu_start
        with self._lock:
            self._counters.published += 1
            self._output_window.add(t1 - t0)
            self._tick_window.add(done - start)
            self._latency_window.add(done - take.receive_time)
            stages = self._stages
            stages.add("handoff_wait", 0.0 if inline else max(0.0, t_start - since))
            stages.add("kernels", t1 - t0)
            stages.add("message_fill", (t0 - t_start) + (t2 - t1))
            stages.add("publish", t3 - t2)
            self._tick_cost_ema += _EMA * (cost - self._tick_cost_ema)
            if inline:
                self._inline_ticks += 1
            if residual is not None and self._model is model:
                self._residual, self._residual_scale = residual, scale
                self._residual_due = False

    # ------------------------------------------------------------------ services

    def _srv_christoffel(self, request, response):
        response.success = False
        try:
            model = self._model
            if model is None:
                response.message = "no robot model yet (waiting for robot_description)"
                return response
            if model.base is None and len(request.base_position):
                response.message = FIXED_BASE_REQUEST
                return response
            if not len(request.joint_names) and not len(request.position):
                with self._lock:
                    buffer = model.buffer
                    missing = buffer.missing() if not buffer.complete else ()
                    q = buffer.position.copy()
                    stamp = buffer.stamp
                if missing:
                    response.message = f"no complete joint state yet: missing {name_list(missing)}"
                    return response
                response.header.stamp = stamp
            else:
                q, _, reason = resolve_request(
                    model.measured_names, request.joint_names, request.position, what="request"
                )
                if q is None:
                    response.message = reason
                    return response
                response.header.stamp = self.get_clock().now().to_msg()
            if model.base is not None:
                with self._lock:
                    base = request_base(
                        model.root_joint, request.base_position, (), False, model.base
                    )
                if isinstance(base, str):
                    response.message = base
                    return response
                q = np.concatenate((base[0], q))
            with model.service_lock:
                gamma = model.service_dyn.christoffel(q)
            response.joint_names = list(model.joint_names)
            response.position_names = list(model.position_names)
            response.position = to_field(q)
            response.symbols = to_field(gamma)
            response.success = True
            response.message = f"{model.name}: {model.n}^3 Christoffel symbols"
        except Exception as exc:  # noqa: BLE001 -- a service never raises
            response.success = False
            response.message = f"failed: {type(exc).__name__}: {exc}"
        return response

    def _srv_dynamics(self, request, response):
        response.success = False
        try:
            model = self._model
            if model is None:
                response.message = "no robot model yet (waiting for robot_description)"
                return response
            if model.base is None and (len(request.base_position) or len(request.base_velocity)):
                response.message = FIXED_BASE_REQUEST
                return response
            q, qd, reason = resolve_request(
                model.measured_names,
                request.joint_names,
                request.position,
                request.velocity,
                what="request",
            )
            if q is None:
                response.message = reason
                return response
            if model.base is not None:
                # joint velocities given: the base's are needed too; none: all zero
                moving = len(request.velocity) > 0
                with self._lock:
                    base = request_base(
                        model.root_joint, request.base_position, request.base_velocity,
                        moving, model.base,
                    )  # fmt: skip
                if isinstance(base, str):
                    response.message = base
                    return response
                q = np.concatenate((base[0], q))
                qd = np.concatenate((base[1] if moving else np.zeros_like(base[1]), qd))
            reference = _reference_problem(request, model.n)
            if isinstance(reference, str):
                response.message = reference
                return response
            dyn = model.service_dyn
            with model.service_lock:
                if reference:
                    response.slotine_li_torque = to_field(dyn.slotine_li(q, qd, *reference))
                M, Mdot, C = dyn.coriolis(q, qd)
                Cqd, CTqd, p = dyn.coriolis_vectors(q, qd)
                g = dyn.gravity(q)
                fields = {
                    "coriolis_matrix": C,
                    "mass_matrix": M,
                    "mass_matrix_derivative": Mdot,
                    "coriolis_force": Cqd,
                    "coriolis_transpose_force": CTqd,
                    "gravity_force": g,
                    "momentum": p,
                    "position": q,
                    "velocity": qd,
                }
                for field_name, value in fields.items():
                    setattr(response, field_name, to_field(value))
            response.joint_names = list(model.joint_names)
            response.position_names = list(model.position_names)
            response.success = True
            response.message = f"{model.name}: {model.n} DoF"
        except Exception as exc:  # noqa: BLE001 -- a service never raises
            response.success = False
            response.message = f"failed: {type(exc).__name__}: {exc}"
        return response

    def _srv_reset_observer(self, request, response):
        with self._lock:
            model = self._model
            feed = model.feed if model is not None else None
            if feed is not None:
                feed.reset()
        response.success = feed is not None
        if feed is not None:
            response.message = "momentum observer reset: the next joint state starts it from zero"
            self.get_logger().info("momentum observer reset (service reset_observer)")
        elif model is None:
            response.message = "no robot model yet (waiting for robot_description)"
        elif not self._p["observer_enabled"]:
            response.message = "the momentum observer is off (parameter observer_enabled)"
        else:
            response.message = "the momentum observer is not running (see the node's log)"
        return response

    # ------------------------------------------------------------------ diagnostics

    def _snapshot(self) -> tuple[diagnostics.Snapshot, list]:
        now = time.monotonic()
        with self._build_cond:
            building = self._building
        with self._lock:
            model = self._model
            s = diagnostics.Snapshot(
                model_error=self._model_error,
                building=building,
                input_rate=self._input_window.rate(now),
                output_rate=self._output_window.rate(now),
                compute_mean=self._output_window.mean(),
                compute_max=self._output_window.max if self._output_window.count else math.nan,
                residual=self._residual,
                residual_scale=self._residual_scale,
                counters=self._counters.as_dict(),
                root_joint=self._p["root_joint"],
                last_rejection=self._last_rejection,
                update_rate=float(self._p["update_rate"]),
            )
            extra = [
                ("tick_time_mean_ms", self._tick_window.mean() * 1e3),
                ("tick_time_max_ms", self._tick_window.max * 1e3),
                ("latency_mean_ms", self._latency_window.mean() * 1e3),
                ("latency_max_ms", self._latency_window.max * 1e3),
                *self._stages.values_ms(),
                (
                    "inline_ticks_pct",
                    100.0 * self._inline_ticks / self._output_window.count
                    if self._output_window.count
                    else math.nan,
                ),
            ]
            feed = model.feed if model is not None else None
            counts = feed.counts if feed is not None else {}
            extra += [
                ("observer_running", 1.0 if feed is not None else 0.0),
                (
                    "observer_integrated_total",
                    counts["ok"] + counts[RESET_GAP] + counts[RESET_BACKWARDS]
                    if counts
                    else math.nan,
                ),
                ("observer_paused_total", counts.get(PAUSED, math.nan)),
                (
                    "observer_resets_total",
                    counts[RESET_GAP] + counts[RESET_BACKWARDS] if counts else math.nan,
                ),
            ]
            self._inline_ticks = 0
            self._stages.reset(now)
            for window in (
                self._input_window,
                self._output_window,
                self._tick_window,
                self._latency_window,
            ):
                window.reset(now)
            self._residual_due = True
            if model is not None:
                s.robot, s.dof, s.tree_depth = model.name, model.n, model.tree_depth
                buffer = model.buffer
                if not buffer.complete:
                    s.missing = buffer.missing()
                else:
                    s.no_velocity = tuple(
                        n for n, ok in zip(buffer.joint_names, buffer.has_velocity) if not ok
                    )
                s.stale = buffer.stale(now, float(self._p["joint_state_timeout"]))
                s.stale_velocity = buffer.stale_velocity(
                    now, float(self._p["joint_state_timeout"])
                )
                if model.base is not None:
                    s.odometry_received = model.base.received
                    s.odometry_rejected = model.base.rejected
            s.zero_stamps = self._stamp_problems[ZERO_STAMP]
            s.future_stamps = self._stamp_problems[FUTURE_STAMP]
        return s, extra

    def _publish_diagnostics(self) -> None:
        snapshot, extra = self._snapshot()
        level, message, values = diagnostics.evaluate(snapshot)
        values += [(k, "nan" if math.isnan(v) else f"{v:.6g}") for k, v in extra]
        status = DiagnosticStatus(
            level=_LEVELS[level],
            name=f"{self.get_fully_qualified_name()}: dynamics",
            message=message,
            hardware_id=snapshot.robot or "",
            values=[KeyValue(key=k, value=v) for k, v in values],
        )
        array_msg = DiagnosticArray(status=[status])
        array_msg.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(array_msg)

    # ------------------------------------------------------------------ shutdown

    def shutdown(self) -> None:
        self._stop.set()
        self._wake.set()
        with self._build_cond:
            self._build_cond.notify_all()
        self._worker.join(timeout=2.0)
        self._builder.join(timeout=0.5)


def _reference_problem(request, n: int):
    """(qd_r, qdd_r) of a ComputeDynamics request, () when both are empty, or the reason they
    cannot be used."""
    qd_r = np.asarray(request.reference_velocity, dtype=np.float64)
    qdd_r = np.asarray(request.reference_acceleration, dtype=np.float64)
    if not len(qd_r) and not len(qdd_r):
        return ()
    for label, values in (("reference_velocity", qd_r), ("reference_acceleration", qdd_r)):
        if len(values) != n:
            return (
                f"request: {label} has {len(values)} values, the model has {n} DoF (give both "
                "reference fields in the response's joint_names order, or neither)"
            )
        if not (np.abs(values) <= MAX_ABS).all():
            return f"request: {label} has NaN, infinite or values beyond ±{MAX_ABS:g}"
    return qd_r, qdd_r


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ros_args_error(exc: BaseException) -> str:
    """One line for an rclpy.init failure (rcl's message without its source locations)."""
    if type(exc).__name__ == "UnknownROSArgsError":
        unknown = exc.args[0] if exc.args else str(exc)
        if isinstance(unknown, str):  # rclpy passes the list's repr
            try:
                unknown = ast.literal_eval(unknown) if unknown.startswith("[") else [unknown]
            except (ValueError, SyntaxError):
                unknown = [unknown]
        shown = " ".join(str(a) for a in unknown[:5])
        if len(unknown) > 5:
            shown += f" ... ({len(unknown) - 5} more)"
        return _one_line(
            f"not understood: {shown} (a value with spaces must be one quoted argument; for a "
            "URDF use -p robot_description_file:=PATH)"
        )
    text = re.sub(r", at /\S+:\d+", "", str(exc))
    return _one_line(re.sub(r"^failed to initialize rcl: ", "", text))


def main(args=None) -> int:
    # The executor thread and the compute worker share the GIL: hand it over sooner than the
    # default 5 ms so a woken worker does not wait a whole interval (tail latency).
    sys.setswitchinterval(5e-4)
    # rcl logs its own "Failed to parse global arguments" line before raising: silence it, the
    # one line below says what is wrong.
    rclpy.logging.set_logger_level("rcl", rclpy.logging.LoggingSeverity.FATAL)
    try:
        rclpy.init(args=args)
    except Exception as exc:  # noqa: BLE001 -- bad ROS arguments: one line, exit 2
        print(f"{NODE_NAME}: invalid ROS arguments: {_ros_args_error(exc)}", file=sys.stderr)
        return 2
    rclpy.logging.set_logger_level("rcl", rclpy.logging.LoggingSeverity.UNSET)
    node = None
    try:
        try:
            node = CoriolisNode()
        except (ParameterException, ValueError) as exc:  # a -p value or a params file
            print(f"{NODE_NAME}: invalid parameter: {_one_line(exc)}", file=sys.stderr)
            return 2
        except Exception as exc:  # noqa: BLE001 -- anything else: say why and exit non-zero
            get_logger(NODE_NAME).fatal(f"cannot start: {exc}")
            return 1
        threads = int(node.get_parameter("executor_threads").value)
        if threads > 1:
            executor = MultiThreadedExecutor(num_threads=threads)
        elif node.get_parameter("executor").value == "events":
            # The C++ event queue: far less CPU per callback than rclpy's Python wait-set
            # loop (bench/bench_node.py, README "Node under load").
            executor = EventsExecutor()
        else:
            executor = SingleThreadedExecutor()
        executor.add_node(node)
        if isinstance(executor, (MultiThreadedExecutor, SingleThreadedExecutor)):
            executor.spin()
        else:
            # EventsExecutor.spin() does not return when SIGINT/SIGTERM shut the context
            # down (rclpy 9.1.2); spin_once with a timeout lets the signal through.
            while node.context.ok():
                executor.spin_once(timeout_sec=0.2)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # SIGINT/SIGTERM shut the context down; the executor may then fail with an RCLError
        # ("context is not valid") instead of ExternalShutdownException. That is a normal exit.
        if rclpy.ok():
            raise
    finally:
        if node is not None:
            node.shutdown()
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
