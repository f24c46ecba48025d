"""The `coriolis` node class: publishes C(q, q̇), M, Ṁ, g, C q̇, Cᵀ q̇, p from joint states
(:func:`coriolis_ros.node.coriolis_node.main` runs it).

A thin rclpy adapter: it declares the parameters, the topics, the services and the timers, and
hands every callback to a ROS-free part of :mod:`coriolis_ros.node`:

* :mod:`.intake`: joint_states and odometry in (merge, observer, counters, warnings);
* :mod:`.scheduler`: a tick runs inline in the callback while it is cheap compared with the
  input interval (inline_tick_share), else in the compute worker on the newest merged state;
* :mod:`.ticker`: one tick (take, kernels into the message's storage, checks, publish);
* :mod:`.builder`: one thread loads and warms up each new robot_description, then swaps the
  model in atomically (:mod:`.robot_model`); ticks keep running on the old model meanwhile;
* :mod:`.services`, :mod:`.state` (diagnostics snapshot), :mod:`.reports` (rate-limited log),
  :mod:`.param_checks` (parameters checked when set), :mod:`.main` (start, spin, stop).

Executors: with executor_threads 1, rclpy.experimental.EventsExecutor (parameter executor:
events, the default) or the SingleThreadedExecutor (executor: single); > 1 a
MultiThreadedExecutor with separate callback groups. Services use their own Dynamics instance.

Run: `make run URDF=robot.urdf`, `python -m coriolis_ros.node --ros-args -p
robot_description_file:=robot.urdf` or `ros2 run coriolis_ros coriolis_node`.
"""

from __future__ import annotations

import math
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from coriolis_ros.msg import CoriolisState
from coriolis_ros.srv import ComputeDynamics, GetChristoffelSymbols, GetTaskSpace

from . import diagnostics
from .builder import ModelBuilder, make_feed
from .contact import CONTACT_PARAMS, make_contact
from .contact_publisher import ContactPublisher
from .intake import Intake
from .main import NODE_NAME
from .odometry import parse_odometry
from .output_message import OutputMessage
from .param_checks import check_set
from .params import OUTPUT_FIELDS
from .reports import Reporter
from .robot_model import ModelError, load_dynamics, read_description_file
from .ros_params import declare_all
from .scheduler import Scheduler
from .services import Services
from .state import NodeState
from .ticker import Ticker

_LEVELS = {
    diagnostics.OK: DiagnosticStatus.OK,
    diagnostics.WARN: DiagnosticStatus.WARN,
    diagnostics.ERROR: DiagnosticStatus.ERROR,
    diagnostics.STALE: DiagnosticStatus.STALE,
}


def _qos(depth: int, reliable: bool, latched: bool = False) -> QoSProfile:
    return QoSProfile(
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        history=HistoryPolicy.KEEP_LAST,
    )


class CoriolisNode(Node):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._p = p = declare_all(self)
        self._gravity = tuple(float(v) for v in p["gravity"])
        # At start a model file that cannot be used ends the start-up (exit 2), like a
        # missing one: it is loaded here, warmed up in the builder.
        startup = None
        if p["robot_description_file"]:
            path = p["robot_description_file"]
            try:
                urdf = read_description_file(path)
                startup = (urdf, f"file {path}", load_dynamics(urdf, p, self._gravity))
            except ModelError as exc:
                raise ValueError(f"robot_description_file {path}: cannot use it: {exc}") from None
        self._stop = threading.Event()
        self._state = NodeState(time.monotonic())
        log = self.get_logger()
        self._reporter = Reporter(log, p["warning_period"])
        self._preloaded = {}  # checked by the set-parameters callback, applied after it
        self._builder = ModelBuilder(
            self._state, log, p, self._gravity, OutputMessage, self.resolve_topic_name("odom")
        )
        self._builder.on_swap = self._reporter.reset
        self._scheduler = Scheduler(self._tick, p["inline_tick_share"])
        clock = self.get_clock()
        self._intake = Intake(
            self._state, self._reporter, self._scheduler, p, lambda: clock.now().nanoseconds
        )
        self._answers = Services(self._state, log, p, lambda: clock.now().to_msg())

        state_group = MutuallyExclusiveCallbackGroup()
        service_group = ReentrantCallbackGroup()
        self._timer_group = MutuallyExclusiveCallbackGroup()
        self._diag_group = MutuallyExclusiveCallbackGroup()
        self._pub = self.create_publisher(
            CoriolisState, "coriolis_state", _qos(p["output_queue_depth"], True)
        )
        self._ticker = Ticker(
            self._state, self._reporter, p, self._pub.publish, self._scheduler.tick_cost,
            self._stopping, ContactPublisher(self),
        )  # fmt: skip
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        # Best effort is matched by reliable and best-effort publishers alike.
        input_qos = _qos(p["input_queue_depth"], False)
        self.create_subscription(
            JointState, "joint_states", self._on_joint_state, input_qos,
            callback_group=state_group,
        )  # fmt: skip
        if p["root_joint"] != "fixed":
            from nav_msgs.msg import Odometry

            # Same group as joint_states: the two never run at once; ticks take the lock. Raw
            # bytes: rclpy's conversion of a whole Odometry to Python objects costs as much as
            # a tick; odometry_wire reads the few fields used.
            self.create_subscription(
                Odometry, "odom", self._on_odometry, input_qos, callback_group=state_group,
                raw=True,
            )  # fmt: skip
        self.create_subscription(
            String, "robot_description", self._on_description, _qos(1, True, latched=True),
            callback_group=MutuallyExclusiveCallbackGroup(),
        )  # fmt: skip
        for srv_type, name, callback in (
            (GetChristoffelSymbols, "get_christoffel_symbols", self._answers.christoffel),
            (ComputeDynamics, "compute_dynamics", self._answers.dynamics),
            (GetTaskSpace, "get_task_space", self._answers.task_space),
            (Trigger, "reset_observer", self._answers.reset_observer),
        ):
            self.create_service(srv_type, name, callback, callback_group=service_group)
        self._tick_timer = None
        self._diag_timer = None
        self._make_tick_timer()
        self._make_diag_timer()
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)

        self._scheduler.start()
        self._builder.start()
        if startup is not None:
            urdf, source, dyn = startup
            self._builder.request(urdf, source, dyn)
        elif p["robot_description"]:
            self._builder.request(p["robot_description"], "parameter robot_description")
        else:
            topic = self.resolve_topic_name("robot_description")
            log.info(f"waiting for a URDF on topic {topic}")

    def parameter_values(self) -> dict:
        """The parameters' current values by name (a copy)."""
        return dict(self._p)

    def _stopping(self) -> bool:
        return self._stop.is_set() or not self.context.ok()

    # ------------------------------------------------------------------ parameters

    def _validate_parameters(self, parameters) -> SetParametersResult:
        updates = {p.name: p.value for p in parameters if p.name in self._p}
        reason, loaded = check_set(updates, self._p, self._state.model, self._gravity)
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        self._preloaded = loaded
        return SetParametersResult(successful=True)

    def _apply_parameters(self, parameters) -> None:
        changed = set()
        for p in parameters:
            if p.name in self._p:
                self._p[p.name] = p.value
                changed.add(p.name)
        preloaded, self._preloaded = self._preloaded, {}
        if changed & {param for _, param, _ in OUTPUT_FIELDS} or "frame_id" in changed:
            with self._state.lock:
                self._state.flags_version += 1
        if "update_rate" in changed:
            self._make_tick_timer()
        if "diagnostics_period" in changed:
            self._make_diag_timer()
        if "inline_tick_share" in changed:
            self._scheduler.inline_share = float(self._p["inline_tick_share"])
        if "mimic_tolerance" in changed:
            model = self._state.model
            for check in (model.mimic_check, model.loop_check) if model is not None else ():
                if check is not None:
                    check.tolerance = float(self._p["mimic_tolerance"])
        if "warning_period" in changed:
            self._reporter.period = self._p["warning_period"]
        if changed & CONTACT_PARAMS:
            model = self._state.model
            contact = None if model is None else make_contact(model, self._p, self.get_logger())
            with self._state.lock:
                if model is not None and self._state.model is model:
                    model.contact = contact
        if changed & {"observer_enabled", "observer_gain"}:
            self._restart_observer("parameters changed")
        elif "observer_max_gap" in changed:
            with self._state.lock:
                model = self._state.model
                if model is not None and model.feed is not None:
                    model.feed.set_max_gap(float(self._p["observer_max_gap"]))
        for name, source in (
            ("robot_description", "parameter robot_description"),
            ("robot_description_file", f"file {self._p['robot_description_file']}"),
        ):
            if name in changed and self._p[name]:
                if name in preloaded:
                    urdf, dyn = preloaded[name]
                    self._builder.request(urdf, source, dyn)
                    continue
                try:
                    urdf = self._p[name]
                    if name == "robot_description_file":
                        urdf = read_description_file(urdf)
                except ModelError as exc:
                    self._builder.reject(source, str(exc))
                    continue
                self._builder.request(urdf, source)

    def _restart_observer(self, why: str) -> None:
        model = self._state.model
        if model is None:
            return
        feed = make_feed(model, self._p, self.get_logger())
        with self._state.lock:
            if self._state.model is model:
                model.feed = feed
        if feed is None and not self._p["observer_enabled"]:
            self.get_logger().info(f"momentum observer stopped ({why})")

    def _make_tick_timer(self) -> None:
        if self._tick_timer is not None:
            self.destroy_timer(self._tick_timer)
            self._tick_timer = None
        rate = float(self._p["update_rate"])
        self._scheduler.timer_period = 1.0 / rate if rate > 0.0 else 0.0
        if rate > 0.0:
            self._tick_timer = self.create_timer(
                1.0 / rate, self._on_tick_timer, callback_group=self._timer_group
            )

    def _make_diag_timer(self) -> None:
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
        self._diag_timer = self.create_timer(
            float(self._p["diagnostics_period"]),
            self._publish_diagnostics,
            callback_group=self._diag_group,
        )

    # ------------------------------------------------------------------ callbacks

    def _on_description(self, msg: String) -> None:
        self._builder.request(msg.data, f"topic {self.resolve_topic_name('robot_description')}")

    def _on_joint_state(self, msg: JointState) -> None:
        enter = time.perf_counter()
        intake = self._intake
        if intake.joint_state(
            msg.name, msg.position, msg.velocity, msg.effort, msg.header.stamp, enter
        ) and self._tick_timer is None:
            self._scheduler.request(enter)
        intake.last_callback = time.perf_counter() - enter

    def _on_odometry(self, raw: bytes) -> None:
        now = time.monotonic()
        try:
            fields = parse_odometry(raw)
        except Exception as exc:  # noqa: BLE001 -- undecodable bytes: reported, never fatal
            self._reporter.warn(
                ("odometry-bytes",), f"odometry rejected: cannot decode it ({exc})", now
            )
            return
        self._intake.odometry(fields, now)

    def _on_tick_timer(self) -> None:
        self._scheduler.request(time.perf_counter())

    def _tick(self, since: float, inline: bool) -> None:
        self._ticker.tick(since, inline)

    def _publish_diagnostics(self) -> None:
        snapshot, extra = self._state.snapshot(time.monotonic(), self._builder.building, self._p)
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
        if not self._stopping():
            self._diag_pub.publish(array_msg)

    # ------------------------------------------------------------------ shutdown

    def shutdown(self) -> None:
        self._stop.set()
        self._scheduler.stop(2.0)
        self._builder.stop(0.5)
