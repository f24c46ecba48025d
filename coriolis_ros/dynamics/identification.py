"""Inertial parameters from recorded motion: least squares over physically consistent bodies.

Inverse dynamics is linear in the inertial parameters pi (ten per body,
:meth:`Dynamics.inertial_parameters`): tau = Y(q, qd, qd, qdd) pi, with Y the regressor
(:meth:`Dynamics.regressor`).  Stacking T samples gives W pi = y, which plain least squares
solves but with no guarantee that the answer is a set of rigid bodies: a body's mass can come
out negative, or its inertia break the triangle inequality, in directions the data hardly
excite.  Such parameters make M indefinite, which no controller or observer survives.

**Physically consistent.**  A body is consistent if and only if its pseudo-inertia

    J(pi_k) = [[1/2 tr(I) 1 - I, m c], [m c^T, m]]

is positive definite (Wensing, Kim and Slotine, "Linear matrix inequalities for physically
consistent inertial parameter identification", RA-L 2017).  That set is convex, so the
problem below is convex and has one minimum, found by ADMM (splitting J from pi; the
projection onto the set clips eigenvalues), whatever the starting point: no local minima,
no parametrization that stalls at the set's boundary.  Every body of the answer has
D J D >= MIN_MASS_FRACTION x the heaviest mass, times the identity.

**Cost.**  ||W pi - y||^2 + rho sum_k ||D_k (J(pi_k) - J(pi_prior,k)) D_k||_F^2, the second
term a small pull towards a prior (by the model's own parameters by default) that fixes the
directions the data do not excite (pi is never fully identifiable from joint torques: only
some combinations, the base parameters, are; ``identifiability`` says how much of each
parameter the data determine).  D_k = diag(1/l_k, 1/l_k, 1/l_k, 1) with l_k the prior's
radius of gyration weights masses, first moments / l and second moments / l^2 alike.  rho
is set so that moving every body by 100 % of the prior costs ``prior_weight`` |y|^2: the
pull is the same fraction of the data whatever the robot, the units and the number of
samples.  Its price is a bias in the weakly excited directions: on exact data the relative
residual is about prior_weight x 20 (lower the weight for clean simulated data).

**Accelerations.**  Given (``QDD``), or central differences of the velocities over the
stamps (the first and last samples are then dropped).  ``window`` > 1 smooths the
velocities and the torques by the same centred moving average first (the same linear filter
on both sides of tau = Y pi keeps the equation, up to the filter's effect on the
nonlinear terms).

**Result.**  :class:`Identification`: the parameters; their 1-sigma spread (from the
covariance sigma^2 (W^T W + rho G)^-1 of the unconstrained problem, sigma^2 the residual
variance: the spread of a parameter the data do not determine is the prior's, small as it
may look); the identifiability of each parameter (the length of its unit vector's
projection on the row space of W: 1 = determined by the data alone, 0 = by the prior
alone); the residual per joint; the rank of W (the number of identifiable combinations)
and the solver's iterations.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import parameters as _parameters
from .api import Dynamics
from .errors import plain

RANK_RTOL = 1e-9
# Bodies with a mass below this fraction of the heaviest prior body start from a tiny
# consistent body (the log-Cholesky chart has no massless body).
MIN_MASS_FRACTION = 1e-9


@dataclasses.dataclass(frozen=True)
class Identification:
    """What :func:`identify` found.  Arrays are per parameter (``parameters``, ``spread``)
    or per joint (``residual_rms``, ``torque_rms``)."""

    parameters: np.ndarray
    spread: np.ndarray
    identifiability: np.ndarray
    residual_rms: np.ndarray
    torque_rms: np.ndarray
    relative_residual: float
    rank: int
    samples: int
    iterations: int
    joint_names: tuple[str, ...]
    links: tuple[str, ...]

    def summary(self) -> str:
        """A few lines for a terminal: fit, rank, and each body's mass with its spread."""
        lines = [
            f"samples: {self.samples}, iterations: {self.iterations}, rank of the regressor: "
            f"{self.rank} of {self.parameters.size} parameters",
            f"relative residual |W pi - tau| / |tau|: {self.relative_residual:.3g}",
            "residual rms per joint (N m or N): "
            + ", ".join(
                f"{n} {r:.3g} (of {t:.3g})"
                for n, r, t in zip(
                    self.joint_names, self.residual_rms, self.torque_rms, strict=True
                )  # fmt: skip
            ),
        ]
        for b, link in enumerate(self.links):
            m, s = self.parameters[10 * b], self.spread[10 * b]
            seen = self.identifiability[10 * b]
            lines.append(f"  {link}: mass {m:.6g} kg ± {s:.2g} (identifiability {seen:.2f})")
        return "\n".join(lines)


def identify(
    dyn: Dynamics,
    t,
    Q,
    V,
    TAU,
    *,
    QDD=None,
    prior=None,
    prior_weight: float = 1e-6,
    window: int = 1,
    max_iterations: int = 20000,
    tolerance: float = 1e-9,
) -> Identification:
    """Physically consistent inertial parameters of ``dyn``'s bodies from T samples of
    stamps ``t`` (s, strictly increasing), positions ``Q`` (T, nq), velocities ``V`` (T, nv)
    and joint torques ``TAU`` (T, nv) (module docstring).  ``dyn`` itself is not changed:
    pass the result's ``parameters`` to :meth:`Dynamics.set_inertial_parameters` to use them.
    ValueError for bad input, naming it."""
    if not isinstance(dyn, Dynamics):
        raise TypeError(f"dyn must be a Dynamics, got {type(dyn).__name__}")
    if dyn.closed is not None:
        raise ValueError("identify needs the regressor: not available for closed-loop models")
    t, Q, V, TAU, QDD = _check_samples(dyn, t, Q, V, TAU, QDD)
    window = _check_int(window, "window", 1)
    max_iterations = _check_int(max_iterations, "max_iterations", 1)
    prior_weight = _check_nonnegative(prior_weight, "prior_weight")
    tolerance = _check_nonnegative(tolerance, "tolerance")
    nb = len(dyn.parameter_links)
    p = 10 * nb
    pi_prior = dyn.inertial_parameters() if prior is None else _check_prior(prior, p)
    if window > 1:
        V, TAU = _moving_average(V, window), _moving_average(TAU, window)
    if QDD is None:
        Q, V, TAU, QDD = _central_differences(t, Q, V, TAU)
    T, n = V.shape
    W = dyn.regressor_batch(Q, V, V, QDD).reshape(T * n, p)
    y = TAU.reshape(-1)

    scales = np.array([_radius(pi_prior[10 * b : 10 * b + 10]) for b in range(nb)])
    L = _block_diag([_metric_root(s) for s in scales], 16)  # G = L^T L
    # W = Q R: the data enter through R (p x p) and z = Q^T y only, and the part of y that no
    # parameter explains, |y|^2 - |z|^2, is the last pivot of the QR of [W y].
    Raug = np.linalg.qr(np.column_stack([W, y]), mode="r")
    R, z = Raug[:p, :p], Raug[:p, p]
    # the prior's cost of the whole prior (every body 100 % off) is prior_weight |y|^2
    rho = _prior_weight(prior_weight, y, L @ pi_prior, Raug)

    pi, iterations = _admm(R, z, L, rho, pi_prior, scales, max_iterations, tolerance)

    residual = W @ pi - y
    _, s, Vt = np.linalg.svd(R)
    rank = int(np.sum(s > RANK_RTOL * s[0])) if s.size and s[0] > 0 else 0
    identifiability = np.sqrt(np.sum(Vt[:rank] ** 2, axis=0))
    dof = max(residual.size - rank, 1)
    sigma2 = float(residual @ residual) / dof
    cov = sigma2 * np.linalg.pinv(R.T @ R + rho * (L.T @ L), hermitian=True)
    spread = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    per_joint = residual.reshape(T, n)
    result = Identification(
        parameters=pi,
        spread=spread,
        identifiability=identifiability,
        residual_rms=np.sqrt(np.mean(per_joint**2, axis=0)),
        torque_rms=np.sqrt(np.mean(TAU**2, axis=0)),
        relative_residual=float(np.linalg.norm(residual) / max(np.linalg.norm(y), 1e-300)),
        rank=rank,
        samples=T,
        iterations=iterations,
        joint_names=dyn.joint_names,
        links=dyn.parameter_links,
    )
    if not all(np.all(np.isfinite(a)) for a in (pi, spread, result.residual_rms)):
        raise ValueError("identification produced a non-finite result (torques or states too "
                         "large for this model)")  # fmt: skip
    return result


# ----------------------------------------------------------------------------- solver


def _admm(R, z, L, rho, pi_prior, scales, max_iterations, tolerance):
    """min |R pi - z|^2 + rho |L (pi - pi_prior)|^2 over consistent bodies, by ADMM on the
    split L pi = x, x in the set of (16-entry blocks of) matrices D J D >= floor 1 (Boyd et
    al., "Distributed optimization ... ADMM", 2011, Sections 3.1 and 3.4.1: scaled form,
    residual balancing of the penalty sigma).  Returns (pi, iterations); pi is read from x,
    so every body is consistent exactly."""
    H = 2.0 * (R.T @ R + rho * (L.T @ L))
    LtL = L.T @ L
    g = _finite_gradient(2.0 * (R.T @ z + rho * (LtL @ pi_prior)), H)
    sigma = max(float(np.trace(H)) / max(float(np.trace(LtL)), 1e-300), 1e-300)
    floor = MIN_MASS_FRACTION * max(float(np.max(np.abs(pi_prior[0::10]))), 1e-12)
    x = L @ _project(pi_prior, scales)
    u = np.zeros_like(x)
    factor = np.linalg.cholesky(H + sigma * LtL)
    iterations = 0
    for iterations in range(1, max_iterations + 1):  # noqa: B007 (reported)
        rhs = g + sigma * (L.T @ (x - u))
        pi = np.linalg.solve(factor.T, np.linalg.solve(factor, rhs))
        Lpi = L @ pi
        x_old = x
        x = _clip(Lpi + u, floor)
        u += Lpi - x
        primal = np.linalg.norm(Lpi - x)
        dual = sigma * np.linalg.norm(L.T @ (x - x_old))
        scale = max(np.linalg.norm(Lpi), np.linalg.norm(x), 1e-300)
        if primal <= tolerance * scale and dual <= tolerance * max(
            np.linalg.norm(g), sigma * np.linalg.norm(L.T @ u), 1e-300
        ):
            break
        if primal > 10.0 * dual or dual > 10.0 * primal:  # balance the two residuals
            f = 2.0 if primal > dual else 0.5
            sigma *= f
            u /= f
            factor = np.linalg.cholesky(H + sigma * LtL)
    return _pi_of_blocks(x, scales), iterations


def _clip(x: np.ndarray, floor: float) -> np.ndarray:
    """Each 4 x 4 block of x (16 entries per body) with its eigenvalues raised to floor."""
    blocks = x.reshape(-1, 4, 4)
    blocks = 0.5 * (blocks + blocks.transpose(0, 2, 1))
    w, V = np.linalg.eigh(blocks)
    return np.einsum("bij,bj,bkj->bik", V, np.maximum(w, floor), V).reshape(-1)


def _pi_of_blocks(x: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """The parameters whose scaled pseudo-inertias D J D are x's blocks."""
    out = np.empty(10 * scales.size)
    for b, block in enumerate(x.reshape(-1, 4, 4)):
        d = np.array([1.0 / scales[b]] * 3 + [1.0])
        out[10 * b : 10 * b + 10] = _pseudo_to_pi(block / d[:, None] / d[None, :])
    return out


def _pseudo_to_pi(J: np.ndarray) -> np.ndarray:
    """The ten parameters of a pseudo-inertia J (inverse of parameters.pseudo_inertia)."""
    S = J[:3, :3]
    inertia = np.trace(S) * np.eye(3) - S
    return np.array([J[3, 3], J[0, 3], J[1, 3], J[2, 3], inertia[0, 0], inertia[0, 1],
                     inertia[1, 1], inertia[0, 2], inertia[1, 2], inertia[2, 2]])  # fmt: skip


def _project(pi: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Each body's nearest consistent one in the metric |D J D|_F: the eigenvalues of
    D J D clipped below at MIN_MASS_FRACTION times the heaviest mass."""
    out = pi.copy()
    floor = MIN_MASS_FRACTION * max(float(np.max(np.abs(pi[0::10]))), 1e-12)
    for b in range(pi.size // 10):
        d = np.array([1.0 / scales[b]] * 3 + [1.0])
        Jl = d[:, None] * _parameters.pseudo_inertia(pi[10 * b : 10 * b + 10]) * d[None, :]
        w, V = np.linalg.eigh(Jl)
        if w[0] >= floor:
            continue
        Jl = (V * np.maximum(w, floor)) @ V.T
        out[10 * b : 10 * b + 10] = _pseudo_to_pi(Jl / d[:, None] / d[None, :])
    return out


def _radius(pi_k: np.ndarray) -> float:
    """The radius of gyration about the link origin, sqrt(tr(I) / 2m); 1 m for a massless
    body or one without rotational inertia."""
    m = pi_k[0]
    tr = pi_k[4] + pi_k[6] + pi_k[9]
    if m > 0 and tr > 0:
        return float(np.sqrt(tr / (2.0 * m)))
    return 1.0


def _metric_root(scale: float) -> np.ndarray:
    """P (16 x 10) with P pi_k = vec(D J(pi_k) D), D = diag(1/l, 1/l, 1/l, 1): so
    |P pi_k|^2 = ||D J(pi_k) D||_F^2."""
    d = np.array([1.0 / scale] * 3 + [1.0])
    P = np.empty((16, 10))
    for i in range(10):
        e = np.zeros(10)
        e[i] = 1.0
        P[:, i] = (d[:, None] * _parameters.pseudo_inertia(e) * d[None, :]).reshape(-1)
    return P


def _block_diag(blocks, rows: int) -> np.ndarray:
    out = np.zeros((rows * len(blocks), 10 * len(blocks)))
    for b, B in enumerate(blocks):
        out[rows * b : rows * b + rows, 10 * b : 10 * b + 10] = B
    return out


# ----------------------------------------------------------------------------- samples


def _check_samples(dyn, t, Q, V, TAU, QDD):
    t = _array(t, "t", 1)
    T = t.shape[0]
    Q = _array(Q, "Q", 2, (T, dyn.nq))
    V = _array(V, "V", 2, (T, dyn.nv))
    TAU = _array(TAU, "TAU", 2, (T, dyn.nv))
    if QDD is not None:
        QDD = _array(QDD, "QDD", 2, (T, dyn.nv))
    if T and not np.all(np.diff(t) > 0):
        k = int(np.argmax(~(np.diff(t) > 0)))
        raise ValueError(f"t must increase strictly: t[{k + 1}] = {float(t[k + 1])!r} after "
                         f"t[{k}] = {float(t[k])!r}")  # fmt: skip
    needed = 1 if QDD is not None else 3
    if T < needed:
        how = "" if QDD is not None else " (accelerations by central differences need 3)"
        raise ValueError(f"identify needs at least {needed} samples{how}, got {T}")
    return t, Q, V, TAU, QDD


def _array(x, name, ndim, shape=None):
    try:
        arr = np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers") from None
    if arr.ndim != ndim or (shape is not None and arr.shape != shape):
        want = shape if shape is not None else f"{ndim}-D"
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} has a NaN or infinite entry at {tuple(int(i) for i in bad)}")
    return arr


def _check_prior(prior, p):
    prior = _array(prior, "prior", 1)
    if prior.shape != (p,):
        raise ValueError(f"prior must have {p} entries (10 per body), got {prior.shape[0]}")
    return prior


def _check_int(x, name, low):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {plain(x)!r}")
    return int(x)


def _check_nonnegative(x, name):
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number >= 0, got {x!r}") from None
    if not (np.isfinite(x) and x >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    return x


def _moving_average(X, window):
    """Centred moving average over ``window`` samples (shrinking at the ends)."""
    T = X.shape[0]
    c = np.vstack([np.zeros((1, X.shape[1])), np.cumsum(X, axis=0)])
    half = window // 2
    lo = np.clip(np.arange(T) - half, 0, T)
    hi = np.clip(np.arange(T) - half + window, 0, T)
    return (c[hi] - c[lo]) / (hi - lo)[:, None]


def _central_differences(t, Q, V, TAU):
    """qdd at the interior samples by central differences over the stamps."""
    dt = (t[2:] - t[:-2])[:, None]
    QDD = (V[2:] - V[:-2]) / dt
    return Q[1:-1], V[1:-1], TAU[1:-1], QDD


# ----------------------------------------------------------------------------- range


_NOT_FINITE = (
    "identification produced a non-finite result (torques or states too large for this model)"
)


def _prior_weight(weight, y, l_prior, Raug):
    """rho = weight |y|^2 / |L pi_prior|^2; ValueError if it or the data's QR is beyond the
    range of floats (torques too large: |y|^2 overflows)."""
    with np.errstate(over="ignore", invalid="ignore"):  # refused just below
        rho = weight * float(y @ y) / max(float(np.sum(l_prior**2)), 1e-300)
    if not (np.isfinite(rho) and np.all(np.isfinite(Raug))):
        raise ValueError(_NOT_FINITE)
    return rho


def _finite_gradient(g, H):
    """g, after checking that H and |g| (the solver's stopping test) are finite."""
    with np.errstate(over="ignore"):  # refused just below
        size = np.linalg.norm(g)
    if not (np.isfinite(size) and np.all(np.isfinite(H))):
        raise ValueError(_NOT_FINITE)
    return g


__all__ = ["Identification", "identify"]
