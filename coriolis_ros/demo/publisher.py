"""Demo publisher: a robot's URDF (latched) and smooth joint states at a high rate.

Node ``coriolis_demo_publisher``:

* ``robot_description`` (std_msgs/String; reliable, transient local, depth 1): the URDF, and
  again whenever a new subscriber matches (coriolis_ros.demo.latched).
* ``joint_states`` (sensor_msgs/JointState; reliable): positions and velocities of a
  sum-of-sinusoids trajectory (coriolis_ros.demo.trajectory) inside the joint limits, stamped with
  the current time, at ``--rate`` Hz (default 500).

rclpy timers do not hold rates this high, so the loop sleeps against a monotonic clock towards
absolute deadlines (no drift); when it falls far behind it skips ahead instead of bursting.
SIGINT/SIGTERM end it cleanly with exit status 0.

Run: ``python -m coriolis_ros.demo.publisher [--robot arm7|quadruped12|FILE.urdf] [--rate HZ]``
"""

from __future__ import annotations

import argparse
import math
import pathlib
import signal
import sys
import time
import traceback

from coriolis_ros.demo.latched import LatchedResend
from coriolis_ros.demo.teardown import exit_without_ros_teardown
from coriolis_ros.demo.trajectory import SinusoidTrajectory, dof_joints_from_urdf
from coriolis_ros.robots import available_robots, robot_urdf

NODE_NAME = "coriolis_demo_publisher"
DEFAULT_RATE = 500.0
JOINT_STATES_DEPTH = 1000  # reliable history: lossless at 1 kHz on loopback (see the notes)
MAX_LAG_S = 0.1  # further behind than this: skip the missed ticks
RESEND_POLL_S = 0.5  # how often the loop looks for new robot_description subscribers


def load_urdf(robot: str) -> str:
    """URDF text for a bundled robot name or a path to a URDF file (ValueError if neither)."""
    if robot in available_robots():
        return robot_urdf(robot)
    path = pathlib.Path(robot)
    if path.suffix == ".urdf" or path.exists():
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read URDF file {robot!r}: {exc}") from None
    raise ValueError(
        f"unknown robot {robot!r}: give one of {', '.join(available_robots())} or a .urdf file"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m coriolis_ros.demo.publisher",
        description="Publish a robot's URDF (latched) and sinusoidal joint states.",
    )
    robots = ", ".join(available_robots())
    parser.add_argument(
        "--robot", default="arm7", help=f"bundled robot ({robots}) or a URDF file path"
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=DEFAULT_RATE,
        help="joint_states rate in Hz (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="trajectory random seed")
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many seconds (default: until SIGINT/SIGTERM)",
    )
    return parser


def _check_args(parser, args):
    if not (math.isfinite(args.rate) and 0 < args.rate <= 10000):
        parser.error(f"--rate must be in (0, 10000] Hz, got {args.rate}")
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        parser.error(f"--duration must be a positive number of seconds, got {args.duration}")


def main(argv=None) -> int:
    import rclpy
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from rclpy.utilities import remove_ros_args

    argv = list(sys.argv if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(remove_ros_args(argv)[1:])
    _check_args(parser, args)
    try:
        urdf = load_urdf(args.robot)
        trajectory = SinusoidTrajectory(dof_joints_from_urdf(urdf), seed=args.seed)
    except ValueError as exc:
        print(f"{NODE_NAME}: error: {exc}", file=sys.stderr)
        return 2

    stop = []

    def request_stop(signum, _frame):
        stop.append(signum)

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    try:
        # no /rosout publisher: a log call then publishes nothing, so no DDS call can block
        # between the end of the loop and the exit (see demo/teardown.py)
        node = rclpy.create_node(NODE_NAME, enable_rosout=False)
        latched = QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        description_pub = node.create_publisher(String, "robot_description", latched)
        states_pub = node.create_publisher(
            JointState,
            "joint_states",
            QoSProfile(
                history=HistoryPolicy.KEEP_LAST,
                depth=JOINT_STATES_DEPTH,
                reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.VOLATILE,
            ),
        )
        description = String(data=urdf)
        description_pub.publish(description)
        resend = LatchedResend(
            lambda: description_pub.publish(description), description_pub.get_subscription_count
        )
        node.get_logger().info(
            f"publishing {len(urdf)} bytes of URDF on robot_description and {trajectory.nv} "
            f"joints on joint_states at {args.rate:g} Hz"
        )
        _run_loop(
            node, states_pub, trajectory, args.rate, args.duration, stop, JointState, resend.poll
        )
        print(f"[{NODE_NAME}] stopping", flush=True)
    except BaseException:
        traceback.print_exc()
        exit_without_ros_teardown(1)
    exit_without_ros_teardown(0)
    return 0


def _run_loop(
    node,
    publisher,
    trajectory,
    rate,
    duration,
    stop,
    msg_type,
    poll=None,
    monotonic=time.monotonic,
    sleep=time.sleep,
):
    """Publish trajectory samples at ``rate`` Hz until ``stop`` is non-empty or ``duration``.

    Sample k is taken at trajectory time t = (monotonic() at its start) - t0, stamped with the
    node clock; then the loop sleeps until t0 + (k + 1) / rate. ``poll()``, if given, is called
    first and then every RESEND_POLL_S seconds of trajectory time.
    """
    clock = node.get_clock()
    msg = msg_type()
    msg.name = list(trajectory.names)
    period = 1.0 / rate
    t0 = monotonic()
    tick = 0
    next_poll = 0.0
    while not stop:
        now = monotonic()
        t = now - t0
        if duration is not None and t >= duration:
            break
        if poll is not None and t >= next_poll:
            poll()
            next_poll = t + RESEND_POLL_S
        q, qd = trajectory.sample(t)
        msg.header.stamp = clock.now().to_msg()
        msg.position = q.tolist()
        msg.velocity = qd.tolist()
        publisher.publish(msg)
        tick += 1
        deadline = t0 + tick * period
        delay = deadline - monotonic()
        if delay > 0:
            sleep(delay)
        elif -delay > MAX_LAG_S:
            tick = math.ceil((monotonic() - t0) / period)


if __name__ == "__main__":
    sys.exit(main())
