"""``coriolis-ros``: the dynamics library from the command line, no ROS needed.

    coriolis-ros compute robot.urdf --q 0.1 0.2 ... --qd 1 0 ... [--format text|json|npz] [-o FILE]
    coriolis-ros check robot.urdf [--samples 20] [--seed 0]
    coriolis-ros bag BAG... [-o OUT.npz|OUT.parquet | --output-dir DIR [--format parquet]]
                     [--urdf FILE] [--write-bag] [--plot] [--root-joint floating
                     [--odometry-topic /odom]] [--mimic follow|independent] [--strict]
                     [--task-frame FRAME... [--task-reference R] [--task-rows 0,1,2]]
    coriolis-ros identify BAG [--urdf FILE] [-o PARAMS.json] [--window N] [--prior-weight W]
    coriolis-ros echo [TOPIC] [--once | --count N] [--field F...] [--format text|json]
    coriolis-ros call compute_dynamics|christoffel|reset_observer [--joint-names ...]
                      [--position ...] [--velocity ...]
    coriolis-ros plot [TOPIC] [--field F...] [-o FILE.png [--duration S]]
    (compute, check and bag take --root-joint fixed|floating|planar; a floating base's q is
    x y z qx qy qz qw then the joints, its velocity linear then angular, base frame; bag takes
    the base state from the recorded nav_msgs/Odometry, as the node does)

``compute`` prints every term of coriolis_ros/CoriolisState at one state (q, q̇, C, C q̇,
Cᵀ q̇, M, Ṁ, g, p = M q̇) and the Christoffel symbols; the JSON and npz keys are the message
field names (``symbols`` as in GetChristoffelSymbols), the arrays shaped as
``coriolis_ros.messages.state_to_numpy`` returns them: vectors (n,), matrices (n, n),
symbols (n, n, n);
``check`` evaluates the identities the numbers must satisfy on random states of
*your* robot and exits 0 only if every residual is below its tolerance.
``bag`` computes every CoriolisState term for each joint state recorded in ROS 2 bags
(sqlite3 or MCAP, no ROS installation needed; see :mod:`coriolis_ros.offline.bag`).
``identify`` fits every body's inertial parameters to a bag's positions, velocities and
efforts (:mod:`coriolis_ros.offline.identify`).
``echo``, ``call`` and ``plot`` talk to a running node (:mod:`coriolis_ros.node.tools`;
they need rclpy, so not the ROS-free pip install), for users without the ``ros2`` command.
Exit codes: 0 success, 1 a check failed or a bag could not be processed (the others
are: a bag that is damaged, gives no row, or lacks joints of the model, named), 2 bad
arguments or an unusable URDF.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from coriolis_ros.dynamics.budgets import (
    DEFAULT_MAX_CHRISTOFFEL_BYTES,
    DEFAULT_MAX_DOF,
    christoffel_bytes,
    christoffel_refusal,
)
from coriolis_ros.dynamics.identities import CHECK_TENSORS, check_identities, singular_mass_matrix
from coriolis_ros.messages import STATE_FIELDS
from coriolis_ros.offline import bag_command, bag_task_space
from coriolis_ros.offline import identify as identify_cli

EXIT_OK, EXIT_CHECK_FAILED, EXIT_USAGE = 0, 1, 2

# Text output: every array field of CoriolisState, under its field name, in message order.
TEXT_TITLES = {
    "position": "q",
    "velocity": "qd",
    "coriolis_matrix": "C (Coriolis matrix, Christoffel-consistent)",
    "coriolis_force": "C qd",
    "coriolis_transpose_force": "C^T qd",
    "mass_matrix": "M (mass matrix)",
    "mass_matrix_derivative": "Mdot = C + C^T",
    "gravity_force": "g (generalized gravity)",
    "momentum": "p = M qd (generalized momentum)",
}


class _UsageError(Exception):
    pass


def _model_arguments(parser) -> None:
    """The options that change the model: rotors from a datasheet, the rotor model, a closed
    chain's coordinates (compute, check and bag)."""
    parser.add_argument(
        "--rotors",
        metavar="FILE",
        help="YAML of geared rotors by joint: {joint: {gear_ratio, inertia: [ixx, iyy, izz, "
        "ixy, ixz, iyz], mass}} (docs/rotors.md)",
    )
    parser.add_argument(
        "--rotor-model",
        choices=("exact", "armature"),
        default="exact",
        help="geared rotors as bodies of the tree (exact, default) or as N^2 I_axis added to "
        "M's diagonal, without their gyroscopic terms (armature; docs/rotors.md)",
    )
    parser.add_argument(
        "--independent-joints",
        nargs="+",
        metavar="JOINT",
        help="closed loops: the tree joints that are the coordinates (docs/loops.md; default: "
        "the joints' independent attributes, else the joints of each loop nearest the root)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coriolis-ros",
        description="Coriolis matrix, Christoffel symbols, mass matrix and gravity from a URDF.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("urdf", help="URDF file")
    common.add_argument(
        "--gravity", type=float, nargs=3, default=(0.0, 0.0, -9.81), metavar=("GX", "GY", "GZ")
    )
    common.add_argument(
        "--root-joint",
        choices=("fixed", "floating", "planar"),
        default="fixed",
        help="how the URDF's root link is attached to the world (default fixed)",
    )
    common.add_argument(
        "--max-dof",
        type=int,
        default=DEFAULT_MAX_DOF,
        metavar="N",
        help=f"refuse a model with more velocity DoF than this (default {DEFAULT_MAX_DOF})",
    )
    common.add_argument(
        "--max-christoffel-bytes",
        type=int,
        default=DEFAULT_MAX_CHRISTOFFEL_BYTES,
        metavar="BYTES",
        help="refuse to compute the Christoffel symbols (8 n^3 bytes; check needs several "
        "such arrays) beyond this size (default 1 GiB)",
    )
    _model_arguments(common)

    compute = sub.add_parser("compute", parents=[common], help="every term at one state")
    compute.add_argument(
        "--q", type=float, nargs="+", help="configuration, nq values (default: neutral)"
    )
    compute.add_argument(
        "--qd", type=float, nargs="+", help="velocities, nv values (default zeros)"
    )
    compute.add_argument("--format", choices=("text", "json", "npz"), default="text")
    compute.add_argument("-o", "--output", help="write to this file instead of standard output")
    compute.add_argument(
        "--no-christoffel", action="store_true", help="leave out symbols (Gamma, n^3 values)"
    )

    check = sub.add_parser("check", parents=[common], help="verify the identities on random states")
    check.add_argument("--samples", type=int, default=20, help="random states (default 20)")
    check.add_argument("--seed", type=int, default=0)

    bag = sub.add_parser(
        "bag",
        help="every CoriolisState term per recorded joint state (ROS 2 bags, no ROS needed)",
        description="Read joint states from ROS 2 bags (sqlite3 or MCAP directories, or .db3 / "
        ".mcap files) and write every CoriolisState term per joint state to .npz or Parquet "
        "(keys, columns: the message's field names). Bags are processed in parallel on the "
        "local cores; a bag that cannot be read is reported and the others are still processed.",
    )
    bag.add_argument(
        "bags", nargs="+", metavar="BAG",
        help="rosbag2 directory or storage file, or a directory holding bags (each is read, "
        "in natural order)",
    )  # fmt: skip
    where = bag.add_mutually_exclusive_group()
    where.add_argument(
        "-o", "--output", help="output file, Parquet if it ends in .parquet, else .npz (one bag)"
    )
    where.add_argument(
        "--output-dir", help="directory for <bag>.coriolis.npz (default: beside each bag)"
    )
    bag.add_argument(
        "--format",
        choices=("npz", "parquet"),
        help="output format (default: npz, or what -o's suffix says); parquet needs pyarrow",
    )
    bag.add_argument("--urdf", help="URDF file (default: the bag's /robot_description)")
    _model_arguments(bag)
    bag.add_argument(
        "--gravity", type=float, nargs=3, default=(0.0, 0.0, -9.81), metavar=("GX", "GY", "GZ")
    )
    bag.add_argument("--joint-states-topic", help="default: the bag's only JointState topic")
    bag.add_argument("--robot-description-topic", default="/robot_description")
    bag.add_argument(
        "--fields", help="comma-separated terms to compute (default: all CoriolisState terms)"
    )
    bag.add_argument(
        "--write-bag",
        choices=("sqlite3", "mcap"),
        help="also write <output>_bag with coriolis_ros/msg/CoriolisState messages",
    )
    bag.add_argument("--plot", action="store_true", help="also write <output>_<field>.png")
    bag.add_argument(
        "--root-joint",
        choices=("fixed", "floating", "planar"),
        default="fixed",
        help="how the URDF's root link is attached to the world (default fixed); floating and "
        "planar bases take their state from the recorded nav_msgs/Odometry",
    )
    bag.add_argument(
        "--odometry-topic", help="floating/planar base: default /odom or the only Odometry topic"
    )
    bag.add_argument(
        "--base-state-timeout",
        type=float,
        default=0.1,
        help="floating/planar base: largest stamp difference (s) between a joint state and the "
        "odometry it is paired with, as the node's parameter (default 0.1)",
    )
    bag.add_argument(
        "--observer-gain", type=float, default=50.0, help="momentum observer gain (1/s)"
    )
    bag.add_argument(
        "--observer-max-gap", type=float, default=0.1,
        help="largest stamp step (s) the observer integrates; a longer one restarts it (0.1)",
    )  # fmt: skip
    bag.add_argument(
        "--mimic", choices=("follow", "independent"), default="follow",
        help="URDF mimic joints: follow their leader (default; their recorded values are "
        "checked against it) or independent degrees of freedom, as the node's parameter",
    )  # fmt: skip
    bag.add_argument(
        "--mimic-tolerance", type=float, default=1e-3,
        help="a recorded mimic joint further than this from its leader is reported (1e-3)",
    )  # fmt: skip
    bag.add_argument(
        "--strict", action="store_true",
        help="a bad message (undecodable, or rejected as the node rejects it) fails its bag "
        "instead of being counted and skipped",
    )  # fmt: skip
    bag_task_space.add_arguments(bag)
    bag.add_argument("-j", "--jobs", type=int, help="worker processes (default: CPU count)")
    bag.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    identify_cli.add_parser(sub)
    _ros_tool_parsers(sub)
    return parser


# The node's topics and services without the ros2 command (coriolis_ros.node.tools: needs
# rclpy and the ROS 2 build of this package, as `make setup` or colcon installs it).
ROS_TOOLS = ("echo", "call", "plot")


def _ros_tool_parsers(sub) -> None:
    shown = argparse.ArgumentParser(add_help=False)
    shown.add_argument("--format", choices=("text", "json"), default="text",
                       help="text (shaped arrays) or one JSON object per message")  # fmt: skip
    shown.add_argument("--field", nargs="+", metavar="FIELD", help="only these fields")
    shown.add_argument("--precision", type=int, default=6, help="digits in text (default 6)")
    waits = argparse.ArgumentParser(add_help=False)
    waits.add_argument("--timeout", type=float, default=30.0, metavar="S",
                       help="wait this long for the node (default 30 s)")  # fmt: skip

    echo = sub.add_parser(
        "echo", parents=[shown, waits], help="print a topic's messages (default coriolis_state)",
        description="Print the messages of a topic readably: CoriolisState with its matrices "
        "shaped, /diagnostics as key: value lines, any other type field by field.",
    )
    echo.add_argument("topic", nargs="?", default="coriolis_state",
                      help="topic name (default coriolis_state; e.g. /diagnostics)")  # fmt: skip
    how_many = echo.add_mutually_exclusive_group()
    how_many.add_argument("--once", action="store_true", help="print one message and exit")
    how_many.add_argument("--count", type=int, metavar="N", help="print N messages and exit")

    call = sub.add_parser(
        "call", parents=[shown, waits], help="call the node's services",
        description="Call compute_dynamics (every term at q, qd), christoffel "
        "(get_christoffel_symbols: Gamma at the latest joint state, or at --joint-names / "
        "--position) or reset_observer; exit 1 with the node's reason when it refuses.",
    )
    call.add_argument("service", choices=("compute_dynamics", "christoffel",
                                          "get_christoffel_symbols", "reset_observer"))  # fmt: skip
    call.add_argument("--name", help="service name (default the node's; /arm/compute_dynamics)")
    call.add_argument("--joint-names", nargs="+", metavar="JOINT")
    for field in ("position", "velocity", "base_position", "base_velocity",
                  "reference_velocity", "reference_acceleration"):  # fmt: skip
        call.add_argument("--" + field.replace("_", "-"), type=float, nargs="+", metavar="X")

    plot = sub.add_parser(
        "plot", parents=[waits], help="plot coriolis_state fields over time (matplotlib)",
        description="Vector fields of a CoriolisState topic over time: to a file with -o "
        "(recorded for --duration seconds or --count messages), else live in a window.",
    )
    plot.add_argument("topic", nargs="?", default="coriolis_state")
    plot.add_argument("--field", nargs="+", metavar="FIELD",
                      help="vector fields (default coriolis_force gravity_force)")  # fmt: skip
    plot.add_argument("-o", "--output", help="write the figure here (.png, .pdf, .svg)")
    plot.add_argument("--duration", type=float, default=10.0, metavar="S",
                      help="with -o: record this long (default 10 s)")  # fmt: skip
    plot.add_argument("--count", type=int, metavar="N", help="with -o: stop after N messages")
    plot.add_argument("--window", type=float, default=10.0, metavar="S",
                      help="live: the last S seconds (default 10)")  # fmt: skip


def _ros_tool(args) -> int:
    try:
        from coriolis_ros.node.tools.run import run_tool
    except ImportError as exc:
        print(
            f"coriolis-ros {args.command}: error: needs ROS 2 (rclpy) and the ROS 2 build of "
            f"coriolis_ros (make setup, or colcon build): {exc}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return run_tool(args)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "bag":
        return bag_command.run(args)
    if args.command == "identify":
        return identify_cli.run(args)
    if args.command in ROS_TOOLS:
        return _ros_tool(args)
    from coriolis_ros.dynamics import Dynamics, URDFError
    from coriolis_ros.dynamics.couplings import load_rotors

    try:
        rotors = load_rotors(args.rotors) if args.rotors else None
        dyn = Dynamics.from_urdf(
            args.urdf,
            gravity=args.gravity,
            root_joint=args.root_joint,
            rotors=rotors,
            rotor_model=args.rotor_model,
            independent_joints=args.independent_joints,
            max_dof=args.max_dof,
            max_christoffel_bytes=args.max_christoffel_bytes,
        )
        if args.command == "compute":
            return _compute(dyn, args)
        return _check(dyn, args)
    except (URDFError, ValueError, _UsageError) as exc:
        print(f"coriolis-ros: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


# --------------------------------------------------------------------------- compute


def _state(values, default: np.ndarray, name: str, what: str) -> np.ndarray:
    n = default.shape[0]
    if values is None:
        return default
    if len(values) != n:
        raise _UsageError(f"--{name} needs {n} values ({what}), got {len(values)}")
    arr = np.array(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise _UsageError(f"--{name} has a NaN or infinite value")
    return arr


def _christoffel_budget(dyn, arrays: int, what: str, hint: str) -> None:
    """_UsageError before any work when ``arrays`` n^3 arrays exceed the Gamma budget."""
    coupled = dyn.tree.nv if dyn.map is not None else None
    size = christoffel_bytes(dyn.nv, coupled, arrays)
    refusal = christoffel_refusal(size, dyn.max_christoffel_bytes, what)
    if refusal:
        raise _UsageError(f"{refusal}; {hint}")


def _compute(dyn, args) -> int:
    if not args.no_christoffel:
        _christoffel_budget(dyn, 1, "Gamma", "or leave the symbols out with --no-christoffel")
    q = _state(args.q, dyn.neutral(), "q", "one per name of position_names")
    qd = _state(args.qd, np.zeros(dyn.nv), "qd", "one per joint velocity")
    try:
        M, Mdot, C = dyn.coriolis(q, qd)
    except ValueError as exc:  # e.g. a zero quaternion
        raise _UsageError(str(exc)) from None
    Cqd, CTqd, p = dyn.coriolis_vectors(q, qd)
    # Keys and order of msg/CoriolisState.msg (coriolis_ros.messages.STATE_FIELDS), less the
    # measured effort and the observer's external_effort, which need a robot, not a model.
    # position_names, as in the message: empty when position follows joint_names.
    same = tuple(dyn.position_names) == tuple(dyn.joint_names)
    terms = {
        "joint_names": list(dyn.joint_names),
        "position_names": [] if same else list(dyn.position_names),
        "position": q,
        "velocity": qd,
        "coriolis_matrix": C,
        "coriolis_force": Cqd,
        "coriolis_transpose_force": CTqd,
        "mass_matrix": M,
        "mass_matrix_derivative": Mdot,
        "gravity_force": dyn.gravity(q),
        "momentum": p,
    }
    result = {key: terms[key] for key in STATE_FIELDS if key in terms}
    if not args.no_christoffel:
        result["symbols"] = dyn.christoffel(q)

    if args.format == "npz":
        if not args.output:
            raise _UsageError("--format npz needs --output FILE")
        np.savez(args.output, **{k: np.asarray(v) for k, v in result.items()})
        return EXIT_OK
    if args.format == "json":
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                _write_json(result, f)
        else:
            _write_json(result, sys.stdout)
        return EXIT_OK
    text = _as_text(dyn, result)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    return EXIT_OK


def _write_json(result: dict, f) -> None:
    """One JSON object, written one innermost row at a time: a large model's matrices never
    exist as Python lists (the whole of them would take ~35 bytes a number)."""

    def value(v, indent: str) -> None:
        if not isinstance(v, np.ndarray) or v.ndim <= 1:
            f.write(json.dumps(v.tolist() if isinstance(v, np.ndarray) else v))
            return
        f.write("[")
        for i, row in enumerate(v):
            f.write(("," if i else "") + "\n" + indent + " ")
            value(row, indent + " ")
        f.write("\n" + indent + "]")

    f.write("{")
    for i, (key, v) in enumerate(result.items()):
        f.write(("," if i else "") + "\n " + json.dumps(key) + ": ")
        value(v, " ")
    f.write("\n}\n")


def _as_text(dyn, result: dict) -> str:
    lines = [f"robot {dyn.name}: {dyn.nv} DoF", "joint_names: " + " ".join(dyn.joint_names)]
    names = result.get("position_names")
    lines.append("position_names: " + (" ".join(names) if names else "(those of joint_names)"))
    with np.printoptions(precision=6, suppress=True, linewidth=160):
        for key, title in TEXT_TITLES.items():
            lines += [f"{key}: {title}", str(result[key])]
        if "symbols" in result:
            lines.append(
                "symbols: Gamma[i] (Christoffel symbols of the 1st kind, "
                "C_ij = sum_k Gamma_ijk qd_k):"
            )
            for i, name in enumerate(dyn.joint_names):
                lines += [f"Gamma[{i}] ({name}):", str(result["symbols"][i])]
    return "\n".join(lines)


# --------------------------------------------------------------------------- check


def _check(dyn, args) -> int:
    if args.samples < 1:
        raise _UsageError("--samples must be at least 1")
    _christoffel_budget(
        dyn, CHECK_TENSORS, f"check's {CHECK_TENSORS} n^3 arrays (Gamma, dM/dq, ...)",
        "check compares the symbols with finite differences, n^3 each",
    )
    rows = check_identities(dyn, args.samples, args.seed)
    print(
        f"robot {dyn.name}: {dyn.nv} DoF (root joint {dyn.root_joint}), "
        f"tree depth {dyn.tree_depth}, {args.samples} random states"
    )
    print(f"{'identity':<60} {'worst residual':>15} {'tolerance':>10}  result")
    failed = 0
    for name, value, tolerance in rows:
        ok = value <= tolerance
        failed += not ok
        print(f"{name:<60} {value:>15.3e} {tolerance:>10.0e}  {'ok' if ok else 'FAIL'}")
    print("all identities hold" if not failed else f"{failed} identities FAILED")
    singular = singular_mass_matrix(dyn)
    if singular:
        print(f"warning: {singular}")
    return EXIT_OK if not failed else EXIT_CHECK_FAILED


if __name__ == "__main__":
    sys.exit(main())
