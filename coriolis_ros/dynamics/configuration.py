"""The configuration manifold: the neutral configuration and q (+) v dt.

A free flyer's configuration (x, y, z, qx, qy, qz, qw) is a pose in SE(3) and its
velocity (linear, angular) a twist in the child frame, so q (+) v dt composes the
pose with the exponential of the twist (Lynch & Park, *Modern Robotics*, eq.
3.88):

    R' = R exp([w dt]),   p' = p + R V (u dt),
    V = 1 + (1 - cos a)/a^2 [W] + (a - sin a)/a^3 [W]^2,   W = w dt, a = |W|.

A planar joint is the same in SE(2): theta' = theta + w dt and (x, y)' = (x, y) +
R(theta) V2 (vx, vy) dt with V2 = [[sin f, -(1 - cos f)], [1 - cos f, sin f]] / f,
f = w dt.  Revolute and prismatic coordinates add v dt.  Not on any tick path.
"""

from __future__ import annotations

import numpy as np

from .model import FREE, PLANAR, Model


def neutral(model: Model) -> np.ndarray:
    """Zero joint coordinates and identity quaternions (qw = 1)."""
    q = np.zeros(model.nq)
    for kind, _first, _nv, iq in model.joints():
        if kind == FREE:
            q[iq + 6] = 1.0
    return q


def integrate(model: Model, q: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray:
    """q (+) v dt; q and v already validated (nq and nv finite entries)."""
    out = q.copy()
    for kind, first, nv, iq in model.joints():
        if kind == FREE:
            out[iq : iq + 7] = _free(q[iq : iq + 7], v[first : first + 6] * dt)
        elif kind == PLANAR:
            out[iq : iq + 3] = _planar(q[iq : iq + 3], v[first : first + 3] * dt)
        else:
            out[iq] = q[iq] + v[first] * dt
    return out


def _series(a: float) -> tuple[float, float, float, float]:
    """sin(a)/a, (1 - cos a)/a^2, (a - sin a)/a^3 and (1 - cos a)/a, exact near zero too."""
    if a < 1e-4:
        a2 = a * a
        return 1.0 - a2 / 6.0, 0.5 - a2 / 24.0, 1.0 / 6.0 - a2 / 120.0, a / 2.0 - a * a2 / 24.0
    s, c = np.sin(a), np.cos(a)
    return s / a, (1.0 - c) / (a * a), (a - s) / (a * a * a), (1.0 - c) / a


def _hat(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def quaternion_matrix(xyzw: np.ndarray) -> np.ndarray:
    """Rotation matrix of a quaternion (x, y, z, w), normalized first."""
    x, y, z, w = xyzw / np.linalg.norm(xyzw)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _quaternion_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a b of (x, y, z, w) quaternions."""
    av, aw = a[:3], a[3]
    bv, bw = b[:3], b[3]
    return np.r_[aw * bv + bw * av + np.cross(av, bv), aw * bw - av.dot(bv)]


def _free(q: np.ndarray, step: np.ndarray) -> np.ndarray:
    u, w = step[:3], step[3:]
    a = float(np.linalg.norm(w))
    _, b, c, _ = _series(a)
    W = _hat(w)
    V = np.eye(3) + b * W + c * (W @ W)
    quat = q[3:] / np.linalg.norm(q[3:])
    p = q[:3] + quaternion_matrix(quat) @ (V @ u)
    half = 0.5 * a
    sinc_half = _series(half)[0] * 0.5  # sin(a/2)/a
    delta = np.r_[w * sinc_half, np.cos(half)]
    quat = _quaternion_product(quat, delta)
    return np.r_[p, quat / np.linalg.norm(quat)]


def _planar(q: np.ndarray, step: np.ndarray) -> np.ndarray:
    f = float(step[2])
    sinc, _, _, cosc = _series(abs(f))
    cosc = np.copysign(cosc, f)
    dx = sinc * step[0] - cosc * step[1]
    dy = cosc * step[0] + sinc * step[1]
    c, s = np.cos(q[2]), np.sin(q[2])
    return np.array([q[0] + c * dx - s * dy, q[1] + s * dx + c * dy, q[2] + f])
