"""``coriolis-ros echo``, ``call`` and ``plot``: the node's topics and services for users
without the ``ros2`` command (ROS 2 from PyPI has no ros2cli).

* :mod:`.echo` prints any topic readably (CoriolisState with its matrices shaped, the
  diagnostics as key: value lines, other messages field by field), or as JSON lines;
* :mod:`.call` calls ``compute_dynamics``, ``get_christoffel_symbols`` and
  ``reset_observer``;
* :mod:`.plot` draws vector fields of ``coriolis_state`` over time, to a file or live;
* :mod:`.session` is the one rclpy node they share (its own context, the environment's
  ``ROS_DOMAIN_ID``), :mod:`.formatting` turns messages into text and JSON.

Each entry point takes the parsed ``argparse`` namespace of :mod:`coriolis_ros.cli` and
returns the exit status: 0 done, 1 nothing received or the node refused, 2 bad arguments.
"""
