"""Writing test bags with rosbags (both storage formats) from a known trajectory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

TYPESTORE = get_typestore(Stores.ROS2_KILTED)
STORAGES = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}


def trajectory(n: int, T: int, seed: int = 0, dt_ns: int = 1_000_000):
    """Stamps (ns), positions and velocities of a smooth multi-sine trajectory."""
    rng = np.random.default_rng(seed)
    t = np.arange(T) * dt_ns * 1e-9
    amp, freq, phase = rng.uniform(0.3, 1.2, n), rng.uniform(0.2, 2.0, n), rng.uniform(0, 6, n)
    Q = amp * np.sin(2 * np.pi * freq * t[:, None] + phase)
    V = amp * 2 * np.pi * freq * np.cos(2 * np.pi * freq * t[:, None] + phase)
    stamps = 1_700_000_000 * 10**9 + np.arange(T, dtype=np.int64) * dt_ns
    return stamps, Q, V


def joint_state(stamp_ns: int, names, position, velocity=(), effort=()):
    JS = TYPESTORE.types["sensor_msgs/msg/JointState"]
    Header = TYPESTORE.types["std_msgs/msg/Header"]
    Time = TYPESTORE.types["builtin_interfaces/msg/Time"]
    sec, nanosec = divmod(int(stamp_ns), 10**9)
    return JS(
        header=Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=""),
        name=list(names),
        position=np.ascontiguousarray(position, dtype=float),
        velocity=np.ascontiguousarray(velocity, dtype=float),
        effort=np.ascontiguousarray(effort, dtype=float),
    )


def write_bag(
    path: Path,
    storage: str,
    messages,
    urdf: str | None = None,
    topic: str = "/joint_states",
    description_topic: str = "/robot_description",
) -> Path:
    """messages: iterable of (log time ns, JointState); the URDF first, if given."""
    JS = "sensor_msgs/msg/JointState"
    String = TYPESTORE.types["std_msgs/msg/String"]
    with Writer(path, version=9, storage_plugin=STORAGES[storage]) as writer:
        if urdf is not None:
            conn = writer.add_connection(description_topic, String.__msgtype__, typestore=TYPESTORE)
            writer.write(conn, 1, TYPESTORE.serialize_cdr(String(data=urdf), String.__msgtype__))
        conn = writer.add_connection(topic, JS, typestore=TYPESTORE)
        for log_time, msg in messages:
            writer.write(conn, int(log_time), TYPESTORE.serialize_cdr(msg, JS))
    return path


def trajectory_bag(path: Path, storage: str, names, stamps, Q, V, urdf=None, effort=None):
    def messages():
        for t in range(len(stamps)):
            e = () if effort is None else effort[t]
            yield int(stamps[t]) + 250_000, joint_state(stamps[t], names, Q[t], V[t], e)

    return write_bag(path, storage, messages(), urdf=urdf)


def storage_file(bag: Path) -> Path:
    (file,) = [p for p in bag.iterdir() if p.suffix in (".db3", ".mcap")]
    return file


def odometry(stamp_ns: int, child: str, pose, twist, frame: str = "odom"):
    """nav_msgs/Odometry: pose (x, y, z, qx, qy, qz, qw) of ``child`` in ``frame``, twist
    (linear, angular) in ``child``."""
    t = TYPESTORE.types
    sec, nanosec = divmod(int(stamp_ns), 10**9)
    header = t["std_msgs/msg/Header"](
        stamp=t["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id=frame
    )
    point, quat, vec = (
        t["geometry_msgs/msg/Point"],
        t["geometry_msgs/msg/Quaternion"],
        t["geometry_msgs/msg/Vector3"],
    )
    pose_msg = t["geometry_msgs/msg/Pose"](
        position=point(x=pose[0], y=pose[1], z=pose[2]),
        orientation=quat(x=pose[3], y=pose[4], z=pose[5], w=pose[6]),
    )
    twist_msg = t["geometry_msgs/msg/Twist"](
        linear=vec(x=twist[0], y=twist[1], z=twist[2]),
        angular=vec(x=twist[3], y=twist[4], z=twist[5]),
    )
    return t["nav_msgs/msg/Odometry"](
        header=header,
        child_frame_id=child,
        pose=t["geometry_msgs/msg/PoseWithCovariance"](pose=pose_msg, covariance=np.zeros(36)),
        twist=t["geometry_msgs/msg/TwistWithCovariance"](twist=twist_msg, covariance=np.zeros(36)),
    )


def write_mixed_bag(path: Path, storage: str, messages, urdf: str | None = None) -> Path:
    """messages: iterable of (topic, log time ns, message) with JointState on /joint_states and
    Odometry on any topic; written in the given order, the URDF first if given."""
    String = TYPESTORE.types["std_msgs/msg/String"]
    conns = {}
    with Writer(path, version=9, storage_plugin=STORAGES[storage]) as writer:
        if urdf is not None:
            conn = writer.add_connection(
                "/robot_description", String.__msgtype__, typestore=TYPESTORE
            )
            writer.write(conn, 1, TYPESTORE.serialize_cdr(String(data=urdf), String.__msgtype__))
        for topic, log_time, msg in messages:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msg.__msgtype__, typestore=TYPESTORE)
            writer.write(conns[topic], int(log_time), TYPESTORE.serialize_cdr(msg, msg.__msgtype__))
    return path
