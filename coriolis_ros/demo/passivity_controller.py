"""Slotine–Li tracking controller of the passivity demo, with the library in-process.

ROS-free core, :class:`SlotineLiController` (Slotine & Li, "On the adaptive control of robot
manipulators", IJRR 1987, with known parameters): for the reference q_d(t),

    e = q − q_d,   q̇_r = q̇_d − Λ e,   q̈_r = q̈_d − Λ ė,   s = q̇ − q̇_r = ė + Λ e,
    τ = M(q) q̈_r + C(q, q̇) q̇_r + g(q) − K s,   K = κ M(q),

computed as one call ``Dynamics.slotine_li(q, q̇, q̇_r, q̈_r − κ s)`` in O(N): the model terms
are linear in q̈_r, so the damping −κ M(q) s comes out of the same recursion and neither M nor C
is formed.  With the Christoffel-consistent C (Ṁ − 2C skew-symmetric) the closed loop
M ṡ + C s + K s = τ_ext is passive: the storage function V = ½ sᵀ M(q) s obeys

    V̇ = −sᵀ K s + sᵀ τ_ext = −2κ V + sᵀ τ_ext,

so without a push V decays as e^(−2κt), and a push τ_ext can add at most sᵀ τ_ext.

Why K = κ M(q) and not a constant diagonal K: the loop is closed at 1 kHz with the torque held
over each period, which is stable only while h · λ_max(M⁻¹ K) < 2.  A diagonal K scaled by the
joints' own inertias (κ diag M, κ = 30/s) gives λ_max(M⁻¹ K) ≈ 2800/s on the 7-DoF arm, because
the wrist's coupled inertia is far smaller than its diagonal suggests: it diverges.  With
K = κ M(q), M⁻¹ K = κ I exactly, at every configuration.

Other controllers (the hook): :data:`CONTROLLERS` maps the scenario's ``--controller`` name
(``slotine_li``, ``adaptive``: :mod:`coriolis_ros.demo.passivity_adaptive`) to a factory
``factory(dyn, reference, scenario) -> controller``; :func:`make_controller` is
what the ROS process and :func:`coriolis_ros.demo.passivity_analysis.simulate` call.  A
controller provides ``torque(t, q, qd) -> τ`` (an array it may overwrite on the next call) and
the attributes ``e``, ``s`` (the last call's tracking error and sliding variable, nv each); it
may provide ``log_row() -> dict[str, ndarray]`` (fixed shapes), logged per answered state next to
τ (for an adaptive controller: its parameter estimate π̂), and ``reset()``, called after the
warm-up call.  ``dyn`` is the nominal model the
controller is given (the plant's truth is MuJoCo's): with ``--parameter-error`` its inertial
parameters are wrong (:meth:`~coriolis_ros.demo.passivity_common.Scenario.controller_model`),
for every controller.  The analysis's energy balance (V = ½ sᵀ M s with the true M) holds for any
controller; for an adaptive one its storage adds ½ π̃ᵀ P⁻¹ π̃, which only the controller knows.

ROS process (``python -m coriolis_ros.demo.passivity_controller``, node
``passivity_controller``): the newest ``joint_states`` message (sensor_msgs/JointState,
reliable, depth 1: when the controller falls behind it answers the newest state, never a stale
queue) is answered at once on ``joint_commands`` (sensor_msgs/JointState: ``name`` the model's
joints, ``effort`` = τ, ``header.stamp`` = the stamp of the state answered).  The reference
time is the state's stamp minus the stamp of the first state received (the plant's stamps are
its simulation clock).  At the end (SIGINT/SIGTERM) it writes its log to ``--log`` (npz: stamps,
reference time, q_d, q̇_d, e, s, τ, compute time).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

NODE_NAME = "passivity_controller"
STATES_DEPTH = 1  # answer the newest state only
COMMANDS_DEPTH = 10


class SlotineLiController:
    """τ = slotine_li(q, q̇, q̇_r, q̈_r) − K s for a reference (module docstring).

    ``dyn``: a :class:`~coriolis_ros.dynamics.Dynamics` (its own clone is used);
    ``reference``: an object with ``position(t)``, ``velocity(t)``, ``acceleration(t)`` in
    ``dyn.joint_names`` order; ``lam``: Λ (1/s), a scalar or one per joint; ``kappa``: κ (1/s)
    of K = κ M(q), a scalar; all positive.  :meth:`torque` returns a preallocated array
    (overwritten by the next call); :attr:`e` and :attr:`s` hold the last call's errors.
    """

    def __init__(self, dyn, reference, lam, kappa):
        from coriolis_ros.dynamics.errors import plain  # numbers as numbers in the messages

        n = dyn.nv
        if dyn.nq != n:
            raise ValueError("the demo controller is for fixed-base robots (nq == nv)")
        self._dyn = dyn.clone()
        self.reference = reference
        self.lam = _positive(lam, n, "lam")
        if isinstance(kappa, bool) or not (np.ndim(kappa) == 0 and float(kappa) > 0):
            raise ValueError(f"kappa must be one positive number (1/s), got {plain(kappa)!r}")
        self.kappa = float(kappa)
        if not np.isfinite(self.kappa):
            raise ValueError(f"kappa must be finite, got {plain(kappa)!r}")
        self.e, self.ed, self.s = np.zeros(n), np.zeros(n), np.zeros(n)
        self.q_d, self.qd_d = np.zeros(n), np.zeros(n)
        self._qd_r, self._qdd_r, self._qdd_k = np.zeros(n), np.zeros(n), np.zeros(n)
        self._tau = np.zeros(n)

    def torque(self, t: float, q, qd) -> np.ndarray:
        ref = self.reference
        self.q_d[:] = ref.position(t)
        self.qd_d[:] = ref.velocity(t)
        qdd_d = ref.acceleration(t)
        np.subtract(q, self.q_d, out=self.e)
        np.subtract(qd, self.qd_d, out=self.ed)
        np.multiply(self.lam, self.e, out=self._qd_r)
        np.subtract(self.qd_d, self._qd_r, out=self._qd_r)  # q̇_r = q̇_d − Λ e
        np.multiply(self.lam, self.ed, out=self._qdd_r)
        np.subtract(qdd_d, self._qdd_r, out=self._qdd_r)  # q̈_r = q̈_d − Λ ė
        np.subtract(qd, self._qd_r, out=self.s)  # s = ė + Λ e
        np.multiply(self.s, -self.kappa, out=self._qdd_k)
        self._qdd_k += self._qdd_r  # q̈_r − κ s: M(q) (q̈_r − κ s) = M q̈_r − K s
        self._dyn.slotine_li(q, qd, self._qd_r, self._qdd_k, out=self._tau)
        return self._tau


def _adaptive(dyn, reference, scenario):
    from coriolis_ros.demo.passivity_adaptive import AdaptiveSlotineLi

    return AdaptiveSlotineLi(dyn, reference, scenario)


CONTROLLERS = {
    "slotine_li": lambda dyn, reference, scenario: SlotineLiController(
        dyn, reference, scenario.lam, scenario.kappa
    ),
    "adaptive": _adaptive,
}


def register_controller(name: str, factory) -> None:
    """Add ``factory(dyn, reference, scenario) -> controller`` under ``name`` (module
    docstring: the protocol); a name already taken is a ValueError."""
    if not isinstance(name, str) or not name or name in CONTROLLERS:
        raise ValueError(f"controller name must be new and non-empty, got {name!r}")
    CONTROLLERS[name] = factory


def make_controller(dyn, reference, scenario):
    """The controller named by ``scenario.controller`` (:data:`CONTROLLERS`), given the model
    ``scenario.controller_model(dyn)`` (``dyn`` with the scenario's parameter error)."""
    try:
        factory = CONTROLLERS[scenario.controller]
    except KeyError:
        raise ValueError(
            f"unknown controller {scenario.controller!r} (known: {', '.join(sorted(CONTROLLERS))})"
        ) from None
    return factory(scenario.controller_model(dyn), reference, scenario)


def _positive(value, n: int, name: str) -> np.ndarray:
    from coriolis_ros.dynamics.errors import plain  # numbers as numbers in the message

    arr = np.array(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,) or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        got = plain(value)
        raise ValueError(f"{name} must be positive and finite, one value or {n}, got {got!r}")
    return arr


# ====================================================================== ROS process


def build_parser() -> argparse.ArgumentParser:
    from coriolis_ros.demo import passivity_common as common

    parser = argparse.ArgumentParser(
        prog="python -m coriolis_ros.demo.passivity_controller",
        description="Slotine-Li tracking controller: joint_states in, joint_commands out.",
    )
    common.add_scenario_arguments(parser)
    parser.add_argument("--log", required=True, help="npz file written at the end")
    parser.add_argument(
        "--max-states", type=int, default=200_000, help="log capacity (states)"
    )
    return parser


class _Loop:
    def __init__(self, controller, publisher, msg, capacity, n):
        self.controller = controller
        self.publisher = publisher
        self.msg = msg
        self.t0_ns = None
        self.count = 0
        self.n = n
        self.log = {
            "stamp_ns": np.zeros(capacity, dtype=np.int64),
            "t_ref": np.zeros(capacity),
            "q_d": np.zeros((capacity, n)),
            "qd_d": np.zeros((capacity, n)),
            "e": np.zeros((capacity, n)),
            "s": np.zeros((capacity, n)),
            "tau": np.zeros((capacity, n)),
            "compute_s": np.zeros(capacity),
        }
        self.rejected = 0
        self.extra = None  # the controller's log_row() arrays, allocated at the first row

    def on_state(self, state) -> None:
        n = self.n
        if len(state.position) != n or len(state.velocity) != n:
            self.rejected += 1
            return
        stamp_ns = state.header.stamp.sec * 1_000_000_000 + state.header.stamp.nanosec
        if self.t0_ns is None:
            self.t0_ns = stamp_ns
        t = (stamp_ns - self.t0_ns) * 1e-9
        start = time.perf_counter()
        # array.array -> ndarray views without copies
        tau = self.controller.torque(t, np.asarray(state.position), np.asarray(state.velocity))
        msg = self.msg
        msg.header.stamp = state.header.stamp
        msg.effort = tau.tolist()
        self.publisher.publish(msg)
        elapsed = time.perf_counter() - start
        i = self.count
        if i < len(self.log["stamp_ns"]):
            c, log = self.controller, self.log
            log["stamp_ns"][i] = stamp_ns
            log["t_ref"][i] = t
            log["q_d"][i] = c.q_d
            log["qd_d"][i] = c.qd_d
            log["e"][i] = c.e
            log["s"][i] = c.s
            log["tau"][i] = tau
            log["compute_s"][i] = elapsed
            if hasattr(c, "log_row"):
                row = c.log_row()
                if self.extra is None:
                    capacity = len(log["stamp_ns"])
                    self.extra = {f"controller_{k}": np.zeros((capacity, *np.shape(v)))
                                  for k, v in row.items()}  # fmt: skip
                for k, v in row.items():
                    self.extra[f"controller_{k}"][i] = v
            self.count += 1


def main(argv=None) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.utilities import remove_ros_args

    from coriolis_ros.demo import passivity_common as common

    argv = list(sys.argv if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(remove_ros_args(argv)[1:])
    try:
        scenario = common.Scenario.from_args(args)
        dyn = scenario.dynamics()
        reference = scenario.reference(dyn)
        controller = make_controller(dyn, reference, scenario)
        dyn.warmup()
        controller.torque(0.0, reference.position(0.0), reference.velocity(0.0))  # warm up
        if hasattr(controller, "reset"):  # an adaptive one forgets the warm-up call
            controller.reset()
    except ValueError as exc:
        print(f"{NODE_NAME}: error: {exc}", file=sys.stderr)
        return 2

    from sensor_msgs.msg import JointState

    rclpy.init(args=argv)  # SIGINT and SIGTERM end spin with ExternalShutdownException
    node = None
    loop = None
    try:
        node = rclpy.create_node(NODE_NAME)
        qos = QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.VOLATILE,
            depth=COMMANDS_DEPTH,
        )
        publisher = node.create_publisher(JointState, "joint_commands", qos)
        msg = JointState()
        msg.name = list(dyn.joint_names)
        loop = _Loop(controller, publisher, msg, args.max_states, dyn.nv)
        states_qos = QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.VOLATILE,
            depth=STATES_DEPTH,
        )
        node.create_subscription(JointState, "joint_states", loop.on_state, states_qos)
        node.get_logger().info(
            f"{scenario.controller} on {dyn.name}: Lambda {scenario.lam:g} 1/s, "
            f"K = {scenario.kappa:g} M(q) 1/s, parameter error {scenario.parameter_error:g}"
        )
        try:
            rclpy.spin(node)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
    finally:
        if loop is not None and loop.count:
            logs = {**loop.log, **(loop.extra or {})}
            np.savez(args.log, **{key: v[: loop.count] for key, v in logs.items()})
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
