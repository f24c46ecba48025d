"""One short-lived rclpy node for the command-line tools.

It runs on a context of its own, in the domain of ``ROS_DOMAIN_ID`` (as any ROS 2 process),
and is spun by the calling thread only (no background threads): a tool waits with
:meth:`Session.spin_until`. Ctrl-C ends a tool quietly (:class:`KeyboardInterrupt` is left to
the caller, which exits 0).
"""

from __future__ import annotations

import importlib
import os
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class ToolError(Exception):
    """A condition the tool reports in one line and exits on; ``status`` is the exit code."""

    def __init__(self, message: str, status: int = EXIT_FAILED):
        super().__init__(message)
        self.status = status


class Session:
    """An rclpy node named ``coriolis_ros_<tool>_<pid>`` on its own context."""

    def __init__(self, tool: str):
        self.context = rclpy.Context()
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(f"coriolis_ros_{tool}_{os.getpid()}", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def spin_until(self, done, timeout: float | None) -> bool:
        """Spin until ``done()`` is true (True) or ``timeout`` seconds pass (False; None:
        no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.executor.spin_once(timeout_sec=min(0.1, left))
            else:
                self.executor.spin_once(timeout_sec=0.1)
        return True

    def resolve(self, name: str) -> str:
        """The fully qualified name of a topic or service name (relative to the root)."""
        return self.node.resolve_topic_name(name)

    def topic_type(self, topic: str, timeout: float) -> str:
        """The message type of ``topic`` ('pkg/msg/Type'), once a publisher is discovered."""
        found: list[str] = []

        def discovered() -> bool:
            for name, types in self.node.get_topic_names_and_types():
                if name == topic and self.node.count_publishers(topic):
                    found[:] = types
                    return True
            return False

        if not self.spin_until(discovered, timeout):
            raise ToolError(f"no publisher of {topic} within {timeout:g} s ({domain_note()})")
        if len(found) != 1:
            raise ToolError(f"{topic} has several types {found}: cannot choose one")
        return found[0]

    def publisher_qos(self, topic: str, depth: int = 100) -> QoSProfile:
        """A subscription QoS that matches every publisher of ``topic``: reliable and transient
        local only when all of them are (a latched robot_description is then received)."""
        infos = self.node.get_publishers_info_by_topic(topic)
        reliable = bool(infos) and all(
            i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos
        )
        latched = bool(infos) and all(
            i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos
        )
        return QoSProfile(
            depth=depth,
            history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )


def domain_note() -> str:
    domain = os.environ.get("ROS_DOMAIN_ID") or "0 (ROS_DOMAIN_ID unset)"
    scope = os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE") or "SUBNET (unset)"
    return f"ROS_DOMAIN_ID {domain}, discovery {scope}: the node must use the same"


def message_class(type_name: str):
    """The Python class of 'pkg/msg/Type' (ToolError when its package is not installed)."""
    try:
        package, kind, name = type_name.split("/")
        return getattr(importlib.import_module(f"{package}.{kind}"), name)
    except (ValueError, ImportError, AttributeError) as exc:
        raise ToolError(f"cannot load the message type {type_name}: {exc}") from None
