"""regressor_batch and energy_regressor_batch: row t equals the single-state call, bitwise.

On a fixed arm, a floating humanoid, an arm with mimic fingers that follow and a velocity
representation other than the default; below and above the size at which batches use
several threads; a bad row named; Pinocchio's regressor as an independent check of one row.
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

from support.oracle import erd_urdf

from coriolis_ros.dynamics import Dynamics

ROBOTS = [("ur5", {}), ("panda", {}), ("solo12", {"root_joint": "floating"}),
          ("solo12", {"root_joint": "floating", "velocity_representation": "mixed"})]  # fmt: skip


def load(name, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Dynamics.from_urdf(str(erd_urdf(name)), **kwargs)


def states(dyn, T, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.array([dyn.integrate(dyn.neutral(), rng.normal(size=dyn.nv)) for _ in range(T)])
    V, R, A = (rng.normal(size=(T, dyn.nv)) for _ in range(3))
    return Q, V, R, A


@pytest.mark.parametrize("T", [5, 40])  # 5 runs on the calling thread, 40 on the threads
@pytest.mark.parametrize("name, kwargs", ROBOTS)
def test_batch_rows_equal_single_calls_bitwise(name, kwargs, T):
    dyn = load(name, **kwargs)
    Q, V, R, A = states(dyn, T)
    Y = dyn.regressor_batch(Q, V, R, A)
    E = dyn.energy_regressor_batch(Q, V)
    p = 10 * len(dyn.parameter_joints)
    assert Y.shape == (T, dyn.nv, p) and E.shape == (T, 2, p)
    for t in range(T):
        assert np.array_equal(Y[t], dyn.regressor(Q[t], V[t], R[t], A[t]))
        assert np.array_equal(E[t], dyn.energy_regressor(Q[t], V[t]))


def test_a_row_matches_pinocchio():
    dyn = load("ur5")
    model = pin.buildModelFromUrdf(str(erd_urdf("ur5")))
    data = model.createData()
    Q, V, _, A = states(dyn, 20, seed=4)
    Y = dyn.regressor_batch(Q, V, V, A)
    for t in (0, 19):
        ref = pin.computeJointTorqueRegressor(model, data, Q[t], V[t], A[t])
        assert np.abs(Y[t] - ref).max() <= 1e-10 * np.abs(ref).max()


def test_a_bad_row_is_named_and_out_is_checked():
    dyn = load("ur5")
    Q, V, R, A = states(dyn, 20)
    A[7, 2] = np.nan
    with pytest.raises(ValueError, match="row 7"):
        dyn.regressor_batch(Q, V, R, A)
    A[7, 2] = 0.0
    V[3, 0] = np.inf
    with pytest.raises(ValueError, match="row 3"):
        dyn.energy_regressor_batch(Q, V)
    V[3, 0] = 0.0
    with pytest.raises(ValueError, match="expected"):
        dyn.regressor_batch(Q, V, R, A, out=np.empty((20, 6, 59)))
    out = np.empty((20, 6, 60))
    assert dyn.regressor_batch(Q, V, R, A, out=out) is out


def test_closed_loop_model_is_refused():
    from importlib.resources import files

    dyn = Dynamics.from_urdf(str(files("coriolis_ros") / "robots" / "four_bar.urdf"))
    Z = np.zeros((3, dyn.nv))
    with pytest.raises(ValueError, match="closed loops"):
        dyn.regressor_batch(np.tile(dyn.neutral(), (3, 1)), Z, Z, Z)
