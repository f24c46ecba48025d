"""``python -m coriolis_ros.demo``: the coriolis node, the demo publisher and the monitor together.

Starts three child processes with this interpreter:

1. ``coriolis_ros.node.coriolis_node`` (robot_description + joint_states -> coriolis_state)
2. ``coriolis_ros.demo.monitor``       (one status line per second on stdout)
3. ``coriolis_ros.demo.publisher``     (the robot's URDF, latched, and 500 Hz joint states)

Environment: the children get this process's environment with ROS_AUTOMATIC_DISCOVERY_RANGE set
to LOCALHOST unless it already is LOCALHOST or OFF (a wider range is narrowed, never the other
way), ROS_STATIC_PEERS removed (it could reach other hosts), and ROS_DOMAIN_ID passed through
(set to the ROS default 0 explicitly when unset; an invalid value is an error).

Stopping: Ctrl-C (SIGINT) or SIGTERM, or ``--duration`` elapsing, forwards SIGINT to every child,
waits up to ``--grace`` seconds for them, then kills stragglers (a second Ctrl-C kills at once).
The children run in their own sessions (so a terminal's Ctrl-C reaches them only once, through
here) and get SIGTERM if this process dies.  Exit status: 0 when every child exited cleanly after
the stop, 1 when a child failed or had to be killed, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import time

from coriolis_ros.demo.publisher import DEFAULT_RATE, load_urdf
from coriolis_ros.demo.trajectory import dof_joints_from_urdf
from coriolis_ros.robots import available_robots

PREFIX = "[coriolis demo]"
NODE_MODULE = "coriolis_ros.node.coriolis_node"
PUBLISHER_MODULE = "coriolis_ros.demo.publisher"
MONITOR_MODULE = "coriolis_ros.demo.monitor"
SAFE_DISCOVERY_RANGES = ("LOCALHOST", "OFF")
POLL_S = 0.05


def demo_environment(environ) -> tuple[dict, list[str]]:
    """(environment for the children, notes about what was changed).

    Raises ValueError for a ROS_DOMAIN_ID that is not an integer in 0..232.
    """
    env = dict(environ)
    notes = []
    current = env.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "")
    if current.strip().upper() not in SAFE_DISCOVERY_RANGES:
        if current.strip():
            notes.append(
                f"ROS_AUTOMATIC_DISCOVERY_RANGE={current} narrowed to LOCALHOST (demo stays on "
                "the loopback interface)"
            )
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    if env.pop("ROS_STATIC_PEERS", None):
        notes.append("ROS_STATIC_PEERS ignored (demo stays on the loopback interface)")
    domain = env.get("ROS_DOMAIN_ID", "").strip()
    if not domain:
        env["ROS_DOMAIN_ID"] = "0"
        notes.append("ROS_DOMAIN_ID not set: using the ROS default 0")
    else:
        try:
            value = int(domain)
        except ValueError:
            value = -1
        if not 0 <= value <= 232:
            raise ValueError(f"ROS_DOMAIN_ID must be an integer in 0..232, got {domain!r}")
        env["ROS_DOMAIN_ID"] = str(value)
    return env, notes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m coriolis_ros.demo",
        description="Run the coriolis node on a demo robot with a trajectory publisher and a "
        "monitor printing rates, latency, compute time and ||Mdot - C - C^T|| once a second.",
    )
    parser.add_argument(
        "--robot",
        default="arm7",
        help="bundled robot (%s) or a URDF file path (default %%(default)s)"
        % ", ".join(available_robots()),
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop by itself after this many seconds (default: run until Ctrl-C)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=DEFAULT_RATE,
        help="joint_states rate in Hz (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="trajectory random seed")
    parser.add_argument(
        "--count-inputs",
        action="store_true",
        help="monitor measures the input rate itself (else: node diagnostics)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=10.0,
        help="seconds to wait for children after SIGINT before killing them",
    )
    return parser


def _die_with_parent():  # runs in the child between fork and exec (Linux only)
    try:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort; the parent still stops children normally
        pass


class Demo:
    def __init__(self, commands, env, grace):
        self.commands = commands  # [(label, argv)]
        self.env = env
        self.grace = grace
        self.children: list[tuple[str, subprocess.Popen]] = []
        self.signals = 0

    def on_signal(self, signum, _frame):
        self.signals += 1

    def start(self):
        for label, argv in self.commands:
            proc = subprocess.Popen(
                argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )
            self.children.append((label, proc))
            print(f"{PREFIX} started {label} (pid {proc.pid})", flush=True)

    def wait_for_stop(self, duration) -> str | None:
        """Block until a signal, the duration, or a child exiting; returns a failure or None."""
        start = time.monotonic()
        while True:
            if self.signals:
                print(f"{PREFIX} stop requested", flush=True)
                return None
            if duration is not None and time.monotonic() - start >= duration:
                print(f"{PREFIX} {duration:g} s elapsed, stopping", flush=True)
                return None
            for label, proc in self.children:
                if proc.poll() is not None:
                    return f"{label} exited on its own with status {proc.returncode}"
            time.sleep(POLL_S)

    def stop(self) -> list[str]:
        """SIGINT to every running child, wait, kill stragglers; returns the problems seen."""
        problems = []
        signals_before = self.signals
        for _label, proc in self.children:
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGINT)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + self.grace
        while any(proc.poll() is None for _, proc in self.children):
            if time.monotonic() >= deadline or self.signals > signals_before:
                break
            time.sleep(POLL_S)
        for label, proc in self.children:
            if proc.poll() is None:
                problems.append(f"{label} (pid {proc.pid}) did not stop, killed")
                proc.kill()
                proc.wait()
            elif proc.returncode != 0:
                problems.append(f"{label} exited with status {proc.returncode}")
        return problems


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        parser.error(f"--duration must be a positive number of seconds, got {args.duration}")
    if not (math.isfinite(args.rate) and 0 < args.rate <= 10000):
        parser.error(f"--rate must be in (0, 10000] Hz, got {args.rate}")
    if not (math.isfinite(args.grace) and args.grace >= 0):
        parser.error(f"--grace must be >= 0 seconds, got {args.grace}")
    try:
        dof = len(dof_joints_from_urdf(load_urdf(args.robot)))
        env, notes = demo_environment(os.environ)
    except ValueError as exc:
        print(f"{PREFIX} error: {exc}", file=sys.stderr)
        return 2
    if dof == 0:
        print(f"{PREFIX} error: robot {args.robot!r} has no moving joints", file=sys.stderr)
        return 2
    for note in notes:
        print(f"{PREFIX} {note}", flush=True)

    # -P: do not put the working directory first on sys.path, so that running from a source
    # checkout still starts the installed package (which holds the generated coriolis_ros.msg).
    py = [sys.executable, "-P"]
    monitor = [*py, "-m", MONITOR_MODULE] + (["--count-inputs"] if args.count_inputs else [])
    publisher = [
        *py,
        "-m",
        PUBLISHER_MODULE,
        "--robot",
        args.robot,
        "--rate",
        repr(args.rate),
        "--seed",
        str(args.seed),
    ]
    demo = Demo(
        [
            ("coriolis node", [*py, "-m", NODE_MODULE]),
            ("monitor", monitor),
            ("publisher", publisher),
        ],
        env,
        args.grace,
    )
    print(
        f"{PREFIX} robot {args.robot} ({dof} DoF), joint_states at {args.rate:g} Hz, "
        f"ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']}, "
        f"ROS_AUTOMATIC_DISCOVERY_RANGE={env['ROS_AUTOMATIC_DISCOVERY_RANGE']}",
        flush=True,
    )
    previous = {s: signal.signal(s, demo.on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    failure = None
    try:
        demo.start()
        failure = demo.wait_for_stop(args.duration)
    finally:
        problems = demo.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    if failure:
        problems.insert(0, failure)
    for problem in problems:
        print(f"{PREFIX} error: {problem}", file=sys.stderr, flush=True)
    if problems:
        return 1
    print(f"{PREFIX} all processes stopped cleanly", flush=True)
    return 0
