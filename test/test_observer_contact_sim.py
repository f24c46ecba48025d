"""A known wrench applied at a frame in simulation, recovered from the momentum observer.

The plant is Pinocchio (``aba`` integrated by RK4 at 1 kHz, the commanded torque held over each
step), not the library: the arm tracks a slow sinusoid under computed torque (Pinocchio's
RNEA), and from t = PUSH_T on a constant wrench w, given in the tool frame's world-aligned
axes, acts at the tool frame (joint torque J(q)^T w with Pinocchio's frame Jacobian).  The
library sees what a robot's driver would publish, (t, q, qd, commanded tau), runs
:class:`MomentumObserver` and asks :meth:`Dynamics.external_wrench` which wrench at the
frame explains the residual.  Both sides are asserted: before the push the recovered
wrench is near zero, after it the applied one, and a push of the opposite sign is
recovered with that sign.
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

from test_dynamics_oracle import erd_urdf

from coriolis_ros.dynamics import Dynamics, MomentumObserver

DT = 1e-3
PUSH_T = 0.5
END_T = 1.5
GAIN = 150.0  # 1/s: time constant 6.7 ms; the lag behind the moving J^T w is ~0.7 % of w
FRAME = "tool0"
WRENCH = np.array([12.0, -8.0, 15.0, 1.5, -2.0, 0.8])  # N, N m (world-aligned axes)


def _simulate(wrench):
    path = str(erd_urdf("ur5"))
    model = pin.buildModelFromUrdf(path)
    data = model.createData()
    fid = model.getFrameId(FRAME, pin.BODY)
    q0 = np.array([0.3, -1.2, 1.4, -1.0, 1.2, 0.4])
    amp = np.array([0.25, 0.2, -0.25, 0.3, -0.2, 0.3])
    omega = 2 * np.pi * 0.4

    def reference(t):
        s, c = np.sin(omega * t), np.cos(omega * t)
        return q0 + amp * s, amp * omega * c, -amp * omega**2 * s

    def external(q, t):
        if t < PUSH_T:
            return np.zeros(model.nv)
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
        return J.T @ wrench

    def accel(q, v, tau, t):
        return pin.aba(model, data, q, v, tau + external(q, t))

    q, v = reference(0.0)[:2]
    samples = []
    t = 0.0
    for k in range(int(round(END_T / DT)) + 1):
        t = k * DT
        qr, vr, ar = reference(t)
        a_des = ar + 40.0 * (vr - v) + 400.0 * (qr - q)
        tau = pin.rnea(model, data, q, v, a_des).copy()
        samples.append((t, q.copy(), v.copy(), tau))
        # RK4 with tau held; the push switches on exactly at a step boundary
        k1q, k1v = v, accel(q, v, tau, t)
        k2q, k2v = v + DT / 2 * k1v, accel(q + DT / 2 * k1q, v + DT / 2 * k1v, tau, t)
        k3q, k3v = v + DT / 2 * k2v, accel(q + DT / 2 * k2q, v + DT / 2 * k2v, tau, t)
        k4q, k4v = v + DT * k3v, accel(q + DT * k3q, v + DT * k3v, tau, t)
        q = q + DT / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
        v = v + DT / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return path, samples


def _recovered(wrench):
    path, samples = _simulate(wrench)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dyn = Dynamics.from_urdf(path)
    observer = MomentumObserver(dyn, GAIN)
    before, after = [], []
    for t, q, v, tau in samples:
        r = observer.update(t, q, v, tau)
        if PUSH_T - 0.1 <= t < PUSH_T:
            before.append(dyn.external_wrench(q, r, FRAME)[0])
        elif t >= END_T - 0.2:
            after.append(dyn.external_wrench(q, r, FRAME)[0])
    return np.array(before), np.array(after)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_wrench_applied_in_simulation_is_recovered_from_the_residual(sign):
    w = sign * WRENCH
    before, after = _recovered(w)
    scale = np.abs(w).max()
    # no push yet: the residual explains nothing (plant and model agree)
    assert np.abs(before).max() < 0.01 * scale
    # long after the push: the applied wrench, every component, with its sign
    err = np.abs(after - w).max()
    assert err < 0.02 * scale, (after[-1], w)
    assert np.all(np.sign(after[-1]) == np.sign(w))


def test_recovered_wrench_follows_the_observer_time_constant():
    """A step in the wrench appears in the residual as 1 - exp(-K t): at one time constant
    after the push, about 63 % of it, far from both 0 and 100 %."""
    path, samples = _simulate(WRENCH)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dyn = Dynamics.from_urdf(path)
    observer = MomentumObserver(dyn, GAIN)
    tau_c = 1.0 / GAIN
    fraction = None
    for t, q, v, tau in samples:
        r = observer.update(t, q, v, tau)
        if fraction is None and t >= PUSH_T + tau_c:
            w = dyn.external_wrench(q, r, FRAME)[0]
            fraction = float(w @ WRENCH / (WRENCH @ WRENCH))
    assert 0.55 < fraction < 0.72
