"""Launch the coriolis node (coriolis_ros/coriolis_node).

    ros2 launch coriolis_ros coriolis.launch.py [namespace:=robot1]
        [params_file:=/path/to/params.yaml] [use_sim_time:=true]
        [joint_states_topic:=/robot1/joint_states]
        [robot_description_topic:=/robot_description] [odom_topic:=/odom] [log_level:=info]

The node subscribes to `joint_states` and `robot_description` and publishes `coriolis_state`
(all relative to `namespace`, remappable here), publishes /diagnostics, and serves
`get_christoffel_symbols` and `compute_dynamics`. Parameters come from `params_file`
(default: the installed config/coriolis.yaml). A legged robot or humanoid sets
`root_joint: floating` in its params file; the node then also reads nav_msgs/Odometry of the
URDF's root link from `odom` (remappable with odom_topic).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterFile, ParameterValue

PACKAGE = "coriolis_ros"


def generate_launch_description():
    default_params = os.path.join(get_package_share_directory(PACKAGE), "config", "coriolis.yaml")
    arguments = [
        DeclareLaunchArgument(
            "namespace",
            default_value="",
            description="ROS namespace of the node and its relative topics",
        ),
        DeclareLaunchArgument(
            "params_file", default_value=default_params, description="Parameters YAML of the node"
        ),
        DeclareLaunchArgument(
            "use_sim_time",
            default_value="false",
            choices=["true", "false", "True", "False"],
            description="Use /clock (simulation time)",
        ),
        DeclareLaunchArgument(
            "joint_states_topic",
            default_value="joint_states",
            description="Topic to read sensor_msgs/JointState from (remaps joint_states)",
        ),
        DeclareLaunchArgument(
            "robot_description_topic",
            default_value="robot_description",
            description="Topic to read the URDF (std_msgs/String, transient "
            "local) from (remaps robot_description)",
        ),
        DeclareLaunchArgument(
            "odom_topic",
            default_value="odom",
            description="Topic to read the base's nav_msgs/Odometry from when the params file "
            "sets root_joint floating or planar (remaps odom)",
        ),
        DeclareLaunchArgument(
            "log_level",
            default_value="info",
            choices=["debug", "info", "warn", "error", "fatal"],
            description="Logging level of the node",
        ),
    ]
    node = Node(
        package=PACKAGE,
        executable="coriolis_node",
        name="coriolis",
        namespace=LaunchConfiguration("namespace"),
        output="screen",
        parameters=[
            ParameterFile(LaunchConfiguration("params_file")),
            {"use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)},
        ],
        remappings=[
            ("joint_states", LaunchConfiguration("joint_states_topic")),
            ("robot_description", LaunchConfiguration("robot_description_topic")),
            ("odom", LaunchConfiguration("odom_topic")),
        ],
        arguments=["--ros-args", "--log-level", LaunchConfiguration("log_level")],
    )
    return LaunchDescription([*arguments, node])
