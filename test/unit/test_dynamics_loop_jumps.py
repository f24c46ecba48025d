"""Large moves of a closed chain's independent joints in one call.

Continuation closes the loops in steps of at most 0.2 rad (or m) from the last closed
configuration.  A continuous lead joint's whole turns do not move the loops, so it is taken the
shorter way round; any other lead joint that moved further than the continuation's budget is
refused with a message naming it, instead of stalling the caller.

References: the same mechanism reached by an ordinary small step from the same start (the
dynamics are periodic in a continuous joint: a whole turn gives the same placements), and the
crank's value itself (what the caller passed in is what it gets back).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.oracle import assert_close

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

FOUR_BAR = robot_path("four_bar")
START = 0.3
STEP = 0.2  # continuation's largest step (dynamics.loops.MAX_STEP)
BUDGET = 1000  # its number of steps (kernels.loop_closure.MAX_CONTINUATION)
ROTOR = {"gear_ratio": 9.0, "inertia": [2e-5, 3e-5, 2.5e-5, 1e-6, 0.0, 0.0], "mass": 0.05}


def _closed_at_start(**kwargs):
    dyn = Dynamics.from_urdf(FOUR_BAR, **kwargs)
    dyn.close_loops([START])
    return dyn


def _revolute_crank(limit=1e4):
    text = FOUR_BAR.read_text().replace(
        '<joint name="crank" type="continuous">',
        '<joint name="crank" type="revolute">'
        f'<limit lower="{-limit}" upper="{limit}" effort="10" velocity="10"/>',
    )
    dyn = Dynamics.from_urdf(text)
    dyn.close_loops([START])
    return dyn


def _relative(got, want):
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-300))


@pytest.mark.parametrize("turns, rest", [(1, 0.05), (-3, 0.05), (10, -0.05), (20000, 0.05)])
def test_a_continuous_crank_many_turns_away_closes_as_a_small_step_does(turns, rest):
    """20000 turns (1.26e5 rad) failed before: continuation walked the whole way, 6e5 steps,
    and the coupler, one more turn per turn, lost the precision Newton needs."""
    far = _closed_at_start()
    y = np.array([START + 2 * np.pi * turns + rest])
    yd = np.array([1.3])
    got = far.coriolis(y, yd)
    gamma = far.christoffel(y)
    near = _closed_at_start()
    want = near.coriolis(np.array([START + rest]), yd)
    # y carries its own rounding: 2 pi turns is exact only to y's spacing of doubles
    tol = 1e-12 + 64 * np.spacing(y[0])
    for a, b, name in zip(got, want, ("Mbar", "Mbardot", "Cbar"), strict=True):
        assert _relative(a, b) <= tol, name
    assert _relative(gamma, near.christoffel(np.array([START + rest]))) <= tol
    q_far, q_near = far.full_position(y), near.full_position(np.array([START + rest]))
    crank = far.tree_joint_names.index("crank")
    assert q_far[crank] == y[0]  # the caller's value, not wrapped
    others = [i for i in range(q_far.size) if i != crank]
    assert_close(q_far[others], q_near[others], tol, "the dependent joints")
    # and the next small step continues from there
    assert _relative(far.coriolis(y + 0.01, yd)[2], near.coriolis(
        np.array([START + rest + 0.01]), yd)[2]) <= tol  # fmt: skip


@pytest.mark.parametrize("y", [1e15, -3e30, 1e49])
def test_a_continuous_crank_at_any_size_closes_at_its_pose(y):
    """The crank's pose at y is its pose at y's angle (numpy's sin and cos reduce exactly);
    a turn count taken by subtracting 2 pi's multiple would be off by 1e33 at 1e49."""
    dyn = _closed_at_start()
    angle = float(np.arctan2(np.sin(y), np.cos(y)))
    got = dyn.coriolis(np.array([y]), [0.9])
    want = _closed_at_start().coriolis(np.array([angle]), [0.9])
    for a, b, name in zip(got, want, ("Mbar", "Mbardot", "Cbar"), strict=True):
        assert _relative(a, b) <= 1e-12, name
    assert dyn.full_position([y])[dyn.tree_joint_names.index("crank")] == y


def test_a_rotor_on_the_crank_follows_the_callers_value():
    """A follower of a continuous lead joint takes ratio times the value passed in."""
    dyn = _closed_at_start(rotors={"crank": ROTOR})
    y = np.array([START + 2 * np.pi * 500 + 0.1])
    q = dyn.full_position(y)
    assert q[dyn.tree_joint_names.index("crank_rotor")] == 9.0 * y[0]
    want = _closed_at_start(rotors={"crank": ROTOR}).coriolis([START + 0.1], [0.7])[2]
    assert_close(dyn.coriolis(y, [0.7])[2], want, 1e-9, "rotor after 500 turns")


def test_a_revolute_lead_joint_within_the_budget_walks_there():
    """A lead joint that is not continuous is walked along (its limits may allow many turns):
    199.99 rad, within 1000 steps of 0.2, closes and equals the continuous crank's state."""
    dyn = _revolute_crank()
    y = np.array([START + BUDGET * STEP - 0.01])
    got = dyn.coriolis(y, [1.1])[2]
    want = _closed_at_start().coriolis(np.array([np.remainder(y[0], 2 * np.pi)]), [1.1])[2]
    assert_close(got, want, 1e-10, "walked 199.99 rad")
    assert dyn.full_position(y)[dyn.tree_joint_names.index("crank")] == y[0]


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_revolute_lead_joint_beyond_the_budget_is_refused_by_name(sign):
    dyn = _revolute_crank()
    before = dyn.full_position([START]).copy()
    y = np.array([START + sign * (BUDGET * STEP + 0.01)])
    message = (r"the loops' independent joints \(crank\) moved by 200\.01 \(rad or m\).*"
               r"more than 1000 steps of 0\.2; close from a guess")  # fmt: skip
    for call in (lambda: dyn.coriolis(y, [1.0]), lambda: dyn.christoffel(y),
                 lambda: dyn.mass_matrix(y), lambda: dyn.gravity(y)):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            call()
    # nothing changed, and a guess closes it
    assert np.array_equal(dyn.full_position([START]), before)
    guess = _closed_at_start().full_position([np.remainder(y[0], 2 * np.pi)]).copy()
    guess[dyn.tree_joint_names.index("crank")] = y[0]
    q = dyn.close_loops(y, guess=guess)
    assert q[dyn.tree_joint_names.index("crank")] == y[0]
    assert np.all(np.isfinite(dyn.coriolis(y, [1.0])[2]))


def test_dependent_positions_received_start_newton_as_a_guess_would():
    """closed.close_loops(y, dependent=...) (the node's and the bag reader's way back after a
    refused jump): Newton from the last solution with the dependent joints at the values
    given, the same tree positions as from the guess they make, and then the loops close
    beyond continuation's budget, at the wrapped angle's dependent positions."""
    dyn = _revolute_crank()
    crank = dyn.tree_joint_names.index("crank")
    y = np.array([START + BUDGET * STEP + 0.01])
    wrapped = _closed_at_start().full_position([np.remainder(y[0], 2 * np.pi)])
    names = dyn.closed.dependent_joints
    received = wrapped[[dyn.tree_joint_names.index(n) for n in names]]
    guess = dyn.full_position([START]).copy()
    guess[[dyn.tree_joint_names.index(n) for n in names]] = received
    guess[crank] = y[0]
    by_guess = _revolute_crank().close_loops(y, guess=guess)
    got = dyn.close_loops(y, dependent=received)
    assert np.array_equal(got, by_guess)
    assert got[crank] == y[0]
    others = [i for i in range(len(got)) if i != crank]
    assert_close(got[others], wrapped[others], 1e-9, "dependent joints")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"dependent": [0.1]}, r"dependent must have shape \(2,\), got \(1,\)"),
        ({"dependent": [0.1, 0.2, 0.3]}, r"dependent must have shape \(2,\), got \(3,\)"),
        ({"dependent": [0.1, np.nan]}, r"dependent has a NaN or infinite entry"),
        ({"dependent": [0.1, 0.2], "guess": [0.3, 0.1, 0.2]}, r"guess or dependent, not both"),
    ],
)
def test_dependent_positions_are_checked(kwargs, message):
    dyn = _closed_at_start()
    assert len(dyn.closed.dependent_joints) == 2
    before = dyn.full_position([START]).copy()
    with pytest.raises(ValueError, match=message):
        dyn.closed.close_loops([START + 0.1], **kwargs)
    assert np.array_equal(dyn.full_position([START]), before)
    # the right size closes
    ok = dyn.closed.close_loops([START + 0.1], dependent=before[1:])
    assert_close(ok, _closed_at_start().full_position([START + 0.1]), 1e-9, "closure")


def test_a_followers_received_value_is_not_needed_nor_used():
    """On the four-bar with a rotor geared 9:1 to the crank, the rotor is a dependent joint
    (a follower): close_loops(dependent=...) takes NaN or any value there and the rotor
    follows its leader; a NaN in a loop joint's entry is refused."""
    from support.urdf_text import four_bar_with_rotor

    text = four_bar_with_rotor(FOUR_BAR.read_text())
    dyn = Dynamics.from_urdf(text)
    closed = dyn.closed
    assert closed.follower_joints == ("rotor",)
    names = closed.dependent_joints
    assert set(names) == {"coupler", "rocker", "rotor"}
    reference = Dynamics.from_urdf(text).full_position([START + 0.1])
    tree = dyn.tree_joint_names
    values = np.array([reference[tree.index(n)] for n in names])
    for rotor_value in (np.nan, 123.0):
        values[names.index("rotor")] = rotor_value
        got = Dynamics.from_urdf(text).closed.close_loops([START + 0.1], dependent=values)
        assert_close(got, reference, 1e-9, "closure")
        assert got[tree.index("rotor")] == 9.0 * got[tree.index("crank")]
    values[names.index("coupler")] = np.nan
    with pytest.raises(ValueError, match="dependent has a NaN or infinite entry"):
        dyn.closed.close_loops([START + 0.1], dependent=values)
