"""identify: inertial parameters from recorded motion, physically consistent.

The data come from Pinocchio (``rnea`` along exciting trajectories of the UR5, with the
URDF's parameters: the truth), never from the code under test; the model handed to
``identify`` starts from parameters 40-150 % wrong.  Checked: torques predicted on a
different trajectory (Pinocchio's, again), every body consistent (the library's own check
and the pseudo-inertia's eigenvalues), plain least squares on noisy data giving an
inconsistent body where ``identify`` does not, identifiability against Pinocchio (a
parameter reported as not identifiable changes no torque), and every bad input.
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

from support.trajectories import sinusoids
from support.oracle import erd_urdf

from coriolis_ros.dynamics import Dynamics, identify
from coriolis_ros.dynamics.parameters import pseudo_inertia

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)


@pytest.fixture(scope="module")
def ur5():
    path = str(erd_urdf("ur5"))
    model = pin.buildModelFromUrdf(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dyn = Dynamics.from_urdf(path)
    return model, dyn


def trajectory(model, T, seed, dt):
    """Three sinusoids per joint: t, q, qd, qdd and Pinocchio's inverse dynamics."""
    return sinusoids(model, T, seed, dt, freq=(0.1, 0.6), amp=(0.2, 0.6))


def wrong_model(dyn, seed=1):
    """A clone whose bodies are each scaled by a factor in [0.6, 1.5] (still consistent)."""
    wrong = dyn.clone()
    pi = dyn.inertial_parameters()
    rng = np.random.default_rng(seed)
    for b in range(pi.size // 10):
        pi[10 * b : 10 * b + 10] *= rng.uniform(0.6, 1.5)
    wrong.set_inertial_parameters(pi)
    return wrong


def predicted_error(model, dyn, parameters, seed=5):
    """max |tau_predicted - tau_pinocchio| / max |tau_pinocchio| on another trajectory."""
    t, Q, V, A, TAU = trajectory(model, 300, seed, 0.01)
    check = dyn.clone()
    check.set_inertial_parameters(parameters)  # refuses an inconsistent body
    pred = np.array([check.inverse_dynamics(Q[k], V[k], A[k]) for k in range(len(t))])
    return np.abs(pred - TAU).max() / np.abs(TAU).max()


def min_eigenvalues(pi):
    return np.array(
        [
            np.linalg.eigvalsh(pseudo_inertia(pi[10 * b : 10 * b + 10]))[0]
            for b in range(pi.size // 10)
        ]
    )


def test_exact_data_give_the_torques_of_the_truth(ur5):
    model, dyn = ur5
    t, Q, V, A, TAU = trajectory(model, 1500, 0, 0.004)
    start = wrong_model(dyn)
    assert predicted_error(model, dyn, start.inertial_parameters()) > 0.05  # really wrong
    result = identify(start, t, Q, V, TAU, QDD=A, prior_weight=1e-10)
    assert result.relative_residual < 1e-7
    assert predicted_error(model, dyn, result.parameters) < 1e-6
    assert np.all(min_eigenvalues(result.parameters) > 0)
    assert np.all(np.isfinite(result.spread)) and np.all(result.spread >= 0)
    assert result.rank == 36  # UR5: 36 base parameters of 60 (Pinocchio agrees below)
    assert result.samples == 1500
    assert np.array_equal(start.inertial_parameters(), wrong_model(dyn).inertial_parameters())


def test_rank_matches_pinocchio_regressor(ur5):
    model, _ = ur5
    data = model.createData()
    _, Q, V, A, _ = trajectory(model, 200, 0, 0.03)
    W = np.vstack(
        [pin.computeJointTorqueRegressor(model, data, Q[k], V[k], A[k]) for k in range(200)]
    )
    s = np.linalg.svd(W, compute_uv=False)
    assert int(np.sum(s > 1e-9 * s[0])) == 36


def test_identifiability_agrees_with_pinocchio(ur5):
    """The shoulder link's mass turns about the vertical first axis: no torque depends on it
    (identifiability 0); the upper arm's first moment along x carries its gravity torque
    (identifiability 1).  Pinocchio confirms both by changing the parameter."""
    model, dyn = ur5
    t, Q, V, A, TAU = trajectory(model, 600, 0, 0.01)
    result = identify(dyn, t, Q, V, TAU, QDD=A, prior_weight=1e-10)
    assert result.identifiability[0] < 1e-6
    assert result.identifiability[10 + 1] > 0.99
    data = model.createData()
    for joint, index, changes in ((1, 0, False), (2, 1, True)):
        moved = model.copy()
        p = moved.inertias[joint].toDynamicParameters()
        p[index] += 0.5
        moved.inertias[joint] = pin.Inertia.FromDynamicParameters(p)
        d2 = moved.createData()
        diff = max(
            np.abs(
                pin.rnea(moved, d2, Q[k], V[k], A[k]) - pin.rnea(model, data, Q[k], V[k], A[k])
            ).max()
            for k in range(0, 600, 50)
        )
        assert (diff > 1e-3) == changes, (joint, index, diff)


def test_noisy_data_plain_least_squares_inconsistent_identify_not(ur5):
    model, dyn = ur5
    t, Q, V, A, TAU = trajectory(model, 800, 0, 0.008)
    noisy = TAU + np.random.default_rng(3).normal(0.0, 0.02 * np.abs(TAU).max(), TAU.shape)
    W = np.vstack([dyn.regressor(Q[k], V[k], V[k], A[k]) for k in range(len(t))])
    plain = np.linalg.lstsq(W, noisy.reshape(-1), rcond=None)[0]
    assert min_eigenvalues(plain).min() < 0  # what identify exists to prevent
    result = identify(wrong_model(dyn), t, Q, V, noisy, QDD=A)
    assert np.all(min_eigenvalues(result.parameters) > 0)
    assert predicted_error(model, dyn, result.parameters) < 0.02
    # the residual is the noise: about 2 % of max |tau| per sample
    assert 0.5 < result.residual_rms.max() / (0.02 * np.abs(TAU).max()) < 1.5


def test_accelerations_by_central_differences(ur5):
    model, dyn = ur5
    t, Q, V, A, TAU = trajectory(model, 2000, 0, 0.0025)
    result = identify(wrong_model(dyn), t, Q, V, TAU, prior_weight=1e-10)
    assert result.samples == 1998  # the first and last samples have no central difference
    assert predicted_error(model, dyn, result.parameters) < 1e-3


def test_prior_defaults_to_the_models_parameters(ur5):
    model, dyn = ur5
    t, Q, V, A, TAU = trajectory(model, 200, 0, 0.02)
    wrong = wrong_model(dyn)
    a = identify(wrong, t, Q, V, TAU, QDD=A)
    b = identify(wrong, t, Q, V, TAU, QDD=A, prior=wrong.inertial_parameters())
    c = identify(wrong, t, Q, V, TAU, QDD=A, prior=dyn.inertial_parameters())
    assert np.array_equal(a.parameters, b.parameters)
    assert not np.array_equal(a.parameters, c.parameters)


def test_window_smooths_both_sides(ur5):
    model, dyn = ur5
    t, Q, V, A, TAU = trajectory(model, 300, 0, 0.01)
    assert identify(dyn, t, Q, V, TAU, QDD=A, window=5).samples == 300
    with pytest.raises(ValueError, match="window must be an integer >= 1"):
        identify(dyn, t, Q, V, TAU, QDD=A, window=0)
    identify(dyn, t, Q, V, TAU, QDD=A, window=1)


def test_bad_input_is_refused_by_name(ur5):
    model, dyn = ur5
    t, Q, V, A, TAU = trajectory(model, 20, 0, 0.01)
    bad_t = t.copy()
    bad_t[5] = bad_t[4]
    with pytest.raises(ValueError, match=r"t must increase strictly: t\[5\]"):
        identify(dyn, bad_t, Q, V, TAU, QDD=A)
    bad_t[5] = np.nextafter(bad_t[4], np.inf)  # the other side of the bound: accepted
    identify(dyn, bad_t, Q, V, TAU, QDD=A)
    nan = TAU.copy()
    nan[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"TAU has a NaN or infinite entry at \(3, 2\)"):
        identify(dyn, t, Q, V, nan, QDD=A)
    with pytest.raises(ValueError, match=r"V must have shape \(20, 6\)"):
        identify(dyn, t, Q, V[:, :5], TAU, QDD=A)
    with pytest.raises(ValueError, match="at least 3 samples"):
        identify(dyn, t[:2], Q[:2], V[:2], TAU[:2])
    assert identify(dyn, t[:3], Q[:3], V[:3], TAU[:3]).samples == 1
    with pytest.raises(ValueError, match="prior must have 60 entries"):
        identify(dyn, t, Q, V, TAU, QDD=A, prior=np.ones(59))
    with pytest.raises(ValueError, match="prior_weight must be a finite number >= 0"):
        identify(dyn, t, Q, V, TAU, QDD=A, prior_weight=-1e-9)
    identify(dyn, t, Q, V, TAU, QDD=A, prior_weight=0.0)
    with pytest.raises(TypeError, match="dyn must be a Dynamics"):
        identify("ur5", t, Q, V, TAU)


def test_closed_loop_model_is_refused():
    from importlib.resources import files

    dyn = Dynamics.from_urdf(str(files("coriolis_ros") / "robots" / "four_bar.urdf"))
    n = dyn.nv
    z = np.zeros((5, n))
    with pytest.raises(ValueError, match="not available for closed-loop models"):
        identify(dyn, np.arange(5.0), np.tile(dyn.neutral(), (5, 1)), z, z)


def test_cli_identifies_from_a_bag(ur5, tmp_path):
    """``coriolis-ros identify``: a bag of the UR5's joint states with Pinocchio's torques as
    efforts; the JSON parameters predict Pinocchio's torques on another trajectory."""
    import json

    from support.bag_helpers import trajectory_bag

    from coriolis_ros.cli import main

    model, dyn = ur5
    t, Q, V, A, TAU = trajectory(model, 1500, 0, 0.002)
    stamps = 1_700_000_000 * 10**9 + np.round(t * 1e9).astype(np.int64)
    effort = [list(e) for e in TAU]
    urdf = str(erd_urdf("ur5"))
    bag = trajectory_bag(tmp_path / "ur5_bag", "mcap", dyn.joint_names, stamps, Q, V,
                         effort=effort)  # fmt: skip
    out = tmp_path / "params.json"
    code = main(["identify", str(bag), "--urdf", urdf, "-o", str(out), "--prior-weight", "1e-9"])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["samples"] == 1500 - 2  # the two ends have no central difference
    assert doc["rank"] == 36
    assert [b["link"] for b in doc["bodies"]] == list(dyn.parameter_links)
    assert predicted_error(model, dyn, np.array(doc["parameters"])) < 1e-3


def test_cli_refuses_a_bag_without_efforts(ur5, tmp_path, capsys):
    from support.bag_helpers import trajectory_bag

    from coriolis_ros.cli import main

    model, dyn = ur5
    t, Q, V, _, _ = trajectory(model, 50, 0, 0.002)
    stamps = 1_700_000_000 * 10**9 + np.round(t * 1e9).astype(np.int64)
    bag = trajectory_bag(tmp_path / "no_effort", "sqlite3", dyn.joint_names, stamps, Q, V)
    assert main(["identify", str(bag), "--urdf", str(erd_urdf("ur5"))]) == 1
    assert "no joint state carries an effort" in capsys.readouterr().err
