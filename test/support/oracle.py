"""Reference ("oracle") dynamics from Pinocchio, and the robots of example-robot-data.

Pinocchio is a test-only dependency.  Everything here is expressed in a caller-chosen joint
order (normally ``Dynamics.joint_names``) by mapping Pinocchio's depth-first joints by name.
Pinocchio stores a continuous joint as (cos q, sin q) in its configuration vector; the oracle
converts.  ``test_dynamics_oracle.py`` checks the oracle against mathematics only (finite
differences of Pinocchio's own mass matrix), so that a later disagreement between the library
and the oracle cannot come from the oracle's glue code.
"""

from __future__ import annotations

import importlib.util
import math
import os
from functools import cache
from importlib import metadata
from pathlib import Path

import numpy as np
import pinocchio as pin  # test-only dependency; a missing reference must fail, not skip

from support.random_trees import TOPOLOGIES, random_tree


GRAVITY = (0.0, 0.0, -9.81)


def rel_err(a, b) -> float:
    """Norm-relative error ||a - b|| / max(1, ||b||) (Frobenius / 2-norm, any shape)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    assert a.shape == b.shape, f"shape mismatch {a.shape} vs {b.shape}"
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def assert_close(actual, expected, tol: float, what: str) -> None:
    """Assert ``||actual - expected|| <= tol * max(1, ||expected||)`` with a useful message."""
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert np.all(np.isfinite(actual)), f"{what}: non-finite values in result"
    err = rel_err(actual, expected)
    if not err <= tol:
        diff = np.abs(actual - expected)
        idx = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
        raise AssertionError(
            f"{what}: relative error {err:.3e} > {tol:.1e} "
            f"(||expected|| = {np.linalg.norm(expected):.3e}, worst entry {idx}: "
            f"got {actual[idx]!r}, expected {expected[idx]!r})"
        )


def erd_robots_dir() -> Path:
    """The ``robots`` directory of the installed example-robot-data distribution.

    example-robot-data 6 ships data only (cmeel prefix ``share/example-robot-data/robots``); older
    versions also ship a Python module.  Both layouts are handled; failure is an error, not a skip.
    """
    env = os.environ.get("EXAMPLE_ROBOT_DATA_MODEL_DIR")
    if env and Path(env).is_dir():
        return Path(env)
    if importlib.util.find_spec("example_robot_data") is not None:
        import example_robot_data as erd  # type: ignore[import-not-found]

        path = Path(erd.getModelPath("ur_description/urdf/ur5_robot.urdf"))
        for candidate in (path, path / "robots"):
            if (candidate / "ur_description").is_dir():
                return candidate
    dist = metadata.distribution("example-robot-data")
    for f in dist.files or ():
        parts = Path(str(f)).parts
        if parts[-1] == "ur5_robot.urdf" and "robots" in parts:
            full = Path(dist.locate_file(f)).resolve()
            return full.parents[2]
    raise RuntimeError("example-robot-data is installed but its robots directory was not found")


# name -> path relative to the robots directory.  All of these are fixed-base as published (the
# G1 floating joint is commented out in the file), and use only revolute / continuous / prismatic
# / fixed joints, so every one is tested numerically (none is skipped or expected to fail).
ERD_ROBOTS = {
    "double_pendulum": "double_pendulum_description/urdf/double_pendulum.urdf",
    "double_pendulum_continuous": (
        "double_pendulum_description/urdf/double_pendulum_continuous.urdf"
    ),
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "xarm7": "xarm_description/urdf/xarm7.urdf",
    "kinova": "kinova_description/robots/kinova.urdf",
    "baxter": "baxter_description/urdf/baxter.urdf",
    "tiago": "tiago_description/robots/tiago.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "anymal_b": "anymal_b_simple_description/robots/anymal.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
    "go2": "go2_description/urdf/go2.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
    "romeo": "romeo_description/urdf/romeo.urdf",
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
}


def erd_urdf(name: str) -> Path:
    path = erd_robots_dir() / ERD_ROBOTS[name]
    assert path.is_file(), f"example-robot-data file missing: {path}"
    return path


def small_random_trees() -> dict[str, str]:
    """A handful of small mixed random trees (all topologies) used by several modules."""
    out = {}
    for k, topo in enumerate(TOPOLOGIES):
        out[f"{topo}_7"] = random_tree(topo, 7, seed=100 + k)
    out["biped_arms_9"] = random_tree("biped", 9, seed=7, arms=True)
    return out


class PinOracle:
    """Pinocchio reference dynamics in a given joint order (by name)."""

    def __init__(self, urdf: str | os.PathLike, order=None, gravity=GRAVITY):
        text = Path(urdf).read_text() if _is_path(urdf) else str(urdf)
        self.model = pin.buildModelFromXML(text, mimic=False)  # fixed base, mimic independent
        self.model.gravity.linear = np.asarray(gravity, dtype=float)
        self.data = self.model.createData()
        m = self.model
        names, idx_q, idx_v, nq = [], [], [], []
        for jid in range(1, m.njoints):
            joint = m.joints[jid]
            if joint.nv != 1:
                raise ValueError(f"oracle: joint {m.names[jid]} has nv={joint.nv}")
            names.append(m.names[jid])
            idx_q.append(m.idx_qs[jid])
            idx_v.append(m.idx_vs[jid])
            nq.append(joint.nq)
        self.pin_names = tuple(names)
        order = self.pin_names if order is None else tuple(order)
        if sorted(order) != sorted(self.pin_names):
            raise AssertionError(
                f"joint sets differ: library {sorted(order)} vs Pinocchio {sorted(self.pin_names)}"
            )
        self.names = order
        self.n = len(order)
        where = {nm: k for k, nm in enumerate(names)}
        self._v = np.array([idx_v[where[nm]] for nm in order], dtype=int)
        self._q = np.array([idx_q[where[nm]] for nm in order], dtype=int)
        self._nq = np.array([nq[where[nm]] for nm in order], dtype=int)
        assert sorted(self._v.tolist()) == list(range(m.nv))

    # --- conversions
    def q_pin(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        out = np.zeros(self.model.nq)
        for k in range(self.n):
            if self._nq[k] == 1:
                out[self._q[k]] = q[k]
            else:  # continuous: (cos, sin)
                out[self._q[k]] = math.cos(q[k])
                out[self._q[k] + 1] = math.sin(q[k])
        return out

    def v_pin(self, v) -> np.ndarray:
        out = np.zeros(self.model.nv)
        out[self._v] = np.asarray(v, dtype=float)
        return out

    def vec(self, x_pin) -> np.ndarray:
        return np.array(x_pin)[self._v]

    def mat(self, a_pin) -> np.ndarray:
        return np.array(a_pin)[np.ix_(self._v, self._v)]

    # --- quantities in library order
    def M(self, q) -> np.ndarray:
        pin.crba(self.model, self.data, self.q_pin(q))
        mp = np.array(self.data.M)
        mp = np.triu(mp) + np.triu(mp, 1).T  # crba may fill the upper triangle only
        return self.mat(mp)

    def C(self, q, qd) -> np.ndarray:
        c = pin.computeCoriolisMatrix(self.model, self.data, self.q_pin(q), self.v_pin(qd))
        return self.mat(c)

    def Mdot(self, q, qd) -> np.ndarray:
        c = self.C(q, qd)
        return c + c.T

    def g(self, q) -> np.ndarray:
        return self.vec(pin.computeGeneralizedGravity(self.model, self.data, self.q_pin(q)))

    def rnea(self, q, qd, qdd) -> np.ndarray:
        tau = pin.rnea(self.model, self.data, self.q_pin(q), self.v_pin(qd), self.v_pin(qdd))
        return self.vec(tau)

    def nle_no_gravity(self, q, qd) -> np.ndarray:
        """C(q, qd) qd from RNEA with zero acceleration minus gravity."""
        return self.rnea(q, qd, np.zeros(self.n)) - self.g(q)

    # --- finite differences (of Pinocchio's own M)
    def dM_fd(self, q, h: float = 1e-5) -> np.ndarray:
        """dM[i, j, k] = dM_ij / dq_k by central differences."""
        q = np.asarray(q, dtype=float)
        out = np.empty((self.n, self.n, self.n))
        for k in range(self.n):
            e = np.zeros(self.n)
            e[k] = h
            out[:, :, k] = (self.M(q + e) - self.M(q - e)) / (2 * h)
        return out

    def christoffel_fd(self, q, h: float = 1e-5) -> np.ndarray:
        """Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) from finite differences."""
        d = self.dM_fd(q, h)
        return 0.5 * (d + np.einsum("ikj->ijk", d) - np.einsum("jki->ijk", d))

    def Mdot_fd(self, q, qd, h: float = 1e-6) -> np.ndarray:
        """(M(q + h qd) - M(q - h qd)) / 2h."""
        q = np.asarray(q, dtype=float)
        qd = np.asarray(qd, dtype=float)
        return (self.M(q + h * qd) - self.M(q - h * qd)) / (2 * h)


def _is_path(urdf) -> bool:
    if isinstance(urdf, os.PathLike):
        return True
    s = str(urdf)
    return "<" not in s and len(s) < 4096 and Path(s).is_file()


def random_state(n: int, rng: np.random.Generator, scale: float = 1.0):
    """Random (q, qd, qdd): q in [-pi, pi], velocities and accelerations O(1..3)."""
    q = rng.uniform(-math.pi, math.pi, size=n)
    qd = scale * rng.normal(0.0, 2.0, size=n)
    qdd = scale * rng.normal(0.0, 3.0, size=n)
    return q, qd, qdd


@cache
def oracle_for_erd(name: str) -> PinOracle:
    return PinOracle(erd_urdf(name))


@cache
def dynamics_for(urdf: str, gravity=GRAVITY):
    """Library model for a URDF string or path (cached per process: parsing is not under test).

    Mimic joints are independent DoF, as in the oracle (Pinocchio built with mimic=False);
    test_dynamics_mimic.py checks the default, mimic joints following their leader.
    """
    from coriolis_ros.dynamics import Dynamics

    return Dynamics.from_urdf(urdf, gravity=gravity, mimic="independent")


@cache
def library_and_oracle(urdf: str):
    """(Dynamics, PinOracle in the library's joint order) for a URDF string or path."""
    dyn = dynamics_for(urdf)
    return dyn, PinOracle(urdf, order=dyn.joint_names)


def pinocchio_tree_depth(oracle: PinOracle) -> int:
    """Max number of DoF joints on a root-to-leaf path, from Pinocchio's parent array."""
    parents = oracle.model.parents
    depth = [0] * oracle.model.njoints
    for jid in range(1, oracle.model.njoints):
        depth[jid] = depth[parents[jid]] + 1
    return max(depth)


def compare_all(dyn, oracle: PinOracle, q, qd, qdd, tol: float = 1e-10, label: str = "") -> None:
    """Every library quantity at one state against Pinocchio (and M qd, C qd, C^T qd)."""
    M_ref = oracle.M(q)
    C_ref = oracle.C(q, qd)
    M, Mdot, C = dyn.coriolis(q, qd)
    assert_close(M, M_ref, tol, f"{label} M (coriolis)")
    assert_close(C, C_ref, tol, f"{label} C")
    assert_close(Mdot, C_ref + C_ref.T, tol, f"{label} Mdot")
    assert_close(dyn.mass_matrix(q), M_ref, tol, f"{label} M (mass_matrix)")
    assert_close(dyn.gravity(q), oracle.g(q), tol, f"{label} g")
    assert_close(dyn.inverse_dynamics(q, qd, qdd), oracle.rnea(q, qd, qdd), tol, f"{label} RNEA")
    Cqd, CTqd, p = dyn.coriolis_vectors(q, qd)
    assert_close(Cqd, C_ref @ qd, tol, f"{label} C qd")
    assert_close(CTqd, C_ref.T @ qd, tol, f"{label} C^T qd")
    assert_close(p, M_ref @ qd, tol, f"{label} M qd")


FD_TOL = 1e-6


EXACT_TOL = 1e-10


def check_christoffel(dyn, oracle, q, qd, label):
    n = dyn.nv
    gamma = dyn.christoffel(q)
    assert gamma.shape == (n, n, n)
    # Against finite differences of Pinocchio's M.
    assert_close(gamma, oracle.christoffel_fd(q), FD_TOL, f"{label} Gamma vs FD of Pinocchio M")
    # Symmetry in the last two indices.
    assert_close(gamma, gamma.transpose(0, 2, 1), EXACT_TOL, f"{label} Gamma_ijk = Gamma_ikj")
    # dM_ij/dq_k = Gamma_ijk + Gamma_jik.
    dM = gamma + gamma.transpose(1, 0, 2)
    assert_close(dM, oracle.dM_fd(q), FD_TOL, f"{label} Gamma_ijk + Gamma_jik vs FD dM/dq")
    # Consistency with Algorithm 1.
    M, Mdot, C = dyn.coriolis(q, qd)
    assert_close(C, np.einsum("ijk,k->ij", gamma, qd), EXACT_TOL, f"{label} C = Gamma qd")
    return M, Mdot, C


def check_identities(dyn, q, qd, label):
    M, Mdot, C = dyn.coriolis(q, qd)
    assert_close(Mdot, C + C.T, EXACT_TOL, f"{label} Mdot = C + C^T")
    assert_close(M, M.T, EXACT_TOL, f"{label} M symmetric")
    assert_close(Mdot, Mdot.T, EXACT_TOL, f"{label} Mdot symmetric")
    S = Mdot - 2.0 * C
    assert_close(
        S + S.T,
        np.zeros_like(S),
        EXACT_TOL * max(1.0, np.linalg.norm(C)),
        f"{label} Mdot - 2C skew",
    )
    tau0 = dyn.inverse_dynamics(q, qd, np.zeros(dyn.nv))
    assert_close(C @ qd, tau0 - dyn.gravity(q), EXACT_TOL, f"{label} C qd = RNEA(q,qd,0) - g")
    # Passivity: qd^T (Mdot - 2C) qd = 0.
    assert abs(qd @ S @ qd) <= EXACT_TOL * max(1.0, np.linalg.norm(Mdot)) * (qd @ qd)
    # Linearity of C in qd (Christoffel form): C(q, a qd1 + b qd2) = a C(q, qd1) + b C(q, qd2).
    rng = np.random.default_rng(0)
    qd2 = rng.normal(size=dyn.nv)
    C2 = dyn.coriolis(q, qd2)[2]
    C12 = dyn.coriolis(q, 2.0 * qd - 0.5 * qd2)[2]
    assert_close(C12, 2.0 * C - 0.5 * C2, EXACT_TOL, f"{label} C linear in qd")
    # M is positive semi-definite (some real robots, e.g. Romeo's fingers, have massless bodies).
    eig = np.linalg.eigvalsh(0.5 * (M + M.T))
    assert eig[0] >= -1e-12 * max(1.0, eig[-1]), f"{label} M has eigenvalue {eig[0]:.3e} < 0"


def _christoffel_explicit(d: np.ndarray) -> np.ndarray:
    n = d.shape[0]
    g = np.empty_like(d)
    for i in range(n):
        for j in range(n):
            for k in range(n):
                g[i, j, k] = 0.5 * (d[i, j, k] + d[i, k, j] - d[j, k, i])
    return g
