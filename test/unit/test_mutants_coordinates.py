"""dynamics.coordinates against maps written out by hand: q = phi(qbar), qdot = A qbardot.

Two small trees with mimic joints, fixed root (rows in tree order):

* FIRST_FOLLOWS: ``a`` (row 0) follows ``c`` (q_a = 3 q_c + 0.25), ``b`` hangs from ``a``,
  prismatic ``c`` from ``b``, ``d`` from ``c`` follows ``b`` (q_d = -2 q_b + 0.5). The
  independent coordinates are (b, c); b's nearest independent ancestor is none (its parent
  ``a`` follows), c's is b.
* FIRST_LEADS: ``a`` (row 0), ``b`` and ``c`` both hang from ``a``, ``c`` follows ``a``
  (q_c = 0.5 q_a): b's nearest independent ancestor is row 0.

The expected A, phi, scale, followers, dense matrix, positions and velocities are written out
here from the URDF's tags; the refusal's bound is checked at exactly 1e50 (a follower at the
bound: accepted) and the next double (refused, named), for positions and for velocities.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from support.oracle import PinOracle, assert_close
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import Dynamics

MAX = 1e50


def mimic(leader: str, m: float, o: float) -> str:
    return f'\n    <mimic joint="{leader}" multiplier="{m!r}" offset="{o!r}"/>'


FIRST_FOLLOWS = robot(
    link("base", None), link("l1"), link("l2"), link("l3"), link("l4"),
    joint("a", "base", "l1", extra=mimic("c", 3.0, 0.25)),
    joint("b", "l1", "l2", axis="0 1 0"),
    joint("c", "l2", "l3", jtype="prismatic", axis="1 0 0"),
    joint("d", "l3", "l4", extra=mimic("b", -2.0, 0.5)),
    name="first_follows",
)  # fmt: skip
FIRST_LEADS = robot(
    link("base", None), link("l1"), link("l2"), link("l3"),
    joint("a", "base", "l1"),
    joint("b", "l1", "l2", axis="0 1 0"),
    joint("c", "l1", "l3", axis="1 0 0", extra=mimic("a", 0.5, 0.0)),
    name="first_leads",
)  # fmt: skip


@pytest.fixture(scope="module")
def follows():
    return Dynamics.from_urdf(FIRST_FOLLOWS)


@pytest.fixture(scope="module")
def leads():
    return Dynamics.from_urdf(FIRST_LEADS)


def test_the_map_is_the_one_the_tags_give(follows):
    dyn, cmap = follows, follows.map
    assert dyn.tree_joint_names == ("a", "b", "c", "d")
    assert cmap.joint_names == cmap.position_names == ("b", "c") == dyn.joint_names
    # A: per tree row, (independent column, multiplier); phi: (source, multiplier, offset)
    np.testing.assert_array_equal(cmap.A, [[1, 3.0], [0, 1.0], [1, 1.0], [0, -2.0]])
    np.testing.assert_array_equal(
        cmap.phi, [[1, 3.0, 0.25], [0, 1.0, 0.0], [1, 1.0, 0.0], [0, -2.0, 0.5]]
    )
    np.testing.assert_array_equal(cmap.scale, [2.0, 3.0])  # the largest |multiplier| per column
    assert cmap.followers == ((0, 0, "a", "c", 3.0, 0.25), (3, 3, "d", "b", -2.0, 0.5))
    dense = [[0, 3.0], [1.0, 0], [0, 1.0], [-2.0, 0]]
    np.testing.assert_array_equal(cmap.matrix(), dense)
    np.testing.assert_array_equal(dyn.velocity_map(np.zeros(2))[0], dense)
    x = np.array([0.7, -1.3])
    np.testing.assert_array_equal(cmap.position(x), [3 * -1.3 + 0.25, 0.7, -1.3, -2 * 0.7 + 0.5])
    np.testing.assert_array_equal(cmap.velocity(x), [3 * -1.3, 0.7, -1.3, -2 * 0.7])
    full = np.array([9.0, 0.7, -1.3, 8.0])
    np.testing.assert_array_equal(cmap.independent_positions(dyn.tree, full), [0.7, -1.3])
    for array in (cmap.A, cmap.phi, cmap.scale):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 5.0


def test_the_reduced_dynamics_is_pinocchio_reduced_by_the_map_written_here(follows):
    """Pinocchio reads the mimic joints as independent: M, C and g of the tree at phi(qbar),
    reduced by the A written out above (the follower at row 0 included)."""
    oracle = PinOracle(FIRST_FOLLOWS, order=follows.tree_joint_names)
    A = np.array([[0, 3.0], [1.0, 0], [0, 1.0], [-2.0, 0]])
    qbar, v = np.array([0.4, -0.6]), np.array([0.9, 1.7])
    q = np.array([3 * -0.6 + 0.25, 0.4, -0.6, -2 * 0.4 + 0.5])
    M, Mdot, C = follows.coriolis(qbar, v)
    assert_close(M, A.T @ oracle.M(q) @ A, 1e-10, "M")
    C_ref = A.T @ oracle.C(q, A @ v) @ A
    assert_close(C, C_ref, 1e-10, "C")
    assert_close(Mdot, C_ref + C_ref.T, 1e-10, "Mdot")
    assert_close(follows.gravity(qbar), A.T @ oracle.g(q), 1e-10, "g")


def test_the_reduced_model_describes_the_independent_rows(follows, leads):
    model, tree = follows.model, follows.tree
    assert model.tree is tree and model.joint_names == ("b", "c")
    assert model.joint_types == (tree.joint_types[1], tree.joint_types[2])
    assert model.joint_types[0] != model.joint_types[1]  # revolute, prismatic: in order
    assert model.body_links == ("l2", "l3") and model.position_names == ("b", "c")
    assert [j[1:] for j in model.joints()] == [(0, 1, 0), (1, 1, 1)]
    assert [j[0] for j in model.joints()] == [j[0] for j in tree.joints()[1:3]]
    np.testing.assert_array_equal(model.parent, [-1, 0])  # b's parent a follows: none
    np.testing.assert_array_equal(leads.model.parent, [-1, 0])  # b hangs from row 0 itself
    assert leads.model.joint_names == ("a", "b")
    assert model.tree_depth == tree.tree_depth == 4 and leads.model.tree_depth == 2
    assert model.total_mass == tree.total_mass == 4 * 1.5
    with pytest.raises(AttributeError):
        model.name = "other"  # frozen, like the Model it extends


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_follower_exactly_at_1e50_is_accepted_the_next_double_refused(follows, sign):
    """d = -2 b + 0.5: b = ∓5e49 puts d at ±1e50 exactly (+0.5 is below its half ulp); velocity
    rows scale only: the same. a = 3 c + 0.25: c at the last double inside, and the next."""
    cmap = follows.map
    half = -sign * 5e49
    assert -2.0 * half + 0.5 == sign * MAX
    for position in (True, False):
        assert cmap.refusal([half, 0.0], "x", position) is None
    beyond = math.nextafter(half, -sign * math.inf)
    why = cmap.refusal([beyond, 0.0], "q", True)
    assert why == (f"q: follower joint 'd' = -2.0 × 'b' + 0.5 = {-2.0 * beyond + 0.5!r} is "
                   f"beyond ±1e+50 (its leader 'b' is {beyond!r}; a follower's coordinate is "
                   "bounded like every other)")  # fmt: skip
    why = cmap.refusal([0.0, beyond], "qd", False)
    assert why == (f"qd: follower joint 'a' = 3.0 × 'c' = {3.0 * beyond!r} is beyond ±1e+50 "
                   f"(its leader 'c' is {beyond!r}; a follower's coordinate is bounded like "
                   "every other)")  # fmt: skip
    inside = sign * MAX / 3.0
    while abs(3.0 * inside + 0.25) <= MAX:
        inside = math.nextafter(inside, sign * math.inf)
    while abs(3.0 * inside + 0.25) > MAX:
        inside = math.nextafter(inside, 0.0)
    outside = math.nextafter(inside, sign * math.inf)
    assert abs(3.0 * outside + 0.25) > MAX
    assert cmap.refusal([0.0, inside], "q", True) is None
    assert "follower joint 'a' = 3.0 × 'c' + 0.25" in cmap.refusal([0.0, outside], "q", True)


def test_the_refusal_leaves_other_inputs_to_the_usual_message(follows):
    cmap = follows.map
    for x in ([0.0], [0.0, 0.0, 0.0], [[0.0, 0.0]], [math.nextafter(MAX, math.inf), 0.0],
              [0.0, math.nan], [0.0, -math.inf], "ab", [object(), 1.0], None):  # fmt: skip
        for position in (True, False):
            assert cmap.refusal(x, "q", position) is None, x
    assert cmap.refusal([MAX, 0.0], "q", True) is not None  # b itself inside, d beyond
