"""The scenario shared by the passivity demo's processes (ROS-free).

Plant, controller and runner get the same command-line arguments and build the same robot,
reference trajectory, external push and gains from them, so nothing has to be exchanged at run
time but joint states and torques.

* Robot: a bundled robot or a URDF file (fixed base).
* Reference q_d(t): :class:`~coriolis_ros.demo.trajectory.SinusoidTrajectory` with
  ``margin`` of each joint's half-range (smooth, analytic q̇_d and q̈_d).
* Push, from ``push_start`` to ``push_end`` s of simulated time: a world-frame force
  ``push_force`` (N) at the centre of mass of the link ``push_body`` (:class:`BodyPush`; MuJoCo's
  ``xfrc_applied``: what a person leaning on the arm does), or, when ``push_body`` is empty, the
  torque ``push_torque`` on ``push_joint`` (:class:`Push`; MuJoCo's ``qfrc_applied``).
* Controller: ``controller``, a name in
  :data:`coriolis_ros.demo.passivity_controller.CONTROLLERS` (``slotine_li``).
* Gains: Λ = ``lam`` (1/s) on every joint; K = ``kappa`` · M(q) (see
  :mod:`coriolis_ros.demo.passivity_controller` for why), so the sliding variable s decays
  with the time constant 1/kappa in every direction.
* The controller's model: the URDF's inertial parameters, or, with ``parameter_error`` ε > 0,
  every body's ten parameters (mass, first moment, inertia) multiplied by 1 + ε or 1 − ε, the
  sign drawn per body from ``parameter_seed`` (:meth:`Scenario.parameter_factors`; a positive
  factor keeps every body physically consistent).  The plant (MuJoCo) and the coriolis node
  keep the URDF's: the controller alone is wrong.  ``adapt_gain`` is γ of the adaptive
  controller (:mod:`coriolis_ros.demo.passivity_adaptive`).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np


DEFAULTS = {
    "robot": "arm7",
    "seed": 0,
    "margin": 0.3,
    "push_body": "link4",
    "push_force": "0,20,0",
    "push_joint": "joint2",
    "push_torque": 10.0,
    "push_start": 2.0,
    "push_end": 4.0,
    "lam": 10.0,
    "kappa": 30.0,
    "controller": "slotine_li",
    "parameter_error": 0.0,
    "parameter_seed": 3,
    "adapt_gain": 50.0,
}


@dataclass(frozen=True)
class Push:
    """An external torque step: ``torque`` (N·m or N) on DoF ``joint`` (index) from ``start``
    to ``end`` seconds of simulated time (``end`` None: until the end)."""

    joint: int
    torque: float
    start: float
    end: float | None = None

    def __post_init__(self):
        if not (math.isfinite(self.torque) and math.isfinite(self.start) and self.start >= 0):
            raise ValueError(f"push needs a finite torque and a start >= 0, got {self}")
        if self.end is not None and not (math.isfinite(self.end) and self.end > self.start):
            raise ValueError(f"push end must be after its start, got {self}")

    def active(self, t: float) -> bool:
        return t >= self.start and (self.end is None or t < self.end)

    def value(self, t: float, out: np.ndarray) -> np.ndarray:
        """τ_ext at time ``t`` into ``out`` (length nv)."""
        out[:] = 0.0
        if self.active(t):
            out[self.joint] = self.torque
        return out


@dataclass(frozen=True)
class BodyPush:
    """A world-frame force step: ``force`` (N, 3 numbers) at the centre of mass of the link
    ``body`` from ``start`` to ``end`` seconds of simulated time (``end`` None: until the end).
    Its joint torques J(q)ᵀ f change with the posture; the plant computes them (MuJoCo's
    Jacobian) and logs them as the truth the observer is compared with."""

    body: str
    force: tuple
    start: float
    end: float | None = None

    def __post_init__(self):
        force = tuple(float(f) for f in self.force)
        object.__setattr__(self, "force", force)
        if len(force) != 3 or not all(math.isfinite(f) for f in force):
            raise ValueError(f"push force must be 3 finite numbers (N), got {self.force}")
        if not self.body:
            raise ValueError("push body must be a link name")
        if not (math.isfinite(self.start) and self.start >= 0):
            raise ValueError(f"push needs a start >= 0, got {self}")
        if self.end is not None and not (math.isfinite(self.end) and self.end > self.start):
            raise ValueError(f"push end must be after its start, got {self}")

    def active(self, t: float) -> bool:
        return t >= self.start and (self.end is None or t < self.end)

    def value(self, t: float, out: np.ndarray) -> np.ndarray:
        """The force (3,) at time ``t`` into ``out``."""
        out[:] = self.force if self.active(t) else 0.0
        return out


def parse_force(text) -> tuple:
    """'fx,fy,fz' (N) -> a tuple of 3 floats; ValueError otherwise."""
    if isinstance(text, (tuple, list)):
        parts = list(text)
    else:
        parts = [p for p in str(text).replace(" ", ",").split(",") if p]
    try:
        force = tuple(float(p) for p in parts)
    except ValueError:
        raise ValueError(f"push force must be 'fx,fy,fz' in N, got {text!r}") from None
    if len(force) != 3 or not all(math.isfinite(f) for f in force):
        raise ValueError(f"push force must be 'fx,fy,fz' (3 finite numbers, N), got {text!r}")
    return force


def add_scenario_arguments(parser: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    parser.add_argument("--robot", default=d["robot"], help="bundled robot or URDF file")
    parser.add_argument("--seed", type=int, default=d["seed"], help="reference trajectory seed")
    parser.add_argument(
        "--margin",
        type=float,
        default=d["margin"],
        help="reference amplitude, fraction of each joint's half-range (default %(default)s)",
    )
    parser.add_argument(
        "--push-body",
        default=d["push_body"],
        help="link pushed by a world-frame force at its centre of mass (default %(default)s); "
        "empty: push a joint with --push-joint/--push-torque instead",
    )
    parser.add_argument(
        "--push-force",
        default=d["push_force"],
        help="'fx,fy,fz', N, world frame (default %(default)s)",
    )
    parser.add_argument(
        "--push-joint", default=d["push_joint"], help="joint pushed when --push-body is empty"
    )
    parser.add_argument(
        "--push-torque", type=float, default=d["push_torque"], help="N·m (default %(default)s)"
    )
    parser.add_argument(
        "--push-start", type=float, default=d["push_start"], help="s (default %(default)s)"
    )
    parser.add_argument(
        "--push-end",
        type=float,
        default=d["push_end"],
        help="s; a negative value keeps the push on to the end (default %(default)s)",
    )
    parser.add_argument(
        "--lam", type=float, default=d["lam"], help="Λ of the controller, 1/s (default %(default)s)"
    )
    parser.add_argument(
        "--kappa",
        type=float,
        default=d["kappa"],
        help="K = kappa · M(q), 1/s (default %(default)s)",
    )
    parser.add_argument(
        "--controller",
        default=d["controller"],
        help="controller of the loop, a name registered in passivity_controller.CONTROLLERS "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--parameter-error",
        type=float,
        default=d["parameter_error"],
        help="the controller's model: every body's inertial parameters x (1 +- this), the "
        "sign drawn per body from --parameter-seed (default %(default)s: the URDF's)",
    )
    parser.add_argument(
        "--parameter-seed",
        type=int,
        default=d["parameter_seed"],
        help="seed of the per-body signs of --parameter-error (default %(default)s)",
    )
    parser.add_argument(
        "--adapt-gain",
        type=float,
        default=d["adapt_gain"],
        help="gamma of the adaptive controller's P, every body (default %(default)s)",
    )


def scenario_argv(args) -> list[str]:
    """The scenario arguments of ``args`` as a command line, to pass them to a child
    (``--name=value``: a value may start with '-', like a force '-40,0,0')."""
    out = []
    for key in DEFAULTS:
        value = getattr(args, key)
        if key == "push_end" and value is None:
            value = -1.0
        if key == "push_force":
            value = ",".join(repr(float(f)) for f in parse_force(value))
        out.append(f"--{key.replace('_', '-')}={value}")
    return out


@dataclass(frozen=True)
class Scenario:
    robot: str = DEFAULTS["robot"]
    seed: int = DEFAULTS["seed"]
    margin: float = DEFAULTS["margin"]
    push_body: str = DEFAULTS["push_body"]
    push_force: tuple = parse_force(DEFAULTS["push_force"])
    push_joint: str = DEFAULTS["push_joint"]
    push_torque: float = DEFAULTS["push_torque"]
    push_start: float = DEFAULTS["push_start"]
    push_end: float | None = DEFAULTS["push_end"]
    lam: float = DEFAULTS["lam"]
    kappa: float = DEFAULTS["kappa"]
    controller: str = DEFAULTS["controller"]
    parameter_error: float = DEFAULTS["parameter_error"]
    parameter_seed: int = DEFAULTS["parameter_seed"]
    adapt_gain: float = DEFAULTS["adapt_gain"]

    def __post_init__(self):
        object.__setattr__(self, "push_force", parse_force(self.push_force))
        for name in ("lam", "kappa"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be positive and finite, got {value}")
        if not 0 < self.margin < 1:
            raise ValueError(f"margin must be in (0, 1), got {self.margin}")
        if not 0 <= self.parameter_error < 1:  # also NaN
            raise ValueError(f"parameter_error must be in [0, 1), got {self.parameter_error}")
        if not (math.isfinite(self.adapt_gain) and self.adapt_gain >= 0):
            raise ValueError(f"adapt_gain must be finite and >= 0, got {self.adapt_gain}")

    @classmethod
    def from_args(cls, args) -> Scenario:
        end = args.push_end
        return cls(
            robot=args.robot,
            seed=args.seed,
            margin=args.margin,
            push_body=args.push_body,
            push_force=parse_force(args.push_force),
            push_joint=args.push_joint,
            push_torque=args.push_torque,
            push_start=args.push_start,
            push_end=None if end is None or end < 0 else end,
            lam=args.lam,
            kappa=args.kappa,
            controller=args.controller,
            parameter_error=args.parameter_error,
            parameter_seed=args.parameter_seed,
            adapt_gain=args.adapt_gain,
        )

    def urdf(self) -> str:
        from coriolis_ros.demo.publisher import load_urdf

        return load_urdf(self.robot)

    def dynamics(self):
        from coriolis_ros.dynamics import Dynamics

        return Dynamics.from_urdf(self.urdf())

    def parameter_factors(self, dyn) -> np.ndarray:
        """One factor per body of ``dyn.parameter_links``: 1 ± ``parameter_error``, the signs
        drawn from ``parameter_seed`` (all ones without an error)."""
        nb = len(dyn.parameter_links)
        signs = np.random.default_rng(self.parameter_seed).choice([-1.0, 1.0], nb)
        return 1.0 + self.parameter_error * signs

    def controller_parameters(self, dyn) -> np.ndarray:
        """The inertial parameters the controller starts from: ``dyn``'s, each body's ten
        scaled by :meth:`parameter_factors`."""
        return dyn.inertial_parameters() * np.repeat(self.parameter_factors(dyn), 10)

    def controller_model(self, dyn):
        """``dyn`` itself without a parameter error, else a clone holding
        :meth:`controller_parameters`."""
        if self.parameter_error == 0:
            return dyn
        model = dyn.clone()
        model.set_inertial_parameters(self.controller_parameters(dyn))
        return model

    def reference(self, dyn=None) -> Reference:
        """q_d(t) and its derivatives, in ``dyn.joint_names`` order (default: the URDF's)."""
        from coriolis_ros.demo.trajectory import SinusoidTrajectory, dof_joints_from_urdf

        trajectory = SinusoidTrajectory(
            dof_joints_from_urdf(self.urdf()), seed=self.seed, margin=self.margin
        )
        return Reference(trajectory, trajectory.names if dyn is None else dyn.joint_names)

    def push_index(self, dyn) -> int:
        try:
            return dyn.joint_names.index(self.push_joint)
        except ValueError:
            raise ValueError(
                f"push joint {self.push_joint!r} is not a joint of {dyn.name} "
                f"({', '.join(dyn.joint_names)})"
            ) from None

    def push(self, dyn) -> Push | BodyPush:
        """The push: a :class:`BodyPush` when ``push_body`` is set, else a joint :class:`Push`."""
        if self.push_body:
            return BodyPush(self.push_body, self.push_force, self.push_start, self.push_end)
        return Push(self.push_index(dyn), self.push_torque, self.push_start, self.push_end)

    def push_description(self, dyn=None) -> str:
        end = "the end" if self.push_end is None else f"{self.push_end:g} s"
        if self.push_body:
            f = ", ".join(f"{x:g}" for x in self.push_force)
            what = f"({f}) N on {self.push_body}"
        else:
            what = f"{self.push_torque:g} N·m on {self.push_joint}"
        return f"{what} from {self.push_start:g} s to {end}"


class Reference:
    """A :class:`~coriolis_ros.demo.trajectory.SinusoidTrajectory` in a given joint order."""

    def __init__(self, trajectory, names):
        names = tuple(names)
        index = {name: i for i, name in enumerate(trajectory.names)}
        missing = [name for name in names if name not in index]
        if missing or len(names) != len(index):
            raise ValueError(
                f"reference joints {sorted(index)} do not match the model's {list(names)}"
            )
        self.names = names
        self._trajectory = trajectory
        self._order = np.array([index[name] for name in names])

    def position(self, t: float) -> np.ndarray:
        return self._trajectory.position(t)[self._order]

    def velocity(self, t: float) -> np.ndarray:
        return self._trajectory.velocity(t)[self._order]

    def acceleration(self, t: float) -> np.ndarray:
        return self._trajectory.acceleration(t)[self._order]
