"""Demo of coriolis_ros: a trajectory publisher, a monitor and a runner for both plus the node.

``python -m coriolis_ros.demo [--robot arm7|quadruped12] [--duration S]`` (see ``run``).
The ROS-free pieces (``trajectory``, ``stats``) import no ROS module.
"""
