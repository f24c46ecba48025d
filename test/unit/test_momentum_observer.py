"""MomentumObserver: the residual r = K_O (p - p(0) - ∫(τ + Cᵀq̇ - g + r) dt) on simulated robots.

The plant is the library's forward dynamics q̈ = M⁻¹(τ + τ_ext - C q̇ - g) integrated with RK4
(sub-steps of at most 0.25 ms between stamps), driven by a continuous PD + gravity tracking
controller, so the τ measured at a stamp is the τ applied there.  A known external torque
switches on at a stamp t_s; the observer must then follow r = τ_ext (1 - e^(-K (t - t_s))):
its steady-state error, its time constant (fitted) against 1/K_O, with regular and jittery
stamps, per-joint gains, K_O h beyond the forward-Euler stability limit, reset, rejected stamps
and inputs (state unchanged), gain validation and allocation-free updates.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from support.oracle import erd_urdf

from coriolis_ros.dynamics import Dynamics, MomentumObserver
from support.random_trees import random_tree

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

SUBSTEP = 2.5e-4


@pytest.fixture(scope="module")
def ur5():
    return Dynamics.from_urdf(str(erd_urdf("ur5")))


@pytest.fixture(scope="module")
def panda():
    return Dynamics.from_urdf(str(erd_urdf("panda")))


class Plant:
    """RK4 on the library's forward dynamics with a computed-torque controller tracking a
    sinusoid (closed-loop poles at -10/s, slower than the stamps, as on a real robot)."""

    def __init__(self, dyn, tau_ext, t_on, q0):
        self.dyn, self.tau_ext, self.t_on = dyn, np.asarray(tau_ext, dtype=float), t_on
        n = dyn.nv
        self.amp = 0.4 * np.cos(np.arange(n))
        self.freq = 1.0 + 0.3 * np.arange(n)
        self.q0 = np.asarray(q0, dtype=float)
        self.kp, self.kd = 100.0, 20.0

    def reference(self, t):
        ph = self.freq * t
        s, c = np.sin(ph), np.cos(ph)
        return self.q0 + self.amp * s, self.amp * self.freq * c, -self.amp * self.freq**2 * s

    def control(self, t, q, qd):
        qr, qdr, qddr = self.reference(t)
        return self.dyn.inverse_dynamics(q, qd, qddr + self.kp * (qr - q) + self.kd * (qdr - qd))

    def accel(self, t, q, qd, ext):
        d = self.dyn
        rhs = self.control(t, q, qd) + ext - d.coriolis_vectors(q, qd)[0]
        return np.linalg.solve(d.mass_matrix(q), rhs - d.gravity(q))

    def run(self, stamps):
        """(q, qd, tau) at every stamp (tau = the controller's torque there)."""
        q, qd, _ = self.reference(stamps[0])
        out = []
        for k, t in enumerate(stamps):
            out.append((q.copy(), qd.copy(), self.control(t, q, qd)))
            if k + 1 == len(stamps):
                break
            span = stamps[k + 1] - t
            # τ_ext switches at a stamp: decided once per interval, not by RK4 stage times.
            ext = self.tau_ext if t >= self.t_on else 0.0 * self.tau_ext
            m = max(1, math.ceil(span / SUBSTEP - 1e-9))
            h = span / m
            for s in range(m):
                ts = t + s * h
                k1q, k1v = qd, self.accel(ts, q, qd, ext)
                k2q = qd + 0.5 * h * k1v
                k2v = self.accel(ts + 0.5 * h, q + 0.5 * h * k1q, k2q, ext)
                k3q = qd + 0.5 * h * k2v
                k3v = self.accel(ts + 0.5 * h, q + 0.5 * h * k2q, k3q, ext)
                k4q, k4v = qd + h * k3v, self.accel(ts + h, q + h * k3q, qd + h * k3v, ext)
                q = q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
                qd = qd + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        return out


def _stamps(duration, rng=None, lo=1e-3, hi=1e-3):
    ts = [0.0]
    while ts[-1] < duration:
        ts.append(ts[-1] + (lo if rng is None else rng.uniform(lo, hi)))
    return np.array(ts)


def _observe(obs, stamps, samples):
    return np.array([obs.update(t, q, qd, tau).copy() for t, (q, qd, tau) in zip(stamps, samples)])


def _expected(stamps, t_on, tau_ext, gain):
    dt = np.clip(stamps - t_on, 0.0, None)[:, None]
    return tau_ext[None, :] * -np.expm1(-np.asarray(gain) * dt)


def _fit_time_constant(stamps, r, t_on, tau_ext, gain):
    """1/K from a log-linear fit of τ_ext - r over (t_on, t_on + 3/K]."""
    sel = (stamps > t_on) & (stamps <= t_on + 3.0 / gain)
    y = np.log((tau_ext - r[sel]) / tau_ext)
    slope = np.polyfit(stamps[sel] - t_on, y, 1)[0]
    return -1.0 / slope


@pytest.mark.parametrize("jitter", [False, True], ids=["regular", "jittery"])
def test_recovers_external_torque_on_a_moving_robot(ur5, jitter):
    n = ur5.nv
    gain = 25.0
    tau_ext = np.array([3.0, -5.0, 2.0, 1.0, -0.5, 0.25])
    rng = np.random.default_rng(1)
    stamps = _stamps(1.3, rng, 0.2e-3, 3e-3) if jitter else _stamps(1.3)
    t_on = float(stamps[np.searchsorted(stamps, 0.4)])
    plant = Plant(ur5, tau_ext, t_on, q0=np.linspace(-1.0, 1.0, n))
    samples = plant.run(stamps)
    qd_all = np.array([s[1] for s in samples])
    assert np.abs(qd_all).max() > 0.3  # the robot does move
    r = _observe(MomentumObserver(ur5, gain), stamps, samples)
    err = np.abs(r - _expected(stamps, t_on, tau_ext, gain))
    # Measured (regular / jittery): 1e-7 / 6e-7 before t_on, 6e-5 / 3e-4 at most, 1.5e-6 in
    # steady state; what is left is the trapezoid rule on the measured signals between stamps.
    assert err[stamps < t_on].max() < 1e-5  # no false alarm while tracking
    assert err.max() < 2e-4 * np.abs(tau_ext).max()  # the whole step response
    steady = stamps > t_on + 15.0 / gain  # e^-15 tail: 3e-7 of τ_ext
    assert np.abs(r[steady] - tau_ext).max() < 2e-5  # steady-state error
    for j in range(n):
        tc = _fit_time_constant(stamps, r[:, j], t_on, tau_ext[j], gain)
        assert tc == pytest.approx(1.0 / gain, rel=0.01), (j, tc)


def test_per_joint_gains_give_per_joint_time_constants(panda):
    n = panda.nv
    gains = np.linspace(5.0, 60.0, n)
    q0 = np.full(n, 0.3)
    tau_ext = np.linspace(1.0, 4.0, n) * np.diag(panda.mass_matrix(q0))  # a few rad/s² each
    stamps = _stamps(1.2, np.random.default_rng(2), 0.5e-3, 1.5e-3)
    t_on = float(stamps[np.searchsorted(stamps, 0.2)])
    samples = Plant(panda, tau_ext, t_on, q0=q0).run(stamps)
    r = _observe(MomentumObserver(panda, list(gains)), stamps, samples)
    err = np.abs(r - _expected(stamps, t_on, tau_ext, gains)).max(axis=0)
    assert np.all(err < 2e-4 * tau_ext)
    for j in range(n):
        tc = _fit_time_constant(stamps, r[:, j], t_on, tau_ext[j], gains[j])
        assert tc == pytest.approx(1.0 / gains[j], rel=0.01), (j, tc)


def test_exact_at_rest_under_any_stamps(ur5):
    """Held still against a constant τ_ext: r(t_k) = τ_ext (1 - e^(-K t_k)) at every stamp, for
    jittery stamps, a long gap, and K h far beyond forward Euler's limit of 2."""
    n = ur5.nv
    q = np.linspace(-1.2, 0.7, n)
    tau_ext = np.arange(1.0, n + 1.0)
    tau = ur5.gravity(q) - tau_ext  # M q̈ = τ + τ_ext - g = 0
    rng = np.random.default_rng(3)
    stamps = np.cumsum(np.concatenate([[0.0], rng.uniform(1e-4, 5e-3, 200), [0.5], [1e-3] * 5]))
    for gain in (0.5, 40.0, 3000.0):  # K h up to 1500 in the gap
        obs = MomentumObserver(ur5, gain)
        r = _observe(obs, stamps, [(q, np.zeros(n), tau)] * len(stamps))
        np.testing.assert_allclose(r, _expected(stamps, 0.0, tau_ext, gain), rtol=1e-12, atol=1e-12)
    # Forward Euler of the same equation, r_k = r_k-1 + K h (dz/dt - r_k-1), is not usable here.
    r_euler, worst = np.zeros(n), 0.0
    for h in np.diff(stamps):
        r_euler = r_euler + 3000.0 * h * (tau_ext - r_euler)
        worst = max(worst, float(np.abs(r_euler - tau_ext).max()))
    assert worst > 1e3


def test_large_gain_tracks_on_a_moving_robot(ur5):
    n = ur5.nv
    tau_ext = np.full(n, 2.0)
    stamps = _stamps(0.5, np.random.default_rng(4), 1e-3, 5e-3)  # K h from 2 to 10
    t_on = float(stamps[np.searchsorted(stamps, 0.2)])
    samples = Plant(ur5, tau_ext, t_on, q0=np.zeros(n)).run(stamps)
    r = _observe(MomentumObserver(ur5, 2000.0), stamps, samples)
    assert np.all(np.isfinite(r))
    assert np.abs(r[stamps >= t_on + 0.01] - tau_ext).max() < 1e-2
    assert np.abs(r[stamps < t_on]).max() < 1e-2


@pytest.mark.parametrize("robot", ["panda", "talos"])
def test_same_terms_as_coriolis_vectors_and_gravity(robot):
    """The fused update uses exactly the p and Cᵀq̇ of coriolis_vectors and the g of gravity:
    compared with the discrete form written out in numpy on those (random states and stamps),
    and the first update stores p and w = τ + Cᵀq̇ - g."""
    dyn = Dynamics.from_urdf(str(erd_urdf(robot)))
    n = dyn.nv
    gains = np.linspace(1.0, 200.0, n)
    obs = MomentumObserver(dyn, gains)
    rng = np.random.default_rng(8)
    t, r = 0.0, np.zeros(n)
    p_prev = w_prev = None
    for k in range(30):
        q, qd = rng.uniform(-3, 3, n), rng.normal(0, 2, n)
        tau = rng.normal(0, 10, n)
        _, ctqd, p = dyn.coriolis_vectors(q, qd)
        w = tau + ctqd - dyn.gravity(q)
        if k:
            dt = rng.uniform(1e-4, 2e-2)
            t += dt
            a = -np.expm1(-gains * dt)
            r = (1 - a) * r + a * ((p - p_prev) / dt - 0.5 * (w + w_prev))
        p_prev, w_prev = p, w
        got = obs.update(t, q, qd, tau)
        np.testing.assert_allclose(got, r, rtol=1e-12, atol=1e-12 * (1 + np.abs(r).max()))
    assert np.abs(r).max() > 1.0


def test_reset_restarts_from_the_current_state(ur5):
    n = ur5.nv
    tau_ext = np.full(n, 1.5)
    stamps = _stamps(0.4)
    samples = Plant(ur5, tau_ext, 0.1, q0=np.zeros(n)).run(stamps)
    obs = MomentumObserver(ur5, 30.0)
    assert obs.time is None
    _observe(obs, stamps[:250], samples[:250])
    assert obs.time == stamps[249]
    obs.reset()
    assert obs.time is None
    # After reset, the next update sets p(0) anew (r = 0) and everything matches a fresh
    # observer started there, bit for bit; an earlier stamp is accepted again.
    fresh = MomentumObserver(ur5, 30.0)
    r_reset = _observe(obs, stamps[150:], samples[150:])
    r_fresh = _observe(fresh, stamps[150:], samples[150:])
    np.testing.assert_array_equal(r_reset, r_fresh)
    np.testing.assert_array_equal(r_reset[0], np.zeros(n))
    assert np.abs(r_reset[-1]).max() > 1.0


def test_rejected_updates_leave_the_observer_unchanged(ur5):
    n = ur5.nv
    stamps = _stamps(0.3)
    samples = Plant(ur5, np.ones(n), 0.1, q0=np.zeros(n)).run(stamps)
    obs, clean = MomentumObserver(ur5, 20.0), MomentumObserver(ur5, 20.0)
    ok = np.zeros(n)
    nan = ok.copy()
    nan[2] = np.nan
    for k, (t, (q, qd, tau)) in enumerate(zip(stamps, samples)):
        if k == 0:  # a bad first update does not start the observer
            with pytest.raises(ValueError, match=r"\btau\b"):
                obs.update(t, q, qd, tau[:-1])
            assert obs.time is None
        if k >= 1 and k % 25 == 0:
            last = stamps[k - 1]
            bad = [
                ((last, q, qd, tau), r"repeats"),  # duplicate stamp
                ((last - 1e-3, q, qd, tau), r"older"),  # stamp going backwards
                ((float("nan"), q, qd, tau), r"finite"),
                ((float("inf"), q, qd, tau), r"finite"),
                (("0.5", q, qd, tau), r"\bt\b.*number"),
                ((True, q, qd, tau), r"\bt\b.*number"),
                ((t, q[:-1], qd, tau), r"\bq\b.*shape"),
                ((t, q, nan, tau), r"\bqd\b.*NaN"),
                ((t, q, qd, nan), r"\btau\b.*NaN"),
                ((t, q, qd, np.append(tau, 0.0)), r"\btau\b.*shape"),
                ((t, q, qd, ["x"] * n), r"\btau\b.*number"),
                ((t, q, qd, np.full(n, 1e51)), r"\btau\b.*1e\+50"),
            ]
            for args, pattern in bad:
                with pytest.raises(ValueError, match=pattern):
                    obs.update(*args)
        np.testing.assert_array_equal(obs.update(t, q, qd, tau), clean.update(t, q, qd, tau))
    # Array-likes are accepted.
    t = stamps[-1] + 1e-3
    q, qd, tau = samples[-1]
    np.testing.assert_array_equal(
        obs.update(t, list(q), list(qd), list(tau)), clean.update(t, q, qd, tau)
    )


@pytest.mark.parametrize(
    "gain,ok",
    [
        (0.0, False), (-1.0, False), (-1e-300, False), (5e-324, True), (1e-9, True),
        (1e6, True), (1.0000000000000002e6, False), (1e300, False), (float("inf"), False),
        (float("nan"), False), (True, False),
        ("fast", False), (None, False), ([1.0] * 5, False), ([1.0] * 7, False),
        ([1.0, 2.0, 3.0, 4.0, 5.0, 0.0], False), ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], True),
        (np.ones((6, 1)), False), (np.float32(3.0), True), (7, True),
    ],
)  # fmt: skip
def test_gain_validation(ur5, gain, ok):
    if not ok:
        with pytest.raises(ValueError, match="gain"):
            MomentumObserver(ur5, gain)
        return
    obs = MomentumObserver(ur5, gain)
    expected = np.broadcast_to(np.asarray(gain, dtype=float), (ur5.nv,))
    np.testing.assert_array_equal(obs.gain, expected)
    # Usable at both extremes: a tiny gain barely moves, a huge one is the raw residual.
    q = np.zeros(ur5.nv)
    tau = ur5.gravity(q) - 1.0
    obs.update(0.0, q, q, tau)
    r = obs.update(1e-3, q, q, tau)
    assert np.all(np.isfinite(r))
    np.testing.assert_allclose(r, -np.expm1(-expected * 1e-3), rtol=1e-9, atol=1e-300)


def test_gain_is_a_copy_and_observer_is_independent_of_dyn(ur5):
    gains = np.full(ur5.nv, 10.0)
    obs = MomentumObserver(ur5, gains)
    gains[:] = 1.0
    assert np.all(obs.gain == 10.0)
    obs.gain[:] = 2.0  # a copy
    assert np.all(obs.gain == 10.0)
    with pytest.raises(TypeError):
        MomentumObserver("ur5", 1.0)


def test_array_likes_on_a_coupled_model(panda):
    """The Panda's mimic finger: the reduced path converts a list of torques like an array."""
    obs, clean = MomentumObserver(panda, 20.0), MomentumObserver(panda, 20.0)
    rng = np.random.default_rng(11)
    n = panda.nv
    for k in range(3):
        q, qd, tau = rng.uniform(-1, 1, n), rng.normal(0, 1, n), rng.normal(0, 5, n)
        got = obs.update(0.01 * k, list(q), list(qd), [float(x) for x in tau])
        np.testing.assert_array_equal(got, clean.update(0.01 * k, q, qd, tau))
    assert np.abs(got).max() > 0.1


def test_a_per_joint_gain_too_large_is_named(ur5):
    gains = [1.0, 2.0, 3.0, 4.0, 1e6, 2e6]  # one too large, the one before at the bound
    with pytest.raises(ValueError, match=r"gain must be at most 1e\+06 \(1/s\), got 2000000.0$"):
        MomentumObserver(ur5, gains)


def test_stamp_bound_both_sides_and_what_it_reports(ur5):
    q = np.zeros(ur5.nv)
    tau = ur5.gravity(q)
    obs = MomentumObserver(ur5, 10.0)
    assert obs.joint_names == ur5.joint_names and len(obs.joint_names) == 6
    assert repr(obs) == f"MomentumObserver({ur5.name!r}, nv=6)"
    beyond = float(np.nextafter(1e50, math.inf))
    for t in (-beyond, beyond):
        with pytest.raises(ValueError, match=r"\bt must be finite and within ±1e\+50 s, got"):
            obs.update(t, q, q, tau)
    assert obs.time is None
    np.testing.assert_array_equal(obs.update(-1e50, q, q, tau), np.zeros(6))  # at the bound
    r = obs.update(1e50, q, q, tau)  # at rest, tau = g: r = 0 up to round-off
    np.testing.assert_allclose(r, np.zeros(6), rtol=0, atol=1e-12 * np.abs(tau).max())
    assert obs.time == 1e50


def test_update_is_allocation_free():
    dyn = Dynamics.from_urdf(random_tree("biped", 300, seed=5))
    n = dyn.nv
    obs = MomentumObserver(dyn, 10.0)
    rng = np.random.default_rng(6)
    q, qd, tau = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    first = obs.update(0.0, q, qd, tau)
    out = obs.update(1e-3, q, qd, tau)
    assert out is first
    out[:] = 1e9  # the returned array is a copy of the state
    again = obs.update(2e-3, q, qd, tau)
    assert np.all(np.abs(again) < 1e6)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for k in range(200):
            obs.update(3e-3 + k * 1e-3, q, qd, tau)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # One float64 array of n = 300 would take 2400 bytes of data alone; what is traced is a
    # few hundred bytes of Python objects (argument tuples, floats), whatever n.
    assert peak - base < 1200, (base, current, peak)
    assert current - base < 200, (base, current, peak)
