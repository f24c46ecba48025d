"""Test helpers shared by several test modules (from test_dynamics_regressor.py)."""

from __future__ import annotations

import numpy as np


def random_body(rng, mass=None) -> np.ndarray:
    """Ten parameters of a physically consistent body: positive mass, positive second moments
    about the centre of mass along random principal axes."""
    m = rng.uniform(0.5, 4.0) if mass is None else mass
    c = rng.normal(0.0, 0.2, 3)
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    sigma = R @ np.diag(rng.uniform(0.005, 0.1, 3)) @ R.T  # second moments about the CoM
    inertia = np.trace(sigma) * np.eye(3) - sigma + m * (c @ c * np.eye(3) - np.outer(c, c))
    return _pack(m, m * c, inertia)


def _pack(m, h, inertia) -> np.ndarray:
    i = inertia
    return np.array([m, *h, i[0, 0], i[0, 1], i[1, 1], i[0, 2], i[1, 2], i[2, 2]])
