"""Simulated robot of the passivity demo: MuJoCo at 1 kHz, published as JointState.

ROS-free core, :class:`MujocoPlant`: the robot compiled by MuJoCo from the same URDF the coriolis
node loads (:class:`~coriolis_ros.demo.mujoco_model.MujocoRobot`: rigid body only, contacts
off), integrated by MuJoCo's RK4 (``mjINT_RK4``) with the torques held constant over each step
(zero-order hold, as a digital controller applies them).  The plant is independent of the
library: MuJoCo computes M, the bias forces, the forward dynamics and the integration with its
own algorithms, so the controller and the observer (which use the library's model) are checked
against another implementation of the physics, not against themselves.  The push is a
:class:`~coriolis_ros.demo.passivity_common.BodyPush` (a world-frame force on a link's centre
of mass, MuJoCo's ``xfrc_applied``) or a joint :class:`Push` (``qfrc_applied``); its joint
torques τ_ext (J(q)ᵀ f from MuJoCo's Jacobian, for a force) are logged as the truth.

:class:`RigidBodyPlant` integrates the library's own model instead (M q̈ = τ + τ_ext − C q̇ − g,
classical RK4); it is no longer the demo's plant, and stays as a small feed for tests of the
node's observer bookkeeping.

ROS process (``python -m coriolis_ros.demo.passivity_plant``, node ``passivity_plant``):

* publishes ``joint_states`` (sensor_msgs/JointState, reliable, depth 1000): position, velocity
  and ``effort`` = the actuator torque τ applied from this stamp to the next one (never τ_ext:
  the push is what the observer has to find).  Stamps are the simulation clock: the stamp of
  the first state plus k × ``--dt`` exactly, so every interval the observer integrates is one
  simulation step;
* subscribes ``joint_commands`` (sensor_msgs/JointState, reliable, depth 10): the controller's
  torque in ``effort`` (``name`` either empty or the plant's joint names in any order;
  ``header.stamp`` the stamp of the state it answers).

Loop (default): publish state k with effort u_k, step with u_k, sleep until the
k + 1-th 1 ms deadline, then wait for the command answering state k: it is u_k+1.  So the
torque computed from a state is applied one step later, always (a digital controller with one
sample of delay; u_0 = 0), and the run is deterministic: it gives the same numbers as the
in-process loop of :func:`coriolis_ros.demo.passivity_analysis.simulate`.  On an idle machine
the loop holds 1 kHz of wall-clock time; on a loaded one it runs slower than real time rather
than change the physics (the simulation clock, and the stamps, stay k × dt).  A command that
does not come within ``--command-timeout`` is counted as missed and the previous one is kept.
``--free-running``: never wait; apply the newest command whatever its age (what a real robot
does; under CPU contention the delay grows and the loop may go unstable).
The deadlines are absolute (a paced sleep loop: rclpy timers do not hold 1 kHz); the command
subscription is served by an executor in a background thread.

Start: the plant waits until ``joint_commands`` has a publisher and ``joint_states`` has
``--wait-subscribers`` subscribers, then ``--settle`` seconds for the connections to complete,
then starts at rest at the reference's initial position.  At the end (``--duration`` of
simulated time, or SIGINT/SIGTERM) it writes its log to ``--log`` (npz: stamps, q, qd, applied
τ, τ_ext, MuJoCo's energies, the work of the actuators and of the push over each step, active
constraint rows, command ages) and exits 0.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
import time

import numpy as np

from coriolis_ros.demo import passivity_common as common
from coriolis_ros.demo.passivity_common import BodyPush, Push

NODE_NAME = "passivity_plant"
STATES_DEPTH = 1000
COMMANDS_DEPTH = 10


class RigidBodyPlant:
    """Fixed-base robot integrated with RK4 under zero-order-hold torques (module docstring).

    ``dyn``: a :class:`~coriolis_ros.dynamics.Dynamics` with nq == nv (its own clone is used);
    ``q0``, ``qd0``: initial state; ``dt``: step (s); ``push``: a :class:`Push` or None.
    State: :attr:`t` (s, k × dt exactly), :attr:`q`, :attr:`qd` (read-only views, updated in
    place by :meth:`step`).
    """

    def __init__(self, dyn, q0, qd0, dt: float = 1e-3, push: Push | None = None):
        if dyn.nq != dyn.nv:
            raise ValueError(
                f"the demo plant simulates fixed-base robots (nq == nv), got nq={dyn.nq}, "
                f"nv={dyn.nv}"
            )
        if not (math.isfinite(dt) and 0 < dt <= 0.1):
            raise ValueError(f"dt must be in (0, 0.1] s, got {dt}")
        n = dyn.nv
        if push is not None and not 0 <= push.joint < n:
            raise ValueError(f"push joint index {push.joint} out of range 0..{n - 1}")
        self._dyn = dyn.clone()
        self.nv = n
        self.dt = float(dt)
        self.push = push
        self.step_count = 0
        self._q = np.array(q0, dtype=np.float64).copy()
        self._qd = np.array(qd0, dtype=np.float64).copy()
        for name, x in (("q0", self._q), ("qd0", self._qd)):
            if x.shape != (n,) or not np.all(np.isfinite(x)):
                raise ValueError(f"{name} must be {n} finite numbers, got {x.tolist()!r}")
        self._M = np.zeros((n, n))
        self._cqd, self._ctqd, self._p, self._g = (np.zeros(n) for _ in range(4))
        self._u = np.zeros(n)  # τ + τ_ext over the current step
        self._tau_ext = np.zeros(n)
        self._kq = [np.zeros(n) for _ in range(4)]
        self._kv = [np.zeros(n) for _ in range(4)]
        self._qs, self._vs = np.zeros(n), np.zeros(n)

    @property
    def t(self) -> float:
        return self.step_count * self.dt

    @property
    def q(self) -> np.ndarray:
        view = self._q.view()
        view.setflags(write=False)
        return view

    @property
    def qd(self) -> np.ndarray:
        view = self._qd.view()
        view.setflags(write=False)
        return view

    def external_torque(self, t: float | None = None) -> np.ndarray:
        """τ_ext held over the step starting at ``t`` (default: now); a fresh array."""
        out = np.zeros(self.nv)
        if self.push is not None:
            self.push.value(self.t if t is None else t, out)
        return out

    def acceleration(self, q, qd, torque, out) -> np.ndarray:
        """q̈ = M(q)⁻¹ (torque − C(q, q̇) q̇ − g(q)) into ``out``; ``torque`` includes τ_ext."""
        dyn = self._dyn
        dyn.mass_matrix(q, out=self._M)
        dyn.coriolis_vectors(q, qd, out=(self._cqd, self._ctqd, self._p))
        dyn.gravity(q, out=self._g)
        out[:] = np.linalg.solve(self._M, torque - self._cqd - self._g)
        return out

    def step(self, tau) -> None:
        """Advance by dt with actuator torque ``tau`` (and the push) held constant (RK4)."""
        tau = np.asarray(tau, dtype=np.float64)
        if tau.shape != (self.nv,) or not np.all(np.isfinite(tau)):
            raise ValueError(f"tau must be {self.nv} finite numbers, got {tau.tolist()!r}")
        if self.push is not None:
            self.push.value(self.t, self._tau_ext)
        np.add(tau, self._tau_ext, out=self._u)
        h = self.dt
        q, v, qs, vs, kq, kv = self._q, self._qd, self._qs, self._vs, self._kq, self._kv
        # k1
        kq[0][:] = v
        self.acceleration(q, v, self._u, kv[0])
        # k2, k3 at the midpoint, k4 at the end
        for i, frac in ((1, 0.5), (2, 0.5), (3, 1.0)):
            np.multiply(kq[i - 1], frac * h, out=qs)
            qs += q
            np.multiply(kv[i - 1], frac * h, out=vs)
            vs += v
            kq[i][:] = vs
            self.acceleration(qs, vs, self._u, kv[i])
        q += (h / 6.0) * (kq[0] + 2.0 * kq[1] + 2.0 * kq[2] + kq[3])
        v += (h / 6.0) * (kv[0] + 2.0 * kv[1] + 2.0 * kv[2] + kv[3])
        self.step_count += 1


class MujocoPlant:
    """The robot in MuJoCo (module docstring), with the interface of :class:`RigidBodyPlant`.

    ``urdf``: the URDF text; ``joint_names``: the order of q, q̇, τ (the library's);
    ``q0``, ``qd0``: initial state; ``dt``: step (s); ``push``: a :class:`Push` (joint index in
    ``joint_names``), a :class:`BodyPush` or None; ``gravity``: world gravity (m/s²).

    State: :attr:`t` (k × dt exactly), :attr:`q`, :attr:`qd` (read-only arrays, new each step).
    After each :meth:`step`: :attr:`last_tau_ext` and :attr:`last_tau_ext_end` (the push's joint
    torques at the start and at the end of the step: the force is held, J(q) moves),
    :attr:`last_work` (actuator and push work over the step, J: τᵀ Δq, and f · Δc for a force
    on a centre of mass c, or τ_extᵀ Δq for a joint push: exact for forces held constant over
    the step), :attr:`constraint_rows` (MuJoCo's active constraint rows: a joint limit).
    """

    def __init__(self, urdf, joint_names, q0, qd0, dt=1e-3, push=None, gravity=(0, 0, -9.81)):
        from coriolis_ros.demo.mujoco_model import MujocoRobot

        self.robot = MujocoRobot(urdf, joint_names, dt, gravity)
        n = self.robot.nv
        self.nv = n
        self.dt = self.robot.dt
        if isinstance(push, Push) and not 0 <= push.joint < n:
            raise ValueError(f"push joint index {push.joint} out of range 0..{n - 1}")
        if isinstance(push, BodyPush):
            self._body = push.body
            self.robot.body_id(push.body)  # ValueError now, not in the loop
        elif push is None or isinstance(push, Push):
            self._body = None
        else:
            raise ValueError(f"push must be a Push, a BodyPush or None, got {push!r}")
        self.push = push
        self.robot.set_state(q0, qd0)
        self.step_count = 0
        self._force = np.zeros(3)
        self._joint = np.zeros(n)
        self.last_tau_ext = np.zeros(n)
        self.last_tau_ext_end = np.zeros(n)
        self.last_work = (0.0, 0.0)
        self.constraint_rows = 0
        self._refresh()

    def _refresh(self):
        self._q = self.robot.q()
        self._qd = self.robot.qd()
        for x in (self._q, self._qd):
            x.setflags(write=False)

    @property
    def t(self) -> float:
        return self.step_count * self.dt

    @property
    def q(self) -> np.ndarray:
        return self._q

    @property
    def qd(self) -> np.ndarray:
        return self._qd

    def energy(self) -> tuple[float, float]:
        """MuJoCo's (potential, kinetic) energy of the current state (J)."""
        return self.robot.energy()

    def external_torque(self, t: float | None = None) -> np.ndarray:
        """τ_ext of the push held over the step starting at ``t`` (default: now), at the
        current posture; a fresh array."""
        t = self.t if t is None else t
        out = np.zeros(self.nv)
        if isinstance(self.push, Push):
            self.push.value(t, out)
        elif self._body is not None and self.push.active(t):
            out[:] = self.robot.body_force_torque(self._body, self.push.force)
        return out

    def step(self, tau) -> None:
        """Advance by dt with actuator torque ``tau`` and the push held constant (MuJoCo RK4)."""
        robot = self.robot
        tau = robot.vector(tau, "tau")
        t = self.t
        self.last_tau_ext = self.external_torque(t)
        q0 = self._q
        body = None
        joint = None
        if isinstance(self.push, Push):
            joint = self.push.value(t, self._joint)
        elif self._body is not None:
            body = self._body
            self.push.value(t, self._force)
            c0 = robot.body_position(body)
        robot.step(tau, joint_push=joint, body=body, force=self._force)
        self.constraint_rows = robot.constraint_count
        self.step_count += 1
        self._refresh()
        dq = self._q - q0
        work_tau = float(tau @ dq)
        if body is not None:
            work_push = float(self._force @ (robot.body_position(body) - c0))
            self.last_tau_ext_end = robot.body_force_torque(body, self._force)
        else:
            work_push = float(self.last_tau_ext @ dq)
            self.last_tau_ext_end = self.last_tau_ext.copy()
        self.last_work = (work_tau, work_push)


# ====================================================================== ROS process


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m coriolis_ros.demo.passivity_plant",
        description="Simulated robot: MuJoCo (RK4) at 1 kHz, JointState out, torque in.",
    )
    common.add_scenario_arguments(parser)
    parser.add_argument("--dt", type=float, default=1e-3, help="step in s (default 0.001)")
    parser.add_argument("--duration", type=float, required=True, help="simulated seconds")
    parser.add_argument("--log", required=True, help="npz file written at the end")
    parser.add_argument(
        "--wait-subscribers",
        type=int,
        default=2,
        help="joint_states subscribers to wait for before starting (default 2: controller "
        "and coriolis node)",
    )
    parser.add_argument(
        "--settle", type=float, default=0.5, help="seconds to wait after the peers appear"
    )
    parser.add_argument(
        "--wait-timeout", type=float, default=60.0, help="give up waiting for peers after this"
    )
    parser.add_argument(
        "--free-running",
        action="store_true",
        help="apply the newest command whatever its age (default: wait for the answer to the "
        "previous state, one step of delay)",
    )
    parser.add_argument(
        "--command-timeout",
        type=float,
        default=1.0,
        help="seconds to wait for a command in the default mode before keeping the old one",
    )
    return parser


class _CommandSlot:
    """The newest controller command, written by the executor thread, read by the loop."""

    def __init__(self, names):
        self.names = tuple(names)
        self.index = {name: i for i, name in enumerate(self.names)}
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.tau = np.zeros(len(self.names))
        self.answered_ns = -1  # stamp (ns) of the state the newest command answers
        self.count = 0
        self.rejected = 0

    def on_command(self, msg) -> None:
        n = len(self.names)
        effort = msg.effort
        if len(effort) != n:
            self.rejected += 1
            return
        tau = np.asarray(effort, dtype=np.float64)
        if msg.name and list(msg.name) != list(self.names):
            try:
                order = [self.index[name] for name in msg.name]
            except KeyError:
                self.rejected += 1
                return
            if len(set(order)) != n:
                self.rejected += 1
                return
            mapped = np.empty(n)
            mapped[order] = tau
            tau = mapped
        if not np.all(np.isfinite(tau)):
            self.rejected += 1
            return
        stamp = msg.header.stamp
        with self.lock:
            self.tau = tau
            self.answered_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
            self.count += 1
            self.arrived.notify_all()

    def latest(self):
        with self.lock:
            return self.tau, self.answered_ns

    def wait_for(self, stamp_ns: int, timeout: float) -> bool:
        """Wait until a command answering the state stamped ``stamp_ns`` (or later) is in."""
        with self.lock:
            return self.arrived.wait_for(lambda: self.answered_ns >= stamp_ns, timeout)


def main(argv=None) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from rclpy.utilities import remove_ros_args

    argv = list(sys.argv if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(remove_ros_args(argv)[1:])
    try:
        scenario = common.Scenario.from_args(args)
        if not (math.isfinite(args.duration) and args.duration > 0):
            raise ValueError(f"--duration must be > 0 s, got {args.duration}")
        dyn = scenario.dynamics()
        reference = scenario.reference(dyn)
        plant = MujocoPlant(scenario.urdf(), dyn.joint_names, reference.position(0.0),
                            np.zeros(dyn.nv), args.dt, scenario.push(dyn),
                            dyn.gravity_vector)  # fmt: skip
    except ValueError as exc:
        print(f"{NODE_NAME}: error: {exc}", file=sys.stderr)
        return 2

    stop = []
    signal.signal(signal.SIGINT, lambda signum, _f: stop.append(signum))
    signal.signal(signal.SIGTERM, lambda signum, _f: stop.append(signum))

    from sensor_msgs.msg import JointState

    steps = int(round(args.duration / args.dt))
    n = dyn.nv
    log = {
        "stamp_ns": np.zeros(steps + 1, dtype=np.int64),
        "q": np.zeros((steps + 1, n)),
        "qd": np.zeros((steps + 1, n)),
        "tau": np.zeros((steps + 1, n)),
        "tau_ext": np.zeros((steps + 1, n)),
        "energy": np.zeros((steps + 1, 2)),
        "work": np.zeros((steps + 1, 2)),
        "tau_ext_end": np.zeros((steps + 1, n)),
        "constraint_rows": np.zeros(steps + 1, dtype=np.int64),
        "command_age_ns": np.full(steps + 1, -1, dtype=np.int64),
        "late_s": np.zeros(steps + 1),
    }
    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor = None
    spinner = None
    logged = 0
    status = 0
    extras = {}
    try:
        node = rclpy.create_node(NODE_NAME)
        logger = node.get_logger()
        slot = _CommandSlot(dyn.joint_names)
        reliable = QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.VOLATILE,
            depth=STATES_DEPTH,
        )
        states_pub = node.create_publisher(JointState, "joint_states", reliable)
        commands = QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.VOLATILE,
            depth=COMMANDS_DEPTH,
        )
        node.create_subscription(JointState, "joint_commands", slot.on_command, commands)
        executor = SingleThreadedExecutor()
        executor.add_node(node)

        def spin():
            try:
                executor.spin()
            except (ExternalShutdownException, rclpy.executors.ShutdownException):
                pass

        spinner = threading.Thread(target=spin, name="plant-executor", daemon=True)
        spinner.start()

        # Wait for the controller and the node.
        deadline = time.monotonic() + args.wait_timeout
        while not stop:
            subs = node.count_subscribers(states_pub.topic_name)
            pubs = node.count_publishers(node.resolve_topic_name("joint_commands"))
            if subs >= args.wait_subscribers and pubs >= 1:
                break
            if time.monotonic() > deadline:
                logger.error(
                    f"gave up after {args.wait_timeout:g} s: joint_states has {subs} of "
                    f"{args.wait_subscribers} subscribers, joint_commands {pubs} publishers"
                )
                return 1
            time.sleep(0.05)
        time.sleep(args.settle)
        if stop:
            return 0

        msg = JointState()
        msg.name = list(dyn.joint_names)
        clock = node.get_clock()
        t0_ns = clock.now().nanoseconds
        dt_ns = int(round(args.dt * 1e9))
        logger.info(
            f"simulating {dyn.name} ({n} DoF) in MuJoCo, RK4 at {1.0 / args.dt:g} Hz for "
            f"{args.duration:g} s, push {scenario.push_description(dyn)}"
        )
        start = time.monotonic()
        k = 0
        missed = 0
        while not stop and k <= steps:
            tau, answered_ns = slot.latest()
            stamp_ns = t0_ns + k * dt_ns
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
            msg.position = plant.q.tolist()
            msg.velocity = plant.qd.tolist()
            msg.effort = tau.tolist()
            states_pub.publish(msg)
            log["stamp_ns"][k] = stamp_ns
            log["q"][k] = plant.q
            log["qd"][k] = plant.qd
            log["tau"][k] = tau
            log["tau_ext"][k] = plant.external_torque()
            log["energy"][k] = plant.energy()
            log["constraint_rows"][k] = plant.constraint_rows
            log["command_age_ns"][k] = stamp_ns - answered_ns if answered_ns >= 0 else -1
            logged = k + 1
            if k == steps:
                break
            try:
                plant.step(tau)
            except ValueError as exc:  # diverged: the log so far is kept, the run failed
                logger.error(str(exc))
                status = 1
                break
            k += 1
            log["work"][k] = plant.last_work  # over [k-1, k]
            log["tau_ext_end"][k] = plant.last_tau_ext_end  # the push of [k-1, k] at k
            delay = start + k * args.dt - time.monotonic()
            log["late_s"][k] = max(0.0, -delay)
            if delay > 0:
                time.sleep(delay)
            if not args.free_running and not slot.wait_for(stamp_ns, args.command_timeout):
                missed += 1
        wall = time.monotonic() - start
        late = log["late_s"][:logged]
        logger.info(
            f"done: {logged} states published, {slot.count} commands received "
            f"({slot.rejected} rejected, {missed} missed), {plant.t:g} s simulated in "
            f"{wall:.2f} s of wall-clock time, lateness p50 {np.median(late) * 1e3:.2f} ms, "
            f"max {late.max() * 1e3:.1f} ms"
        )
        extras["missed"] = np.array(missed)
        extras["wall_s"] = np.array(wall)
    finally:
        if logged:
            np.savez(args.log, **{key: value[:logged] for key, value in log.items()}, **extras)
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        if spinner is not None:
            spinner.join(timeout=2.0)
    return status


if __name__ == "__main__":
    sys.exit(main())
