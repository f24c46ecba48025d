"""A Coriolis bound for gain design: k_c with ||C(q, qd)||_2 <= k_c ||qd|| over a workspace.

C(q, v) = sum_k Gamma[:, :, k](q) v_k is linear in v, so for each q the best constant is the
norm of Gamma(q) as a map from v to matrices with the spectral norm,

    k*(q) = max_{|v| = 1} ||C(q, v)||_2 = max_{|u| = |w| = |v| = 1} sum_ijk u_i Gamma_ijk w_j v_k,

the spectral norm of the 3-tensor (NP-hard in general).  Two computable brackets:

* upper: ||C(q, v)||_2 <= ||C(q, v)||_F = ||G(q) v||_2 <= sigma_max(G(q)) ||v||, with G the
  n^2 x n unfolding of Gamma along its last index, G[(i, j), k] = Gamma_ijk; so
  k(q) = sigma_max(G(q)) is a bound, at most sqrt(n) times k*(q) (||A||_F <= sqrt(n) ||A||_2);
* lower: the higher-order power method (De Lathauwer, De Moor and Vandewalle, "On the best
  rank-1 and rank-(R1, R2, ..., RN) approximation of higher-order tensors", SIAM J. Matrix
  Anal. Appl. 2000) on the trilinear form: a v with ||C(q, v)||_2 = k_lo(q) <= k*(q).

Over a box of configurations, :func:`coriolis_bound` samples it (uniformly, the box's
centre and, for up to 12 coordinates, its corners), evaluates Gamma with
:meth:`Dynamics.christoffel_batch` and reports the largest k(q), where it occurs, and the
largest k_lo(q) (a lower bound of the true sup, attained at a state) to show the gap.
The maximum of samples is not a certificate for the continuum between them; denser sampling,
or :func:`coriolis_gain` around the reported configuration, refines it.  With a floating or
planar base, Gamma does not depend on the base's pose (its velocity is a body twist), so the
box covers the other coordinates only and the base stays at the neutral pose.

Uses: the property ||C(q, qd)|| <= k_c ||qd|| of rigid-body dynamics (Spong, Hutchinson and
Vidyasagar, *Robot Modeling and Control*, ch. 6) in robustness and gain conditions, e.g.
damping that dominates C(q, qd_d) along trajectories with ||qd_d|| <= v_max needs
lambda_min(K_D) > k_c v_max; computed from the Christoffel symbols as Safeea et al. suggest
(Gunawardana and Ghorbel 1999 for the boundedness).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .kernels.kinematics import MAX_ABS

ITERATIONS = 100  # the power method's iterations per start, at most
LOWER_SAMPLES = 8  # coriolis_bound's samples for the power method besides the worst one


@dataclass(frozen=True)
class CoriolisBound:
    """The result of :func:`coriolis_bound` (k_c and k_lower in the units of C per rad/s)."""

    k_c: float  # max over the samples of sigma_max(G(q)): ||C(q, v)||_2 <= k_c ||v|| there
    q_max: np.ndarray  # the configuration (nq) where k_c occurs
    k_lower: float  # max over the samples of the power-method value: k* >= k_lower somewhere
    q_lower: np.ndarray  # where k_lower occurs
    v_lower: np.ndarray  # a unit velocity with ||C(q_lower, v_lower)||_2 = k_lower
    samples: int

    @property
    def ratio(self) -> float:
        """k_c / k_lower: how loose the bound can be at most (<= sqrt(n) per configuration)."""
        return self.k_c / self.k_lower if self.k_lower > 0 else math.inf


def coriolis_gain(dyn, q) -> float:
    """k(q) = sigma_max of Gamma(q) unfolded as n^2 x n: ||C(q, v)||_2 <= k(q) ||v|| for every v."""
    G = dyn.christoffel(q)
    n = dyn.nv
    return float(np.linalg.norm(G.reshape(n * n, n), 2))


def coriolis_gain_lower(dyn, q, iterations: int = ITERATIONS, seed: int = 0):
    """(k_lo, v): a unit v with ||C(q, v)||_2 = k_lo, from the higher-order power method on the
    trilinear form u^T C(q, v) w (a local maximum: k_lo <= max_v ||C(q, v)||_2).

    Two starts, the dominant right singular vector of the n^2 x n unfolding and a normal
    random vector (from ``seed``), each iterated at most ``iterations`` times and stopped at
    the first step that moves v by less than 1e-12; the better end is returned, the singular
    vector's when they tie (so a tie does not depend on the seed)."""
    return _power(dyn.christoffel(q), iterations, np.random.default_rng(seed))


def coriolis_bound(dyn, lower, upper, samples: int = 1000, seed: int = 0, chunk: int = 256):
    """:class:`CoriolisBound` over the box lower <= q <= upper (the coordinates after a
    floating or planar base's; see the module docstring).

    k_c is the largest k(q) over the samples (the first sample that reaches it: the centre,
    then the corners, then the random ones); k_lower is the largest :func:`coriolis_gain_lower`
    (``ITERATIONS`` iterations) at q_max and at ``LOWER_SAMPLES`` samples drawn without
    repetition (every sample when there are no more), the first configuration on a tie."""
    offset = _base_size(dyn)
    m = dyn.nq - offset
    lo, hi = _box(lower, upper, m)
    samples = int(samples)
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    rng = np.random.default_rng(seed)
    points = [0.5 * (lo + hi)]
    if m <= 12:
        grids = np.meshgrid(*np.column_stack([lo, hi]))  # one (lo_i, hi_i) pair per coordinate
        points.extend(np.array([g.ravel() for g in grids]).T)
    points = np.array(points + list(lo + (hi - lo) * rng.random((samples, m))))
    base = dyn.neutral()[:offset]
    n = dyn.nv
    k = []
    for start in range(0, len(points), chunk):
        part = points[start : start + chunk]
        Q = np.hstack([np.tile(base, (len(part), 1)), part])
        G = dyn.christoffel_batch(Q).reshape(len(part), n * n, n)
        k.append(np.linalg.norm(G, ord=2, axis=(1, 2)))
    k = np.concatenate(k)
    best = int(np.argmax(k))  # the first largest
    q_max = np.r_[base, points[best]]
    # the power method where the upper bound is largest, and at a few random samples
    picked = rng.choice(len(points), min(LOWER_SAMPLES, len(points)), replace=False)
    candidates = [q_max] + [np.r_[base, points[i]] for i in picked]
    runs = [(*_power(dyn.christoffel(q), ITERATIONS, rng), q) for q in candidates]
    k_lo, v, q_lo = max(runs, key=lambda run: run[0])  # the first largest
    return CoriolisBound(float(k[best]), q_max, k_lo, q_lo, v, len(points))


def joint_limits(dyn, urdf) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of :attr:`Dynamics.joint_names` from the URDF's ``<limit>`` elements (a
    file path or XML text); continuous joints, and joints without limits, get [-pi, pi] (C is
    2 pi-periodic in a revolute angle).  Prismatic joints need limits (ValueError)."""
    text = Path(urdf).read_text() if _is_path(urdf) else str(urdf)
    joints = {j.get("name"): j for j in ET.fromstring(text).iter("joint")}
    lo, hi = [], []
    for name in dyn.joint_names[_base_rows(dyn) :]:
        joint = joints.get(name)
        limit = None if joint is None else joint.find("limit")
        kind = None if joint is None else joint.get("type")
        if kind == "revolute" and limit is not None and "lower" in limit.attrib:
            lo.append(float(limit.get("lower")))
            hi.append(float(limit.get("upper")))
        elif kind == "prismatic":
            if limit is None or "lower" not in limit.attrib:
                raise ValueError(f"prismatic joint {name!r} has no <limit lower upper>")
            lo.append(float(limit.get("lower")))
            hi.append(float(limit.get("upper")))
        else:
            lo.append(-math.pi)
            hi.append(math.pi)
    return np.array(lo), np.array(hi)


def _power(G: np.ndarray, iterations: int, rng) -> tuple[float, np.ndarray]:
    """Higher-order power method on sum_ijk u_i G_ijk w_j v_k (one start from the dominant
    right singular vector of the unfolding, one random); the first start's end on a tie."""
    n = len(G)
    starts = [np.linalg.svd(G.reshape(n * n, n))[2][0], rng.normal(size=n)]
    ends = [_ascend(G, v / np.linalg.norm(v), iterations) for v in starts]
    return max(ends, key=lambda end: end[0])


def _ascend(G: np.ndarray, v: np.ndarray, iterations: int) -> tuple[float, np.ndarray]:
    """(||G v||_2, v) after at most ``iterations`` steps from the unit vector v; stops when a
    step moves v by less than 1e-12, or when G v = 0 (then every v is as good)."""
    for _ in range(iterations):
        U, _sigma, Vt = np.linalg.svd(G @ v)
        v_new = np.einsum("i,ijk,j->k", U[:, 0], G, Vt[0])
        norm = np.linalg.norm(v_new)
        if norm == 0.0:
            break
        v_new /= norm
        step = np.linalg.norm(v_new - v)
        v = v_new
        if step < 1e-12:
            break
    return float(np.linalg.norm(G @ v, 2)), v


def _base_size(dyn) -> int:
    return {"floating": 7, "planar": 3}.get(dyn.root_joint, 0)


def _base_rows(dyn) -> int:
    return {"floating": 6, "planar": 3}.get(dyn.root_joint, 0)


def _box(lower, upper, m: int) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array(lower, dtype=np.float64).ravel()
    hi = np.array(upper, dtype=np.float64).ravel()
    if lo.shape != (m,) or hi.shape != (m,):
        raise ValueError(f"lower and upper must have {m} entries, got {lo.size} and {hi.size}")
    if not (np.all(np.abs(lo) <= MAX_ABS) and np.all(np.abs(hi) <= MAX_ABS)):
        raise ValueError("lower and upper must be finite")
    if not np.all(lo <= hi):
        j = int(np.argmax(~(lo <= hi)))
        raise ValueError(f"lower[{j}] = {lo[j]} > upper[{j}] = {hi[j]}")
    return lo, hi


def _is_path(urdf) -> bool:
    return isinstance(urdf, Path) or (isinstance(urdf, str) and not urdf.lstrip().startswith("<"))


__all__ = [
    "CoriolisBound",
    "coriolis_bound",
    "coriolis_gain",
    "coriolis_gain_lower",
    "joint_limits",
]
