"""End-to-end benchmark of the ROS 2 node `coriolis` (JointState in, CoriolisState out).

    python bench/bench_node.py [--duration 10] [--robots talos_full,panda] [--rate 1000]
                               [--quick] [--markdown] [--warm-starts 3] [--no-cold]
                               [--domain-id N] [-p name:=value ...] [--output FILE | --no-save]
                               [--effort]   (JointState with effort, for -p observer_enabled:=true)

Three processes per run, all started by this script (which itself does not touch ROS):

* the node, ``python -P -m coriolis_ros.node.coriolis_node`` from the *installed* package
  (run ``make install`` first to measure the working tree), default parameters unless ``-p``;
* a publisher (this file, ``--role publisher``): the URDF on ``robot_description``
  (reliable, transient local) and ``sensor_msgs/JointState`` with position and velocity of
  every DoF joint at ``--rate`` Hz from a paced sleep loop on the monotonic clock (not an rclpy
  timer), header.stamp = wall-clock time taken just before ``publish``;
* a subscriber (``--role subscriber``) that stamps each ``coriolis_state`` with its wall-clock
  receive time (latency = receive time - header.stamp; both processes read CLOCK_REALTIME on the
  same host) and keeps the node's ``/diagnostics`` counters.
  Its executor is rclpy's EventsExecutor (``--subscriber-executor single`` for the
  SingleThreadedExecutor, which costs about three times the CPU per message).

``--realtime`` gives the node the last CPU and SCHED_FIFO 50 through its own parameters
(``realtime_priority``, ``cpu_affinity``) and runs the publisher and the subscriber on the other
CPUs at SCHED_FIFO 40, as on a control computer where driver, dynamics and controller are
real-time processes.

Per robot: a *cold* start (NUMBA_CACHE_DIR = a fresh empty temp dir) and a *warm* start (the
same dir, now filled), each timed from the node's ``Popen`` to the first CoriolisState received
while the description and joint states are already being published; the ``ready: ... warm-up
<s> s`` line of the node log gives the warm-up and its timestamp.  After the warm start: 2 s
of streaming to settle, a pause (counters at rest), then exactly ``rate * duration`` messages,
then a pause again.  The node's cumulative diagnostics counters at rest before and after give
the accounting: received == published + skipped + rejected + ignored + withheld + failed;
publisher sent vs node received is the loss of the best-effort input, node published vs
subscriber received the loss of the reliable output.  Node CPU from /proc/<pid>/stat
(utime + stime) over the measured window, RSS (VmRSS) sampled every 0.25 s.
``--warm-starts`` adds further warm starts (to first output only) for a spread.

Every ROS process runs with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and one ROS_DOMAIN_ID
chosen at random in 90..101 and reserved through the test harness's lock files
($TMPDIR/coriolis_ros_domains/<id>.lock, see test/conftest.py), so concurrent pytest runs do
not pick it.  Every wait is bounded; children get SIGINT, then SIGKILL, on every exit path
(and die with this process: PR_SET_PDEATHSIG).  A benchmark, not a test: no assertions;
targets (p99 latency <= 2 ms, warm start <= 5 s) are reported as met or not.
Writes bench/results/bench_node.txt (.md with --markdown; bench/results/quick/ with --quick).
"""

from __future__ import annotations

import argparse
import array
import ctypes
import fcntl
import json
import math
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
NODE_MODULE = "coriolis_ros.node.coriolis_node"
DIAG_NAME = "/coriolis: dynamics"
COUNTERS = ("received", "published", "skipped", "rejected", "ignored", "withheld", "failed")
# The momentum observer's counts (observer_enabled with --effort); "nan" when it is off.
OBSERVER_COUNTERS = ("observer_integrated_total", "observer_paused_total",
                     "observer_resets_total")
# key: (label, path under example-robot-data/robots) -- the same keys as bench_dynamics.py
ROBOTS = {
    "talos_full": ("Talos full v2 (fixed base)", "talos_data/robots/talos_full_v2.urdf"),
    # root_joint floating: nav_msgs/Odometry of the root link with every JointState, same stamp
    "talos_full_floating": ("Talos full v2 (floating base, odometry)",
                            "talos_data/robots/talos_full_v2.urdf"),
    "panda": ("Panda", "panda_description/urdf/panda.urdf"),
    "talos_reduced": ("Talos reduced (fixed base)", "talos_data/robots/talos_reduced.urdf"),
    "ur5": ("UR5", "ur_description/urdf/ur5_robot.urdf"),
    # bundled models (coriolis_ros/robots: an absolute path, taken as it is)
    "arm7": ("bundled 7-DoF arm", str(Path(__file__).resolve().parents[1] / "coriolis_ros"
                                      / "robots" / "arm7.urdf")),
    "arm7_rotors": ("bundled 7-DoF arm with 7 geared rotors (14 bodies)",
                    str(Path(__file__).resolve().parents[1] / "coriolis_ros" / "robots"
                        / "arm7_rotors.urdf")),
    # closed chains: the publisher sends the independent joints only
    "four_bar": ("bundled four-bar (1 DoF, 3 tree joints, one loop)",
                 str(Path(__file__).resolve().parents[1] / "coriolis_ros" / "robots"
                     / "four_bar.urdf")),
    "leg_knee_linkage": ("bundled leg with a parallel knee linkage (2 DoF, 4 tree joints)",
                         str(Path(__file__).resolve().parents[1] / "coriolis_ros" / "robots"
                             / "leg_knee_linkage.urdf")),
}
LATENCY_TARGET_MS = 2.0
# --realtime: the node's SCHED_FIFO priority (its realtime_priority) and the publisher's and
# subscriber's (a controller and a driver would run real-time too, below the dynamics).
NODE_PRIORITY, HELPER_PRIORITY = 50, 40
START_TARGET_S = 5.0
DOMAIN_RANGE = (90, 101)
COLD_START_TIMEOUT = 300.0
WARM_START_TIMEOUT = 90.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
WAITING_RE = re.compile(r"\[(\d+\.\d+)\] \[coriolis\]: waiting for a URDF")
READY_RE = re.compile(
    r"\[(\d+\.\d+)\] \[coriolis\]: ready: (\S+), (\d+) DoF, warm-up ([0-9.]+) s")


def log(text: str) -> None:
    """Progress goes to stderr; stdout carries only the report."""
    print(f"[bench_node {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# =============================================================================== children
# Both child roles speak a line protocol: commands on stdin, replies on stdout.  EOF on stdin
# (the orchestrator died) ends them.


def _stdin_commands() -> queue.Queue:
    commands: queue.Queue = queue.Queue()

    def reader():
        for line in sys.stdin:
            commands.put(line.strip())
        commands.put("quit")

    threading.Thread(target=reader, daemon=True).start()
    return commands


def _reply(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _dof_joints(urdf: str) -> list[str]:
    """Names of the revolute, continuous and prismatic joints that are coordinates (the
    model's DoFs): a joint that follows another (a geared rotor's, named by a <coupling>
    element as its successor's joint) is left out, as a robot driver publishes its motors'
    joints only.  On a closed chain, the model's independent joints (what an encoder on each
    actuated joint reports)."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(urdf)
    if root.find("loop") is not None:
        from coriolis_ros.dynamics import Dynamics

        return list(Dynamics.from_urdf(urdf).joint_names)
    child_joint = {j.find("child").get("link"): j.get("name") for j in root.iter("joint")
                   if j.find("child") is not None}
    followers = {child_joint.get(c.find("successor").get("link"))
                 for c in root.iter("coupling") if c.find("successor") is not None}
    return [j.get("name") for j in root.iter("joint")
            if j.get("type") in ("revolute", "continuous", "prismatic")
            and j.get("name") not in followers]


def _root_link(urdf: str) -> str:
    """The URDF's root link: the one that is no joint's child."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(urdf)
    children = {c.get("link") for j in root.iter("joint") for c in j.iter("child")}
    return next(link.get("name") for link in root.iter("link") if link.get("name") not in children)


def run_publisher(args) -> int:
    """robot_description (latched) + JointState at args.rate; commands stream/pause/burst K.

    With --odometry, a nav_msgs/Odometry of the root link (a slow circle, turning) goes out
    just before every JointState, with the same stamp.
    """
    import numpy as np
    import rclpy
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    urdf = Path(args.urdf).read_text()
    names = _dof_joints(urdf)
    n = len(names)
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("bench_joint_state_publisher")
    desc_pub = node.create_publisher(String, "robot_description", QoSProfile(
        depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL))
    # Reliable publisher, as a robot driver would use; the node subscribes best effort.
    js_pub = node.create_publisher(JointState, "joint_states", QoSProfile(
        depth=100, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE))
    odom_pub, odom = None, None
    if args.odometry:
        from nav_msgs.msg import Odometry

        odom_pub = node.create_publisher(Odometry, "odom", QoSProfile(
            depth=100, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.VOLATILE))
        odom = Odometry()
        odom.header.frame_id, odom.child_frame_id = "odom", _root_link(urdf)
        odom.pose.pose.position.z = 1.0
    desc_pub.publish(String(data=urdf))
    msg = JointState()
    msg.name = names
    phase = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    omega = 2.0 * np.pi * 0.5
    t_origin = time.monotonic()
    period = 1.0 / args.rate
    # SIGINT keeps its default (KeyboardInterrupt): a handler that put "quit" on the queue
    # could deadlock on the queue's lock if the signal lands while the main thread holds it.
    commands = _stdin_commands()
    _reply(f"ready {n}")

    def publish_one() -> int:
        t = time.monotonic() - t_origin
        angle = omega * t + phase
        pos, vel = array.array("d"), array.array("d")
        pos.frombytes((0.5 * np.sin(angle)).tobytes())
        vel.frombytes((0.5 * omega * np.cos(angle)).tobytes())
        msg.position, msg.velocity = pos, vel
        if args.effort:  # --effort: a torque for every joint (the node's observer input)
            eff = array.array("d")
            eff.frombytes((2.0 * np.cos(angle)).tobytes())
            msg.effort = eff
        stamp = time.time_ns()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
        if odom_pub is not None:
            yaw = 0.2 * t
            pose, twist = odom.pose.pose, odom.twist.twist
            pose.position.x, pose.position.y = math.cos(yaw), math.sin(yaw)
            pose.orientation.z, pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
            twist.linear.y, twist.angular.z = 0.2, 0.2  # the circle, in the base frame
            odom.header.stamp = msg.header.stamp
            odom_pub.publish(odom)
        js_pub.publish(msg)
        return stamp

    def loop(total: int | None, stamps_path: str | None = None) -> dict:
        """Paced loop: message k is due at start + k / rate (absolute, no drift)."""
        sent, late, first, last = 0, [], None, None
        stamps = array.array("q")
        start = time.monotonic()
        while total is None or sent < total:
            if total is None and not commands.empty():
                break
            due = start + sent * period
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            stamp = publish_one()
            late.append(time.monotonic() - due)
            stamps.append(stamp)
            first = stamp if first is None else first
            last = stamp
            sent += 1
        wall = time.monotonic() - start
        late_ms = np.asarray(late) * 1e3 if late else np.zeros(1)
        if stamps_path:
            Path(stamps_path).write_text(json.dumps(stamps.tolist()))
        return {"sent": sent, "wall_s": wall, "first_stamp": first, "last_stamp": last,
                "late_p50_ms": float(np.percentile(late_ms, 50)),
                "late_p99_ms": float(np.percentile(late_ms, 99)),
                "late_max_ms": float(late_ms.max())}

    try:
        while True:
            try:
                cmd = commands.get(timeout=1.0)
            except queue.Empty:
                continue
            if cmd == "quit":
                break
            if cmd == "stream":  # until the next command
                _reply("streaming")
                result = loop(None)
                _reply("stream_done " + json.dumps(result))
            elif cmd.startswith("burst "):  # burst K [file for the stamps]
                parts = cmd.split(" ", 2)
                result = loop(int(parts[1]), parts[2] if len(parts) > 2 else None)
                _reply("burst_done " + json.dumps(result))
            elif cmd == "description":
                desc_pub.publish(String(data=urdf))
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def run_subscriber(args) -> int:
    """Collects (stamp, receive time) of every coriolis_state and the node's diagnostics."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.experimental import EventsExecutor
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions

    from coriolis_ros.msg import CoriolisState

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("bench_coriolis_subscriber")
    lock = threading.Lock()
    stamps = array.array("q")
    receipts = array.array("q")
    diags: list = []  # (receive ns, level, message, {key: value})
    first: dict = {}

    def on_state(msg):
        recv = time.time_ns()
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        with lock:
            stamps.append(stamp)
            receipts.append(recv)
        if not first:
            first.update(recv=recv, stamp=stamp, n=len(msg.joint_names),
                         sizes={f: len(getattr(msg, f)) for f in (
                             "position", "velocity", "coriolis_matrix", "coriolis_force",
                             "coriolis_transpose_force", "mass_matrix",
                             "mass_matrix_derivative", "gravity_force", "momentum")})
            _reply("first " + json.dumps(first))

    def on_diag(msg):
        recv = time.time_ns()
        for status in msg.status:
            if status.name == DIAG_NAME:
                level = status.level
                level = level[0] if isinstance(level, (bytes, bytearray)) else int(level)
                with lock:
                    diags.append((recv, level, status.message,
                                  {kv.key: kv.value for kv in status.values}))

    reliable = dict(history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.VOLATILE)
    node.create_subscription(CoriolisState, "coriolis_state", on_state,
                             QoSProfile(depth=1000, **reliable))
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag,
                             QoSProfile(depth=50, **reliable))
    # EventsExecutor: a C++ event queue, about a third of the SingleThreadedExecutor's CPU per
    # message, so the measuring process loads the shared cores less.
    events = args.subscriber_executor == "events"
    executor = EventsExecutor() if events else SingleThreadedExecutor()
    executor.add_node(node)
    commands = _stdin_commands()  # SIGINT: KeyboardInterrupt out of spin()
    stop: list = []

    def control():
        while True:
            cmd = commands.get()
            if cmd == "quit":
                break
            if cmd == "diag":
                with lock:
                    last = diags[-1] if diags else None
                    count = len(stamps)
                _reply("diag " + json.dumps({"last": last, "states": count}))
            elif cmd.startswith("dump "):
                with lock:
                    data = {"stamps": stamps.tolist(), "receipts": receipts.tolist(),
                            "diags": list(diags), "first": first}
                Path(cmd.split(" ", 1)[1]).write_text(json.dumps(data))
                _reply("dumped")
        stop.append(True)
        if not events:
            executor.shutdown(timeout_sec=2.0)

    threading.Thread(target=control, daemon=True).start()
    _reply("ready")
    try:
        if events:
            # EventsExecutor.spin() holds the GIL while it waits (rclpy 9.1.2): the control
            # thread would never run. spin_once with a timeout lets it in.
            while not stop and node.context.ok():
                executor.spin_once(timeout_sec=0.1)
        else:
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException, Exception):  # noqa: BLE001
        pass  # shutting down
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


# =============================================================================== orchestrator


def _die_with_parent() -> None:
    """Child side of Popen: SIGKILL when the orchestrator dies (survives the bootstrap exec)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


# The host's own jitter, the peer of the latency figures: a lone process per CPU that sleeps to
# 1 ms deadlines (SCHED_FIFO 50 where permitted) and records how late it wakes.
_JITTER_LOOP = """
import json, os, sys, time
cpu, seconds = int(sys.argv[1]), float(sys.argv[2])
os.sched_setaffinity(0, {cpu})
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    policy = "FIFO 50"
except OSError:
    policy = "normal"
late, start = [], time.monotonic()
for k in range(int(seconds * 1000)):
    due = start + (k + 1) * 1e-3
    wait = due - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    late.append((time.monotonic() - due) * 1e3)
late.sort()
print(json.dumps({"policy": policy, "p50": late[len(late) // 2],
                  "p99": late[int(0.99 * (len(late) - 1))], "max": late[-1]}))
"""


def host_jitter(seconds: float = 3.0) -> str:
    """'CPU 0: p99 0.12 / max 1.9 ms, ...': each CPU in turn, nothing else of ours running."""
    parts = []
    for cpu in sorted(os.sched_getaffinity(0)):
        try:
            out = subprocess.run([sys.executable, "-c", _JITTER_LOOP, str(cpu), str(seconds)],
                                 capture_output=True, text=True, timeout=seconds + 30,
                                 preexec_fn=_die_with_parent)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            parts.append(f"CPU {cpu} ({r['policy']}): p50 {r['p50']:.2f}, p99 {r['p99']:.2f}, "
                         f"max {r['max']:.1f} ms")
        except (subprocess.SubprocessError, ValueError, IndexError, OSError) as exc:
            parts.append(f"CPU {cpu}: not measured ({type(exc).__name__})")
    return "; ".join(parts)


def _realtime_child(cpus) -> None:
    """Child side of Popen for --realtime: the given CPUs, SCHED_FIFO at HELPER_PRIORITY."""
    _die_with_parent()
    os.sched_setaffinity(0, set(cpus))
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(HELPER_PRIORITY))


class Child:
    """A child process; stdout lines are read by a thread (or go to a log file)."""

    def __init__(self, name: str, cmd: list, env: dict, log_path: Path | None = None,
                 cwd: str | None = None, realtime=None):
        self.name = name
        self.lines: queue.Queue = queue.Queue()
        self.log_path = log_path
        self._log = open(log_path, "wb") if log_path else None  # noqa: SIM115 -- closed in stop
        self.proc = subprocess.Popen(
            cmd, env=env, cwd=cwd,
            preexec_fn=_die_with_parent if not realtime else lambda: _realtime_child(realtime),
            stdin=subprocess.DEVNULL if log_path else subprocess.PIPE,
            stdout=self._log if log_path else subprocess.PIPE,
            stderr=subprocess.STDOUT if log_path else None,
            text=log_path is None, bufsize=1 if log_path is None else -1)
        self.pid = self.proc.pid
        if log_path is None:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float) -> str:
        """The payload of the next stdout line starting with `prefix`."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{self.name}: no '{prefix}' within {timeout:.0f} s")
            try:
                line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"{self.name} exited ({self.proc.wait()}) "
                                   f"while waiting for '{prefix}'")
            if line.startswith(prefix):
                return line[len(prefix):].strip()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """'quit' on stdin (helpers), SIGINT, then SIGKILL after `timeout`; the exit status."""
        if self.proc.poll() is None and self.proc.stdin:
            try:
                self.send("quit")
                self.proc.wait(5.0)
            except (BrokenPipeError, ValueError, OSError, subprocess.TimeoutExpired):
                log(f"{self.name} (pid {self.pid}) did not quit on request: SIGINT")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log(f"{self.name} (pid {self.pid}) ignored SIGINT for {timeout:.0f} s: SIGKILL")
                self.proc.kill()
                self.proc.wait(5)
        if self._log:
            self._log.close()
        if self.proc.stdin:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        return self.proc.returncode


def proc_cpu_s(pid: int) -> float:
    """utime + stime (all threads) of a process, in seconds."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_steal_s() -> float:
    """CPU seconds the hypervisor gave to others while our vCPUs wanted to run (the steal
    column of /proc/stat), all cores, since boot; 0 on bare metal."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / CLK_TCK if len(fields) > 8 else 0.0


def machine_busy_s() -> float:
    """CPU seconds spent busy (not idle, not iowait) by all cores since boot."""
    user, nice, system, _idle, _iowait, irq, softirq = (
        int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8])
    return (user + nice + system + irq + softirq) / CLK_TCK


def wait_idle(max_wait: float, threshold: float = 0.15, window: float = 3.0) -> float:
    """Wait (at most max_wait s) for a `window` with < threshold of the cores busy.

    Returns the busy fraction of the last window (0..1 of all cores).
    """
    cores = os.cpu_count() or 1
    deadline = time.monotonic() + max_wait
    while True:
        b0, t0 = machine_busy_s(), time.monotonic()
        time.sleep(window)
        busy = (machine_busy_s() - b0) / ((time.monotonic() - t0) * cores)
        if busy < threshold or time.monotonic() >= deadline:
            return busy
        log(f"machine {100 * busy:.0f} % busy; waiting for it to calm down")


def proc_rss_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in kB."""
    rss = hwm = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
    return rss, hwm


class Sampler(threading.Thread):
    """(time, node RSS kB, node CPU s) every `period` seconds while running."""

    def __init__(self, pid: int, period: float = 0.25):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples: list = []
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            try:
                self.samples.append((time.monotonic(), proc_rss_kb(self.pid)[0],
                                     proc_cpu_s(self.pid)))
            except (OSError, ValueError):
                return
            self._halt.wait(self.period)

    def stop(self):
        self._halt.set()
        self.join(2.0)


def reserve_domain(requested: int | None) -> tuple[int, int | None]:
    """A domain id in DOMAIN_RANGE (random), locked like test/conftest.py does."""
    lock_dir = Path(tempfile.gettempdir()) / "coriolis_ros_domains"
    lock_dir.mkdir(mode=0o777, exist_ok=True)
    candidates = [requested] if requested is not None else random.sample(
        range(DOMAIN_RANGE[0], DOMAIN_RANGE[1] + 1), DOMAIN_RANGE[1] - DOMAIN_RANGE[0] + 1)
    for domain in candidates:
        fd = os.open(lock_dir / f"{domain}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return domain, fd
        except OSError:
            os.close(fd)
    if requested is not None:
        log(f"warning: ROS_DOMAIN_ID {requested} is reserved by another run; using it anyway")
        return requested, None
    raise RuntimeError(f"every ROS domain id in {DOMAIN_RANGE} is reserved by another run")


def ros_env(domain: int) -> dict:
    env = dict(os.environ)
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_DOMAIN_ID=str(domain),
               PYTHONSAFEPATH="1", PYTHONUNBUFFERED="1", RCUTILS_COLORIZED_OUTPUT="0",
               RCUTILS_LOGGING_BUFFERED_STREAM="0")
    env.pop("NUMBA_CACHE_DIR", None)
    if (Path(sys.prefix) / "share" / "ament_index").is_dir():
        paths = [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
        if sys.prefix not in paths:
            env["AMENT_PREFIX_PATH"] = os.pathsep.join([*paths, sys.prefix])
    return env


class Run:
    """One robot: cold start, warm start + steady load, extra warm starts."""

    def __init__(self, args, key: str, urdf_path: Path, env: dict, workdir: Path):
        self.args, self.key, self.urdf_path = args, key, urdf_path
        self.label = ROBOTS[key][0]
        self.env, self.workdir = env, workdir
        self.children: list[Child] = []
        self.result: dict = {"robot": key, "label": self.label}

    # ---------------------------------------------------------------- processes
    def _spawn_helper(self, role: str) -> Child:
        cmd = [sys.executable, "-P", str(Path(__file__).resolve()), "--role", role,
               "--urdf", str(self.urdf_path), "--rate", repr(self.args.rate)]
        if self.args.effort:
            cmd.append("--effort")
        if role == "publisher" and self.key.endswith("_floating"):
            cmd.append("--odometry")
        if role == "subscriber":
            cmd += ["--subscriber-executor", self.args.subscriber_executor]
        child = Child(role, cmd, self.env, cwd=str(self.workdir),
                      realtime=self.args.realtime_split and self.args.realtime_split[0])
        self.children.append(child)
        return child

    def _spawn_node(self, cache_dir: Path, tag: str) -> Child:
        env = dict(self.env, NUMBA_CACHE_DIR=str(cache_dir))
        cmd = [sys.executable, "-P", "-m", NODE_MODULE, "--ros-args"]
        for param in self.args.param:
            cmd += ["-p", param]
        if self.args.realtime_split:  # the node's own parameters: its core, FIFO
            cpus = ",".join(str(c) for c in self.args.realtime_split[1])
            cmd += ["-p", f"realtime_priority:={NODE_PRIORITY}", "-p", f"cpu_affinity:=[{cpus}]"]
        if self.key.endswith("_floating"):
            cmd += ["-p", "root_joint:=floating"]
        child = Child("node", cmd, env, log_path=self.workdir / f"node_{self.key}_{tag}.log",
                      cwd=str(self.workdir))
        self.children.append(child)
        return child

    def stop_all(self) -> None:
        for child in reversed(self.children):
            try:
                status = child.stop()
            except Exception as exc:  # noqa: BLE001 -- keep stopping the others
                log(f"stopping {child.name}: {exc}")
                continue
            if child.name == "node" and status not in (0, None):
                log(f"node exited with status {status}; log tail:\n"
                    + "\n".join(child.log_text().splitlines()[-15:]))
        self.children.clear()

    # ---------------------------------------------------------------- phases
    def start_to_first_output(self, cache_dir: Path, tag: str, timeout: float):
        """Start subscriber + publisher (streaming), then the node; time to its first output.

        Returns (node, publisher, subscriber, figures); the processes keep running.
        """
        sub = self._spawn_helper("subscriber")
        pub = self._spawn_helper("publisher")
        sub.expect("ready", 60)
        n = int(pub.expect("ready", 60))
        pub.send("stream")
        pub.expect("streaming", 10)
        time.sleep(1.0)  # description latched, joint states flowing, nobody listening yet
        load = os.getloadavg()
        t0 = time.time_ns()
        node = self._spawn_node(cache_dir, tag)
        deadline = time.monotonic() + timeout
        while True:
            try:
                first = json.loads(sub.expect("first", 1.0))
                break
            except TimeoutError:
                if not node.alive():
                    raise RuntimeError(f"node exited ({node.proc.returncode}) before its "
                                       "first output") from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no CoriolisState within {timeout:.0f} s of the "
                                       "node's start") from None
        t_first = (first["recv"] - t0) / 1e9
        ready = self._wait_ready(node, 10.0)
        figures = {"load_before": load, "n_urdf": n, "start_to_first_s": t_first,
                   "first_sizes": first["sizes"], "n_out": first["n"]}
        if ready:
            figures.update(ready_robot=ready[1], ready_dof=int(ready[2]),
                           warmup_s=float(ready[3]),
                           start_to_ready_s=float(ready[0]) - t0 / 1e9)
        waiting = WAITING_RE.search(node.log_text())
        if waiting:
            figures["start_to_waiting_s"] = float(waiting[1]) - t0 / 1e9
        return node, pub, sub, figures

    @staticmethod
    def _wait_ready(node: Child, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = READY_RE.search(node.log_text())
            if m:
                return m.groups()
            time.sleep(0.05)
        return None

    @staticmethod
    def _counters_at_rest(sub: Child, after_ns: int, timeout: float = 15.0) -> dict:
        """Counters from two consecutive diagnostics received after `after_ns` that agree."""
        deadline = time.monotonic() + timeout
        previous = None
        while time.monotonic() < deadline:
            sub.send("diag")
            reply = json.loads(sub.expect("diag", 5))
            last = reply["last"]
            if last and last[0] > after_ns:
                counters = {k: int(last[3].get(k, 0)) for k in COUNTERS}
                for k in OBSERVER_COUNTERS:
                    value = last[3].get(k, "nan")
                    counters[k] = 0 if value == "nan" else int(float(value))
                if previous is not None and previous[0] != last[0]:
                    if previous[1] == counters:
                        return counters
                previous = (last[0], counters)
            time.sleep(0.2)
        raise TimeoutError("node diagnostics counters did not come to rest")

    def cold(self) -> None:
        cache = Path(tempfile.mkdtemp(prefix=f"numba_cold_{self.key}_", dir=self.workdir))
        self.cache_dir = cache
        log(f"{self.key}: cold start (empty NUMBA_CACHE_DIR {cache})")
        try:
            node, pub, sub, fig = self.start_to_first_output(cache, "cold", COLD_START_TIMEOUT)
            fig["rss_kb"] = proc_rss_kb(node.pid)[0]
            self.result["cold"] = fig
        finally:
            self.stop_all()

    def warm_starts(self, count: int) -> None:
        times = []
        for i in range(count):
            log(f"{self.key}: extra warm start {i + 1}/{count}")
            try:
                _, _, _, fig = self.start_to_first_output(self.cache_dir, f"warm{i + 2}",
                                                          WARM_START_TIMEOUT)
                times.append(fig)
            finally:
                self.stop_all()
        self.result["extra_warm"] = times

    def warm_and_load(self) -> None:
        args = self.args
        log(f"{self.key}: warm start + {args.duration:g} s at {args.rate:g} Hz")
        try:
            node, pub, sub, fig = self.start_to_first_output(self.cache_dir, "warm",
                                                             WARM_START_TIMEOUT)
            self.result["warm"] = fig
            rss_first = proc_rss_kb(node.pid)[0]
            sampler = Sampler(node.pid)
            sampler.start()
            time.sleep(2.0)  # settle under load
            pub.send("pause")
            settle = json.loads(pub.expect("stream_done", 10))
            pause_ns = time.time_ns()
            base = self._counters_at_rest(sub, pause_ns + 300_000_000)
            total = int(round(args.rate * args.duration))
            load_before = os.getloadavg()
            rss_before = proc_rss_kb(node.pid)[0]
            cpu0, wall0 = proc_cpu_s(node.pid), time.monotonic()
            steal0 = machine_steal_s()
            helper_cpu0 = {c.name: proc_cpu_s(c.pid) for c in (pub, sub)}
            sent_path = self.workdir / f"sent_{self.key}.json"
            profiler = self._start_profiler(node.pid) if args.profile else None
            pub.send(f"burst {total} {sent_path}")
            burst = json.loads(pub.expect("burst_done", args.duration * 3 + 30))
            if profiler is not None:
                self.result["profile"] = self._finish_profiler(*profiler)
            cpu1, wall1 = proc_cpu_s(node.pid), time.monotonic()
            steal1 = machine_steal_s()
            helper_cpu1 = {c.name: proc_cpu_s(c.pid) for c in (pub, sub)}
            rss_after, hwm = proc_rss_kb(node.pid)
            load_after = os.getloadavg()
            end_ns = time.time_ns()
            final = self._counters_at_rest(sub, end_ns + 300_000_000)
            sampler.stop()
            dump = self.workdir / f"sub_{self.key}.json"
            sub.send(f"dump {dump}")
            sub.expect("dumped", 30)
            data = json.loads(dump.read_text())
            sent_stamps = json.loads(sent_path.read_text())
            alive = node.alive()
            node_log = node.log_text()
        finally:
            self.stop_all()
        delta = {k: final[k] - base[k] for k in COUNTERS + OBSERVER_COUNTERS}
        self.result["load"] = {
            "sent": burst["sent"], "pub_wall_s": burst["wall_s"],
            "pub_rate_hz": burst["sent"] / burst["wall_s"],
            "pub_late_p99_ms": burst["late_p99_ms"], "pub_late_max_ms": burst["late_max_ms"],
            "settle_sent": settle["sent"],
            "counters": delta, "counters_total": final,
            "cpu_pct": 100.0 * (cpu1 - cpu0) / (wall1 - wall0), "cpu_s": cpu1 - cpu0,
            "wall_s": wall1 - wall0,
            # the peer measured during the window: vCPU time the hypervisor withheld
            "steal_pct": 100.0 * (steal1 - steal0) / (wall1 - wall0),
            "helper_cpu_pct": {k: 100.0 * (helper_cpu1[k] - helper_cpu0[k]) / (wall1 - wall0)
                               for k in helper_cpu0},
            "rss_first_kb": rss_first, "rss_before_kb": rss_before,
            "rss_after_kb": rss_after, "hwm_kb": hwm,
            "load_before": load_before, "load_after": load_after,
            "samples": sampler.samples, "node_alive_after": alive,
            "node_warnings": _log_problems(node_log, burst["first_stamp"], end_ns),
            "node_warnings_outside": _log_problems(node_log, 0, burst["first_stamp"])
            + _log_problems(node_log, end_ns, 1 << 62),
        }
        self.result["load"].update(self._latency(data, burst, args.duration))
        self.result["load"].update(self._skips(sent_stamps, data["stamps"]))
        self.result["load"]["diag_periods"] = [
            d[3] for d in data["diags"] if burst["first_stamp"] <= d[0] <= end_ns]

    def _start_profiler(self, pid: int):
        """py-spy record on the node for the burst (raw collapsed stacks, per thread)."""
        exe = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which(
            "py-spy")
        if exe is None:
            raise RuntimeError("--profile needs py-spy (requirements/dev.txt)")
        out = self.workdir / f"profile_{self.key}.txt"
        cmd = [exe, "record", "--pid", str(pid), "--duration", str(int(math.ceil(
            self.args.duration))), "--rate", "250", "--format", "raw", "--threads",
            "--nonblocking", "--output", str(out)]
        if self.args.profile_native:
            cmd.append("--native")
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, preexec_fn=_die_with_parent)
        return proc, out

    def _finish_profiler(self, proc, out: Path) -> dict:
        try:
            _, err = proc.communicate(timeout=self.args.duration + 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        if not out.exists():
            return {"error": (err or "").strip()[-300:] or f"py-spy exited {proc.returncode}"}
        keep = Path(self.args.profile) / f"profile_{self.key}.txt"
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, keep)
        return summarize_profile(out.read_text(), rate=250.0, seconds=self.args.duration) | {
            "file": str(keep)}

    @staticmethod
    def _skips(sent: list, out_stamps: list) -> dict:
        """Which inputs got no output, and how soon the next input followed each of them.

        A skipped input followed by the next one within a fraction of the period was merged
        with it (the publisher bunched them, or both arrived together); one followed after a
        full period means the node did not take it within that time.
        """
        import numpy as np

        sent_a = np.asarray(sent, dtype=np.int64)
        produced = np.isin(sent_a, np.asarray(out_stamps, dtype=np.int64))
        gaps_ms = np.diff(sent_a) / 1e6
        skipped_idx = np.flatnonzero(~produced[:-1])  # the last one has no successor
        next_gap = gaps_ms[skipped_idx]
        return {
            "no_output": int((~produced).sum()),
            "skip_next_gap_ms": {
                "lt_0.25": int(np.sum(next_gap < 0.25)),
                "0.25_0.75": int(np.sum((next_gap >= 0.25) & (next_gap < 0.75))),
                "ge_0.75": int(np.sum(next_gap >= 0.75)),
            },
            "input_gap_ms": {p: float(np.percentile(gaps_ms, p)) for p in (1, 50, 99)}
            if len(gaps_ms) else {},
            "input_gaps_lt_0.25": int(np.sum(gaps_ms < 0.25)),
        }

    @staticmethod
    def _latency(data: dict, burst: dict, duration: float) -> dict:
        import numpy as np

        stamps = np.asarray(data["stamps"], dtype=np.int64)
        receipts = np.asarray(data["receipts"], dtype=np.int64)
        sel = (stamps >= burst["first_stamp"]) & (stamps <= burst["last_stamp"])
        s, r = stamps[sel], receipts[sel]
        lat = (r - s) / 1e6
        out = {"out_received": int(sel.sum()),
               "out_duplicates": int(len(s) - len(np.unique(s))),
               "out_reordered": int(np.sum(np.diff(s) < 0)) if len(s) > 1 else 0}
        if len(lat):
            out["latency_ms"] = {p: float(np.percentile(lat, p)) for p in (50, 90, 99, 99.9)}
            out["latency_ms"].update(max=float(lat.max()), mean=float(lat.mean()),
                                     min=float(lat.min()))
            out["over_target"] = int(np.sum(lat > LATENCY_TARGET_MS))
            # Per-second trend (growing latency would show here).
            last_bin = max(0, int(math.ceil(duration)) - 1)  # the final stamp joins it
            sec = np.minimum((s - burst["first_stamp"]) // 1_000_000_000, last_bin).astype(int)
            trend = []
            for k in range(int(sec.max()) + 1):
                chunk = lat[sec == k]
                if len(chunk):
                    trend.append((k, len(chunk), float(np.percentile(chunk, 50)),
                                  float(np.percentile(chunk, 99)), float(chunk.max())))
            out["trend"] = trend
        return out


def _frame_label(frame: str) -> str:
    """'func (file.py)' from py-spy's 'func (path/file.py:line)' frame text."""
    m = re.match(r"(.*?) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return frame
    return f"{m[1]} ({Path(m[2]).name})"


def summarize_profile(text: str, rate: float, seconds: float, top: int = 15) -> dict:
    """Per-thread CPU share and the top functions by own and by inclusive samples.

    `text` is py-spy's raw (collapsed) output with --threads: 'thread;frame;...;frame count'.
    A sample is one stack seen on CPU (py-spy skips idle threads without --idle).
    """
    threads: dict = {}
    own: dict = {}
    inclusive: dict = {}
    total = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        k = int(count)
        frames = stack.split(";")
        thread = re.sub(r"\s*\(?0x[0-9a-f]+\)?", "", frames[0]).strip() or frames[0]
        threads[thread] = threads.get(thread, 0) + k
        labels = [_frame_label(f) for f in frames[1:]] or ["<no Python frame>"]
        own[labels[-1]] = own.get(labels[-1], 0) + k
        for label in set(labels):
            inclusive[label] = inclusive.get(label, 0) + k
        total += k
    possible = rate * seconds

    def ranked(d):
        return [(name, 100.0 * v / possible) for name, v in
                sorted(d.items(), key=lambda kv: -kv[1])[:top]]
    return {"samples": total, "cpu_pct": 100.0 * total / possible,
            "threads": ranked(threads), "own": ranked(own), "inclusive": ranked(inclusive)}


LOG_LINE_RE = re.compile(r"^\[(WARN|ERROR|FATAL)\] \[(\d+)\.(\d+)\] ")


def _log_problems(text: str, t0_ns: int, t1_ns: int) -> list[str]:
    """Warning/error lines of a node log stamped within [t0_ns, t1_ns)."""
    found = []
    for line in text.splitlines():
        m = LOG_LINE_RE.match(line)
        if m:
            stamp = int(m[2]) * 1_000_000_000 + int(m[3].ljust(9, "0")[:9])
            if t0_ns <= stamp < t1_ns:
                found.append(line)
    return found


# =============================================================================== report


def _startup_parts(f: dict) -> dict:
    """Split start -> first output into node init, description wait, warm-up, after ready."""
    parts = {}
    if "start_to_waiting_s" in f:
        parts["init"] = f["start_to_waiting_s"]
    if "start_to_ready_s" in f:
        parts["warmup"] = f["warmup_s"]
        # The first tick can be received a few ms before the `ready:` line is written.
        parts["after_ready"] = max(0.0, f["start_to_first_s"] - f["start_to_ready_s"])
        if "init" in parts:
            parts["description"] = f["start_to_ready_s"] - f["warmup_s"] - parts["init"]
    return parts


def _fmt(x, digits=2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}"


def _mb(kb) -> str:
    return "-" if kb is None else f"{kb / 1024:.1f}"


STAGES = ("callback", "buffer_update", "observer", "handoff_wait", "kernels", "message_fill",
          "publish", "contact")


def _stage_breakdown(results: list, bl, md: bool) -> list:
    """Table: mean (max) ms per hot-path stage from the node's diagnostics over the window."""
    rows = []
    for r in results:
        ld = r.get("load")
        if not ld:
            continue
        periods = [d for d in ld["diag_periods"] if d.get("compute_time_mean_ms", "nan") != "nan"]
        cells = []
        for stage in STAGES:
            means = [float(d[f"stage_{stage}_mean_ms"]) for d in periods
                     if d.get(f"stage_{stage}_mean_ms", "nan") != "nan"]
            maxima = [float(d[f"stage_{stage}_max_ms"]) for d in periods
                      if d.get(f"stage_{stage}_max_ms", "nan") != "nan"]
            cells.append(f"{sum(means) / len(means):.3f} ({max(maxima):.2f})" if means else "-")
        rows.append([r["label"], *cells])
    if not rows:
        return []
    return [bl.heading("Where the time goes: node hot-path stages, ms, mean (max)", md), "",
            bl.table(["robot", *STAGES], rows, md), "",
            "From the node's diagnostics (stage_<name>_mean_ms / _max_ms), mean of the "
            "per-period means (max of the maxima) over the window. callback = joint_states "
            "callback entry to return (includes buffer_update, and the tick when it runs "
            "inline); handoff_wait = callback handing the state to the worker thread -> tick "
            "start (0 inline); message_fill = the rest of a tick before publish; publish = "
            "rclpy publish() (serialisation + DDS write); contact = the contact wrenches, the "
            "collision flag and their messages, after the publish. Not covered: rclpy's take + "
            "deserialisation before the callback and the executor's own loop.", ""]


def report(results: list, args, meta: list, bl) -> str:
    md = args.markdown
    out = [bl.heading("coriolis node end-to-end: JointState in, CoriolisState out", md, 2), ""]
    out += [("- " if md else "") + line for line in meta] + [""]

    # Accounting
    rows = []
    for r in results:
        ld = r.get("load")
        if not ld:
            continue
        c = ld["counters"]
        other = c["rejected"] + c["ignored"] + c["withheld"] + c["failed"]
        ok_node = c["received"] == c["published"] + c["skipped"] + other
        ok_out = c["published"] == ld["out_received"]
        rows.append([
            r["label"], str(ld["sent"]), f"{ld['pub_rate_hz']:.1f}",
            f"{ld['pub_late_p99_ms']:.2f} / {ld['pub_late_max_ms']:.1f}", str(c["received"]),
            str(ld["sent"] - c["received"]), str(c["published"]), str(c["skipped"]),
            str(other), str(ld["out_received"]),
            f"{'yes' if ok_node else 'NO'} ({c['received']} = {c['published']} + "
            f"{c['skipped']} + {other})",
            "yes" if ok_out else f"NO ({c['published'] - ld['out_received']} lost)",
            f"{c.get('observer_integrated_total', 0)} / {c.get('observer_paused_total', 0)} / "
            f"{c.get('observer_resets_total', 0)}",
        ])
    if rows:
        out += [bl.heading("Accounting over the measured window (node counters at rest before "
                           "and after)", md), ""]
        out.append(bl.table(
            ["robot", "sent", "pub Hz", "pub late p99 / max ms", "node in", "lost in",
             "published", "skipped", "rej+ign+withh+fail", "sub out",
             "in == pub + skip + other", "pub == sub out", "observer integrated / paused / "
             "resets"],
            rows, md))
        out += ["", "sent: publisher; pub Hz: achieved send rate; pub late: how late the "
                "paced loop published after each due time; node in: node's `received`; "
                "lost in: sent - node in (best-effort input subscription); sub out: "
                "CoriolisState received by the subscriber with a stamp of the window.", ""]

    # Latency
    rows = []
    for r in results:
        ld = r.get("load")
        if not ld or "latency_ms" not in ld:
            continue
        lat = ld["latency_ms"]
        diag = [d for d in ld["diag_periods"] if d.get("compute_time_mean_ms", "nan") != "nan"]

        def mean_max(stem, diag=diag):
            """Mean of the periods' means, max of their maxima (node diagnostics)."""
            try:
                means = [float(d[f"{stem}_mean_ms"]) for d in diag]
                maxima = [float(d[f"{stem}_max_ms"]) for d in diag]
            except KeyError:
                return "-"
            if not means:
                return "-"
            return f"{_fmt(sum(means) / len(means), 3)} / {_fmt(max(maxima), 2)}"
        rows.append([
            r["label"], str(r["warm"].get("ready_dof", r["warm"]["n_out"])),
            str(ld["out_received"]), _fmt(lat[50], 3), _fmt(lat[90], 3), _fmt(lat[99], 3),
            _fmt(lat[99.9], 3), _fmt(lat["max"], 2),
            f"{'yes' if lat[99] <= LATENCY_TARGET_MS else 'NO'} "
            f"({100.0 * ld['over_target'] / max(1, ld['out_received']):.2f} % > 2 ms)",
            mean_max("compute_time"), mean_max("latency"),
        ])
    if rows:
        out += [bl.heading("End-to-end latency, ms (subscriber receive time - header.stamp "
                           "= publish time)", md), ""]
        out.append(bl.table(["robot", "DoF", "samples", "p50", "p90", "p99", "p99.9", "max",
                             "p99 ≤ 2 ms", "node compute mean / max",
                             "node receive→publish mean / max"], rows, md))
        out += ["", "The last two columns come from the node's diagnostics over the window "
                "(mean of the per-period means / max of the per-period maxima): compute = the "
                "kernels of one tick; receive→publish = joint_states callback entry to "
                "publish() return of the tick that used it.", ""]
        out += _stage_breakdown(results, bl, md)
        for r in results:
            trend = r.get("load", {}).get("trend")
            if trend:
                text = ", ".join(f"{k}s {p50:.2f}/{p99:.2f}/{mx:.1f}" for k, _, p50, p99, mx
                                 in trend)
                out.append(f"{r['label']} per second (p50/p99/max ms): {text}")
                out.append("")

    # Start-up
    rows = []
    for r in results:
        starts = [("cold", [r["cold"]] if "cold" in r else [])]
        warm = ([r["warm"]] if "warm" in r else []) + r.get("extra_warm", [])
        if warm:
            ordered = sorted(warm, key=lambda f: f["start_to_first_s"])
            starts.append((f"warm, median of {len(warm)}", [ordered[(len(ordered) - 1) // 2]]))
            starts.append((f"warm, worst of {len(warm)}", [ordered[-1]]))
        for kind, figs in starts:
            if not figs:
                continue
            f = figs[0]
            meets = "-"
            if kind.startswith("warm, worst") or (kind.startswith("warm") and len(warm) == 1):
                meets = "yes" if f["start_to_first_s"] <= START_TARGET_S else "NO"
            parts = _startup_parts(f)
            rows.append([r["label"], kind, _fmt(f["start_to_first_s"]),
                         *(_fmt(parts.get(k)) for k in ("init", "description", "warmup",
                                                         "after_ready")), meets])
    out += [bl.heading("Start-up, s (node process start -> first CoriolisState received; "
                       "description and joint states already being published)", md), ""]
    out.append(bl.table(["robot", "start", "first output", "= node init",
                         "+ description wait & parse", "+ warm-up", "+ ready → output",
                         "≤ 5 s (warm)"], rows, md))
    out += ["", "cold: NUMBA_CACHE_DIR = a fresh empty directory (kernels compiled; the OS file "
            "cache is warm); warm: the same directory again (median and worst of the warm "
            "starts, the first of which carries the load run). Breakdown from the node log's "
            "timestamps: node init = process start -> `waiting for a URDF` (imports, rclpy, "
            "node constructed); description wait & parse = until the URDF arrived and was "
            "parsed (DDS discovery + transient-local delivery); warm-up = the seconds the "
            "`ready:` line reports (kernel compile or cache load + one tick); ready → output = "
            "first tick published and received.", ""]

    # Resources
    rows = []
    for r in results:
        ld = r.get("load")
        if not ld:
            continue
        rss = [s[1] for s in ld["samples"]]
        rows.append([
            r["label"], f"{ld['cpu_pct']:.0f}", f"{ld['cpu_s']:.2f}",
            _mb(ld["rss_first_kb"]), _mb(ld["rss_before_kb"]), _mb(ld["rss_after_kb"]),
            _mb(max(rss) if rss else None), _mb(ld["hwm_kb"]),
            f"{ld['helper_cpu_pct']['publisher']:.0f} / {ld['helper_cpu_pct']['subscriber']:.0f}",
            _fmt(100 * r["busy_before"] * (os.cpu_count() or 1), 0) if "busy_before" in r else "-",
            " ".join(f"{x:.2f}" for x in ld["load_before"]),
            _fmt(ld["steal_pct"], 1) if "steal_pct" in ld else "-",
        ])
    if rows:
        out += [bl.heading("Node resources over the measured window", md), ""]
        out.append(bl.table(["robot", "node CPU % (1 core = 100)", "CPU s",
                             "RSS MB first output", "RSS MB window start", "RSS MB end",
                             "RSS MB max (0.25 s samples)", "VmHWM MB",
                             "publisher / subscriber CPU %",
                             "machine CPU % before (3 s)",
                             "load avg before",
                             "steal % in the window (1 core = 100)"], rows, md))
        out.append("")

    # Profile
    for r in results:
        prof = r.get("profile")
        if not prof:
            continue
        out += [bl.heading(f"Sampling profile of the node during the window: {r['label']}",
                           md), ""]
        if "error" in prof:
            out += [f"py-spy failed: {prof['error']}", ""]
            continue
        out.append(f"py-spy record --rate 250 --threads --nonblocking over the window: "
                   f"{prof['samples']} samples on CPU = {prof['cpu_pct']:.0f} % of one core "
                   f"(raw stacks: {prof['file']}). Percentages are of one core.")
        out.append("")
        for title, key in (("thread", "threads"), ("function, own time", "own"),
                           ("function, inclusive", "inclusive")):
            out.append(bl.table([title, "% of a core"],
                                [[name, f"{pct:.1f}"] for name, pct in prof[key]], md))
            out.append("")

    # Anomalies and warnings
    notes = []
    for r in results:
        ld = r.get("load")
        if not ld:
            continue
        c = ld["counters"]
        if c["skipped"]:
            g = ld["skip_next_gap_ms"]
            notes.append(
                f"{r['label']}: {c['skipped']} inputs skipped (newest kept), "
                f"{ld['no_output']} sent stamps without output; the next input followed a "
                f"skipped one within < 0.25 ms for {g['lt_0.25']}, 0.25-0.75 ms for "
                f"{g['0.25_0.75']}, >= 0.75 ms for {g['ge_0.75']} (the publisher sent "
                f"{ld['input_gaps_lt_0.25']} of its {ld['sent'] - 1} gaps < 0.25 ms, i.e. "
                "catch-up after a late wake-up).")
        if ld["sent"] != c["received"]:
            notes.append(f"{r['label']}: {ld['sent'] - c['received']} of {ld['sent']} joint "
                         "states never reached the node (best-effort input).")
        if c["published"] != ld["out_received"]:
            notes.append(f"{r['label']}: published {c['published']} but the subscriber got "
                         f"{ld['out_received']}.")
        if ld["out_duplicates"] or ld["out_reordered"]:
            notes.append(f"{r['label']}: {ld['out_duplicates']} duplicate and "
                         f"{ld['out_reordered']} out-of-order output stamps.")
        trend = ld.get("trend") or []
        if len(trend) >= 4:
            head = sum(t[2] for t in trend[:2]) / 2
            tail = sum(t[2] for t in trend[-2:]) / 2
            if tail > 1.5 * head and tail - head > 0.1:
                notes.append(f"{r['label']}: median latency grew from {head:.2f} ms (first 2 s) "
                             f"to {tail:.2f} ms (last 2 s).")
        samples = ld["samples"]
        if len(samples) > 8:
            growth = ld["rss_after_kb"] - ld["rss_before_kb"]
            if growth > 4096:
                notes.append(f"{r['label']}: RSS grew {growth / 1024:.1f} MB over the window.")
        if not ld["node_alive_after"]:
            notes.append(f"{r['label']}: the node was not alive at the end of the run.")
        for what, key in (("during the measured window", "node_warnings"),
                          ("outside the window (start-up, pauses, shutdown)",
                           "node_warnings_outside")):
            warn = ld[key]
            if warn:
                kinds = sorted({re.sub(r"^.*?\]: ", "", w)[:90] for w in warn})
                notes.append(f"{r['label']}: node logged {len(warn)} warning/error line(s) "
                             f"{what}: " + " | ".join(kinds[:3]))
    for r in results:
        warm = ([r["warm"]] if "warm" in r else []) + r.get("extra_warm", [])
        parts = [_startup_parts(f) for f in warm]
        parts = [x for x in parts if "description" in x]
        if len(parts) > 1:
            waits = [x["description"] + x["after_ready"] for x in parts]
            own = [x["init"] + x["warmup"] for x in parts]
            if max(waits) - min(waits) > 0.5:
                notes.append(
                    f"{r['label']}: the warm starts' spread is DDS discovery, not the node: "
                    f"description wait + ready → output {min(waits):.2f}–{max(waits):.2f} s "
                    f"over {len(parts)} starts, node init + warm-up {min(own):.2f}–"
                    f"{max(own):.2f} s (a step of ~2.5-3 s would match Fast DDS's default "
                    "3-s participant announcement period; a guess, not verified here).")
    out += [bl.heading("Observations", md), ""]
    out += [("- " if md else "* ") + n for n in notes] or ["none"]
    out.append("")
    return "\n".join(out)


# =============================================================================== main


def orchestrate(args) -> int:
    os.environ["CORIOLIS_BENCH_CODE"] = "installed"  # the node runs the installed package
    sys.path.insert(0, str(BENCH))
    import benchlib as bl

    robots = [r.strip() for r in args.robots.split(",") if r.strip()]
    unknown = [r for r in robots if r not in ROBOTS]
    if unknown or not robots:
        raise SystemExit(f"unknown robot(s) {unknown}; choose from {', '.join(ROBOTS)}")
    erd = bl.erd_robots_dir()
    domain, lock_fd = reserve_domain(args.domain_id)
    env = ros_env(domain)
    load_start = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="coriolis_bench_node_"))
    log(f"ROS_DOMAIN_ID={domain} (LOCALHOST), work dir {workdir}, load {load_start}")

    # SIGTERM / the overall time budget end up in the finally blocks below.
    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def on_alarm(_signum, _frame):
        raise TimeoutError(f"overall time budget of {budget:.0f} s exceeded")

    per_robot = (COLD_START_TIMEOUT if not args.no_cold else 0) + 60 + args.duration * 3 \
        + 30 * (args.warm_starts - 1) + 90
    budget = per_robot * len(robots)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(budget))

    results = []
    failed = []
    jitter_before = host_jitter()
    log(f"host jitter before: {jitter_before}")
    try:
        for key in robots:
            run = Run(args, key, erd / ROBOTS[key][1], env, workdir)
            try:
                if args.wait_idle:
                    wait_idle(args.wait_idle)
                run.cold()  # also fills the cache dir of the warm starts
                if args.no_cold:
                    run.result.pop("cold", None)
                if args.wait_idle:
                    run.result["busy_before"] = wait_idle(args.wait_idle)
                run.warm_and_load()
                if args.warm_starts > 1:
                    run.warm_starts(args.warm_starts - 1)
            except (TimeoutError, RuntimeError, OSError, ValueError) as exc:
                failed.append(f"{key}: {type(exc).__name__}: {exc}")
                log(f"{key} FAILED: {exc}")
                for path in sorted(workdir.glob(f"node_{key}_*.log")):
                    log(f"--- {path.name} (tail)\n"
                        + "\n".join(path.read_text(errors="replace").splitlines()[-20:]))
            finally:
                run.stop_all()
            results.append(run.result)
    finally:
        signal.alarm(0)
        if lock_fd is not None:
            os.close(lock_fd)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"kept {workdir}")

    jitter_after = host_jitter()
    log(f"host jitter after: {jitter_after}")
    import numba

    def version(dist):
        import importlib.metadata

        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "?"

    load_end = os.getloadavg()
    installed = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}." \
        f"{sys.version_info.minor}" / "site-packages" / "coriolis_ros"
    machine = bl.machine_info()[0].split(", load average")[0]
    meta = [
        machine,
        f"Load average (1/5/15 min) at start {' '.join(f'{x:.2f}' for x in load_start)}, "
        f"at end {' '.join(f'{x:.2f}' for x in load_end)}; the 2 cores are shared by the node, "
        "the publisher, the subscriber (and anything else running)",
        f"Python {sys.version.split()[0]}, numba {numba.__version__}, rclpy "
        f"{version('ros-rclpy')}, rmw_fastrtps_cpp {version('ros-rmw-fastrtps-cpp')}",
        f"Node: installed package {installed} (git {bl.git_revision()} in {REPO}; "
        "`make install` copies the tree), parameters: "
        + (" ".join(args.param) if args.param else "defaults"),
        f"Input: JointState (position + velocity{' + effort' if args.effort else ''} of every "
        f"DoF) at {args.rate:g} Hz for "
        f"{args.duration:g} s per robot, paced sleep loop on the monotonic clock, reliable "
        "publisher (node subscribes best effort); output subscriber reliable, depth 1000; "
        f"subscriber executor {args.subscriber_executor}; "
        f"ROS_DOMAIN_ID {domain} (random in {DOMAIN_RANGE[0]}..{DOMAIN_RANGE[1]}, reserved "
        "via the test harness's lock files), ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST",
    ]
    meta.append("Host jitter, the peer of the latency figures (how late a lone 1 kHz sleep loop "
                f"wakes on each CPU, 3 s each, nothing of the benchmark running): before the "
                f"runs {jitter_before}; after {jitter_after}")
    if args.realtime_split:
        helpers, node_cpus = args.realtime_split
        meta.append(f"--realtime: the node on CPU {node_cpus[0]} at SCHED_FIFO {NODE_PRIORITY} "
                    f"(its realtime_priority and cpu_affinity), the publisher and the subscriber "
                    f"on CPU(s) {','.join(map(str, helpers))} at SCHED_FIFO {HELPER_PRIORITY}")
    if args.quick:
        meta.append("--quick: short run, figures indicative only")
    text = report(results, args, meta, bl)
    if failed:
        text += "\nFAILED:\n" + "\n".join(failed) + "\n"
    print(text, flush=True)
    if not args.no_save:
        path = Path(args.output) if args.output else (
            (BENCH / "results" / "quick" if args.quick else BENCH / "results")
            / f"bench_node.{'md' if args.markdown else 'txt'}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        log(f"wrote {path}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=None,
                    help="seconds of load per robot (default 10, --quick 2)")
    ap.add_argument("--robots", default="talos_full,panda",
                    help=f"comma-separated subset of {','.join(ROBOTS)}")
    ap.add_argument("--rate", type=float, default=1000.0, help="JointState rate, Hz")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 2 s, one warm start; results/quick/")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables (.md file)")
    ap.add_argument("--warm-starts", type=int, default=None,
                    help="warm starts per robot, the first with the load (default 5, --quick 1)")
    ap.add_argument("--no-cold", action="store_true",
                    help="do not report the cold start (it still runs once to fill the cache)")
    ap.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                    help="before each robot, wait up to SECONDS for a 3-s window with < 15 %% "
                         "of the machine busy (default 0: do not wait)")
    ap.add_argument("--domain-id", type=int, default=None,
                    help=f"ROS_DOMAIN_ID (default: random free one in {DOMAIN_RANGE})")
    ap.add_argument("-p", "--param", action="append", default=[],
                    help="node parameter name:=value (repeatable), e.g. output_queue_depth:=1000")
    ap.add_argument("--profile", default=None, metavar="DIR",
                    help="sample the node with py-spy during the measured window (raw stacks "
                         "kept in DIR, summary in the report; the profiler costs the node CPU, "
                         "so do not quote that run's timing figures)")
    ap.add_argument("--profile-native", action="store_true",
                    help="with --profile: include native (C) frames")
    ap.add_argument("--output", default=None, help="report file (default bench/results/...)")
    ap.add_argument("--no-save", action="store_true", help="print only")
    ap.add_argument("--json", default=None, help="also dump the raw figures to this file")
    ap.add_argument("--effort", action="store_true",
                    help="JointState carries effort for every joint (for the node's observer: "
                    "add -p observer_enabled:=true)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (node logs)")
    ap.add_argument("--subscriber-executor", choices=("events", "single"), default="events",
                    help="the measuring subscriber's rclpy executor (default events)")
    ap.add_argument("--realtime", action="store_true",
                    help="the node on the last CPU at SCHED_FIFO "
                    f"{NODE_PRIORITY} (-p realtime_priority, -p cpu_affinity), the publisher and "
                    f"the subscriber on the others at SCHED_FIFO {HELPER_PRIORITY}")
    ap.add_argument("--role", choices=("publisher", "subscriber"), help=argparse.SUPPRESS)
    ap.add_argument("--urdf", help=argparse.SUPPRESS)
    ap.add_argument("--odometry", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.role == "publisher":
        return run_publisher(args)
    if args.role == "subscriber":
        return run_subscriber(args)
    if args.duration is None:
        args.duration = 2.0 if args.quick else 10.0
    if args.warm_starts is None:
        args.warm_starts = 1 if args.quick else 5
    if args.duration <= 0 or args.rate <= 0 or args.warm_starts < 1:
        ap.error("--duration, --rate and --warm-starts must be positive")
    args.realtime_split = None
    if args.realtime:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            ap.error("--realtime needs at least two CPUs (the node gets one of its own)")
        args.realtime_split = (cpus[:-1], cpus[-1:])
    try:
        return orchestrate(args)
    except KeyboardInterrupt as exc:
        log(f"interrupted ({exc}); child processes stopped")
        return 130


if __name__ == "__main__":
    sys.exit(main())
