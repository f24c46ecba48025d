"""The ROS-free semantics of the incoming streams, shared by the node and the bag reader.

- :mod:`.joint_state_buffer`: JointState layout and merging (name mapping cached per exact
  name list, duplicate and length checks, effort freshness) and service requests by name.
- :mod:`.mimic_check`: the values of joints that follow a leader (mimic joints, geared
  rotors), checked against the leader.
- :mod:`.base_state`: a floating or planar base's state from odometry, paired by stamp.
- :mod:`.odometry_wire`: nav_msgs/Odometry decoded from its serialized bytes.

Nothing here imports rclpy: the same code runs in the node and offline.
"""
