"""Offline analysis of recorded ROS 2 bags, without a ROS installation.

* :mod:`coriolis_ros.offline.bag` reads joint states (and the URDF from a recorded
  ``/robot_description``) from sqlite3 and MCAP bags with ``rosbags``, computes every
  ``CoriolisState`` term per joint state with the batched kernels, and writes ``.npz``,
  an optional bag of ``coriolis_ros/msg/CoriolisState`` messages and optional plots. Its
  parts: :mod:`.bag_storage` (storage checks, topics, decoding), :mod:`.bag_rows` (the
  node's JointState semantics, from :mod:`coriolis_ros.stream`), :mod:`.bag_read` (one bag
  to rows), :mod:`.bag_output` (terms, finite rows, writing), :mod:`.bag_task_space` (the
  task-space terms of chosen frames per row, ``--task-frame``).
* :mod:`coriolis_ros.offline.distributed` runs the same pure functions under Dask.
* :mod:`coriolis_ros.offline.identify` fits the inertial parameters to a bag's efforts.

``pip install coriolis_ros[bag]`` (``rosbags``); ``[plot]`` for ``--plot``;
``[distributed]`` for Dask.
"""
