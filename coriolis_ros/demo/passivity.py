"""``python -m coriolis_ros.demo.passivity`` (``make demo-passivity``): the closed loop.

Four processes with this interpreter, on the loopback interface only:

1. this runner (node ``passivity_demo``): publishes the robot's URDF on ``robot_description``
   (reliable, transient local) and records ``coriolis_state`` (stamp, effort,
   external_effort);
2. the coriolis node (``coriolis_ros.node``), with its momentum observer on when it has one;
3. the controller (``coriolis_ros.demo.passivity_controller``): Slotine–Li (``--controller``),
   ``joint_states`` in, ``joint_commands`` (sensor_msgs/JointState, ``effort``) out;
4. the plant (``coriolis_ros.demo.passivity_plant``): the robot in MuJoCo, compiled from the same
   URDF, RK4 at 1 kHz with a known push (a force on a link, or a joint torque),
   ``joint_commands`` in, ``joint_states`` (position, velocity, applied effort) out.

Order: the runner warms up the library (Numba's on-disk cache), starts the node and waits until
its ``compute_dynamics`` service answers (model ready), then starts the controller and the
plant; the plant waits for its peers, runs ``--duration`` simulated seconds and exits; then the
runner stops the others (SIGINT), reads the logs, and writes the PNG (``--output``) and the
summary (``--summary``, JSON; also printed).  With ``--controller adaptive`` the PNG compares
this run with Slotine–Li on fixed parameters, the true ones and the scenario's wrong ones
(``--parameter-error``), run in-process (:mod:`coriolis_ros.demo.passivity_compare`), and the
summary adds those numbers under ``comparison``.  Exit status 0 on success, 1 when a process
failed, 2 for bad arguments.  Environment as for ``python -m coriolis_ros.demo``
(:func:`coriolis_ros.demo.run.demo_environment`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from coriolis_ros.demo import passivity_common as common
from coriolis_ros.demo.latched import LatchedResend
from coriolis_ros.demo.run import _die_with_parent, demo_environment

PREFIX = "[passivity demo]"
NODE_NAME = "passivity_demo"
RECORD_DEPTH = 5000


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m coriolis_ros.demo.passivity",
        description="Closed-loop passivity demo: the robot in MuJoCo, a Slotine-Li controller, "
        "a known push, and the coriolis node's momentum observer estimating it.",
    )
    common.add_scenario_arguments(parser)
    parser.add_argument(
        "--duration", type=float, default=6.0, help="simulated seconds (default %(default)s)"
    )
    parser.add_argument(
        "--observer-gain",
        type=float,
        default=50.0,
        help="K_O of the node's observer, 1/s (default %(default)s)",
    )
    parser.add_argument("--output", default="passivity_demo.png", help="PNG written at the end")
    parser.add_argument("--summary", default=None, help="also write the summary here (JSON)")
    parser.add_argument(
        "--log-dir", default=None, help="keep the processes' npz logs here (default: temporary)"
    )
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=90.0,
        help="seconds for the node to become ready (default %(default)s)",
    )
    parser.add_argument(
        "--node-arg",
        action="append",
        default=[],
        help="extra '-p name:=value' parameter for the coriolis node (repeatable)",
    )
    return parser


class _Recorder:
    """coriolis_state rows: stamp, effort and external_effort (NaN rows where empty)."""

    def __init__(self, n: int):
        self.n = n
        self.lock = threading.Lock()
        self.stamps: list[int] = []
        self.effort: list = []
        self.external: list = []

    def on_state(self, msg) -> None:
        n = self.n
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        effort = msg.effort if len(msg.effort) == n else None
        external = msg.external_effort if len(msg.external_effort) == n else None
        with self.lock:
            self.stamps.append(stamp)
            self.effort.append(effort)
            self.external.append(external)

    def arrays(self) -> dict:
        with self.lock:
            k = len(self.stamps)
            out = {
                "stamp_ns": np.array(self.stamps, dtype=np.int64),
                "effort": np.full((k, self.n), np.nan),
                "external_effort": np.full((k, self.n), np.nan),
            }
            for i in range(k):
                if self.effort[i] is not None:
                    out["effort"][i] = self.effort[i]
                if self.external[i] is not None:
                    out["external_effort"][i] = self.external[i]
        return out


def _stop(children, grace=10.0) -> list[str]:
    problems = []
    for _label, proc in children:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + grace
    for label, proc in children:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            problems.append(f"{label} did not stop, killed")
            continue
        if proc.returncode != 0:
            problems.append(f"{label} exited with status {proc.returncode}")
    return problems


def _wait_for_model(node, dyn, timeout, poll) -> str | None:
    """Call compute_dynamics until it succeeds; None, or the reason it did not.

    ``poll()`` is called before each attempt (it publishes robot_description again to a new
    subscriber, see coriolis_ros.demo.latched).
    """
    from coriolis_ros.srv import ComputeDynamics

    client = node.create_client(ComputeDynamics, "compute_dynamics")
    request = ComputeDynamics.Request()
    request.joint_names = list(dyn.joint_names)
    request.position = [0.0] * dyn.nv
    request.velocity = [0.0] * dyn.nv
    deadline = time.monotonic() + timeout
    reason = "compute_dynamics never became available"
    while time.monotonic() < deadline:
        poll()
        if not client.wait_for_service(timeout_sec=0.5):
            continue
        future = client.call_async(request)
        end = time.monotonic() + 5.0
        while not future.done() and time.monotonic() < end:
            time.sleep(0.01)
        if future.done() and future.result() is not None:
            if future.result().success:
                node.destroy_client(client)
                return None
            reason = future.result().message
        time.sleep(0.2)
    node.destroy_client(client)
    return f"the coriolis node was not ready after {timeout:g} s: {reason}"


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not (math.isfinite(args.duration) and args.duration > 0):
        parser.error(f"--duration must be > 0 s, got {args.duration}")
    if not (math.isfinite(args.observer_gain) and args.observer_gain > 0):
        parser.error(f"--observer-gain must be > 0, got {args.observer_gain}")
    try:
        scenario = common.Scenario.from_args(args)
        dyn = scenario.dynamics()
        from coriolis_ros.demo.passivity_controller import CONTROLLERS
        from coriolis_ros.demo.passivity_plant import MujocoPlant

        if scenario.controller not in CONTROLLERS:
            raise ValueError(f"unknown controller {scenario.controller!r} "
                             f"(known: {', '.join(sorted(CONTROLLERS))})")  # fmt: skip
        MujocoPlant(scenario.urdf(), dyn.joint_names, dyn.neutral(), np.zeros(dyn.nv),
                    push=scenario.push(dyn))  # fmt: skip  # the robot compiles, the link exists
        env, notes = demo_environment(os.environ)
    except ValueError as exc:
        print(f"{PREFIX} error: {exc}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"{PREFIX} {note}", flush=True)
    os.environ.update(env)  # this process joins the same domain, loopback only
    for name in set(os.environ) - set(env):
        del os.environ[name]

    # Load (or compile, once per machine) every kernel the processes use.
    from coriolis_ros.dynamics import MomentumObserver

    started = time.monotonic()
    dyn.warmup()
    MomentumObserver(dyn, args.observer_gain).update(0.0, dyn.neutral(), np.zeros(dyn.nv),
                                                      np.zeros(dyn.nv))  # fmt: skip
    print(f"{PREFIX} kernels ready in {time.monotonic() - started:.1f} s", flush=True)

    tmp = None
    if args.log_dir:
        log_dir = Path(args.log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="passivity_demo_")
        log_dir = Path(tmp.name)
    plant_log, ctrl_log = log_dir / "plant.npz", log_dir / "controller.npz"
    for path in (plant_log, ctrl_log):
        path.unlink(missing_ok=True)

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from coriolis_ros.msg import CoriolisState

    py = [sys.executable, "-P"]
    node_params = [
        f"output_queue_depth:={RECORD_DEPTH}",
        f"input_queue_depth:={RECORD_DEPTH}",  # best effort: room for a stall under load
        "observer_enabled:=true",
        f"observer_gain:={float(args.observer_gain)!r}",
        *args.node_arg,
    ]
    node_cmd = [*py, "-m", "coriolis_ros.node", "--ros-args"]
    for param in node_params:
        node_cmd += ["-p", param]
    scenario_args = common.scenario_argv(args)
    controller_cmd = [*py, "-m", "coriolis_ros.demo.passivity_controller", *scenario_args,
                      "--log", str(ctrl_log)]  # fmt: skip
    plant_cmd = [*py, "-m", "coriolis_ros.demo.passivity_plant", *scenario_args,
                 "--duration", repr(args.duration), "--log", str(plant_log)]  # fmt: skip

    children: list[tuple[str, subprocess.Popen]] = []

    def spawn(label, cmd):
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent)  # fmt: skip
        children.append((label, proc))
        print(f"{PREFIX} started {label} (pid {proc.pid})", flush=True)
        return proc

    signals = []
    previous = {
        s: signal.signal(s, lambda signum, _f: signals.append(signum))
        for s in (signal.SIGINT, signal.SIGTERM)
    }
    context = rclpy.Context()
    rclpy.init(context=context, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    recorder = _Recorder(dyn.nv)
    problems: list[str] = []
    executor = None
    spinner = None
    try:
        node = rclpy.create_node(NODE_NAME, context=context)
        latched = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)  # fmt: skip
        description_pub = node.create_publisher(String, "robot_description", latched)
        description = String(data=scenario.urdf())
        description_pub.publish(description)
        resend = LatchedResend(
            lambda: description_pub.publish(description), description_pub.get_subscription_count
        )
        record_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=RECORD_DEPTH,
                                reliability=ReliabilityPolicy.RELIABLE,
                                durability=DurabilityPolicy.VOLATILE)  # fmt: skip
        node.create_subscription(CoriolisState, "coriolis_state", recorder.on_state, record_qos)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, name="recorder", daemon=True)
        spinner.start()

        spawn("coriolis node", node_cmd)
        failure = _wait_for_model(node, dyn, args.startup_timeout, resend.poll)
        if failure:
            problems.append(failure)
        else:
            spawn("controller", controller_cmd)
            plant = spawn("plant", plant_cmd)
            limit = time.monotonic() + args.startup_timeout + 5.0 * args.duration + 30.0
            while plant.poll() is None and not signals:
                if time.monotonic() > limit:
                    problems.append("the plant did not finish in time")
                    break
                for label, proc in children:
                    if proc is not plant and proc.poll() is not None:
                        problems.append(f"{label} exited early with status {proc.returncode}")
                if problems:
                    break
                time.sleep(0.05)
            if signals:
                problems.append("interrupted")
            time.sleep(0.3)  # the last coriolis_state messages
    finally:
        problems += _stop(list(reversed(children)))
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        rclpy.try_shutdown(context=context)
        if spinner is not None:
            spinner.join(timeout=2.0)
        for s, handler in previous.items():
            signal.signal(s, handler)

    if not plant_log.exists() or not ctrl_log.exists():
        problems.append("no logs from the plant or the controller")
    if problems:
        for problem in problems:
            print(f"{PREFIX} error: {problem}", file=sys.stderr, flush=True)
        if tmp is not None:
            tmp.cleanup()
        return 1

    from coriolis_ros.demo import passivity_analysis as analysis

    node_log = recorder.arrays()
    if args.log_dir:
        np.savez(log_dir / "node.npz", **node_log)
    result = analysis.analyze(
        dyn,
        scenario,
        dict(np.load(plant_log)),
        dict(np.load(ctrl_log)),
        node_log,
        args.observer_gain,
    )
    summary = result["summary"]
    if scenario.controller == "adaptive":
        # the picture: this run against Slotine-Li with fixed parameters, right and wrong
        from coriolis_ros.demo import passivity_compare

        comparison = passivity_compare.compare(
            scenario, args.duration, (dict(np.load(plant_log)), dict(np.load(ctrl_log)))
        )
        passivity_compare.plot(comparison, args.output)
        summary["comparison"] = comparison["summary"]
    else:
        analysis.plot(result, scenario, args.output)
    summary["png"] = str(args.output)
    text = json.dumps(summary, indent=2)
    print(text, flush=True)
    if args.summary:
        Path(args.summary).write_text(text + "\n", encoding="utf-8")
    if "node_observer" not in summary:
        print(f"{PREFIX} note: the node published no external_effort (observer off or absent)",
              flush=True)  # fmt: skip
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
