"""Helpers for the node tests: run the node as a subprocess, talk to it with rclpy, references.

* `NodeProcess` starts `python -m coriolis_ros.node.coriolis_node --ros-args ...` as a user
  would, with the environment of the `ros_domain_env` fixture, logs to a file.
* `Peer` is an rclpy node in the test process on its own Context (same domain id), spun in a
  background thread, with helpers to publish descriptions/joint states, collect coriolis_state
  and diagnostics, and call services.
* `pin_reference` computes the expected terms with Pinocchio (an independent implementation),
  in the node's joint order.
"""

from __future__ import annotations

import importlib.metadata
import math
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

NODE_MODULE = "coriolis_ros.node.coriolis_node"
READY = re.compile(r"ready: (\S+), (\d+) DoF, warm-up ([0-9.]+) s")

# Generous: the first start on a machine compiles the kernels (Numba cache), later ones load it.
START_TIMEOUT = 180.0
TIMEOUT = 15.0


def example_robot_urdf(relative: str) -> Path:
    """Path of a URDF shipped by the example-robot-data wheel (e.g. 'panda_description/...')."""
    dist = importlib.metadata.distribution("example-robot-data")
    path = Path(dist.locate_file(f"cmeel.prefix/share/example-robot-data/robots/{relative}"))
    if not path.is_file():
        raise FileNotFoundError(f"{relative} not found in example-robot-data ({path})")
    return path


def panda_urdf() -> str:
    return example_robot_urdf("panda_description/urdf/panda.urdf").read_text()


def talos_urdf() -> str:
    return example_robot_urdf("talos_data/robots/talos_full_v2.urdf").read_text()


def _link(name: str, mass: float, com, inertia) -> str:
    ixx, iyy, izz, ixy, ixz, iyz = inertia
    return (
        f'<link name="{name}"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}" '
        f'rpy="0.1 -0.2 0.3"/><mass value="{mass}"/><inertia ixx="{ixx}" ixy="{ixy}" '
        f'ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/></inertial></link>'
    )


def small_robot_urdf(name: str = "tiny", prefix: str = "tj") -> str:
    """A 4-DoF chain with a branch: revolute, continuous, prismatic and a revolute branch."""
    links = [
        '<link name="base"/>',
        _link("l1", 1.2, (0.05, 0.0, 0.2), (0.03, 0.025, 0.01, 0.001, 0.0, 0.002)),
        _link("l2", 0.8, (0.0, 0.1, 0.15), (0.02, 0.015, 0.008, 0.0, 0.001, 0.0)),
        _link("l3", 0.5, (0.1, 0.0, 0.0), (0.004, 0.006, 0.005, 0.0005, 0.0, 0.0)),
        _link("l4", 0.3, (0.0, 0.05, 0.05), (0.002, 0.003, 0.002, 0.0, 0.0, 0.0003)),
    ]
    joints = [
        f'<joint name="{prefix}1" type="revolute"><parent link="base"/><child link="l1"/>'
        '<origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/>'
        '<limit lower="-3" upper="3" effort="10" velocity="2"/></joint>',
        f'<joint name="{prefix}2" type="continuous"><parent link="l1"/><child link="l2"/>'
        '<origin xyz="0 0 0.3" rpy="0.2 0 0"/><axis xyz="0 1 0"/></joint>',
        f'<joint name="{prefix}3" type="prismatic"><parent link="l2"/><child link="l3"/>'
        '<origin xyz="0 0.2 0.1" rpy="0 0.3 0"/><axis xyz="1 0 0"/>'
        '<limit lower="-1" upper="1" effort="10" velocity="2"/></joint>',
        f'<joint name="{prefix}4" type="revolute"><parent link="l1"/><child link="l4"/>'
        '<origin xyz="0.1 0 0.2" rpy="0 0 0.5"/><axis xyz="0.6 0 0.8"/>'
        '<limit lower="-3" upper="3" effort="10" velocity="2"/></joint>',
    ]
    return f'<?xml version="1.0"?><robot name="{name}">{"".join(links + joints)}</robot>'


# --------------------------------------------------------------------------- node process


class NodeProcess:
    """The node as a subprocess; stdout+stderr go to `log_path`."""

    def __init__(
        self,
        env: dict,
        log_path: Path,
        params: dict | None = None,
        params_file: Path | None = None,
        ros_args: tuple = (),
    ):
        self.log_path = Path(log_path)
        env = dict(env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env["RCUTILS_LOGGING_BUFFERED_STREAM"] = "0"
        env["RCUTILS_COLORIZED_OUTPUT"] = "0"
        assert env.get("ROS_AUTOMATIC_DISCOVERY_RANGE") == "LOCALHOST"
        assert env.get("ROS_DOMAIN_ID")
        cmd = [sys.executable, "-m", NODE_MODULE, "--ros-args"]
        if params_file is not None:
            cmd += ["--params-file", str(params_file)]
        for key, value in (params or {}).items():
            cmd += ["-p", f"{key}:={_param_text(value)}"]
        cmd += list(ros_args)
        self.cmd = cmd
        self._log = open(self.log_path, "wb")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        self.pid = self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def has_log(self, pattern: str, start: int = 0) -> bool:
        return re.search(pattern, self.log()[start:]) is not None

    def wait_for_log(self, pattern: str, timeout: float = TIMEOUT, start: int = 0) -> re.Match:
        """Wait until `pattern` (regex) appears in the log after character `start`."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = self.log()
            m = regex.search(text, start)
            if m:
                return m
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"node exited ({self.proc.returncode}) before {pattern!r}; log:\n{text}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not in node log after {timeout} s; log:\n{text}")
            time.sleep(0.05)

    def wait_ready(
        self, robot: str | None = None, timeout: float = START_TIMEOUT, start: int = 0
    ) -> re.Match:
        pattern = rf"ready: {re.escape(robot)}, " if robot else r"ready: "
        m = self.wait_for_log(pattern + r"\d+ DoF, warm-up [0-9.]+ s", timeout, start)
        return READY.search(m.string, m.start())

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_kb(self) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def stop(self, sig=signal.SIGINT, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                self._log.close()
                raise AssertionError(
                    f"node did not exit within {timeout} s after {sig!r}; log:\n{self.log()}"
                ) from None
        self._log.close()
        return self.proc.returncode


def _param_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_param_text(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return value
    return str(value)


def write_params_file(path: Path, params: dict) -> Path:
    """A ROS 2 parameters YAML for the node (works for long strings such as URDFs)."""
    import yaml

    path.write_text(yaml.safe_dump({"/**/coriolis": {"ros__parameters": params}}))
    return path


# --------------------------------------------------------------------------- rclpy peer


class Peer:
    """An rclpy node in the test process, on its own Context and spun in a thread."""

    def __init__(self, domain_id: int, name: str = "coriolis_test_peer", namespace: str = ""):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(
            context=self.context,
            domain_id=domain_id,
            signal_handler_options=SignalHandlerOptions.NO,
        )
        self.node = rclpy.create_node(name, namespace=namespace, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._lock = threading.Lock()
        self.states: list = []  # (CoriolisState, receive time: time.time_ns())
        self.diagnostics: list = []  # DiagnosticStatus of the node under test
        self.state_subscription = None
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        from rclpy.executors import ExternalShutdownException

        try:
            self.executor.spin()
        except (ExternalShutdownException, Exception):  # noqa: BLE001 -- shutting down
            pass

    def close(self):
        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)
        self._thread.join(5.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- QoS
    @staticmethod
    def qos(reliable=True, depth=10, latched=False):
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

        return QoSProfile(
            depth=depth,
            history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )

    # ---- publishers
    def description_publisher(self, topic="robot_description"):
        from std_msgs.msg import String

        return self.node.create_publisher(String, topic, self.qos(depth=1, latched=True))

    def publish_description(self, publisher, urdf: str):
        from std_msgs.msg import String

        publisher.publish(String(data=urdf))

    def joint_state_publisher(self, topic="joint_states", reliable=True, depth=100):
        from sensor_msgs.msg import JointState

        return self.node.create_publisher(JointState, topic, self.qos(reliable, depth))

    def joint_state(self, names, position, velocity=(), effort=(), stamp_ns: int | None = None):
        from sensor_msgs.msg import JointState

        msg = JointState()
        stamp_ns = time.time_ns() if stamp_ns is None else stamp_ns
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        msg.name = list(names)
        msg.position = [float(v) for v in position]
        msg.velocity = [float(v) for v in velocity]
        msg.effort = [float(v) for v in effort]
        return msg

    # ---- subscriptions
    def collect_states(self, topic="coriolis_state", depth=1000):
        from coriolis_ros.msg import CoriolisState

        def callback(msg):
            t = time.time_ns()
            with self._lock:
                self.states.append((msg, t))

        self.state_subscription = self.node.create_subscription(
            CoriolisState, topic, callback, self.qos(True, depth)
        )
        return self.state_subscription

    def wait_matched(self, *publishers, timeout=TIMEOUT):
        """Wait until every publisher has a subscriber and coriolis_state a publisher.

        Output published before the node discovered this subscriber would be lost (volatile).
        """

        def matched():
            if any(p.get_subscription_count() == 0 for p in publishers):
                return False
            sub = getattr(self, "state_subscription", None)
            return sub is None or sub.get_publisher_count() > 0

        self.wait_for(matched, timeout, "publishers and subscriptions to match")

    def collect_diagnostics(self, node_fqn="/coriolis"):
        from diagnostic_msgs.msg import DiagnosticArray

        name = f"{node_fqn}: dynamics"

        def callback(msg):
            for status in msg.status:
                if status.name == name:
                    with self._lock:
                        self.diagnostics.append(status)

        return self.node.create_subscription(
            DiagnosticArray, "/diagnostics", callback, self.qos(True, 50)
        )

    def received(self) -> list:
        with self._lock:
            return list(self.states)

    def clear(self):
        with self._lock:
            self.states.clear()
            self.diagnostics.clear()

    def last_diagnostic(self):
        with self._lock:
            return self.diagnostics[-1] if self.diagnostics else None

    def wait_for(self, predicate, timeout=TIMEOUT, what="condition", interval=0.02):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(interval)

    def wait_for_state(
        self, predicate=lambda m: True, timeout=TIMEOUT, after: int = 0, what="coriolis_state"
    ):
        """The first state received at index >= after that satisfies predicate."""

        def find():
            for msg, _ in self.received()[after:]:
                if predicate(msg):
                    return msg
            return None

        return self.wait_for(find, timeout, what)

    def publish_until(self, publisher, msg, condition, timeout=TIMEOUT, what="a reaction"):
        """Publish `msg` every 0.25 s until `condition()` is truthy; return its value.

        The first messages on a fresh connection can be lost: the node's joint_states
        subscription is best effort and may not have discovered a new publisher yet.
        """
        deadline = time.monotonic() + timeout
        while True:
            publisher.publish(msg)
            try:
                return self.wait_for(
                    condition, min(0.25, max(deadline - time.monotonic(), 0)), what
                )
            except AssertionError:
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"timed out after {timeout} s waiting for {what}"
                    ) from None

    def send_until_state(self, publisher, msg, timeout=TIMEOUT):
        """Publish a JointState until the coriolis_state carrying its stamp arrives."""
        stamp = stamp_ns(msg.header.stamp)

        def find():
            for state, _ in self.received():
                if stamp_ns(state.header.stamp) == stamp:
                    return state
            return None

        return self.publish_until(publisher, msg, find, timeout, f"coriolis_state stamped {stamp}")

    def wait_for_diagnostic(self, predicate, timeout=TIMEOUT, what="diagnostic status"):
        def find():
            d = self.last_diagnostic()
            return d if d is not None and predicate(d) else None

        return self.wait_for(find, timeout, what)

    # ---- services
    def client(self, srv_type, name):
        client = self.node.create_client(srv_type, name)
        if not client.wait_for_service(timeout_sec=TIMEOUT):
            raise AssertionError(f"service {name} not available")
        return client

    def call(self, client, request, timeout=TIMEOUT):
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            raise AssertionError(f"service call to {client.srv_name} timed out")
        return future.result()


def diag_values(status) -> dict:
    return {kv.key: kv.value for kv in status.values}


def level_of(status) -> int:
    level = status.level
    return level[0] if isinstance(level, (bytes, bytearray)) else int(level)


def stamp_ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


# --------------------------------------------------------------------------- references


class PinReference:
    """Pinocchio model of a URDF, evaluated in a given joint-name order."""

    def __init__(self, urdf: str, gravity=(0.0, 0.0, -9.81)):
        import pinocchio as pin

        self.pin = pin
        self.model = pin.buildModelFromXML(urdf)
        self.model.gravity.linear = np.asarray(gravity, dtype=float)
        self.data = self.model.createData()

    def joint_names(self) -> list[str]:
        """DoF joint names in Pinocchio's v order."""
        joints = self.model.joints
        return [self.model.names[j] for j in range(1, self.model.njoints) if joints[j].nv == 1]

    def evaluate(self, names, q, qd) -> dict:
        """Every term in the order of `names` (q, qd given in that order)."""
        pin, model = self.pin, self.model
        qp = pin.neutral(model)
        vp = np.zeros(model.nv)
        order = []
        for name, qi, vi in zip(names, q, qd):
            j = model.getJointId(name)
            assert j < model.njoints, f"{name} not in the Pinocchio model"
            joint = model.joints[j]
            if joint.nq == 2:  # continuous: (cos, sin)
                qp[joint.idx_q], qp[joint.idx_q + 1] = math.cos(qi), math.sin(qi)
            else:
                qp[joint.idx_q] = qi
            vp[joint.idx_v] = vi
            order.append(joint.idx_v)
        assert sorted(order) == list(range(model.nv)), "names do not cover the model"
        idx = np.array(order)
        C = pin.computeCoriolisMatrix(model, self.data, qp, vp)[np.ix_(idx, idx)]
        M = pin.crba(model, self.data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        M = M[np.ix_(idx, idx)]
        g = pin.computeGeneralizedGravity(model, self.data, qp)[idx]
        qd = np.asarray(qd, dtype=float)
        return {
            "coriolis_matrix": C,
            "mass_matrix": M,
            "mass_matrix_derivative": C + C.T,
            "coriolis_force": C @ qd,
            "coriolis_transpose_force": C.T @ qd,
            "gravity_force": g,
            "momentum": M @ qd,
        }


def library_terms(dyn, q, qd) -> dict:
    """Every CoriolisState / ComputeDynamics term from the library, keyed by field name."""
    M, Mdot, C = dyn.coriolis(q, qd)
    Cqd, CTqd, p = dyn.coriolis_vectors(q, qd)
    return {
        "coriolis_matrix": C,
        "mass_matrix": M,
        "mass_matrix_derivative": Mdot,
        "coriolis_force": Cqd,
        "coriolis_transpose_force": CTqd,
        "gravity_force": dyn.gravity(q),
        "momentum": p,
    }


def as_matrix(field, n: int) -> np.ndarray:
    return np.asarray(field, dtype=float).reshape(n, n)


def close(a, b, scale: float = 1.0, rtol: float = 1e-9) -> bool:
    """Elementwise closeness relative to the magnitude of the reference."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    tol = rtol * max(scale, float(np.max(np.abs(b))) if b.size else 0.0, 1.0)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol))


def ensure_clean_env(env: dict) -> dict:
    """Refuse to start ROS processes without loopback-only discovery and a domain id."""
    assert env.get("ROS_AUTOMATIC_DISCOVERY_RANGE") == "LOCALHOST", "discovery not loopback"
    assert env.get("ROS_DOMAIN_ID", "").isdigit(), "no explicit ROS_DOMAIN_ID"
    return env


def percentile(values, p: float) -> float:
    return float(np.percentile(np.asarray(values), p)) if len(values) else math.nan
