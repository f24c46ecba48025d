"""coriolis_christoffel: M, Mdot, C and Gamma in one call.

On a closed chain the call closes the loops once and takes Cbar from Gammabar
(Cbar_ij = sum_k Gammabar_ijk ydot_k) and Mbardot = Cbar + Cbar^T, where ``coriolis`` reduces
the tree's C and Mdot (Algorithm 1) with A and dA/dy: two different computations of the same
quantities, compared here at 1e-12.  On every other model it is the two calls, bit for bit.
Also: in-place outputs, every refusal, and the memory budget of a closed chain's Gamma on both
sides.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.oracle import assert_close

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path

CLOSED = ["four_bar", "leg_knee_linkage", "leg_belt_rotors"]


def _state(dyn, rng):
    y = dyn.neutral()
    if dyn.root_joint == "floating":
        y[:3] = rng.uniform(-1, 1, 3)
        quat = rng.normal(size=4)
        y[3:7] = quat / np.linalg.norm(quat)
        y[7:] += rng.uniform(-0.1, 0.1, dyn.nq - 7)
    else:
        y += rng.uniform(-0.1, 0.1, dyn.nq)
    return y, rng.uniform(-2, 2, dyn.nv)


@pytest.mark.parametrize("root", ["fixed", "floating"])
@pytest.mark.parametrize("name", CLOSED)
def test_closed_chain_equals_coriolis_and_christoffel(name, root):
    """Cbar from Gammabar against Cbar from the tree's C (Algorithm 1) reduced by A, dA/dy;
    Mbardot = Cbar + Cbar^T against the reduced tree's Mdot; Gammabar and Mbar against the
    separate calls, at several states along a path (each call closes the loops afresh)."""
    fused = Dynamics.from_urdf(robot_path(name), root_joint=root)
    single = fused.clone()
    assert fused.closed is not None
    rng = np.random.default_rng(11)
    for t in range(4):
        y, yd = _state(fused, rng)
        M, Md, C, G = fused.coriolis_christoffel(y, yd)
        M1, Md1, C1 = single.coriolis(y, yd)
        G1 = single.christoffel(y)
        assert_close(M, M1, 1e-12, f"{name} M {t}")
        assert_close(Md, Md1, 1e-12, f"{name} Mdot {t}")
        assert_close(C, C1, 1e-12, f"{name} C {t}")
        assert_close(G, G1, 1e-12, f"{name} Gamma {t}")
        assert np.abs(C).max() > 0.0 and np.abs(Md - Md.T).max() == 0.0


@pytest.mark.parametrize("name", ["arm7", "arm7_rotors", "quadruped12"])
def test_other_models_equal_the_two_calls_bit_for_bit(name):
    dyn = Dynamics.from_urdf(robot_path(name))
    rng = np.random.default_rng(3)
    y, yd = _state(dyn, rng)
    both = dyn.coriolis_christoffel(y, yd)
    for got, want in zip(both, (*dyn.coriolis(y, yd), dyn.christoffel(y)), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["quadruped12", "leg_knee_linkage"])
def test_mixed_velocity_representation_equals_the_two_calls(name):
    """The mixed representation's own coriolis and christoffel (on a closed chain too: not
    the body representation's fused call)."""
    dyn = Dynamics.from_urdf(robot_path(name), root_joint="floating",
                             velocity_representation="mixed")  # fmt: skip
    y, yd = _state(dyn, np.random.default_rng(5))
    both = dyn.coriolis_christoffel(y, yd)
    for got, want in zip(both, (*dyn.coriolis(y, yd), dyn.christoffel(y)), strict=True):
        assert_close(got, want, 1e-12 if dyn.closed else 0.0, "mixed")
    body = Dynamics.from_urdf(robot_path(name), root_joint="floating")
    assert np.abs(both[2] - body.coriolis(y, yd)[2]).max() > 1e-6  # a different C
    out = tuple(np.empty_like(x) for x in both)
    assert dyn.coriolis_christoffel(y, yd, out=out) is not None
    for got, want in zip(out, both, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["four_bar", "arm7"])
def test_out_arrays_are_filled_in_place(name):
    dyn = Dynamics.from_urdf(robot_path(name))
    y, yd = _state(dyn, np.random.default_rng(2))
    n = dyn.nv
    out = (np.empty((n, n)), np.empty((n, n)), np.empty((n, n)), np.empty((n, n, n)))
    got = dyn.coriolis_christoffel(y, yd, out=out)
    for a, b in zip(got, out, strict=True):
        assert a is b
    fresh = dyn.clone().coriolis_christoffel(y, yd)
    for a, b in zip(out, fresh, strict=True):
        assert_close(a, b, 1e-13, "in place")


@pytest.mark.parametrize("name", ["four_bar", "arm7"])
def test_bad_input_is_refused(name):
    dyn = Dynamics.from_urdf(robot_path(name))
    y, yd = _state(dyn, np.random.default_rng(4))
    n = dyn.nv
    mats = [np.empty((n, n)) for _ in range(3)]
    G = np.empty((n, n, n))
    with pytest.raises(ValueError, match="out must be a tuple of 4 arrays"):
        dyn.coriolis_christoffel(y, yd, out=(*mats,))
    with pytest.raises(ValueError, match=rf"out array has shape \({n + 1}, {n + 1}, {n + 1}\)"):
        dyn.coriolis_christoffel(y, yd, out=(*mats, np.empty((n + 1,) * 3)))
    with pytest.raises(ValueError, match="must not share memory"):
        dyn.coriolis_christoffel(y, yd, out=(mats[0], mats[1], mats[0], G))
    with pytest.raises(ValueError, match="must not share memory"):  # Gamma over C's memory
        shared = np.empty(n * n * n + n * n)
        C_view = shared[: n * n].reshape(n, n)
        G_view = shared[: n * n * n].reshape(n, n, n)
        dyn.coriolis_christoffel(y, yd, out=(mats[0], mats[1], C_view, G_view))
    with pytest.raises(ValueError, match="out must be a tuple of 4 arrays"):
        dyn.coriolis_christoffel(y, yd, out=(*mats, G, np.empty((n, n))))
    for wrong in (np.append(yd, 0.0), yd[:-1]):  # one too many, one too few
        with pytest.raises(ValueError, match=rf"^qd must have shape \({n},\)"):
            dyn.coriolis_christoffel(y, wrong)
    for wrong in (np.append(y, 0.0), y[:-1]):
        with pytest.raises(ValueError, match=rf"^q must have shape \({y.size},\)"):
            dyn.coriolis_christoffel(wrong, yd)
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="^qd has a NaN"):
            dyn.coriolis_christoffel(y, np.full(n, bad))
        q = y.copy()
        q[-1] = bad
        with pytest.raises(ValueError, match="^q has a NaN"):
            dyn.coriolis_christoffel(q, yd)
    # qd's bound, both sides: 1e50 answered, the next double above refused
    at = dyn.coriolis_christoffel(y, np.full(n, 1e50))
    assert all(np.isfinite(x).all() for x in at) and np.abs(at[2]).max() > 1e45
    with pytest.raises(ValueError, match="^qd has a NaN, infinite or huge"):
        dyn.coriolis_christoffel(y, np.full(n, np.nextafter(1e50, np.inf)))
    # after every refusal the next call is answered as before
    ok = dyn.coriolis_christoffel(y, yd)
    assert all(np.isfinite(x).all() for x in ok)


def test_a_dead_point_is_refused_by_name():
    """The closure's refusal (as ``coriolis``'s): the parallelogram knee's dead point, where
    K_z loses rank; a millirad before it the call answers."""
    dyn = Dynamics.from_urdf(robot_path("leg_knee_linkage"),
                             independent_joints=["hip", "knee_crank"])  # fmt: skip
    near, at = np.pi / 2 - 1e-3, np.pi / 2
    dyn.close_loops([0.0, near], guess=[0.0, near, near, -near])
    ok = dyn.coriolis_christoffel(np.array([0.0, near]), np.array([0.5, 1.0]))
    assert all(np.isfinite(x).all() for x in ok)
    dyn.close_loops([0.0, near], guess=[0.0, near, near, -near])
    with pytest.raises(ValueError, match=r"singular configuration: .* \(knee, knee_rod; "):
        dyn.coriolis_christoffel(np.array([0.0, at]), np.array([0.5, 1.0]))


def test_closed_chain_gamma_budget_both_sides():
    """A closed chain's Gamma entry points need the tree's Gamma (n^3), the reduction's
    scratch (n^2 ny) and Gammabar (ny^3) doubles: on the four-bar (n = 3, ny = 1)
    8 (27 + 9 + 1) = 296 bytes.  At the budget both answer; a byte below, both refuse naming
    the size and the limit, before the workspace holds any Gamma, and the other methods
    still answer."""
    y, yd = np.array([0.3]), np.array([1.0])
    at = Dynamics.from_urdf(robot_path("four_bar"), max_christoffel_bytes=296)
    assert at.christoffel(y).shape == (1, 1, 1)
    assert at.coriolis_christoffel(y, yd)[3].shape == (1, 1, 1)
    assert at.clone().christoffel(y).shape == (1, 1, 1)
    below = Dynamics.from_urdf(robot_path("four_bar"), max_christoffel_bytes=295)
    calls = (
        lambda: below.christoffel(y),
        lambda: below.christoffel(y, method="safeea"),
        lambda: below.coriolis_christoffel(y, yd),
        lambda: below.clone().christoffel(y),
    )
    for call in calls:
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "(296 bytes" in message and "max_christoffel_bytes=295" in message
    assert_close(below.coriolis(y, yd)[2], at.coriolis(y, yd)[2], 0.0, "C below the budget")
    assert below.closed.closure.packed.size < at.closed.closure.packed.size


@pytest.mark.parametrize("name, root", [("arm7", "fixed"), ("quadruped12", "floating"),
                                        ("leg_knee_linkage", "floating")])  # fmt: skip
def test_mass_matrix_from_christoffels_composites_is_crbas_to_the_bit(name, root):
    """The Gamma entry points of a closed chain take the tree's M from the composite inertias
    Algorithm 2 leaves in the workspace; the composite-rigid-body algorithm's own pass gives
    the same M, bit for bit (a free flyer's six rows included)."""
    from coriolis_ros.dynamics.kernels.christoffel import christoffel
    from coriolis_ros.dynamics.kernels.crba import mass_from_composites, mass_matrix

    dyn = Dynamics.from_urdf(robot_path(name), root_joint=root)
    tree = dyn.closed.tree_dynamics if dyn.closed else dyn
    engine = tree.engine
    rng = np.random.default_rng(9)
    q = tree.neutral()
    first = 7 if root == "floating" else 0  # the joints after the base's pose
    q[first:] += rng.uniform(-0.5, 0.5, q.size - first)
    n = engine.nv
    G, M, M_crba = np.empty((n, n, n)), np.full((n, n), np.nan), np.empty((n, n))
    assert christoffel(engine.mf, q, engine.ws, G) == 0
    mass_from_composites(engine.mf, engine.ws, M)
    assert mass_matrix(engine.mf, q, engine.ws, M_crba) == 0
    np.testing.assert_array_equal(M, M_crba)
    assert_close(M, tree.mass_matrix(q), 1e-14, f"{name} M")
