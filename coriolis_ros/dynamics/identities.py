"""Identities the dynamics must satisfy on random states of a robot, and a singular M.

:func:`check_identities` evaluates, on random states of any model, what every correct
implementation satisfies with the Christoffel-consistent C: M symmetric and positive
semi-definite, Mdot = C + C^T and Mdot = dM/dt (finite differences), C qd = RNEA(q, qd, 0) - g,
tau = M qdd + C qd + g, C_ij = sum_k Gamma_ijk qd_k, Gamma_ijk + Gamma_jik = dM_ij along e_k
and, in coordinates, Gamma as the Christoffel symbols of the finite-difference dM/dq.
``coriolis-ros check`` prints them.  :func:`singular_mass_matrix` says when M cannot be
inverted at the neutral configuration (moving links without mass): ``check`` and the node
warn with it.  No ROS needed.
"""

from __future__ import annotations

import math

import numpy as np


def random_state(dyn, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint angles in [-pi, pi], displacements and base positions in [-0.5, 0.5], random
    unit quaternions; velocities and accelerations in [-2, 2].  A closed chain's joints move
    by at most 0.3 (rad or m) from its neutral assembly, so that it stays assembled."""
    n = dyn.nv
    q = dyn.neutral()
    closed = bool(dyn.loops)
    for kind, first, nv, iq in dyn.model.joints():
        if nv == 6:  # free flyer: position, then a uniformly random unit quaternion
            q[iq : iq + 3] = rng.uniform(-0.5, 0.5, 3)
            quat = rng.normal(size=4)
            q[iq + 3 : iq + 7] = quat / np.linalg.norm(quat)
        elif nv == 3:  # planar: x, y, theta
            q[iq : iq + 3] = rng.uniform(-0.5, 0.5, 2).tolist() + [rng.uniform(-math.pi, math.pi)]
        elif closed:
            q[iq] += rng.uniform(-0.3, 0.3)
        elif dyn.model.joint_types[first] == "prismatic":
            q[iq] = rng.uniform(-0.5, 0.5)
        else:
            q[iq] = rng.uniform(-math.pi, math.pi)
    return q, rng.uniform(-2.0, 2.0, n), rng.uniform(-2.0, 2.0, n)


def _worst(*values: float) -> float:
    """The largest value; NaN if any is NaN (max(0.0, nan) is 0.0)."""
    return math.nan if any(math.isnan(v) for v in values) else max(values)


def _rel(a, b, scale: float) -> float:
    """|a - b| relative to |b| or, where b is small, to ``scale`` (|M| at the state: every
    term is linear in the inertial parameters, so a robot a million times lighter gets the
    same verdict); NaN if anything is not finite."""
    diff = float(np.linalg.norm(np.asarray(a) - np.asarray(b)))
    size = float(np.linalg.norm(b))
    if not (math.isfinite(diff) and math.isfinite(size) and math.isfinite(scale)):
        return math.nan
    return diff / max(size, scale, _TINY)


_TINY = float(np.finfo(float).tiny)  # 0 / 0 where every term is exactly zero


def _norm(x) -> float:
    return float(np.linalg.norm(x))


def check_identities(dyn, samples: int = 20, seed: int = 0) -> list[tuple[str, float, float]]:
    """[(identity, worst relative residual, tolerance)] over random states; a NaN anywhere
    makes that identity's worst residual NaN (which no tolerance passes)."""
    rng = np.random.default_rng(seed)
    worst: dict[str, float] = {}
    tol: dict[str, float] = {}

    def record(name, value, tolerance=1e-10):
        worst[name] = _worst(worst.get(name, 0.0), value)
        tol[name] = tolerance

    n = dyn.nv
    # Free-flyer and planar velocities are expressed in the moving frame: generalized speeds,
    # not derivatives of coordinates.  Gamma is then not symmetric in (j, k) and the coordinate
    # formula for Gamma does not apply; Gamma_ijk + Gamma_jik = dM_ij along e_k always holds.
    coordinates = dyn.nq == dyn.nv and not {"floating", "planar"} & set(dyn.model.joint_types)

    def along(q, v, h=1e-6):
        """d/dt M(q (+) t v) at t = 0, by central differences on the configuration manifold."""
        return (
            dyn.mass_matrix(dyn.integrate(q, v, h)) - dyn.mass_matrix(dyn.integrate(q, v, -h))
        ) / (2 * h)

    for _ in range(samples):
        q, qd, qdd = random_state(dyn, rng)
        M, Mdot, C = dyn.coriolis(q, qd)
        g = dyn.gravity(q)
        Gamma = dyn.christoffel(q)
        Cqd, CTqd, p = dyn.coriolis_vectors(q, qd)
        fd_Mdot = along(q, qd)
        dM = np.empty((n, n, n))  # dM[i, j, k] = dM_ij along the k-th velocity
        for k in range(n):
            dM[:, :, k] = along(q, np.eye(n)[k])
        scale = float(np.linalg.norm(M))
        record("M symmetric", _rel(M, M.T, scale))
        # Massless DoFs (bodies without <inertial>) make M only semi-definite, as in any
        # dynamics library; a negative eigenvalue beyond round-off is an error.
        if np.all(np.isfinite(M)):
            eig = np.linalg.eigvalsh(M)
            record("M positive semi-definite", max(0.0, -eig[0]) / max(eig[-1], _TINY))
        else:
            record("M positive semi-definite", math.nan)
        record("Mdot = C + C^T", _rel(Mdot, C + C.T, scale))
        record("Mdot = dM/dt (finite differences)", _rel(Mdot, fd_Mdot, scale), 1e-6)
        record("Mdot - 2C skew-symmetric", _rel(Mdot - 2 * C, -(Mdot - 2 * C).T, scale))
        rnea = dyn.inverse_dynamics(q, qd, 0 * qd)
        with_g = max(scale, _norm(g))  # the round-off of RNEA's gravity terms
        record("C qd = RNEA(q, qd, 0) - g", _rel(C @ qd, rnea - g, with_g))
        tau = dyn.inverse_dynamics(q, qd, qdd)
        record("tau = M qdd + C qd + g (RNEA)", _rel(tau, M @ qdd + C @ qd + g, with_g))
        record("C_ij = sum_k Gamma_ijk qd_k", _rel(C, Gamma @ qd, scale))
        record("Gamma_ijk + Gamma_jik = dM_ij along e_k (finite differences)",
               _rel(Gamma + Gamma.transpose(1, 0, 2), dM, scale), 1e-6)  # fmt: skip
        if coordinates:
            # Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)
            christoffel_fd = 0.5 * (dM + np.einsum("ikj->ijk", dM) - np.einsum("jki->ijk", dM))
            record("Gamma_ijk = Gamma_ikj", _rel(Gamma, Gamma.transpose(0, 2, 1), scale))
            record("Gamma = Christoffel(dM/dq) (finite differences)",
                   _rel(Gamma, christoffel_fd, scale), 1e-6)  # fmt: skip
        vectors = _worst(
            _rel(Cqd, C @ qd, scale), _rel(CTqd, C.T @ qd, scale), _rel(p, M @ qd, scale)
        )
        record("coriolis_vectors = (C qd, C^T qd, M qd)", vectors)
    return [(name, worst[name], tol[name]) for name in worst]


# n^3 arrays check_identities holds at once at its peak (measured with tracemalloc: 5.07 n^3
# doubles): Gamma, dM, the finite-difference symbols and the temporaries of the comparisons.
CHECK_TENSORS = 6


# M's smallest eigenvalue below this times its largest (or 1) counts as zero.
SINGULAR_M = 1e-12


def singular_mass_matrix(dyn) -> str:
    """The empty string if M at the neutral configuration is positive definite, else what is
    singular and the joints that move along its null direction (DoFs that move no mass)."""
    eig, vec = np.linalg.eigh(dyn.mass_matrix(dyn.neutral()))
    if eig[0] > SINGULAR_M * max(1.0, eig[-1]):
        return ""
    null = vec[:, 0]
    joints = [dyn.joint_names[i] for i in np.flatnonzero(np.abs(null) > 0.1)]
    return (
        f"M is singular at the neutral configuration (smallest eigenvalue {eig[0]:.3e}, "
        f"largest {eig[-1]:.3e}): {', '.join(joints)} move no mass (links without <inertial>?); "
        "the identities hold, but M cannot be inverted there (forward dynamics, task space)"
    )
