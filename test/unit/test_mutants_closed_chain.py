"""dynamics.closed_chain's Python glue: the paths the loop tests do not take.

* ``full_velocity`` against central differences of ``full_position`` (at a given q, and at
  the last configuration when q is omitted); ``dependent_positions`` against the closed tree
  configuration; ``integrate``'s default step of 1;
* Γ by Safeea's recursion on a closed chain whose spanning tree is serial (a four-bar
  closing on the ground) against the default algorithm and against differences of M̄; a
  branched tree and an unknown method refused; Γ written into the ``out`` given;
* a numpy q or qd of the wrong size refused with the usual message (the kernels' size status),
  and the status dispatch: an unknown status is an internal error of the closed-chain kernel.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path

H = 1e-6


def _rod(name: str, xyz: str, mass: float) -> str:
    return (f'<link name="{name}"><inertial><origin xyz="{xyz}"/><mass value="{mass}"/>'
            '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-3" iyz="0" izz="2e-3"/>'
            "</inertial></link>")  # fmt: skip


def _joint(name: str, parent: str, child: str, xyz: str) -> str:
    return (f'<joint name="{name}" type="continuous"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}"/><axis xyz="0 1 0"/></joint>')  # fmt: skip


# A four-bar in the x-z plane whose spanning tree is one chain: crank (0.3 m up), coupler
# (0.5 m along x), rocker (to 0.1 m further along x and 0.3 m down), the rocker's end closing on
# the ground at x = 0.6 (closed at y = 0; not a parallelogram, so the reduced M depends on y).
SERIAL = (
    '<robot name="serial_four_bar"><link name="base"/>'
    + _rod("l1", "0 0 0.15", 0.4) + _rod("l2", "0.25 0 0", 0.9)
    + _rod("l3", "0.05 0 -0.15", 0.6)
    + _joint("crank", "base", "l1", "0 0 0") + _joint("coupler", "l1", "l2", "0 0 0.3")
    + _joint("rocker", "l2", "l3", "0.5 0 0")
    + '<loop name="ground" type="revolute"><predecessor link="l3">'
    '<origin xyz="0.1 0 -0.3"/></predecessor><successor link="base"><origin xyz="0.6 0 0"/>'
    '</successor><axis xyz="0 1 0"/></loop></robot>'
)  # fmt: skip


@pytest.fixture(scope="module")
def four_bar():
    return Dynamics.from_urdf(robot_path("four_bar"))


@pytest.fixture(scope="module")
def serial():
    return Dynamics.from_urdf(SERIAL)


def test_full_velocity_is_the_rate_of_the_closed_configuration(four_bar):
    dyn = four_bar
    for q, v in ((np.array([0.4]), np.array([1.3])), (np.array([-2.0]), np.array([-0.7]))):
        rate = (dyn.full_position(q + H * v) - dyn.full_position(q - H * v)) / (2 * H)
        np.testing.assert_allclose(dyn.full_velocity(v, q), rate, rtol=0, atol=1e-8)
        dyn.full_position(q)  # the last configuration: q omitted, it is the one used
        np.testing.assert_array_equal(dyn.full_velocity(v), dyn.full_velocity(v, q))
        other = q + 1.0
        assert not np.allclose(dyn.full_velocity(v, other), dyn.full_velocity(v, q))


def test_dependent_positions_are_those_of_the_last_closed_configuration(four_bar):
    dyn = four_bar
    for y in (0.4, -2.0):
        full = dyn.full_position(np.array([y]))
        rows = [dyn.tree_joint_names.index(n) for n in dyn.dependent_joints]
        assert dyn.dependent_joints == ("coupler", "rocker")
        np.testing.assert_array_equal(dyn.closed.dependent_positions(), full[rows])


def test_integrate_steps_by_one_by_default(four_bar):
    q, v = np.array([0.4]), np.array([0.3])
    np.testing.assert_allclose(four_bar.integrate(q, v), [0.7], rtol=0, atol=1e-15)
    np.testing.assert_allclose(four_bar.integrate(q, v, 0.5), [0.55], rtol=0, atol=1e-15)


def test_safeea_on_a_serial_spanning_tree_is_the_default_gamma_and_the_metrics(serial):
    """Γ̄_ijk = ½ (∂M̄_ij/∂y_k + ∂M̄_ik/∂y_j − ∂M̄_jk/∂y_i) on one coordinate: Γ̄ = ½ dM̄/dy."""
    dyn = serial
    assert dyn.nv == 1 and dyn.tree_joint_names == ("crank", "coupler", "rocker")
    for y in (0.3, -0.2, 0.5):
        q = np.array([y])
        G = dyn.christoffel(q)
        G_safeea = dyn.christoffel(q, method="safeea")
        np.testing.assert_allclose(G_safeea, G, rtol=1e-12, atol=1e-15)
        dM = (dyn.mass_matrix(q + H) - dyn.mass_matrix(q - H)) / (2 * H)
        np.testing.assert_allclose(G_safeea[:, :, 0], 0.5 * dM, rtol=0, atol=1e-8)
        assert abs(G[0, 0, 0]) > 1e-3  # the reduced metric does depend on y


def test_safeea_on_a_branched_tree_and_an_unknown_method_are_refused(four_bar):
    with pytest.raises(ValueError, match="method='safeea' is for serial chains; this model is a"):
        four_bar.christoffel(np.array([0.4]), method="safeea")
    with pytest.raises(ValueError, match="method must be 'algorithm2' or 'safeea', got 'x'"):
        four_bar.christoffel(np.array([0.4]), method="x")


def test_christoffel_writes_into_the_out_given(four_bar, serial):
    for dyn, method in ((four_bar, "algorithm2"), (serial, "safeea")):
        q = np.array([0.4])
        out = np.full((1, 1, 1), np.nan)
        assert dyn.christoffel(q, out=out, method=method) is out
        np.testing.assert_array_equal(out, dyn.christoffel(q, method=method))


def test_a_numpy_input_of_the_wrong_size_is_refused_by_name(four_bar):
    with pytest.raises(ValueError, match=r"^q must have shape \(1,\), got \(2,\)$"):
        four_bar.mass_matrix(np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match=r"^qd must have shape \(1,\), got \(2,\)$"):
        four_bar.coriolis(np.array([0.1]), np.array([0.1, 0.2]))


def test_an_unknown_status_is_the_closed_chain_kernels_internal_error(four_bar):
    """The closure's own statuses lie strictly between CLOSURE and NOT_FINITE_OUT; anything else
    left over (below, at CLOSURE itself, above) is an internal error named as such."""
    from coriolis_ros.dynamics.kernels import closed_entry as ce

    for status in (ce.CLOSURE - 1, ce.CLOSURE, ce.NOT_FINITE_OUT + 1, ce.TREE + 1):
        with pytest.raises(RuntimeError) as info:
            four_bar.closed._fail(status)
        assert str(info.value) == f"internal error: closed-chain kernel status {status}"


def test_neutral_is_the_assembly_nearest_the_trees_neutral_whatever_came_before():
    """After the crossed assembly (closed from a guess on it), neutral() closes from the tree's
    neutral configuration again, not by continuation from the crossed one: the calls after it
    are on the open assembly."""
    dyn = Dynamics.from_urdf(robot_path("four_bar"))
    y = dyn.neutral()
    assert y.tolist() == [0.0]
    open_ = dyn.full_position(y).copy()
    crossed = dyn.close_loops(y, guess=np.array([0.0, 2.0, -1.0]))
    assert abs(crossed[2] - open_[2]) > 1.0  # the rocker on the other side
    assert dyn.neutral().tolist() == [0.0]
    np.testing.assert_allclose(dyn.full_position(y), open_, rtol=0, atol=1e-12)


def test_a_huge_or_non_finite_numpy_input_names_it_and_the_bound(four_bar):
    """Arrays go to the kernels unchecked; their status names the input and the ±1e50 bound."""
    for bad in (np.nan, np.inf, 1.5e50):
        with pytest.raises(ValueError) as info:
            four_bar.mass_matrix(np.array([bad]))
        assert str(info.value) == "q has a NaN, infinite or huge (beyond ±1e+50) entry"
        with pytest.raises(ValueError) as info:
            four_bar.coriolis(np.array([0.1]), np.array([bad]))
        assert str(info.value) == "qd has a NaN, infinite or huge (beyond ±1e+50) entry"


def test_the_status_of_a_non_finite_result_says_so(four_bar):
    from coriolis_ros.dynamics.kernels import closed_entry as ce

    with pytest.raises(ValueError) as info:
        four_bar.closed._fail(ce.NOT_FINITE_OUT)
    assert str(info.value) == "the result is not finite (inputs too large for this model)"


def test_tree_rates_at_the_bound_pass_and_the_next_double_is_refused_naming_the_joint(four_bar):
    """±1e50 in every tree joint is in range (returned as given); the next double beyond, or
    a NaN, is refused naming the joint where it is (the largest, a NaN counting as infinite)."""
    closed = four_bar.closed
    names = four_bar.tree_joint_names
    assert len(names) == 3
    edge = np.array([1e50, -1e50, 1e50])
    assert closed._tree_rates(edge, "qd", "A(q) qd") is edge
    beyond = math.nextafter(1e50, math.inf)
    for k in range(3):
        x = np.array([1e50, -1e50, 0.5])
        x[k] = -beyond if k == 1 else beyond
        with pytest.raises(ValueError) as info:
            closed._tree_rates(x, "qd", "A(q) qd")
        assert str(info.value) == (
            f"A(q) qd (from qd) moves tree joint '{names[k]}' at {x[k]:.3g}, beyond ±1e+50: "
            "too large for this closed chain"
        )
    with pytest.raises(ValueError, match=f"moves tree joint '{names[2]}' at nan, beyond"):
        closed._tree_rates(np.array([1e50, 2e50, np.nan]), "x", "A(q) x")
