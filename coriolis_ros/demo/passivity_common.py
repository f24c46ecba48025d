"""The scenario shared by the passivity demo's processes (ROS-free).

Plant, controller and runner get the same command-line arguments and build the same robot,
reference trajectory, external push and gains from them, so nothing has to be exchanged at run
time but joint states and torques.

* Robot: a bundled robot or a URDF file (fixed base).
* Reference q_d(t): :class:`~coriolis_ros.demo.trajectory.SinusoidTrajectory` with
  ``margin`` of each joint's half-range (smooth, analytic q̇_d and q̈_d).
* Push: ``push_torque`` on ``push_joint`` from ``push_start`` to ``push_end`` s of simulated
  time.
* Gains: Λ = ``lam`` (1/s) on every joint; K = ``kappa`` · M(q) (see
  :mod:`coriolis_ros.demo.passivity_controller` for why), so the sliding variable s decays
  with the time constant 1/kappa in every direction.
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
    "push_joint": "joint2",
    "push_torque": 10.0,
    "push_start": 2.0,
    "push_end": 4.0,
    "lam": 10.0,
    "kappa": 30.0,
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
    parser.add_argument("--push-joint", default=d["push_joint"], help="joint pushed")
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


def scenario_argv(args) -> list[str]:
    """The scenario arguments of ``args`` as a command line, to pass them to a child."""
    out = []
    for key in DEFAULTS:
        out += ["--" + key.replace("_", "-"), str(getattr(args, key))]
    return out


@dataclass(frozen=True)
class Scenario:
    robot: str = DEFAULTS["robot"]
    seed: int = DEFAULTS["seed"]
    margin: float = DEFAULTS["margin"]
    push_joint: str = DEFAULTS["push_joint"]
    push_torque: float = DEFAULTS["push_torque"]
    push_start: float = DEFAULTS["push_start"]
    push_end: float | None = DEFAULTS["push_end"]
    lam: float = DEFAULTS["lam"]
    kappa: float = DEFAULTS["kappa"]

    def __post_init__(self):
        for name in ("lam", "kappa"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be positive and finite, got {value}")
        if not 0 < self.margin < 1:
            raise ValueError(f"margin must be in (0, 1), got {self.margin}")

    @classmethod
    def from_args(cls, args) -> Scenario:
        end = args.push_end
        return cls(
            robot=args.robot,
            seed=args.seed,
            margin=args.margin,
            push_joint=args.push_joint,
            push_torque=args.push_torque,
            push_start=args.push_start,
            push_end=None if end is None or end < 0 else end,
            lam=args.lam,
            kappa=args.kappa,
        )

    def urdf(self) -> str:
        from coriolis_ros.demo.publisher import load_urdf

        return load_urdf(self.robot)

    def dynamics(self):
        from coriolis_ros.dynamics import Dynamics

        return Dynamics.from_urdf(self.urdf())

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

    def push(self, dyn) -> Push:
        return Push(self.push_index(dyn), self.push_torque, self.push_start, self.push_end)

    def push_description(self, dyn) -> str:
        end = "the end" if self.push_end is None else f"{self.push_end:g} s"
        return (
            f"{self.push_torque:g} N·m on {self.push_joint} from {self.push_start:g} s to {end}"
        )


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
