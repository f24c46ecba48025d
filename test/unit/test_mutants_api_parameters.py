"""The Dynamics methods about pi (api_parameters): shapes, buffers, converted inputs.

The references are other computations of the library (M, C and g from their own kernels,
the kinetic energy 1/2 qd^T M qd) on a three-joint tree with a planar joint (four bodies
with the floating root: 10 parameters each), and the regressors' defining identities:
Y pi = M qdd_r + C qd_r + g, and the energy regressor's rows times pi = the kinetic and
the potential energy (the potential's change along a step agrees with the gravity torque).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import Dynamics

URDF = robot(
    link("base"), link("l1"), link("l2"), link("l3"),
    joint("a", "base", "l1", axis="0 1 0"),
    joint("b", "l1", "l2", jtype="prismatic", axis="1 0 0"),
    joint("c", "l2", "l3", jtype="planar", axis="0 0 1"),
    name="api_params",
)  # fmt: skip


@pytest.fixture(scope="module")
def dyn():
    return Dynamics.from_urdf(URDF, root_joint="floating")


def _state(dyn, seed):
    rng = np.random.default_rng(seed)
    q = dyn.neutral().copy()
    q[:3] = rng.normal(size=3)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:] = rng.normal(size=dyn.nq - 7)
    return q, rng.normal(size=dyn.nv), rng.normal(size=dyn.nv), rng.normal(size=dyn.nv)


def test_the_regressor_times_pi_is_the_slotine_li_torque(dyn):
    pi = dyn.inertial_parameters()
    assert pi.shape == (40,)
    assert dyn.parameter_links == ("base", "l1", "l2", "l3")
    assert dyn.parameter_joints == ("root_joint", "a", "b", "c")
    q, qd, qdr, qddr = _state(dyn, 1)
    Y = dyn.regressor(q, qd, qdr, qddr)
    assert Y.shape == (dyn.nv, 40)
    expected = dyn.mass_matrix(q) @ qddr + dyn.coriolis(q, qd)[2] @ qdr + dyn.gravity(q)
    np.testing.assert_allclose(Y @ pi, expected, rtol=1e-10, atol=1e-10)


def test_lists_are_converted_for_every_input(dyn):
    """The compiled kernels take float64 arrays: lists go through the checked conversion."""
    q, qd, qdr, qddr = _state(dyn, 2)
    Y = dyn.regressor(q, qd, qdr, qddr)
    np.testing.assert_array_equal(dyn.regressor(list(q), list(qd), list(qdr), list(qddr)), Y)
    E = dyn.energy_regressor(q, qd)
    np.testing.assert_array_equal(dyn.energy_regressor(list(q), list(qd)), E)


def test_the_energy_regressor_gives_both_energies(dyn):
    pi = dyn.inertial_parameters()
    q, qd, _, _ = _state(dyn, 3)
    E = dyn.energy_regressor(q, qd)
    assert E.shape == (2, 40)
    kinetic = 0.5 * qd @ dyn.mass_matrix(q) @ qd
    assert E[0] @ pi == pytest.approx(kinetic, rel=1e-10)
    # the potential energy's derivative along a velocity is the gravity torque's work rate
    h = 1e-6
    up = dyn.energy_regressor(dyn.integrate(q, h * qd), qd)[1] @ pi
    down = dyn.energy_regressor(dyn.integrate(q, -h * qd), qd)[1] @ pi
    assert (up - down) / (2 * h) == pytest.approx(dyn.gravity(q) @ qd, rel=1e-6, abs=1e-8)


def test_out_buffers_are_filled_and_returned(dyn):
    q, qd, qdr, qddr = _state(dyn, 4)
    out = np.full((dyn.nv, 40), np.nan)
    assert dyn.regressor(q, qd, qdr, qddr, out=out) is out
    np.testing.assert_array_equal(out, dyn.regressor(q, qd, qdr, qddr))
    out2 = np.full((2, 40), np.nan)
    assert dyn.energy_regressor(q, qd, out=out2) is out2
    np.testing.assert_array_equal(out2, dyn.energy_regressor(q, qd))


def test_batches_have_one_block_per_row(dyn):
    rows = [_state(dyn, 10 + t) for t in range(3)]
    Q, V, QdR, QddR = (np.array([r[k] for r in rows]) for k in range(4))
    Y = dyn.regressor_batch(Q, V, QdR, QddR)
    assert Y.shape == (3, dyn.nv, 40)
    E = dyn.energy_regressor_batch(Q, V)
    assert E.shape == (3, 2, 40)
    for t in range(3):
        np.testing.assert_array_equal(Y[t], dyn.regressor(Q[t], V[t], QdR[t], QddR[t]))
        np.testing.assert_array_equal(E[t], dyn.energy_regressor(Q[t], V[t]))
