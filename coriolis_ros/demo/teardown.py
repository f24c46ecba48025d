"""Bounded ROS teardown for the demo's helper processes.

Destroying a node and shutting rclpy down normally takes milliseconds, but Fast DDS can block
in it for many seconds now and then (seen when the peer of a reliable publisher goes away at
the same moment, as when the whole demo stops on Ctrl-C). A demo process must exit promptly
when asked, so the teardown runs in a daemon thread; if it has not finished after `timeout`
seconds the process says so and exits with status 0 at once (the OS releases what is left).
"""

from __future__ import annotations

import os
import sys
import threading


def close_ros(rclpy, node, timeout: float = 5.0, what: str = "process") -> None:
    """destroy_node and try_shutdown, or a note and os._exit(0) after `timeout` seconds."""

    def teardown():
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()

    thread = threading.Thread(target=teardown, name="ros-teardown", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        print(
            f"[coriolis demo] {what}: ROS teardown still running after {timeout:g} s, "
            "exiting anyway",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        os._exit(0)
