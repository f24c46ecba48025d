"""ROS 2 node `coriolis` (entry point): publishes C(q, q̇), M, Ṁ, g, C q̇, Cᵀ q̇, p from joint
states. The node is :class:`coriolis_ros.node.ros_node.CoriolisNode`; :func:`main` runs it.

Run: `make run URDF=robot.urdf`, `python -m coriolis_ros.node --ros-args -p
robot_description_file:=robot.urdf` or `ros2 run coriolis_ros coriolis_node`.
"""

from __future__ import annotations

import os
import signal
import sys


def _stopped_while_starting(signum, frame):
    # os._exit, not SystemExit: the signal may land inside a callback whose exceptions Python
    # ignores (importlib's module-lock weakref callback), and the start would then go on.
    # Nothing has started yet, so there is nothing to clean up.
    os._exit(0)


def main(args=None) -> int:
    """Run the node; the exit status (0 on SIGINT/SIGTERM, 2 for bad arguments or parameters).

    SIGINT or SIGTERM while the modules below are still loading ends the process quietly with
    status 0 (nothing has started yet); rclpy's own handlers take over in rclpy.init.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stopped_while_starting)
    from .main import run
    from .ros_node import CoriolisNode

    return run(CoriolisNode, args)


if __name__ == "__main__":
    sys.exit(main())
