"""The node's parameters: names, defaults, descriptions, ranges, validation (ROS-free).

The node turns `PARAMETERS` into declared parameters with descriptors; config/coriolis.yaml
documents the same set (a test keeps them in sync).
"""

from __future__ import annotations

import array
import math
import os

from . import realtime
from .param_spec import ParamSpec

# Optional CoriolisState fields and the parameter that switches each one.
OUTPUT_FIELDS = (
    ("coriolis_matrix", "publish_coriolis_matrix", "C (n*n, row-major)"),
    ("coriolis_force", "publish_coriolis_force", "C q̇ (n)"),
    ("coriolis_transpose_force", "publish_coriolis_transpose_force", "Cᵀ q̇ (n)"),
    ("mass_matrix", "publish_mass_matrix", "M (n*n, row-major)"),
    ("mass_matrix_derivative", "publish_mass_matrix_derivative", "Ṁ = C + Cᵀ (n*n, row-major)"),
    ("gravity_force", "publish_gravity", "g (n)"),
    ("momentum", "publish_momentum", "p = M q̇ (n)"),
)


PARAMETERS = (
    ParamSpec(
        "robot_description",
        "",
        "URDF XML used when nothing has been received on the robot_description topic; "
        "a later message on the topic replaces it. Empty: wait for the topic.",
    ),
    ParamSpec(
        "robot_description_file",
        "",
        "Path of a URDF file (or of a .xacro file, expanded by xacro when it is installed), "
        "read at start and whenever this parameter is set; at start it "
        "takes precedence over robot_description. A later message on the robot_description "
        "topic replaces it. Empty: not used.",
        constraints="empty or a readable file",
    ),
    ParamSpec(
        "gravity",
        [0.0, 0.0, -9.81],
        "Gravity vector [x, y, z] in the world frame, m/s^2: the URDF root frame on a fixed "
        "base, the odometry's header.frame_id (taken as gravity-aligned) on a floating one.",
        read_only=True,
        constraints="exactly 3 finite numbers",
    ),
    ParamSpec(
        "root_joint",
        "fixed",
        "How the URDF's root link is attached to the world. fixed: welded (arms). floating: a "
        "free-flyer (legged robots, humanoids); planar: moves in the world's x-y plane. For "
        "floating and planar the base state comes from the odom topic (nav_msgs/Odometry of "
        "the root link, REP 105) and leads every vector: see CoriolisState.msg.",
        read_only=True,
        constraints="fixed, floating or planar",
    ),
    ParamSpec(
        "velocity_representation",
        "body",
        "root_joint: floating. The base's velocity in every output (and in the published "
        "velocity): body (the odometry twist, in the base frame), mixed (the base origin's "
        "velocity and the angular velocity, world axes) or inertial (the base's spatial twist in "
        "the world frame at its origin). Odometry and service requests still give the twist in "
        "the base frame. Other root joints: body only.",
        read_only=True,
        constraints="body, mixed or inertial",
    ),
    ParamSpec(
        "mimic",
        "follow",
        "URDF mimic joints. follow: each follows its leader and every output is over the "
        "independent joints only (joint_names leaves mimic joints out); joint_states may carry "
        "mimic joints or not: their values are checked against the leader (mimic_tolerance), "
        "never used. independent: mimic joints are degrees of freedom of their own.",
        read_only=True,
        constraints="follow or independent",
    ),
    ParamSpec(
        "locked_joints",
        [],
        "Joints welded at the positions in locked_positions (same order), as Pinocchio's "
        "buildReducedModel does: a gripper that never publishes, a joint held by a brake. "
        "They leave joint_names and need no joint_states.",
        read_only=True,
        constraints="names of revolute, continuous or prismatic joints",
        array_type="string",
    ),
    ParamSpec(
        "locked_positions",
        [],
        "Positions (rad or m) of locked_joints, one per name.",
        read_only=True,
        constraints="as many finite numbers as locked_joints",
        array_type="double",
    ),
    ParamSpec(
        "rotors_file",
        "",
        "YAML file of geared rotors by joint, for URDFs without rotor links: {joint: "
        "{gear_ratio: N, inertia: [ixx, iyy, izz, ixy, ixz, iyz], mass: m}} (inertia about the "
        "rotor's centre, in the joint's frame). Each rotor becomes a body on the joint's parent "
        "link that turns N times as far as the joint; joint_names is unchanged. Empty: none.",
        read_only=True,
        constraints="empty or a readable file",
    ),
    ParamSpec(
        "rotor_model",
        "exact",
        "Geared rotors (rotors_file, or <coupling> in the URDF). exact: each rotor is a body of "
        "the tree, its gyroscopic terms included. armature: each adds N^2 I_axis to the mass "
        "matrix's diagonal and its mass to its parent link, without the gyroscopic terms.",
        read_only=True,
        constraints="exact or armature",
    ),
    ParamSpec(
        "mimic_tolerance",
        1e-3,
        "mimic: follow. A mimic joint's value in joint_states that differs from multiplier * "
        "leader + offset by more than this (rad or m) gets a throttled warning (it is never "
        "used either way).",
        minimum=0.0,
        maximum=1e3,
    ),
    ParamSpec(
        "base_state_timeout",
        0.1,
        "Floating or planar base: largest difference in seconds between a joint state's stamp "
        "and the newest odometry's stamp for the two to be paired; beyond it nothing is "
        "published (throttled warning) until fresh odometry arrives.",
        read_only=True,
        minimum=1e-4,
        maximum=3600.0,
    ),
    ParamSpec(
        "update_rate",
        0.0,
        "Computation rate in Hz. 0: compute on every joint_states message; > 0: compute "
        "at this rate on the newest merged state (only when new data arrived).",
        minimum=0.0,
        maximum=10000.0,
    ),
    ParamSpec(
        "joint_state_timeout",
        0.5,
        "Seconds after which a joint without a new value counts as stale (reported in "
        "diagnostics, throttled warning); likewise a joint whose positions keep coming without "
        "velocity once its last velocity is older than this (that velocity is still used). "
        "0 disables the check.",
        minimum=0.0,
        maximum=3600.0,
    ),
    ParamSpec(
        "diagnostics_period",
        1.0,
        "Seconds between DiagnosticArray messages on /diagnostics.",
        minimum=0.05,
        maximum=60.0,
    ),
    ParamSpec("frame_id", "", "header.frame_id of coriolis_state (empty by default)."),
    ParamSpec(
        "input_queue_depth",
        100,
        "History depth of the joint_states subscription (best effort, matches reliable "
        "and best-effort publishers).",
        read_only=True,
        minimum=1,
        maximum=100000,
    ),
    ParamSpec(
        "output_queue_depth",
        10,
        "History depth of the coriolis_state publisher (reliable, volatile).",
        read_only=True,
        minimum=1,
        maximum=100000,
    ),
    ParamSpec(
        "executor_threads",
        1,
        "Executor threads for subscriptions, services and timers (the computation has its own "
        "thread). 1: SingleThreadedExecutor, the cheapest per callback in rclpy (keeps up with "
        "1 kHz joint_states). > 1: MultiThreadedExecutor, so a long service call (e.g. "
        "Christoffel symbols of a large robot) does not delay joint_states intake, at a much "
        "higher CPU cost per message.",
        read_only=True,
        minimum=1,
        maximum=16,
    ),
    ParamSpec(
        "executor",
        "events",
        "Executor when executor_threads is 1. events: rclpy.experimental.EventsExecutor "
        "(C++ event queue; by far the least CPU per message); single: SingleThreadedExecutor "
        "(rclpy's Python wait-set loop).",
        read_only=True,
        constraints="events or single",
    ),
    ParamSpec(
        "inline_tick_share",
        0.5,
        "Run the tick inside the joint_states callback (or the update_rate timer) while its "
        "mean CPU cost stays below this share of the mean input interval (or timer period): no "
        "thread hand-off. Above it, ticks go to the compute thread, which works on the newest "
        "merged state and counts the messages merged meanwhile as skipped, so the input queue "
        "keeps draining. 0: always the compute thread.",
        minimum=0.0,
        maximum=1.0,
    ),
    ParamSpec(
        "observer_enabled",
        False,
        "Run the momentum observer (De Luca's residual) on every joint_states message that "
        "carries an effort for every joint, also those whose output is skipped, and publish "
        "its estimate of the external torque in CoriolisState.external_effort. "
        "Messages without effort for some joints pause it (throttled message "
        "naming them). On a floating or planar base the base's state comes from odometry "
        "(paired by stamp), its effort is taken as zero and the estimate's base rows are the "
        "external wrench on the base.",
    ),
    ParamSpec(
        "observer_gain",
        50.0,
        "Observer gain K_O in 1/s (the estimate's time constant is 1/K_O): one number for "
        "every joint, or a list of one per joint in the model's order. Setting it restarts "
        "the observer.",
        constraints="a positive number, or one positive number per joint",
        dynamic_typing=True,
    ),
    ParamSpec(
        "observer_max_gap",
        0.1,
        "Largest step in seconds between the stamps of consecutive joint states the observer "
        "integrates; a longer gap (or a stamp going back) restarts it from zero, with a "
        "message.",
        minimum=1e-6,
        maximum=3600.0,
    ),
    ParamSpec(
        "wrench_frames",
        [],
        "Frames (URDF links) where the observer's estimate is turned into a contact wrench "
        "(least squares over the frame's Jacobian: force, then moment about the frame origin, "
        "world-aligned axes), published as geometry_msgs/WrenchStamped on "
        "external_wrench/<frame>. Needs observer_enabled.",
        array_type="string",
    ),
    ParamSpec(
        "collision_joint_threshold",
        [],
        "Collision when some joint's |estimate| exceeds its threshold (N m or N): [] off, one "
        "value for all joints, or one per joint; 0 leaves that joint out. The flag is "
        "published on `collision` (std_msgs/Bool, latched) when it changes.",
        array_type="double",
    ),
    ParamSpec(
        "collision_force_threshold",
        0.0,
        "Collision when the force at one of wrench_frames exceeds this (N). 0: off.",
        minimum=0.0,
        maximum=1e9,
    ),
    ParamSpec(
        "collision_release_ratio",
        0.5,
        "Hysteresis: a collision is released when every joint and force is below this "
        "fraction of its threshold.",
        minimum=1e-3,
        maximum=1.0,
    ),
    ParamSpec(
        "warning_period",
        2.0,
        "Seconds between repeats of the same warning (bad input, waiting for joints, "
        "stale joints); besides, at most one line per kind of warning per min(1 s, this). "
        "Held-back lines are counted in the next one. 0: every warning printed.",
        minimum=0.0,
        maximum=3600.0,
    ),
) + tuple(
    ParamSpec(param, True, f"Fill CoriolisState.{field_name}: {what}. Off: left empty.")
    for field_name, param, what in OUTPUT_FIELDS
)
PARAMETERS += realtime.PARAMETERS

EXECUTORS = ("events", "single")
ROOT_JOINTS = ("fixed", "floating", "planar")
MIMIC_MODES = ("follow", "independent")
VELOCITY_REPRESENTATIONS = ("body", "mixed", "inertial")
ROTOR_MODELS = ("exact", "armature")
SPECS = {spec.name: spec for spec in PARAMETERS}


def validate(name: str, value) -> str | None:
    """None if `value` is acceptable for parameter `name`, else the reason."""
    spec = SPECS.get(name)
    if spec is None:
        return None
    if name == "gravity":
        try:
            values = [float(v) for v in value]
        except (TypeError, ValueError):
            return "gravity must be a list of 3 numbers"
        if len(values) != 3 or not all(math.isfinite(v) for v in values):
            return f"gravity must be exactly 3 finite numbers, got {list(value)}"
        return None
    if name in ("robot_description_file", "rotors_file"):
        if not isinstance(value, str):
            return f"{name} must be a string"
        if value and not os.path.isfile(value):
            return f"{name}: no such file: {value}"
        if value and not os.access(value, os.R_OK):
            return f"{name}: not readable: {value}"
        return None
    if name == "locked_joints":
        if not all(isinstance(v, str) and v for v in value):
            return "locked_joints must be a list of joint names"
        if len(set(value)) != len(value):
            return "locked_joints names a joint twice"
        return None
    if name == "locked_positions":
        try:
            values = [float(v) for v in value]
        except (TypeError, ValueError):
            return "locked_positions must be a list of numbers"
        if not all(math.isfinite(v) for v in values):
            return f"locked_positions must be finite, got {list(value)}"
        return None
    if name == "mimic":
        if value not in MIMIC_MODES:
            return f"mimic must be one of {', '.join(MIMIC_MODES)}, got {value!r}"
        return None
    if name == "velocity_representation":
        if value not in VELOCITY_REPRESENTATIONS:
            return (
                f"velocity_representation must be one of {', '.join(VELOCITY_REPRESENTATIONS)}, "
                f"got {value!r}"
            )
        return None
    if name == "rotor_model":
        if value not in ROTOR_MODELS:
            return f"rotor_model must be one of {', '.join(ROTOR_MODELS)}, got {value!r}"
        return None
    if name == "root_joint":
        if value not in ROOT_JOINTS:
            return f"root_joint must be one of {', '.join(ROOT_JOINTS)}, got {value!r}"
        return None
    if name == "observer_enabled":
        return None if isinstance(value, bool) else "observer_enabled must be true or false"
    if name == "observer_gain":
        return gain_problem(value)
    if name == "cpu_affinity":
        return realtime.affinity_problem(value)
    if name == "executor":
        if value not in EXECUTORS:
            return f"executor must be one of {', '.join(EXECUTORS)}, got {value!r}"
        return None
    if spec.minimum is not None or spec.maximum is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{name} must be a number"
        if not math.isfinite(value):
            return f"{name} must be finite"
        if spec.minimum is not None and value < spec.minimum:
            return f"{name} must be >= {spec.minimum}, got {value}"
        if spec.maximum is not None and value > spec.maximum:
            return f"{name} must be <= {spec.maximum}, got {value}"
    return None


def gain_problem(value) -> str | None:
    """None for a positive finite number or a non-empty list of them (the length is checked
    against the model when the observer is built), else the reason."""
    # a double array arrives as array.array('d') from a parameter event, a list from YAML
    values = list(value) if isinstance(value, (list, tuple, array.array)) else [value]
    if not values:
        return "observer_gain must be a positive number or a list of them, got an empty list"
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"observer_gain must be a positive number or a list of them, got {value!r}"
        if not (math.isfinite(v) and v > 0):
            return f"observer_gain must be positive and finite (1/s), got {float(v)!r}"
    return None
