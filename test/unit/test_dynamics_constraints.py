"""Closed chains by a change of coordinates: ``coriolis_ros.dynamics.constraints.reduce``.

Worked examples: a planar four-bar linkage (1 DoF, crank-rocker) and a planar five-bar linkage
(2 DoF), each a URDF spanning tree (two branches from the ground) plus a loop closure
phi(q) = end of branch L - end of branch R = 0.  Everything about the loop is computed here,
analytically and independently of the library: the closure Jacobian K, its time derivative,
A = [independent rows: 1; dependent rows: -K_d^-1 K_i] (K A = 0) and Adot.  Checked:

* Mbardot = Cbar + Cbar^T against central differences of Mbar = A^T M A along the constrained
  motion (positions re-solved on the loop), and the Christoffel property C(u) linear in u;
* the reduced equations of motion Mbar udot + Cbar u + gbar = 0, integrated (RK4), against a
  direct simulation of the tree with Lagrange multipliers (M qdd + C qd + g = K^T lambda,
  K qdd + Kdot qd = 0) that uses neither A, Adot nor ``reduce``;
* ``reduce`` with a mimic joint's constant A reproduces the library's mimic reduction.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from support.oracle import assert_close, erd_urdf

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.constraints import reduce

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

GRAVITY = (0.0, -9.81, 0.0)  # in the plane of the linkage


def planar_chain_xml(prefix, ground_xyz, lengths, rng):
    links, joints = [], []
    parent = "ground"
    for k, length in enumerate(lengths):
        name = f"{prefix}{k}"
        m = float(rng.uniform(0.5, 2.0))
        cx, cy = float(rng.uniform(0.3, 0.7)) * length, float(rng.uniform(-0.03, 0.03))
        izz = m * length**2 / 12.0 * float(rng.uniform(0.8, 1.2))
        links.append(
            f'<link name="{name}"><inertial><origin xyz="{cx!r} {cy!r} 0"/>'
            f'<mass value="{m!r}"/><inertia ixx="{0.1 * izz!r}" iyy="{izz!r}" izz="{izz!r}" '
            'ixy="0" ixz="0" iyz="0"/></inertial></link>'
        )
        xyz = ground_xyz if k == 0 else (lengths[k - 1], 0.0, 0.0)
        joints.append(
            f'<joint name="{name}_joint" type="continuous"><parent link="{parent}"/>'
            f'<child link="{name}"/><origin xyz="{xyz[0]!r} {xyz[1]!r} {xyz[2]!r}"/>'
            '<axis xyz="0 0 1"/></joint>'
        )
        parent = name
    return links, joints


class Linkage:
    """A planar closed chain: branches L and R from ground points, their ends joined."""

    def __init__(self, left, right, ground_right, independent, seed=0):
        rng = np.random.default_rng(seed)
        self.left, self.right = list(left), list(right)
        self.ground_right = np.array(ground_right, dtype=float)
        ll, lj = planar_chain_xml("L", (0.0, 0.0, 0.0), self.left, rng)
        rl, rj = planar_chain_xml("R", (*ground_right, 0.0), self.right, rng)
        self.urdf = '<robot name="linkage"><link name="ground"/>' + "".join(ll + rl + lj + rj)
        self.urdf += "</robot>"
        self.dyn = Dynamics.from_urdf(self.urdf, gravity=GRAVITY)
        nl = len(self.left)
        self.n = nl + len(self.right)
        # library rows -> our coordinate order (L joints, then R joints)
        names = [f"L{k}_joint" for k in range(nl)] + [f"R{k}_joint" for k in range(len(right))]
        assert sorted(names) == sorted(self.dyn.joint_names)
        self.perm = [self.dyn.joint_names.index(nm) for nm in names]
        self.ind = list(independent)
        self.dep = [k for k in range(self.n) if k not in self.ind]

    # --- library quantities in our coordinate order
    def _lib(self, q):
        out = np.empty(self.n)
        out[self.perm] = q
        return out

    def M(self, q):
        P = self.perm
        return self.dyn.mass_matrix(self._lib(q))[np.ix_(P, P)]

    def C(self, q, qd):
        P = self.perm
        return self.dyn.coriolis(self._lib(q), self._lib(qd))[2][np.ix_(P, P)]

    def g(self, q):
        return self.dyn.gravity(self._lib(q))[self.perm]

    def bias(self, q, qd):
        """C qd + g by RNEA with qdd = 0."""
        return self.dyn.inverse_dynamics(self._lib(q), self._lib(qd), np.zeros(self.n))[self.perm]

    # --- loop closure, analytic
    @staticmethod
    def _branch(lengths, theta, thetad):
        """End point, d end / d theta (2 x n) and its time derivative."""
        phi = np.cumsum(theta)
        phid = np.cumsum(thetad)
        e = np.array([[math.cos(p), math.sin(p)] for p in phi])
        e_perp = np.array([[-math.sin(p), math.cos(p)] for p in phi])
        p = sum(lk * ek for lk, ek in zip(lengths, e, strict=True))
        n = len(lengths)
        J = np.zeros((2, n))
        Jd = np.zeros((2, n))
        for m in range(n):
            for k in range(m, n):
                J[:, m] += lengths[k] * e_perp[k]
                Jd[:, m] -= lengths[k] * e[k] * phid[k]
        return p, J, Jd

    def closure(self, q, qd=None):
        qd = np.zeros(self.n) if qd is None else qd
        nl = len(self.left)
        pl, Jl, Jld = self._branch(self.left, q[:nl], qd[:nl])
        pr, Jr, Jrd = self._branch(self.right, q[nl:], qd[nl:])
        return pl - pr - self.ground_right, np.hstack([Jl, -Jr]), np.hstack([Jld, -Jrd])

    def solve(self, qbar, guess):
        """Full q on the loop with q[ind] = qbar (Newton from ``guess``)."""
        q = np.array(guess, dtype=float)
        q[self.ind] = qbar
        for _ in range(50):
            phi, K, _ = self.closure(q)
            if np.linalg.norm(phi) < 1e-15:
                break
            q[self.dep] -= np.linalg.solve(K[:, self.dep], phi)
        assert np.linalg.norm(self.closure(q)[0]) < 1e-12
        return q

    def A(self, q):
        _, K, _ = self.closure(q)
        A = np.zeros((self.n, len(self.ind)))
        A[self.ind, range(len(self.ind))] = 1.0
        A[self.dep] = -np.linalg.solve(K[:, self.dep], K[:, self.ind])
        return A

    def Adot(self, q, u):
        A = self.A(q)
        _, K, Kd = self.closure(q, A @ u)
        out = np.zeros_like(A)
        out[self.dep] = -np.linalg.solve(K[:, self.dep], Kd @ A)
        return out

    def reduced(self, q, u):
        qd = self.A(q) @ u
        return reduce(self.M(q), self.C(q, qd), self.A(q), self.Adot(q, u), self.g(q))


def four_bar():
    # crank 0.3, coupler 0.8, rocker 0.6, ground 0.7: Grashof crank-rocker (0.3+0.8 <= 0.6+0.7)
    return Linkage([0.3, 0.8], [0.6], (0.7, 0.0), independent=[0], seed=1)


def five_bar():
    return Linkage([0.4, 0.7], [0.45, 0.65], (0.5, 0.0), independent=[0, 2], seed=2)


def start(linkage):
    """A configuration on the loop (elbow-up branch)."""
    if len(linkage.ind) == 1:
        guess = np.array([0.4, 1.0, 1.9])
        qbar = np.array([0.4])
    else:
        guess = np.array([1.6, -1.0, 1.3, 1.0])
        qbar = np.array([1.6, 1.3])
    return linkage.solve(qbar, guess)


LINKAGES = {"four_bar": four_bar, "five_bar": five_bar}


@pytest.mark.parametrize("name", sorted(LINKAGES))
def test_reduced_mdot_is_c_plus_ct_along_the_constrained_motion(name):
    lk = LINKAGES[name]()
    q0 = start(lk)
    rng = np.random.default_rng(0)
    for _ in range(3):
        u = rng.normal(0.0, 2.0, len(lk.ind))
        Mbar, Cbar, gbar = lk.reduced(q0, u)
        assert_close(Mbar, Mbar.T, 1e-14, "Mbar symmetric")
        h = 1e-6

        def Mbar_at(t):
            q = lk.solve(q0[lk.ind] + t * u, q0)
            A = lk.A(q)
            return A.T @ lk.M(q) @ A

        fd = (Mbar_at(h) - Mbar_at(-h)) / (2 * h)
        assert_close(Cbar + Cbar.T, fd, 1e-6, f"{name} Mbardot vs FD")
        # without the A^T M Adot term the identity fails: the check has teeth
        A = lk.A(q0)
        naive = A.T @ lk.C(q0, A @ u) @ A
        assert np.linalg.norm(naive + naive.T - fd) > 1e-3 * np.linalg.norm(fd)
        # Christoffel form: Cbar is linear in u
        u2 = rng.normal(size=len(lk.ind))
        C2 = lk.reduced(q0, u2)[1]
        C12 = lk.reduced(q0, 2.0 * u - 3.0 * u2)[1]
        assert_close(C12, 2.0 * Cbar - 3.0 * C2, 1e-10, f"{name} Cbar linear in u")
        assert_close(gbar, A.T @ lk.g(q0), 1e-14, f"{name} gbar")


def _rk4(f, x, dt, steps):
    for _ in range(steps):
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x


@pytest.mark.parametrize("name", sorted(LINKAGES))
def test_reduced_equations_of_motion_match_a_direct_simulation(name):
    lk = LINKAGES[name]()
    q0 = start(lk)
    m = len(lk.ind)
    u0 = np.full(m, 1.5)
    dt, steps = 2e-3, 150  # 0.3 s, passive motion under gravity
    guess = {"q": q0.copy()}

    def reduced_rhs(x):
        qbar, u = x[:m], x[m:]
        q = lk.solve(qbar, guess["q"])
        guess["q"] = q
        Mbar, Cbar, gbar = lk.reduced(q, u)
        return np.r_[u, np.linalg.solve(Mbar, -Cbar @ u - gbar)]

    def direct_rhs(x):
        q, qd = x[: lk.n], x[lk.n :]
        _, K, Kd = lk.closure(q, qd)
        n, r = lk.n, K.shape[0]
        kkt = np.zeros((n + r, n + r))
        kkt[:n, :n] = lk.M(q)
        kkt[:n, n:] = -K.T
        kkt[n:, :n] = K
        rhs = np.r_[-lk.bias(q, qd), -Kd @ qd]
        return np.r_[qd, np.linalg.solve(kkt, rhs)[:n]]

    xr = _rk4(reduced_rhs, np.r_[q0[lk.ind], u0], dt, steps)
    xd = _rk4(direct_rhs, np.r_[q0, lk.A(q0) @ u0], dt, steps)
    assert np.linalg.norm(xr[:m] - q0[lk.ind]) > 0.1  # it moved
    assert_close(xr[:m], xd[: lk.n][lk.ind], 1e-7, f"{name} positions")
    assert_close(xr[m:], xd[lk.n :][lk.ind], 1e-7, f"{name} velocities")


def test_reduce_with_a_constant_A_is_the_mimic_reduction():
    path = str(erd_urdf("baxter"))
    follow = Dynamics.from_urdf(path)
    full = Dynamics.from_urdf(path, mimic="independent")
    A = follow.map.matrix()
    rng = np.random.default_rng(8)
    qbar, u = rng.uniform(-1, 1, follow.nv), rng.normal(size=follow.nv)
    q, qd = follow.full_position(qbar), A @ u
    M, _, C = full.coriolis(q, qd)
    Mbar, Cbar, gbar = reduce(M, C, A, np.zeros_like(A), full.gravity(q))
    M2, _, C2 = follow.coriolis(qbar, u)
    assert_close(Mbar, M2, 1e-12, "Mbar")
    assert_close(Cbar, C2, 1e-12, "Cbar")
    assert_close(gbar, follow.gravity(qbar), 1e-12, "gbar")
    assert reduce(M, C, A, np.zeros_like(A))[2] is None


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.eye(3)[:2], np.eye(3), np.eye(3), np.eye(3)), "M must be square"),
        ((np.eye(3), np.eye(2), np.eye(3), np.eye(3)), "C must have the shape of M"),
        ((np.eye(3), np.eye(3), np.ones((2, 1)), np.ones((2, 1))), r"A must have shape \(3, m\)"),
        ((np.eye(3), np.eye(3), np.ones((3, 4)), np.ones((3, 4))), r"A must have shape \(3, m\)"),
        ((np.eye(3), np.eye(3), np.ones((3, 0)), np.ones((3, 0))), r"A must have shape \(3, m\)"),
        ((np.eye(3), np.eye(3), np.ones((3, 1)), np.ones((3, 2))), "Adot must have the shape"),
        ((np.full((3, 3), np.nan), np.eye(3), np.eye(3), np.eye(3)), "M has a NaN"),
        ((np.eye(3), np.eye(3), np.eye(3), np.full((3, 3), np.inf)), "Adot has a NaN"),
        ((np.eye(3), np.eye(3), np.eye(3), np.eye(3), np.ones(2)), r"g must have shape \(3,\)"),
        ((np.eye(3), np.eye(3), np.eye(3), np.eye(3), [0, np.nan, 0]), "g has a NaN"),
        ((np.ones(3), np.eye(3), np.eye(3), np.eye(3)), "M must be a 2-D array"),
        ((np.eye(3), "x", np.eye(3), np.eye(3)), "C must be a 2-D array of numbers"),
    ],
)
def test_reduce_rejects_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        reduce(*args)


def test_reduce_accepts_the_edges():
    """A square A (a plain change of coordinates, m = n) and a single column (m = 1)."""
    rng = np.random.default_rng(1)
    B = rng.normal(size=(3, 3))
    M = B @ B.T + np.eye(3)
    C = rng.normal(size=(3, 3))
    for A in (rng.normal(size=(3, 3)), rng.normal(size=(3, 1))):
        Mbar, Cbar, _ = reduce(M, C, A, np.zeros_like(A))
        assert_close(Mbar, A.T @ M @ A, 1e-14, "Mbar")
        assert_close(Cbar, A.T @ C @ A, 1e-14, "Cbar")
