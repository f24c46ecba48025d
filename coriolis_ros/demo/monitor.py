"""Demo monitor: one status line per second about the coriolis node's output.

Node ``coriolis_demo_monitor`` subscribes to ``coriolis_state`` (coriolis_ros/CoriolisState, best
effort: matches reliable and best-effort publishers) and ``/diagnostics``, optionally also to
``joint_states`` (``--count-inputs``: input rate measured here instead of taken from the node's
diagnostics), and prints (statistics in coriolis_ros.demo.stats):

    t=3.0s n=7 in=500.0Hz out=499.8Hz received=1496 node_published=1000 node_skipped=2
    latency_p50=0.62ms latency_p99=1.90ms compute=0.150ms |C|_F=1.234e+00
    |Mdot-C-C^T|=4.4e-16                                                 (all on one line)

``in``: joint_states rate; ``out``: coriolis_state messages received per second;
``received``: coriolis_state messages received here since the start; ``node_published`` /
``node_skipped``: the node's totals of published states and of joint states it skipped
(superseded by a newer one while busy), from its diagnostics -- so a gap between what the node
published and what arrived here is told apart from the node's own skips; latency:
receive time minus header.stamp (the stamp of the JointState used, so end to end);
``compute``: the node's mean computation time (diagnostics); ``|C|_F``: Frobenius norm of C in the
latest message; ``|Mdot-C-C^T|``: largest Frobenius norm of Mdot - C - C^T over the window's
messages (rounding level when C is Christoffel-consistent).  SIGINT/SIGTERM: exit 0.

Run: ``python -m coriolis_ros.demo.monitor [--period S] [--count-inputs] [--duration S]``
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time
import traceback

from coriolis_ros.demo.stats import MonitorStats, format_report, summarize_diagnostics
from coriolis_ros.demo.teardown import exit_without_ros_teardown

NODE_NAME = "coriolis_demo_monitor"
PREFIX = "[coriolis monitor]"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m coriolis_ros.demo.monitor",
        description="Print rates, latency, compute time and C residuals of the coriolis node.",
    )
    parser.add_argument("--period", type=float, default=1.0, help="seconds between lines")
    parser.add_argument(
        "--count-inputs",
        action="store_true",
        help="subscribe to joint_states and measure the input rate here",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many seconds (default: until SIGINT/SIGTERM)",
    )
    return parser


def main(argv=None) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from rclpy.utilities import remove_ros_args

    argv = list(sys.argv if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(remove_ros_args(argv)[1:])
    if not (math.isfinite(args.period) and 0.05 <= args.period <= 3600):
        parser.error(f"--period must be in [0.05, 3600] s, got {args.period}")
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        parser.error(f"--duration must be a positive number of seconds, got {args.duration}")

    stop = []

    def request_stop(signum, _frame):
        stop.append(signum)

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    from coriolis_ros.msg import CoriolisState

    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    try:
        node = rclpy.create_node(NODE_NAME, enable_rosout=False)  # see demo/teardown.py
        stats = MonitorStats(time.time_ns())
        best_effort = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.BEST_EFFORT
        )

        def on_state(msg):
            receive_ns = time.time_ns()
            stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            stats.add_state(
                receive_ns,
                stamp_ns,
                len(msg.joint_names),
                msg.coriolis_matrix,
                msg.mass_matrix_derivative,
            )

        def on_diagnostics(msg):
            for status in msg.status:
                summary = summarize_diagnostics((kv.key, kv.value) for kv in status.values)
                if summary is not None:
                    stats.set_diagnostics(summary)

        node.create_subscription(CoriolisState, "coriolis_state", on_state, best_effort)
        node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, best_effort)
        if args.count_inputs:
            node.create_subscription(
                JointState, "joint_states", lambda _msg: stats.add_input(), best_effort
            )

        source = "counted here" if args.count_inputs else "node diagnostics"
        print(
            f"{PREFIX} every {args.period:g} s: in = joint_states rate ({source}), out = "
            "coriolis_state rate, received = coriolis_state messages received here in total, "
            "node_published / node_skipped = the node's totals of states published / joint "
            "states skipped (its diagnostics, 1 s behind), latency = receive time - "
            "header.stamp, compute = node's mean compute time, |C|_F = Frobenius norm of C, "
            "|Mdot-C-C^T| = largest over the period",
            flush=True,
        )
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        start = time.monotonic()
        next_report = start + args.period
        while not stop:
            now = time.monotonic()
            if args.duration is not None and now - start >= args.duration:
                break
            if now >= next_report:
                line = format_report(stats.report(time.time_ns(), count_inputs=args.count_inputs))
                print(f"{PREFIX} {line}", flush=True)
                next_report += args.period * max(1, math.ceil((now - next_report) / args.period))
                continue
            executor.spin_once(timeout_sec=min(0.1, next_report - now))
    except BaseException:
        traceback.print_exc()
        exit_without_ros_teardown(1)
    exit_without_ros_teardown(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
