"""``coriolis-ros identify BAG``: inertial parameters from the joint states of a recorded bag.

Reads the bag as ``coriolis-ros bag`` does (:func:`.bag.read_recording`: the same joint
state semantics, the recorded or a given URDF), keeps the joint states that carry an effort
for every joint, and runs :func:`coriolis_ros.dynamics.identify` on them (accelerations by
central differences of the recorded velocities).  Prints the fit and each body's mass,
and writes every parameter with its spread and identifiability to a JSON file.
"""

from __future__ import annotations

import json
import sys

import numpy as np

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def add_parser(sub) -> None:
    p = sub.add_parser(
        "identify",
        help="inertial parameters from a bag's joint states and efforts (least squares, "
        "physically consistent)",
        description="Identify every body's ten inertial parameters from the positions, "
        "velocities and efforts recorded in a ROS 2 bag: least squares over physically "
        "consistent bodies (positive definite pseudo-inertia), pulled lightly towards the "
        "URDF's values in the directions the motion does not excite. Fixed-base robots; the "
        "efforts must be the torques acting on the links (motor torques less friction).",
    )
    p.add_argument("bag", metavar="BAG", help="rosbag2 directory or storage file")
    p.add_argument("--urdf", help="URDF file (default: the bag's /robot_description)")
    p.add_argument("--joint-states-topic", help="default: the bag's only JointState topic")
    p.add_argument("--robot-description-topic", default="/robot_description")
    p.add_argument(
        "--gravity", type=float, nargs=3, default=(0.0, 0.0, -9.81), metavar=("GX", "GY", "GZ")
    )
    p.add_argument(
        "--prior-weight",
        type=float,
        default=1e-6,
        help="pull towards the URDF's parameters, as a fraction of the data's weight "
        "(default 1e-6)",
    )
    p.add_argument(
        "--window",
        type=int,
        default=1,
        help="centred moving average over this many samples of velocities and efforts "
        "(default 1: none)",
    )
    p.add_argument("-o", "--output", help="write the parameters to this JSON file")


def run(args) -> int:
    from coriolis_ros.dynamics import identify
    from coriolis_ros.dynamics.parameters import NAMES
    from coriolis_ros.offline.bag import BagError, read_recording

    try:
        dyn, rec = read_recording(
            args.bag,
            args.urdf,
            joint_states_topic=args.joint_states_topic,
            robot_description_topic=args.robot_description_topic,
            gravity=args.gravity,
        )
    except (BagError, ValueError) as exc:
        print(f"coriolis-ros identify: error: {exc}", file=sys.stderr)
        return EXIT_FAIL
    if rec.effort is None:
        print(f"coriolis-ros identify: error: {args.bag}: no joint state carries an effort: "
              "nothing to identify from", file=sys.stderr)  # fmt: skip
        return EXIT_FAIL
    keep = np.all(np.isfinite(rec.effort), axis=1)
    if not np.any(keep):
        print(f"coriolis-ros identify: error: {args.bag}: no joint state carries an effort for "
              f"every joint ({', '.join(rec.joint_names)})", file=sys.stderr)  # fmt: skip
        return EXIT_FAIL
    t = (rec.stamp[keep] - rec.stamp[keep][0]) * 1e-9
    try:
        result = identify(
            dyn,
            t,
            rec.position[keep],
            rec.velocity[keep],
            rec.effort[keep],
            prior_weight=args.prior_weight,
            window=args.window,
        )
    except ValueError as exc:
        print(f"coriolis-ros identify: error: {args.bag}: {exc}", file=sys.stderr)
        return EXIT_FAIL
    used = int(np.count_nonzero(keep))
    dropped = int(keep.size) - used
    left_out = f" ({dropped} without an effort for every joint left out)" if dropped else ""
    print(f"{args.bag}: {used} joint states with efforts{left_out}")
    print(result.summary())
    if args.output:
        bodies = []
        for b, link in enumerate(result.links):
            sl = slice(10 * b, 10 * b + 10)
            bodies.append({
                "link": link,
                "parameters": dict(zip(NAMES, result.parameters[sl].tolist(), strict=True)),
                "spread": dict(zip(NAMES, result.spread[sl].tolist(), strict=True)),
                "identifiability": dict(
                    zip(NAMES, result.identifiability[sl].tolist(), strict=True)
                ),
            })  # fmt: skip
        doc = {
            "joint_names": list(result.joint_names),
            "samples": result.samples,
            "rank": result.rank,
            "relative_residual": result.relative_residual,
            "residual_rms": result.residual_rms.tolist(),
            "parameters": result.parameters.tolist(),
            "bodies": bodies,
        }
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {args.output}")
    return EXIT_OK
