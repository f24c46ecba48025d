"""Slotine-Li adaptive control (coriolis_ros.dynamics.adaptive): closed loops on a simulated
plant, the Lyapunov function, the projection onto physically consistent parameters, the tick's
formula, allocation-free ticks and refused inputs.

The plant is independent of the controller's estimate: the forward dynamics
qdd = M^-1 (tau - C qd - g) of a Dynamics holding the TRUE parameters (M by the CRBA, C qd + g
by the RNEA, both checked against Pinocchio elsewhere), integrated with RK4 at the tick,
torque held over the tick.  The controller starts with every body's parameters scaled by 0.5 or
1.5 (50 % wrong, still physical).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from support.oracle import erd_urdf

from coriolis_ros.dynamics import AdaptiveController, Dynamics
from coriolis_ros.dynamics.parameters import pseudo_inertia
from coriolis_ros.robots import robot_urdf

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

DT = 1e-3
LAM = 5.0


@pytest.fixture(scope="module")
def ur5():
    return Dynamics.from_urdf(str(erd_urdf("ur5")))


@pytest.fixture(scope="module")
def solo():
    return Dynamics.from_urdf(str(erd_urdf("solo12")), root_joint="floating")


def wrong(pi, seed=1):
    rng = np.random.default_rng(seed)
    return pi * np.repeat(rng.choice([0.5, 1.5], pi.size // 10), 10)


def desired(n):
    w = 1.0 + 0.37 * np.arange(n)

    def at(t):
        return 0.5 * np.sin(w * t), 0.5 * w * np.cos(w * t), -0.5 * w * w * np.sin(w * t)

    return at


def rk4(plant, q, v, tau, dt):
    n = plant.nv

    def f(q, v):
        M = plant.mass_matrix(q)
        h = plant.inverse_dynamics(q, v, np.zeros(n))
        return v, np.linalg.solve(M, tau - h)

    k1 = f(q, v)
    k2 = f(q + dt / 2 * k1[0], v + dt / 2 * k1[1])
    k3 = f(q + dt / 2 * k2[0], v + dt / 2 * k2[1])
    k4 = f(q + dt * k3[0], v + dt * k3[1])
    q = q + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
    v = v + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return q, v


def run(plant, ctrl, seconds, q0):
    """Closed loop; per tick: t, q, v, V = 1/2 s^T M s + 1/2 pi~^T P^-1 pi~ (true M, pi)."""
    n, pi = plant.nv, plant.inertial_parameters()
    at = desired(n)
    q, v = q0.copy(), np.zeros(n)
    log = {"t": [], "q": [], "v": [], "V": [], "err": []}
    for k in range(int(round(seconds / DT))):
        t = k * DT
        qd, vd, _ = at(t)
        s = v - (vd - LAM * (q - qd))
        log["V"].append(0.5 * s @ plant.mass_matrix(q) @ s + ctrl.parameter_energy(pi))
        log["t"].append(t)
        log["q"].append(q)
        log["v"].append(v)
        log["err"].append(np.max(np.abs(q - qd)))
        tau = ctrl.track(q, v, *at(t)).copy()
        q, v = rk4(plant, q, v, tau, DT)
    return {k: np.array(x) for k, x in log.items()}


def prediction_error(plant, pi_hat, log, at):
    """||Y (pi^ - pi)|| / ||Y pi|| stacked over the logged states (the identifiable part of the
    parameter error: what the estimate gets wrong about the torques on this trajectory)."""
    pi = plant.inertial_parameters()
    num = den = 0.0
    for t, q, v in zip(log["t"][::50], log["q"][::50], log["v"][::50], strict=True):
        _, vd, ad = at(t)
        Y = plant.regressor(q, v, vd, ad)
        num += np.sum((Y @ (pi_hat - pi)) ** 2)
        den += np.sum((Y @ pi) ** 2)
    return np.sqrt(num / den)


def test_tracking_and_parameter_convergence(ur5):
    pi = ur5.inertial_parameters()
    pi0 = wrong(pi)
    ctrl = AdaptiveController(ur5, dt=DT, lam=LAM, kd=20.0, gain=20.0, pi0=pi0)
    log = run(ur5, ctrl, 12.0, np.full(6, 0.2))
    at = desired(6)
    last = log["t"] >= 10.0
    # tracking: from 0.2 rad to below 2 mrad
    assert log["err"][0] == pytest.approx(0.2)
    assert np.max(log["err"][last]) < 2e-3, np.max(log["err"][last])
    # the estimate's torques on the trajectory converge to the true ones
    tail = {k: x[last] for k, x in log.items()}
    before = prediction_error(ur5, pi0, tail, at)
    after = prediction_error(ur5, ctrl.parameters, tail, at)
    assert before > 0.2 and after < 0.1 * before, (before, after)
    # every body stays physically consistent
    assert all(np.linalg.eigvalsh(J)[0] > 0 for J in ctrl.pseudo_inertias())


def test_lyapunov_function_does_not_increase(ur5):
    pi = ur5.inertial_parameters()
    ctrl = AdaptiveController(ur5, dt=DT, lam=LAM, kd=20.0, gain=20.0, pi0=wrong(pi, seed=3))
    log = run(ur5, ctrl, 4.0, np.full(6, 0.3))
    V = log["V"]
    # dV/dt = -s^T K_D s <= 0 in continuous time; per tick up to the integration error
    assert np.max(np.diff(V)) <= 1e-6 * V[0], np.max(np.diff(V))
    assert V[-1] < 0.7 * V[0]
    # and the parameter term alone: the projection never increases it
    assert ctrl.parameter_energy(pi) <= AdaptiveController(
        ur5, dt=DT, lam=LAM, kd=20.0, gain=20.0, pi0=wrong(pi, seed=3)
    ).parameter_energy(pi)


def test_projection_keeps_every_body_physical(ur5):
    # a large gain pushes some estimates out of the set from the first ticks on
    dyn = ur5
    pi = dyn.inertial_parameters()
    ctrl = AdaptiveController(dyn, dt=DT, lam=LAM, kd=20.0, gain=100.0, pi0=wrong(pi), margin=1e-6)
    at = desired(dyn.nv)
    q, v = np.full(dyn.nv, 0.3), np.zeros(dyn.nv)
    moved, scales, Vs = 0, ctrl.length_scales, []
    for k in range(300):
        qd, vd, _ = at(k * DT)
        s = v - (vd - LAM * (q - qd))
        Vs.append(0.5 * s @ dyn.mass_matrix(q) @ s + ctrl.parameter_energy(pi))
        tau = ctrl.track(q, v, *at(k * DT)).copy()
        moved += ctrl.projected
        for b, J in enumerate(ctrl.pseudo_inertias()):
            D = np.diag([1 / scales[b]] * 3 + [1.0])
            Js = D @ J @ D  # at or above the margin, up to rounding relative to |J|
            assert np.linalg.eigvalsh(Js)[0] >= 1e-6 - 1e-12 * np.abs(Js).max()
            assert np.linalg.eigvalsh(J)[0] > 0
        q, v = rk4(dyn, q, v, tau, DT)
    assert moved > 100
    # the projections keep V from increasing (the true parameters are inside the set)
    assert np.max(np.diff(Vs)) <= 1e-6 * Vs[0], np.max(np.diff(Vs))


def test_projection_is_the_nearest_point_in_the_metric(ur5):
    """Against numpy's eigh: the projection of a non-physical estimate clips the eigenvalues of
    the scaled pseudo-inertia, and it never increases the distance to a physical point."""
    pi = ur5.inertial_parameters()
    ctrl = AdaptiveController(ur5, dt=DT, lam=LAM, kd=20.0, gain=1.0, margin=1e-4)
    rng = np.random.default_rng(5)
    bad = pi + rng.normal(scale=0.5, size=pi.size) * np.abs(pi).max()
    ctrl.reset(bad)
    got = ctrl.parameters
    scales = ctrl.length_scales
    for b in range(6):
        D = np.diag([1 / scales[b]] * 3 + [1.0])
        J = D @ pseudo_inertia(bad[10 * b : 10 * b + 10]) @ D
        w, V = np.linalg.eigh(J)
        expected = V @ np.diag(np.maximum(w, 1e-4)) @ V.T
        Jgot = D @ pseudo_inertia(got[10 * b : 10 * b + 10]) @ D
        np.testing.assert_allclose(Jgot, expected, atol=1e-12 * max(1, np.abs(J).max()))
    # nonexpansive towards the true (physical) parameters, in the metric P^-1
    unprojected = ctrl.parameter_energy(pi)  # of the projected estimate
    ctrl_free = AdaptiveController(ur5, dt=DT, lam=LAM, kd=20.0, gain=1.0, margin=-1.0)
    ctrl_free.reset(bad)
    assert unprojected <= ctrl_free.parameter_energy(pi)
    assert np.array_equal(ctrl_free.parameters, bad)  # margin < 0: no projection


@pytest.mark.parametrize("which", ["ur5", "solo"])
def test_one_tick_is_the_formula(which, ur5, solo):
    dyn = {"ur5": ur5, "solo": solo}[which]
    n, pi = dyn.nv, dyn.inertial_parameters()
    rng = np.random.default_rng(2)
    q = dyn.integrate(dyn.neutral(), rng.normal(size=n))
    v, vr, ar = (rng.normal(size=n) for _ in range(3))
    kd = rng.uniform(1, 5, n)
    gains = rng.uniform(0.5, 2.0, len(dyn.parameter_links))
    gains[1] = 0.0  # body 1 frozen
    ctrl = AdaptiveController(dyn, dt=DT, lam=LAM, kd=kd, gain=gains, pi0=pi, margin=-1.0)
    tau = ctrl.step(q, v, vr, ar).copy()
    Y = dyn.regressor(q, v, vr, ar)
    s = v - vr
    np.testing.assert_allclose(tau, Y @ pi - kd * s, rtol=1e-12, atol=1e-12 * np.abs(Y @ pi).max())
    expected = pi - DT * ctrl.gain_matrix() @ Y.T @ s
    np.testing.assert_allclose(ctrl.parameters, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(ctrl.parameters[10:20], pi[10:20])
    np.testing.assert_allclose(ctrl.sliding, s, rtol=0, atol=0)
    # P^-1's parameter energy is the scaled pseudo-inertias' Frobenius norms
    e = rng.normal(size=pi.size) * 1e-3
    ctrl.reset(pi)
    scales = ctrl.length_scales
    expected_energy = 0.0
    for b, g in enumerate(gains):
        if g > 0:
            D = np.diag([1 / scales[b]] * 3 + [1.0])
            J = D @ pseudo_inertia(e[10 * b : 10 * b + 10]) @ D
            expected_energy += 0.5 * np.sum(J * J) / g
    assert ctrl.parameter_energy(pi - e) == pytest.approx(expected_energy, rel=1e-10)


def test_track_reference_is_slotine_li(ur5):
    ctrl = AdaptiveController(ur5, dt=DT, lam=[1, 2, 3, 4, 5, 6], kd=1.0, gain=0.0)
    rng = np.random.default_rng(4)
    q, v, qd, vd, ad = (rng.normal(size=6) for _ in range(5))
    ctrl.track(q, v, qd, vd, ad)
    lam = np.arange(1.0, 7.0)
    qd_r, qdd_r = ctrl.reference
    np.testing.assert_allclose(qd_r, vd - lam * (q - qd), rtol=1e-15)
    np.testing.assert_allclose(qdd_r, ad - lam * (v - vd), rtol=1e-15)
    np.testing.assert_array_equal(ctrl.parameters, ur5.inertial_parameters())  # gain 0


def test_ticks_allocate_no_numpy_memory(ur5, solo):
    rng = np.random.default_rng(0)
    c1 = AdaptiveController(ur5, dt=DT, lam=LAM, kd=20.0, gain=1.0)
    c2 = AdaptiveController(solo, dt=DT, lam=LAM, kd=20.0, gain=1.0)
    q1, x1 = rng.normal(size=6), [rng.normal(size=6) for _ in range(4)]
    q2 = solo.integrate(solo.neutral(), rng.normal(size=18))
    x2 = [rng.normal(size=18) * 0.1 for _ in range(3)]
    calls = [lambda: c1.track(q1, *x1), lambda: c2.step(q2, *x2)]
    for call in calls:
        call()
    domain = tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)
    tracemalloc.start()
    try:
        for _ in range(50):
            for call in calls:
                call()
        snapshot = tracemalloc.take_snapshot().filter_traces([domain])
    finally:
        tracemalloc.stop()
    assert sum(s.size for s in snapshot.statistics("lineno")) == 0


def test_refused_inputs(ur5, solo):
    pi = ur5.inertial_parameters()
    good = dict(dt=DT, lam=LAM, kd=20.0, gain=1.0)
    for key, value, match in [
        ("dt", 0.0, "dt must be positive"),
        ("dt", float("nan"), "dt must be a finite"),
        ("lam", -1.0, r"lam\[0\] must be finite and positive"),
        ("kd", [1.0] * 5, r"kd must be a number or have shape \(6,\)"),
        ("gain", -1.0, r"gain\[0\] must be finite and non-negative"),
        ("gain", float("inf"), "gain"),
        ("margin", float("nan"), "margin must be a finite"),
    ]:
        with pytest.raises(ValueError, match=match):
            AdaptiveController(ur5, **{**good, key: value})
    bad = pi.copy()
    bad[10 * 2] = -1.0  # negative mass of body 2
    link = ur5.parameter_links[2]
    with pytest.raises(ValueError, match=f"body 2 \\(link '{link}'\\) is not physically"):
        AdaptiveController(ur5, **good, pi0=bad)
    with pytest.raises(ValueError, match="pi0 must have shape"):
        AdaptiveController(ur5, **good, pi0=pi[:-1])
    ctrl = AdaptiveController(ur5, **good)
    z = np.zeros(6)
    for k, name in enumerate(("q_des", "qd_des", "qdd_des")):
        args = [z, z, z, z, z]
        args[2 + k] = np.r_[np.nan, z[1:]]
        with pytest.raises(ValueError, match=name):
            ctrl.track(*args)
    with pytest.raises(ValueError, match="q has a NaN"):
        ctrl.track(np.r_[np.nan, z[1:]], z, z, z, z)
    for k, name in enumerate(("q_des", "qd_des", "qdd_des")):
        args = [z, z, z, z, z]
        args[2 + k] = z[:5]
        with pytest.raises(ValueError, match=rf"{name} must have shape \(6,\), got \(5,\)"):
            ctrl.track(*args)
    with pytest.raises(ValueError, match=r"q must have shape \(6,\)"):
        ctrl.track(z[:5], z, z, z, z)
    with pytest.raises(ValueError, match=r"qd must have shape \(6,\)"):
        ctrl.track(z, np.zeros(7), z, z, z)
    # lists are accepted
    assert np.all(np.isfinite(ctrl.track([0.0] * 6, [0.0] * 6, [0.1] * 6, [0.0] * 6, [0.0] * 6)))
    # a tick that would overflow is refused and changes nothing
    before = ctrl.parameters
    huge = np.full(6, 1e50)
    with pytest.raises(ValueError, match="non-finite or huge"):
        ctrl.step(z, huge, -huge, z)
    np.testing.assert_array_equal(ctrl.parameters, before)
    # floating base: track refused (q - q_des is not a tangent vector), step accepted
    c2 = AdaptiveController(solo, **good)
    q2 = solo.neutral()
    with pytest.raises(ValueError, match="floating or planar joint"):
        c2.track(q2, np.zeros(18), q2, np.zeros(18), np.zeros(18))
    assert np.all(np.isfinite(c2.step(q2, np.zeros(18), np.zeros(18), np.zeros(18))))
    with pytest.raises(TypeError):
        AdaptiveController("ur5", **good)
    loop = Dynamics.from_urdf(robot_urdf("four_bar"))
    with pytest.raises(ValueError, match="closed-loop"):
        AdaptiveController(loop, **good)
