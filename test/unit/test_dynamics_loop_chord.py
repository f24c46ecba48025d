"""Closing the loops along a trajectory: each call starts from the previous closure.

Newton starts from the second-order prediction along the previous closure's tangent (A and
dA/dy there), and its first step is a chord step with the previous closure's factorization of
K_z, kept only when it shrinks the residual tenfold.  Reference: the same model closed from a
guess at every configuration (plain damped Newton from the previous solution, no prediction,
no chord), in another instance.  Both must give the same closed configuration, A, dA/dy, Cbar
and Gammabar, for small and large steps, forwards and back, after a refused call too.
"""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

FOUR_BAR = robot_path("four_bar")
LEG = robot_path("leg_knee_linkage")
TOL = 1e-10  # relative; both closures end with a residual near 1e-14


def _relative(got, want, scale=0.0):
    """Largest difference over the largest entry of want (or scale, if larger: dA/dy of a
    parallelogram is zero up to rounding, and is measured against A)."""
    return float(np.abs(got - want).max() / max(np.abs(want).max(), scale, 1e-300))


def _leg():
    return Dynamics.from_urdf(LEG, independent_joints=["hip", "knee_crank"])


def _check_along(make, ys, yd):
    dyn, ref = make(), make()
    guess = ref.close_loops(ys[0])
    dyn.close_loops(ys[0])
    for y in ys[1:]:
        got_c = np.array(dyn.coriolis(y, yd), dtype=float)
        got_g = dyn.christoffel(y)
        got_a, got_da = dyn.velocity_map(y)
        got_q = dyn.closed.full_position(y)
        guess = ref.close_loops(y, guess=guess)  # plain Newton from the last solution
        want_q = guess.copy()
        want_a, want_da = ref.velocity_map(y)
        want_c = np.array(ref.coriolis(y, yd), dtype=float)
        want_g = ref.christoffel(y)
        assert np.abs(got_q - want_q).max() < 1e-11, y
        assert _relative(got_a, want_a) < TOL, ("A", y)
        assert _relative(got_da, want_da, np.abs(want_a).max()) < TOL, ("dA", y)
        assert _relative(got_c, want_c) < TOL, ("Cbar", y)
        assert _relative(got_g, want_g) < TOL, ("Gammabar", y)


@pytest.mark.parametrize("step", [1e-3, 0.05, 0.19])
def test_four_bar_sweeps_forwards_and_back_as_closures_from_a_guess(step):
    out = np.arange(0.3, 0.3 + 12 * step, step)
    ys = [np.array([v]) for v in np.concatenate([out, out[::-1]])]
    _check_along(lambda: Dynamics.from_urdf(FOUR_BAR), ys, np.array([1.7]))


@pytest.mark.parametrize("step", [2e-3, 0.1])
def test_knee_linkage_moves_both_coordinates_as_closures_from_a_guess(step):
    k = np.arange(10)
    ys = [np.array([0.1 - 0.5 * step * i, 0.4 + step * i]) for i in k]
    ys += [np.array([0.1 + 0.3 * step * i, 0.4 + step * (9 - i)]) for i in k]
    _check_along(_leg, ys, np.array([0.8, -1.1]))


def test_after_a_refused_jump_the_next_call_closes_as_from_a_guess():
    """A refused call leaves no factorization for the next one to start from (its slot in the
    workspace says none), and the next call's numbers are the reference's."""
    from coriolis_ros.dynamics.kernels import closed_entry as ce

    text = FOUR_BAR.read_text().replace(
        '<joint name="crank" type="continuous">',
        '<joint name="crank" type="revolute">'
        '<limit lower="-1e4" upper="1e4" effort="10" velocity="10"/>',
    )
    dyn = Dynamics.from_urdf(text)
    closure = dyn.closed.closure
    chord_slot = closure.ci[ce.I_W + ce.W_CHORD]
    dyn.coriolis(np.array([0.3]), np.array([1.0]))
    dyn.coriolis(np.array([0.301]), np.array([1.0]))
    assert closure.cw[chord_slot] >= 1.0  # one plus the rank of K_z's factorization
    with pytest.raises(ValueError, match="moved by 300"):
        dyn.coriolis(np.array([300.301]), np.array([1.0]))
    assert closure.cw[chord_slot] == 0.0
    y, yd = np.array([0.31]), np.array([1.0])
    got = np.array(dyn.coriolis(y, yd), dtype=float)
    ref = Dynamics.from_urdf(text)
    ref.close_loops(y, guess=dyn.closed.full_position(y))
    assert _relative(got, np.array(ref.coriolis(y, yd), dtype=float)) < TOL
    assert closure.cw[chord_slot] >= 1.0
