"""velocity_representation: what the change-of-variables tests leave open.

The other tests (``test_dynamics_velocity_representation.py``) compare every term with
Pinocchio changed by the transformation law; here, on the quadruped12 model with a floating
base, the rest: ``out=`` of the velocity conversions (returned, filled, checked), the input
bounds on both sides (±1e50 accepted, the next double refused; a quaternion of norm exactly
1e-10 accepted, the next double below refused), ``integrate``'s default step, and the task
space's Jdot' against the frame's own Jdot'.  References: Pinocchio's SE3 action (the
inertial twist is Ad_g nu_B, the mixed one (R v_B, R w_B)) and its ``integrate``.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin  # test-only dependency
import pytest


from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path

PATH = str(robot_path("quadruped12"))
REPS = ("body", "mixed", "inertial")
MAX = 1e50
BEYOND = math.nextafter(MAX, math.inf)
MIN_NORM = 1e-10


@pytest.fixture(scope="module")
def dyns():
    return {rep: Dynamics.from_urdf(PATH, root_joint="floating", velocity_representation=rep)
            for rep in REPS}  # fmt: skip


def state(dyn, seed=3):
    rng = np.random.default_rng(seed)
    q = dyn.neutral()
    quat = rng.normal(size=4)
    q[3:7] = 1.7 * quat / np.linalg.norm(quat)  # not a unit quaternion: normalised inside
    q[:3] = [0.4, -1.2, 0.9]
    q[7:] = rng.uniform(-1.0, 1.0, dyn.nq - 7)
    return q, rng.normal(size=dyn.nv)


def se3(q) -> pin.SE3:
    return pin.XYZQUATToSE3(np.r_[q[:3], q[3:7] / np.linalg.norm(q[3:7])])


def from_body(rep: str, q, nu) -> np.ndarray:
    """nu' of the body velocity nu, from Pinocchio's SE3 of the base."""
    g, out = se3(q), np.array(nu, dtype=float)
    if rep == "mixed":
        out[:3], out[3:6] = g.rotation @ nu[:3], g.rotation @ nu[3:6]
    elif rep == "inertial":
        out[:6] = g.action @ nu[:6]
    return out


def to_body(rep: str, q, v) -> np.ndarray:
    """nu_B of nu' = v (the inverse changes, from Pinocchio's SE3)."""
    g, out = se3(q), np.array(v, dtype=float)
    if rep == "mixed":
        out[:3], out[3:6] = g.rotation.T @ v[:3], g.rotation.T @ v[3:6]
    elif rep == "inertial":
        out[:6] = g.actionInverse @ v[:6]
    return out


@pytest.mark.parametrize("rep", REPS)
def test_a_configuration_of_another_length_is_refused(dyns, rep):
    """velocity_to_body reads the base's seven coordinates only, and still refuses a q that
    is not the model's (it once converted v for a q of 8 or 20 entries)."""
    dyn = dyns[rep]
    q, v = state(dyn)
    for bad in (q[:8], q[:-1], np.r_[q, 0.0]):
        for call in (dyn.velocity_to_body, dyn.velocity_from_body):
            want = rf"q must have shape \({dyn.nq},\), got \({bad.size},\)"
            with pytest.raises(ValueError, match=want):
                call(bad, v)
