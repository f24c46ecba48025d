"""adaptive (the Python side of AdaptiveController): the default length scales, the gain
matrix against its definition, the projection margin and count, every argument bound on
both sides, lists against arrays, the planar root refused by track.

References: the pseudo-inertia of :func:`parameters.pseudo_inertia` (its own tests check it
against Pinocchio) for the radius of gyration (tr Sigma = tr(I) / 2, so sqrt(tr(I) / 2m) =
sqrt(tr Sigma / m)) and for P's metric (pi^T P_k^-1 pi = ||D J(pi) D||_F^2 / gain_k, the
definition in the class docstring); bodies built by hand with a known smallest eigenvalue of
J for the margin.
"""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import AdaptiveController, Dynamics
from coriolis_ros.dynamics.parameters import pseudo_inertia
from coriolis_ros.robots import robot_path

DT = 1e-3
BIG = 1e50
ABOVE = np.nextafter(BIG, np.inf)
GOOD = dict(dt=DT, lam=5.0, kd=20.0, gain=1.0)


@pytest.fixture(scope="module")
def arm():
    return Dynamics.from_urdf(robot_path("arm7"))


def body_with_sigma(sigma, m=1.0):
    """Ten parameters (m, h = 0, I) whose pseudo-inertia is diag(sigma, m): I = tr(Sigma) 1 -
    Sigma (so that 1/2 tr(I) 1 - I = Sigma)."""
    s = np.asarray(sigma, dtype=float)
    inertia = s.sum() * np.ones(3) - s
    return np.array([m, 0, 0, 0, inertia[0], 0, inertia[1], 0, 0, inertia[2]])


def test_repr_links_and_a_fresh_projection_count(arm):
    ctrl = AdaptiveController(arm, **GOOD)
    assert repr(ctrl) == "AdaptiveController('arm7', nv=7, dt=0.001)"
    assert ctrl.parameter_links == arm.parameter_links and len(ctrl.parameter_links) == 7
    assert ctrl.projected == 0  # no tick yet
    np.testing.assert_array_equal(ctrl.parameters, arm.inertial_parameters())
    for b, J in enumerate(ctrl.pseudo_inertias()):
        np.testing.assert_array_equal(J, pseudo_inertia(arm.inertial_parameters()[10 * b :][:10]))


def test_default_length_scales_are_the_radius_of_gyration(arm):
    pi = arm.inertial_parameters()
    pi[0:10] = [0.0, 0, 0, 0, 1.0, 0, 1.0, 0, 0, 1.0]  # massless, with inertia
    pi[10:20] = [2.0, 0, 0, 0, 0, 0, 0, 0, 0, 0]  # a point mass at the origin: tr(I) = 0
    pi[20:30] = [-1.0, 0, 0, 0, 1.0, 0, 1.0, 0, 0, 1.0]  # a negative mass
    pi[30:40] = [1.0, 0, 0, 0, -1.0, 0, -1.0, 0, 0, -1.0]  # a negative trace
    gains = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0]  # the unphysical bodies are not adapted
    ctrl = AdaptiveController(arm, **{**GOOD, "gain": gains}, pi0=pi)
    scales = ctrl.length_scales
    np.testing.assert_array_equal(scales[:4], [1.0, 1.0, 1.0, 1.0])  # undefined: 1 m
    for b in range(4, 7):
        J = pseudo_inertia(pi[10 * b : 10 * b + 10])
        assert scales[b] == pytest.approx(np.sqrt(np.trace(J[:3, :3]) / J[3, 3]), rel=1e-14)
    assert np.all(scales[4:] > 0.01) and np.all(scales[4:] < 1.0)  # arm7's links
    given = AdaptiveController(arm, **GOOD, length_scales=[0.5] * 7).length_scales
    np.testing.assert_array_equal(given, np.full(7, 0.5))


def test_gain_matrix_is_its_definition(arm):
    gains = np.array([0.5, 0.0, 2.0, 1.0, 3.0, 0.25, 1.5])
    scales = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    ctrl = AdaptiveController(arm, **{**GOOD, "gain": gains}, length_scales=scales)
    P = ctrl.gain_matrix()
    assert P.shape == (70, 70)
    rng = np.random.default_rng(3)
    for b in range(7):
        for c in range(7):
            if c != b:
                assert not P[10 * b : 10 * b + 10, 10 * c : 10 * c + 10].any()
        block = P[10 * b : 10 * b + 10, 10 * b : 10 * b + 10]
        if gains[b] == 0:
            assert not block.any()
            continue
        D = np.diag([1 / scales[b]] * 3 + [1.0])
        inverse = np.linalg.inv(block)
        for _ in range(3):
            e = rng.normal(size=10)
            J = D @ pseudo_inertia(e) @ D
            assert e @ inverse @ e == pytest.approx(np.sum(J * J) / gains[b], rel=1e-9)


def test_the_default_margin_is_1e_9(arm):
    """A body whose pseudo-inertia's smallest eigenvalue is 1.5e-9 kg (length scale 1 m): kept
    by the default margin, projected by a margin of 2e-9."""
    pi = arm.inertial_parameters()
    pi[30:40] = body_with_sigma([1.5e-9, 1.0, 1.0])
    assert np.linalg.eigvalsh(pseudo_inertia(pi[30:40]))[0] == pytest.approx(1.5e-9, rel=1e-6)
    ones = np.ones(7)
    kept = AdaptiveController(arm, **GOOD, pi0=pi, length_scales=ones)
    np.testing.assert_array_equal(kept.parameters, pi)
    moved = AdaptiveController(arm, **GOOD, pi0=pi, length_scales=ones, margin=2e-9)
    J = moved.pseudo_inertias()[3]
    assert np.linalg.eigvalsh(J)[0] == pytest.approx(2e-9, rel=1e-6)
    np.testing.assert_array_equal(moved.parameters[:30], pi[:30])
    moved.reset()  # back to pi0, projected again
    assert np.linalg.eigvalsh(moved.pseudo_inertias()[3])[0] == pytest.approx(2e-9, rel=1e-6)
    kept.reset(moved.parameters)
    np.testing.assert_array_equal(kept.parameters, moved.parameters)
    kept.reset()
    np.testing.assert_array_equal(kept.parameters, pi)


def test_pi0_consistency_is_checked_for_adapted_bodies_only(arm):
    pi = arm.inertial_parameters()
    pi[30:40] = body_with_sigma([0.0, 1.0, 1.0])  # J singular: its smallest eigenvalue 0
    assert np.linalg.eigvalsh(pseudo_inertia(pi[30:40]))[0] == 0.0
    link = arm.parameter_links[3]
    named = f"pi0 of body 3 \\(link '{link}'\\) is not physically"
    with pytest.raises(ValueError, match=named) as e:
        AdaptiveController(arm, **GOOD, pi0=pi)
    assert "mass is 0" not in str(e.value) and pi[30] > 0
    massless = pi.copy()
    massless[30] = 0.0  # the mass alone: named as the cause, and the way out
    with pytest.raises(ValueError, match=r"consistent \(its mass is 0: .*a gain of 0"):
        AdaptiveController(arm, **GOOD, pi0=massless)
    negative, zero = " (its mass is negative)", " (its mass is 0: a massless rotor or link)"
    for mass, why in ((0.5, ""), (-1e-300, negative), (-2.0, negative), (-0.0, zero)):
        other = pi.copy()
        other[30] = mass  # Sigma keeps its zero eigenvalue: J is not positive definite
        assert np.linalg.eigvalsh(pseudo_inertia(other[30:40]))[0] <= 0.0
        with pytest.raises(ValueError) as e:
            AdaptiveController(arm, **GOOD, pi0=other)
        text = str(e.value)
        head = named.replace("\\", "") + " consistent" + why + ": its pseudo-inertia"
        assert text.startswith(head), (mass, text)
    gains = [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    ctrl = AdaptiveController(arm, **{**GOOD, "gain": gains}, pi0=pi, length_scales=np.ones(7))
    np.testing.assert_array_equal(ctrl.parameters, pi)  # not adapted, not projected
    pi[30:40] = body_with_sigma([1e-12, 1.0, 1.0])  # positive definite: accepted
    AdaptiveController(arm, **GOOD, pi0=pi, length_scales=np.ones(7), margin=-1.0)


def test_projected_counts_the_adapted_bodies_moved(arm):
    gains = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    z = np.zeros(7)
    q = np.linspace(-0.5, 0.5, 7)
    every = AdaptiveController(arm, **{**GOOD, "gain": gains}, margin=1e3)  # above every J
    every.step(q, z, z, z)
    assert every.projected == 5
    none = AdaptiveController(arm, **{**GOOD, "gain": gains}, margin=-1.0)
    none.step(q, z, z, z)
    assert none.projected == 0


def test_lists_give_what_arrays_give(arm):
    rng = np.random.default_rng(7)
    q, v, qd, vd, ad = (rng.normal(size=7) for _ in range(5))
    a, b = AdaptiveController(arm, **GOOD), AdaptiveController(arm, **GOOD)
    want = a.track(q, v, qd, vd, ad).copy()
    got = b.track(*(list(x) for x in (q, v, qd, vd, ad))).copy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(b.parameters, a.parameters)
    np.testing.assert_array_equal(b.sliding, a.sliding)
    for x, y in zip(b.reference, a.reference, strict=True):
        np.testing.assert_array_equal(x, y)
    want = a.step(q, v, vd, ad).copy()
    got = b.step(q, list(v), list(vd), ad).copy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(b.parameters, a.parameters)
    np.testing.assert_array_equal(b.sliding, a.sliding)


def test_track_refuses_a_planar_root():
    planar = Dynamics.from_urdf(robot_path("arm7"), root_joint="planar")
    assert planar.nq == planar.nv  # refused for its joint type, not its sizes
    ctrl = AdaptiveController(planar, **GOOD)
    q, z = planar.neutral(), np.zeros(planar.nv)
    with pytest.raises(ValueError, match="floating or planar joint"):
        ctrl.track(q, z, q, z, z)
    assert np.all(np.isfinite(ctrl.step(q, z, z, z)))


@pytest.mark.parametrize(
    "key,value,match",
    [
        ("dt", True, "dt must be a finite number, got True"),
        ("dt", "0.1", "dt must be a finite number"),
        ("dt", -DT, "dt must be positive"),
        ("margin", False, "margin must be a finite number"),
        ("margin", float("inf"), "margin must be a finite number"),
        ("lam", 0.0, r"lam\[0\] must be finite and positive, got 0.0"),
        ("kd", 0.0, r"kd\[0\] must be finite and positive, got 0.0"),
        ("lam", [1, 1, -1, 1, 1, 1, 1], r"lam\[2\] must be finite and positive, got -1.0"),
        ("kd", ABOVE, r"kd\[0\] must be finite and positive"),
        ("kd", [BIG, 1, -1, 1, 1, 1, 1], r"kd\[2\] must be finite and positive, got -1.0"),
        ("gain", [0, 0, 0, 0, -1e-300, 0, 0], r"gain\[4\] must be finite and non-negative"),
        ("gain", ABOVE, r"gain\[0\] must be finite and non-negative"),
        ("lam", True, "lam must be numbers, got a bool"),
        ("gain", np.ones(7, dtype=bool), "gain must be numbers, got a bool"),
        ("kd", "abc", "kd must be a number or 7 of them"),
        ("kd", [[1.0] * 7], r"kd must be a number or have shape \(7,\), got \(1, 7\)"),
        ("length_scales", 0.0, r"length_scales\[0\] must be finite and positive"),
    ],
)
def test_arguments_refused(arm, key, value, match):
    with pytest.raises(ValueError, match=match):
        AdaptiveController(arm, **{**GOOD, key: value})


def test_arguments_at_their_bounds_accepted(arm):
    ctrl = AdaptiveController(arm, dt=BIG, lam=BIG, kd=[BIG] * 7, gain=[0.0] * 7, margin=-BIG)
    assert ctrl.dt == BIG and ctrl.margin == -BIG
    AdaptiveController(arm, dt=5e-324, lam=5e-324, kd=5e-324, gain=BIG)  # the smallest double


def test_parameter_vectors_refused_and_accepted_at_the_bound(arm):
    pi = arm.inertial_parameters()
    gains = [1.0] * 6 + [0.0]  # the last body is not checked for consistency
    pi[-1] = -BIG
    ctrl = AdaptiveController(arm, **{**GOOD, "gain": gains}, pi0=pi)
    assert ctrl.parameters[-1] == -BIG
    pi[-1] = -ABOVE
    with pytest.raises(ValueError, match="pi0 has a NaN, infinite or huge"):
        AdaptiveController(arm, **{**GOOD, "gain": gains}, pi0=pi)
    with pytest.raises(ValueError, match="pi0 must be 70 numbers"):
        AdaptiveController(arm, **GOOD, pi0="abc")
    with pytest.raises(ValueError, match=r"pi must have shape \(70,\), got \(69,\)"):
        ctrl.reset(np.zeros(69))
    with pytest.raises(ValueError, match="pi has a NaN"):
        ctrl.parameter_energy(pi)
    assert ctrl.parameter_energy(ctrl.parameters) == 0.0
