"""Smooth joint trajectories with Pinocchio's inverse dynamics: the identification tests' data."""

from __future__ import annotations

import numpy as np


def sinusoids(model, T: int, seed: int, dt: float, freq=(0.2, 1.0), amp=(0.3, 0.8)):
    """Three sinusoids per joint of a Pinocchio ``model`` (frequencies in Hz and amplitudes in
    rad drawn from ``freq`` and ``amp``, the amplitudes divided by three, random phases): t, q,
    qd, qdd (T rows) and Pinocchio's torques (``pin.rnea``)."""
    import pinocchio as pin

    data = model.createData()
    rng = np.random.default_rng(seed)
    n = model.nv
    w = 2 * np.pi * rng.uniform(*freq, (3, n))
    a = rng.uniform(*amp, (3, n)) / 3
    ph = rng.uniform(0, 2 * np.pi, (3, n))
    t = np.arange(T) * dt
    arg = w[None] * t[:, None, None] + ph[None]
    Q = (a[None] * np.sin(arg)).sum(1)
    V = (a[None] * w[None] * np.cos(arg)).sum(1)
    A = -(a[None] * w[None] ** 2 * np.sin(arg)).sum(1)
    TAU = np.array([pin.rnea(model, data, Q[k], V[k], A[k]) for k in range(T)])
    return t, Q, V, A, TAU


def identification_trajectory(model, T: int, seed: int, dt: float = 0.02):
    """The identification tests' trajectory: :func:`sinusoids` of 0.2-1 Hz, 0.1-0.27 rad."""
    return sinusoids(model, T, seed, dt, freq=(0.2, 1.0), amp=(0.3, 0.8))


def rel(a, b) -> float:
    """max |a - b| relative to max |b|."""
    return float(np.abs(a - b).max() / np.abs(b).max())
