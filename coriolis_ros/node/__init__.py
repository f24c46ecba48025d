"""The `coriolis` ROS 2 node (`coriolis_node`) and its ROS-free helpers.

Importing this package imports nothing from ROS; `coriolis_node` does.
"""
