"""identify at its limits: torques beyond the range of doubles refused by name (not numpy's
error), and a fit that does not converge stopped by the default budget of 20000 iterations.

The data are Pinocchio's (``rnea``) on the small arm of test_mutants_identification.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest
from support.trajectories import identification_trajectory as trajectory
from support.trajectories import rel
from support.urdf_text import THREE_JOINTS as URDF

from coriolis_ros.dynamics import Dynamics, identify


def test_torques_beyond_the_range_of_floats_are_refused_by_name():
    """|tau|^2 or the solver's gradient past the largest double: a ValueError naming the
    cause, no warning (was numpy's 'Eigenvalues did not converge').  Below that range the
    fit is made: torques 1e70 times Pinocchio's, without a prior, fitted as closely."""
    model, dyn = pin.buildModelFromXML(URDF), Dynamics.from_urdf(URDF)
    t, Q, V, A, TAU = trajectory(model, 10, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for scale, weight in ((1e300, 1e-6), (1e300, 0.0), (1e200, 0.0), (1e100, 1e-6)):
            with pytest.raises(ValueError, match="identification produced a non-finite result"):
                identify(dyn, t, Q, V, TAU * scale, QDD=A, prior_weight=weight)
        fit = identify(dyn, t, Q, V, TAU * 1e70, QDD=A, prior_weight=0.0)
        assert fit.relative_residual < 1e-6
        assert np.all(np.isfinite(fit.spread))
        # the prior's pull grows with |tau|^2: with a weight, torques 1e70 keep the prior
        held = identify(dyn, t, Q, V, TAU * 1e70, QDD=A, prior_weight=1e-6)
        assert rel(held.parameters, dyn.inertial_parameters()) < 1e-9


def test_a_fit_that_does_not_converge_stops_at_the_default_budget():
    """No prior (weight 0) and a rank-deficient W: the solver drifts along the directions no
    sample excites and never meets the tolerance; it stops after max_iterations, 20000 by
    default."""
    model, dyn = pin.buildModelFromXML(URDF), Dynamics.from_urdf(URDF)
    t, Q, V, A, TAU = trajectory(model, 20, 2)
    noisy = TAU + np.random.default_rng(4).normal(0.0, np.abs(TAU).max(), TAU.shape)
    result = identify(dyn, t, Q, V, noisy, QDD=A, prior_weight=0.0)
    assert result.iterations == 20000
    fewer = identify(dyn, t, Q, V, noisy, QDD=A, prior_weight=0.0, max_iterations=19999)
    assert fewer.iterations == 19999
