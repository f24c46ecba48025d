"""Generated interfaces of the installed coriolis_ros package (contract in team/COMMON.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message

from coriolis_ros.msg import CoriolisState
from coriolis_ros.srv import ComputeDynamics, GetChristoffelSymbols, GetTaskSpace

STRINGS = "sequence<string>"
DOUBLES = "sequence<double>"

# The contract, written out independently of the .msg/.srv files.
STATE_FIELDS = {
    "header": "std_msgs/Header",
    "joint_names": STRINGS,
    "position_names": STRINGS,
    "position": DOUBLES,
    "velocity": DOUBLES,
    "coriolis_matrix": DOUBLES,
    "coriolis_force": DOUBLES,
    "coriolis_transpose_force": DOUBLES,
    "mass_matrix": DOUBLES,
    "mass_matrix_derivative": DOUBLES,
    "gravity_force": DOUBLES,
    "momentum": DOUBLES,
    "effort": DOUBLES,
    "external_effort": DOUBLES,
}
CHRISTOFFEL_REQUEST = {"joint_names": STRINGS, "position": DOUBLES, "base_position": DOUBLES}
CHRISTOFFEL_RESPONSE = {
    "success": "boolean",
    "message": "string",
    "header": "std_msgs/Header",
    "joint_names": STRINGS,
    "position_names": STRINGS,
    "position": DOUBLES,
    "symbols": DOUBLES,
}
DYNAMICS_REQUEST = {
    "joint_names": STRINGS,
    "position": DOUBLES,
    "velocity": DOUBLES,
    "base_position": DOUBLES,
    "base_velocity": DOUBLES,
    "reference_velocity": DOUBLES,
    "reference_acceleration": DOUBLES,
}
DYNAMICS_RESPONSE = {
    "success": "boolean",
    "message": "string",
    "joint_names": STRINGS,
    "position_names": STRINGS,
    "position": DOUBLES,
    "velocity": DOUBLES,
    "coriolis_matrix": DOUBLES,
    "coriolis_force": DOUBLES,
    "coriolis_transpose_force": DOUBLES,
    "mass_matrix": DOUBLES,
    "mass_matrix_derivative": DOUBLES,
    "gravity_force": DOUBLES,
    "momentum": DOUBLES,
    "slotine_li_torque": DOUBLES,
}

TASK_REQUEST = {
    "joint_names": STRINGS,
    "position": DOUBLES,
    "velocity": DOUBLES,
    "base_position": DOUBLES,
    "base_velocity": DOUBLES,
    "frame": "string",
    "reference": "string",
    "rows": "sequence<int32>",
    "damping": "double",
}
TASK_RESPONSE = {
    "success": "boolean",
    "message": "string",
    "joint_names": STRINGS,
    "rows": "sequence<int32>",
    "task_inertia": DOUBLES,
    "task_coriolis": DOUBLES,
    "jacobian": DOUBLES,
    "jacobian_dot": DOUBLES,
}


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (CoriolisState, STATE_FIELDS),
        (GetChristoffelSymbols.Request, CHRISTOFFEL_REQUEST),
        (GetChristoffelSymbols.Response, CHRISTOFFEL_RESPONSE),
        (ComputeDynamics.Request, DYNAMICS_REQUEST),
        (ComputeDynamics.Response, DYNAMICS_RESPONSE),
        (GetTaskSpace.Request, TASK_REQUEST),
        (GetTaskSpace.Response, TASK_RESPONSE),
    ],
    ids=lambda v: getattr(v, "__qualname__", ""),
)
def test_fields_names_types_and_order(cls, expected):
    fields = cls.get_fields_and_field_types()
    assert list(fields.items()) == list(expected.items())


def test_interfaces_come_from_the_installed_package():
    import coriolis_ros

    for cls in (CoriolisState, GetChristoffelSymbols, ComputeDynamics):
        assert sys.modules[cls.__module__].__file__.startswith(coriolis_ros.__path__[0])


def test_defaults_are_empty():
    msg = CoriolisState()
    for name, kind in STATE_FIELDS.items():
        if kind in (STRINGS, DOUBLES):
            assert len(getattr(msg, name)) == 0, name
    assert GetChristoffelSymbols.Response().success is False


def test_wrong_values_are_rejected():
    """Wrong element types never reach the wire.

    Note: rosidl's per-field checks are off unless ROS_PYTHON_CHECK_FIELDS=1 or check_fields=True;
    float64[] fields still convert (and reject) at assignment, string[] fields at serialization.
    """
    msg = CoriolisState()
    with pytest.raises(TypeError):
        msg.position = ["not", "floats"]
    checked = CoriolisState(check_fields=True)
    with pytest.raises(AssertionError):
        checked.joint_names = [1.0, 2.0]
    unchecked = CoriolisState()
    unchecked.joint_names = [1.0, 2.0]
    with pytest.raises(TypeError):
        serialize_message(unchecked)


def _sample_state_dict(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n = 3
    return {
        "stamp": [1_700_000_123, 456_789_012],
        "frame_id": "base_link",
        "joint_names": ["shoulder", "elbow", "wrist_ç"],
        "position_names": ["shoulder", "elbow", "wrist_ç", "extra"],
        "position": rng.normal(size=n + 1).tolist(),
        "velocity": rng.normal(size=n).tolist(),
        "coriolis_matrix": rng.normal(size=n * n).tolist(),
        "coriolis_force": rng.normal(size=n).tolist(),
        "coriolis_transpose_force": rng.normal(size=n).tolist(),
        "mass_matrix": rng.normal(size=n * n).tolist(),
        "mass_matrix_derivative": rng.normal(size=n * n).tolist(),
        "gravity_force": rng.normal(size=n).tolist(),
        "momentum": [],  # an optional field left empty
        "effort": rng.normal(size=n).tolist(),
        "external_effort": [],
    }


def _fill(msg: CoriolisState, data: dict) -> CoriolisState:
    msg.header.stamp.sec, msg.header.stamp.nanosec = data["stamp"]
    msg.header.frame_id = data["frame_id"]
    for name in STATE_FIELDS:
        if name != "header":
            setattr(msg, name, data[name])
    return msg


def _as_dict(msg: CoriolisState) -> dict:
    out = {
        "stamp": [msg.header.stamp.sec, msg.header.stamp.nanosec],
        "frame_id": msg.header.frame_id,
    }
    for name in STATE_FIELDS:
        if name != "header":
            value = getattr(msg, name)
            strings = STATE_FIELDS[name] == STRINGS
            out[name] = list(value) if strings else [float(x) for x in value]
    return out


def test_serialization_round_trip():
    data = _sample_state_dict(1)
    raw = serialize_message(_fill(CoriolisState(), data))
    assert isinstance(raw, bytes) and len(raw) > 8 * 30
    assert _as_dict(deserialize_message(raw, CoriolisState)) == data


PUBLISHER = r"""
import json, sys, threading
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from coriolis_ros.msg import CoriolisState

data = json.loads(sys.argv[1])
msg = CoriolisState()
msg.header.stamp.sec, msg.header.stamp.nanosec = data.pop("stamp")
msg.header.frame_id = data.pop("frame_id")
for name, value in data.items():
    setattr(msg, name, value)

stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
rclpy.init()
node = rclpy.create_node("coriolis_state_talker")
qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
pub = node.create_publisher(CoriolisState, "coriolis_test_state", qos)
print("publishing", flush=True)
# Publish until the test closes our stdin (bounded: 120 s at most).
for _ in range(1200):
    pub.publish(msg)
    if stop.wait(0.1):
        break
node.destroy_node()
rclpy.shutdown()
"""


def test_state_crosses_processes_over_loopback(ros_domain_env, tmp_path):
    """A subprocess publishes a CoriolisState; this process receives identical content."""
    data = _sample_state_dict(7)
    proc = subprocess.Popen(
        [sys.executable, "-c", PUBLISHER, json.dumps(data)],
        env=ros_domain_env.env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain_env.domain_id)
    received: list[CoriolisState] = []
    try:
        node = rclpy.create_node("coriolis_state_listener", context=context)
        qos = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        node.create_subscription(CoriolisState, "coriolis_test_state", received.append, qos)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + 60  # failure guard only, not a performance bound
        while not received and time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.2)
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
        try:
            out, err = proc.communicate(input="", timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    assert received, f"nothing received; publisher exit={proc.returncode}\n{out}\n{err}"
    assert proc.returncode == 0, err
    assert _as_dict(received[0]) == data
