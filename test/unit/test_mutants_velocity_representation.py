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

from support.floating import MultiDofOracle
from support.oracle import assert_close

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path

PATH = str(robot_path("quadruped12"))
REPS = ("body", "mixed", "inertial")
MAX = 1e50
BEYOND = math.nextafter(MAX, math.inf)
MIN_NORM = 1e-10
HUGE = r"has a NaN, infinite or huge \(beyond ±1e\+50\) entry"
ZERO_NORM = r"quaternion \(q\[3:7\]\) has \(nearly\) zero norm"


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
def test_velocity_conversions_write_and_return_out(dyns, rep):
    dyn = dyns[rep]
    q, nu = state(dyn)
    ref = from_body(rep, q, nu)
    assert_close(dyn.velocity_from_body(q, nu), ref, 1e-14, f"{rep} from body")
    out = np.full(dyn.nv, np.nan)
    assert dyn.velocity_from_body(q, nu, out=out) is out
    assert_close(out, ref, 1e-14, f"{rep} from body, out")
    back = np.full(dyn.nv, np.nan)
    assert dyn.velocity_to_body(q, ref, out=back) is back
    assert_close(back, nu, 1e-14, f"{rep} to body, out")
    assert_close(dyn.velocity_to_body(q, ref), nu, 1e-14, f"{rep} to body")
    for call in (dyn.velocity_from_body, dyn.velocity_to_body):
        with pytest.raises(ValueError, match=rf"out array has shape \({dyn.nv - 1},\)"):
            call(q, nu, out=np.zeros(dyn.nv - 1))
        with pytest.raises(ValueError, match="writeable C-contiguous float64, got ndarray float32"):
            call(q, nu, out=np.zeros(dyn.nv, dtype=np.float32))


@pytest.mark.parametrize("rep", REPS)
def test_velocity_bound_both_sides(dyns, rep):
    dyn = dyns[rep]
    q, nu = state(dyn)
    q[:3] = 0.0  # the inertial change multiplies w by p: at p = 0 the result stays 1e50
    for sign in (1.0, -1.0):
        for j in (0, 5, dyn.nv - 1):
            v = nu.copy()
            v[j] = sign * MAX
            for call in (dyn.velocity_from_body, dyn.velocity_to_body):
                assert np.isfinite(call(q, v)).all()
                v[j] = sign * BEYOND
                with pytest.raises(ValueError, match="v " + HUGE):
                    call(q, v)
                v[j] = sign * MAX
        x = q.copy()
        x[7] = sign * MAX
        assert np.isfinite(dyn.velocity_from_body(x, nu)).all()
        x[7] = sign * BEYOND
        with pytest.raises(ValueError, match="q " + HUGE):
            dyn.velocity_from_body(x, nu)


@pytest.mark.parametrize("rep", ["mixed", "inertial"])
def test_quaternion_norm_bound_both_sides(dyns, rep):
    dyn = dyns[rep]
    q, nu = state(dyn)
    for k in range(3, 7):
        q[3:7] = 0.0
        q[k] = MIN_NORM  # sqrt(q.q) is exactly 1e-10 (a square's root is exact)
        R = se3(q).rotation
        got = dyn.velocity_from_body(q, nu)
        assert_close(got[3:6], R @ nu[3:6], 1e-14, f"{rep} quaternion at the bound")
        assert np.isfinite(dyn.mass_matrix(q)).all()
        q[k] = math.nextafter(MIN_NORM, 0.0)
        for call in (lambda: dyn.velocity_from_body(q, nu), lambda: dyn.mass_matrix(q)):
            with pytest.raises(ValueError, match=ZERO_NORM):
                call()


@pytest.mark.parametrize("rep", ["mixed", "inertial"])
def test_integrate_default_step_is_one(dyns, rep):
    dyn = dyns[rep]
    oracle = MultiDofOracle(PATH, dyn, "floating")
    q, v = state(dyn)
    q[3:7] /= np.linalg.norm(q[3:7])
    nu = to_body(rep, q, v)
    ref = pin.integrate(oracle.model, oracle.q_pin(q), oracle.v_pin(nu))
    got = dyn.integrate(q, v)
    oracle.same_configuration(got, ref, f"{rep} integrate(q, v)")
    half = pin.integrate(oracle.model, oracle.q_pin(q), oracle.v_pin(0.5 * nu))
    oracle.same_configuration(dyn.integrate(q, v, 0.5), half, f"{rep} integrate(q, v, 0.5)")


@pytest.mark.parametrize("rep", ["mixed", "inertial"])
def test_task_space_jdot_is_the_frames_jdot(dyns, rep):
    dyn = dyns[rep]
    q, v = state(dyn)
    foot = dyn.frame_names[-1]
    rows = (0, 2, 4)
    _, _, J, Jd = dyn.task_space(q, v, foot, rows=rows)
    assert_close(J, dyn.frame_jacobian(q, foot)[list(rows)], 1e-12, f"{rep} task J'")
    assert_close(Jd, dyn.frame_jacobian_dot(q, v, foot)[list(rows)], 1e-12, f"{rep} task Jdot'")


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
