"""How the demo's helper processes (publisher, monitor) end.

Destroying a node and shutting rclpy down normally takes milliseconds, but Fast DDS can block
in it for many seconds now and then (seen when the peer of a reliable publisher goes away at
the same moment, as when the whole demo stops). The block happens inside rclpy's C++ layer
while it holds the GIL, so no Python thread or timer can bound it: a watchdog thread never
gets to run. The helpers therefore skip the teardown: they flush their output and leave with
``os._exit(0)``; the OS closes their sockets and the other participants drop them when
their DDS lease expires. Nothing in a helper needs the teardown (they hold no files and write
nothing after they stop). For the same reason their nodes have no ``/rosout`` publisher and
their last words are printed, not logged: a ROS log call publishes on ``/rosout``, and that
publish, made as the peers go away, was seen to block the same way. The coriolis node itself
is not a helper and shuts down normally.
"""

from __future__ import annotations

import os
import sys


def exit_without_ros_teardown(status: int = 0) -> None:
    """Flush stdout and stderr, then end the process at once with ``status``."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
