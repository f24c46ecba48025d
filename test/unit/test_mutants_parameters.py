"""dynamics.parameters and the Dynamics methods about pi against values derived by hand.

The tree (fixed root; rows in depth-first order):

* ``arm/j1`` (revolute about y, its frame turned by rpy) moves link ``l1``: mass 2, centre
  (0.1, 0.2, 0.3), inertia about the centre [[2, 0.01, 0.02], [0.01, 2, 0.03], [0.02, 0.03, 3]]
  (link frame).  By the parallel-axis theorem, I_o = I_c + m (|c|^2 1 - c c^T) with
  |c|^2 = 0.14: xx 2 + 2 (0.14 - 0.01) = 2.26, yy 2 + 2 (0.14 - 0.04) = 2.2,
  zz 3 + 2 (0.14 - 0.09) = 3.1, xy 0.01 - 2 (0.02) = -0.03, xz 0.02 - 2 (0.03) = -0.04,
  yz 0.03 - 2 (0.06) = -0.09; so pi = (2, 0.2, 0.4, 0.6, 2.26, -0.03, 2.2, -0.04, -0.09, 3.1);
* ``j2`` (prismatic along x) moves ``l2``: mass 0.5, centre (0, 0, 0.4), inertia
  diag(0.02, 0.02, 0.03): pi = (0.5, 0, 0, 0.2, 0.1, 0, 0.1, 0, 0, 0.03);
* ``x/p`` (planar: three rows, its body on the last) moves ``l3``: mass 1 at its origin,
  inertia 0.1 1: pi = (1, 0, 0, 0, 0.1, 0, 0.1, 0, 0, 0.1).

Rows: arm/j1 0, j2 1, x/p 2..4: the bodies are rows 0, 1 and 4.  With a floating root,
rows 0..5 come first and the base link is a body (massless here) on row 5.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics import parameters as P
from coriolis_ros.dynamics.urdf_model import model_from_urdf

L1 = (
    '\n    <inertial><origin xyz="0.1 0.2 0.3" rpy="0 0 0"/><mass value="2"/>'
    '<inertia ixx="2" ixy="0.01" ixz="0.02" iyy="2" iyz="0.03" izz="3"/></inertial>'
)
L2 = (
    '\n    <inertial><origin xyz="0 0 0.4" rpy="0 0 0"/><mass value="0.5"/>'
    '<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial>'
)
L3 = (
    '\n    <inertial><mass value="1"/>'
    '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
)
URDF = robot(
    link("base", None), link("l1", L1), link("l2", L2), link("l3", L3),
    joint("arm/j1", "base", "l1", axis="0 1 0", rpy="0.4 -0.3 0.2"),
    joint("j2", "l1", "l2", jtype="prismatic", axis="1 0 0"),
    joint("x/p", "l2", "l3", jtype="planar", axis="0 1 0"),
    name="hand_bodies",
)  # fmt: skip
PI = np.array([
    2.0, 0.2, 0.4, 0.6, 2.26, -0.03, 2.2, -0.04, -0.09, 3.1,
    0.5, 0.0, 0.0, 0.2, 0.1, 0.0, 0.1, 0.0, 0.0, 0.03,
    1.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.1, 0.0, 0.0, 0.1,
])  # fmt: skip
# a body outside the consistent set: I_zz = 4.75 beyond I_xx + I_yy = 3 (triangle inequality)
INCONSISTENT = np.array([7.0, 0.0, 0.0, 0.0, 1.5, 0.0, 1.5, 0.0, 0.0, 4.75])


@pytest.fixture
def dyn():
    return Dynamics.from_urdf(URDF)


def test_bodies_of_a_fixed_and_a_floating_tree():
    fixed = model_from_urdf(URDF)
    assert P.body_rows(fixed) == [0, 1, 4]
    assert P.body_links(fixed) == ("l1", "l2", "l3")
    assert P.body_joints(fixed) == ("arm/j1", "j2", "x/p")  # a '/' in a name is kept
    floating = model_from_urdf(URDF, root_joint="floating")
    assert P.body_rows(floating) == [5, 6, 7, 10]
    assert P.body_links(floating) == ("base", "l1", "l2", "l3")
    assert P.body_joints(floating) == ("root_joint", "arm/j1", "j2", "x/p")


def test_the_parameters_read_are_the_hand_derived_ones(dyn):
    pi = dyn.inertial_parameters()
    assert pi.shape == (30,)
    np.testing.assert_allclose(pi, PI, rtol=0, atol=1e-13)
    assert dyn.parameter_links == ("l1", "l2", "l3")
    assert dyn.parameter_joints == ("arm/j1", "j2", "x/p")
    floating = Dynamics.from_urdf(URDF, root_joint="floating")
    np.testing.assert_allclose(floating.inertial_parameters(), np.r_[np.zeros(10), PI], atol=1e-13)


def test_parameters_written_are_read_back_and_used(dyn):
    rng = np.random.default_rng(3)
    q = rng.normal(size=dyn.nq)
    before = dyn.mass_matrix(q).copy()
    pi = 2.0 * PI  # every body twice as heavy: M doubles
    dyn.set_inertial_parameters(list(pi))  # a list is taken (converted, copied)
    np.testing.assert_allclose(dyn.inertial_parameters(), pi, rtol=0, atol=1e-13)
    np.testing.assert_allclose(dyn.mass_matrix(q), 2.0 * before, rtol=1e-12, atol=1e-14)
    own = pi.copy()
    dyn.set_inertial_parameters(own)
    own[0] = 100.0  # the caller's array is not kept
    np.testing.assert_allclose(dyn.inertial_parameters(), pi, rtol=0, atol=1e-13)


def test_an_inconsistent_body_is_refused_by_default_and_named(dyn):
    pi = PI.copy()
    pi[20:30] = INCONSISTENT
    with pytest.raises(ValueError) as err:
        dyn.set_inertial_parameters(pi)
    text = str(err.value)
    assert text.startswith("body 2 (link 'l3') is not physically consistent")
    assert "check_physical=False" in text
    shown = re.search(r"parameters \[([^\]]*)\]", text).group(1)
    np.testing.assert_array_equal(np.array(shown.split(), dtype=float), INCONSISTENT)
    np.testing.assert_allclose(dyn.inertial_parameters(), PI, atol=1e-13)  # nothing changed
    dyn.set_inertial_parameters(pi, check_physical=False)
    np.testing.assert_allclose(dyn.inertial_parameters(), pi, atol=1e-12)


def test_the_refused_values_are_shown_to_six_decimals(dyn):
    pi = PI.copy()
    pi[20:30] = INCONSISTENT
    pi[29] = 4.7512346
    with pytest.raises(ValueError, match="not physically consistent") as err:
        dyn.set_inertial_parameters(pi)
    assert "4.751235" in str(err.value) and "4.7512346" not in str(err.value)


def test_a_massless_body_with_a_first_moment_is_named(dyn):
    pi = PI.copy()
    pi[10:20] = [0.0, 0.25, 0.0, 0.0, 0.5, 0.0, 0.5, 0.0, 0.0, 0.5]
    for check in (True, False):
        with pytest.raises(ValueError) as err:
            dyn.set_inertial_parameters(pi, check_physical=check)
        text = str(err.value)
        assert text.startswith("body 1 (link 'l2') has zero mass and a nonzero first moment")
        shown = re.search(r"parameters \[([^\]]*)\]", text).group(1)
        np.testing.assert_array_equal(np.array(shown.split(), dtype=float), pi[10:20])


def test_a_body_the_model_cannot_hold_is_named(dyn):
    pi = PI.copy()
    pi[0:4] = [1e-60, 1e-5, 0.0, 0.0]  # c = 1e55 m
    with pytest.raises(ValueError, match=r"^body 0 \(link 'l1'\): its centre of mass or inertia"):
        dyn.set_inertial_parameters(pi, check_physical=False)


@pytest.mark.parametrize(
    "k, name, link_name",
    [(0, "m", "l1"), (10, "m", "l2"), (14, "I_xx", "l2"), (23, "mc_z", "l3"), (29, "I_zz", "l3")],
)
def test_a_bad_entry_is_named_by_index_parameter_and_link(dyn, k, name, link_name):
    pi = PI.copy()
    pi[k] = np.nan
    with pytest.raises(ValueError, match=rf"^pi\[{k}\] \({name} of link '{link_name}'\) is nan"):
        dyn.set_inertial_parameters(pi)


def test_the_first_bad_entry_is_named_after_one_exactly_at_the_bound(dyn):
    pi = PI.copy()
    pi[0] = 1e50  # within the bound (unchecked: a huge mass)
    pi[1:4] = 0.0
    pi[14] = np.nextafter(1e50, np.inf)
    with pytest.raises(ValueError, match=r"^pi\[14\] \(I_xx of link 'l2'\)"):
        dyn.set_inertial_parameters(pi, check_physical=False)
    pi[14] = PI[14]
    dyn.set_inertial_parameters(pi, check_physical=False)
    assert dyn.inertial_parameters()[0] == 1e50


def test_wrong_sizes_and_non_numbers_name_the_size(dyn):
    shape = r"^pi must have shape \(30,\) \(10 per body\), got "
    with pytest.raises(ValueError, match=shape + r"\(3, 10\)$"):
        dyn.set_inertial_parameters(PI.reshape(3, 10))
    with pytest.raises(ValueError, match=shape + r"\(29,\)$"):
        dyn.set_inertial_parameters(PI[:-1])
    with pytest.raises(ValueError, match=shape + r"\(\)$"):
        dyn.set_inertial_parameters(1.0)
    with pytest.raises(ValueError, match=r"^pi must be a sequence of 30 numbers: "):
        dyn.set_inertial_parameters(["a"] * 30)


def _from_point_masses(masses, points) -> np.ndarray:
    """pi of a rigid set of point masses, summed from the definitions."""
    m = sum(masses)
    h = sum(mk * x for mk, x in zip(masses, points))
    inertia = sum(mk * (x.dot(x) * np.eye(3) - np.outer(x, x)) for mk, x in zip(masses, points))
    return np.r_[m, h, inertia[[0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]]


def test_pseudo_inertia_is_the_second_moment_of_the_mass():
    """For point masses, J = sum_k m_k [x_k; 1][x_k; 1]^T (Wensing, Kim and Slotine 2017)."""
    rng = np.random.default_rng(5)
    masses = rng.uniform(0.5, 2.0, 5)
    points = [rng.normal(size=3) for _ in masses]
    expected = sum(mk * np.outer(np.r_[x, 1.0], np.r_[x, 1.0]) for mk, x in zip(masses, points))
    J = P.pseudo_inertia(_from_point_masses(masses, points))
    assert J.shape == (4, 4)
    np.testing.assert_allclose(J, expected, rtol=1e-12, atol=1e-12)


def test_pseudo_inertia_of_the_hand_body():
    # tr(I) / 2 = (2.26 + 2.2 + 3.1) / 2 = 3.78
    expected = np.array([
        [3.78 - 2.26, 0.03, 0.04, 0.2],
        [0.03, 3.78 - 2.2, 0.09, 0.4],
        [0.04, 0.09, 3.78 - 3.1, 0.6],
        [0.2, 0.4, 0.6, 2.0],
    ])  # fmt: skip
    np.testing.assert_allclose(P.pseudo_inertia(list(PI[:10])), expected, rtol=0, atol=1e-14)
