"""The plain-numpy reference of Algorithms 1 and 2 (coriolis_ros.dynamics.reference).

Against the library's Numba kernels, 1e-10 relative (max-abs error over the library array's
max-abs entry): M, Mdot, C (``dyn.coriolis``) and Gamma (``dyn.christoffel``), on the bundled
arm7 and quadruped12 (fixed, floating and planar base) and random trees of every topology.

Independently of the library, on the reference alone:
    Mdot = C + C^T (1e-10);  C = sum_k Gamma[:, :, k] qd_k and Gamma[:, :, k] = C(q, e_k) (1e-10);
    Mdot = d/dt M along a curve through q with velocity qd, central differences (1e-6);
    fixed bases: Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i), central differences
    of the reference's M (1e-6), and Gamma_ijk = Gamma_ikj (1e-12).
"""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.model import FREE, PLANAR
from coriolis_ros.dynamics.reference import (
    body_factor,
    christoffel_reference,
    coriolis_reference,
    crf,
    crm,
    spatial_inertia,
)
from coriolis_ros.robots import robot_path
from support.random_trees import random_tree

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

CASES = {
    "arm7": ("robot", "arm7", "fixed"),
    "quadruped12": ("robot", "quadruped12", "fixed"),
    "quadruped12_floating": ("robot", "quadruped12", "floating"),
    "quadruped12_planar": ("robot", "quadruped12", "planar"),
    "serial_chain_7": ("tree", ("serial_chain", 7, 1), "fixed"),
    "binary_tree_9": ("tree", ("binary_tree", 9, 2), "fixed"),
    "biped_8": ("tree", ("biped", 8, 3), "fixed"),
    "quadruped_12": ("tree", ("quadruped", 12, 4), "fixed"),
    "serial_chain_5_floating": ("tree", ("serial_chain", 5, 5), "floating"),
    "binary_tree_6_planar": ("tree", ("binary_tree", 6, 6), "planar"),
}
FIXED = [name for name, case in CASES.items() if case[2] == "fixed"]
SEEDS = (0, 1, 2)

_cache: dict[str, Dynamics] = {}


def dynamics(name: str) -> Dynamics:
    if name not in _cache:
        kind, what, root = CASES[name]
        urdf = robot_path(what) if kind == "robot" else random_tree(*what)
        _cache[name] = Dynamics.from_urdf(urdf, root_joint=root)
    return _cache[name]


def random_state(dyn: Dynamics, seed: int):
    """q (unit quaternions), qd at random."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-np.pi, np.pi, dyn.nq)
    for kind, _, _, iq in dyn.model.joints():
        if kind == FREE:
            quat = rng.normal(size=4)
            q[iq + 3 : iq + 7] = quat / np.linalg.norm(quat)
    return q, rng.normal(scale=2.0, size=dyn.nv)


def rel(a, b) -> float:
    """Max-abs error of a over the max-abs entry of b."""
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def curve(model, q, qd, t):
    """A point at time t on a smooth curve through q with velocity qd (first order)."""
    q = np.array(q, dtype=float)
    for kind, r0, _, iq in model.joints():
        if kind == FREE:  # position rate R v (v in the child frame); quaternion 1/2 quat (w, 0)
            x, y, z, w = q[iq + 3 : iq + 7]
            R = np.array([
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ])  # fmt: skip
            vec, omega = np.array([x, y, z]), qd[r0 + 3 : r0 + 6]
            q[iq : iq + 3] += t * R @ qd[r0 : r0 + 3]
            q[iq + 3 : iq + 6] += 0.5 * t * (w * omega + np.cross(vec, omega))
            q[iq + 6] -= 0.5 * t * vec @ omega
        elif kind == PLANAR:  # (x, y) rate Rz(theta) (vx, vy)
            c, s = np.cos(q[iq + 2]), np.sin(q[iq + 2])
            vx, vy, omega = qd[r0 : r0 + 3]
            q[iq : iq + 3] += t * np.array([c * vx - s * vy, s * vx + c * vy, omega])
        else:
            q[iq] += t * qd[r0]
    return q


# ----------------------------------------------------------------- against the library


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_coriolis_matches_library(name, seed):
    dyn = dynamics(name)
    q, qd = random_state(dyn, seed)
    for label, ref, lib in zip(("M", "Mdot", "C"), coriolis_reference(dyn.model, q, qd),
                               dyn.coriolis(q, qd)):  # fmt: skip
        assert np.abs(lib).max() > 0.0
        assert rel(ref, lib) < 1e-10, label


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_christoffel_matches_library(name, seed):
    dyn = dynamics(name)
    q, _ = random_state(dyn, seed)
    lib = dyn.christoffel(q)
    assert np.abs(lib).max() > 0.0
    assert rel(christoffel_reference(dyn.model, q), lib) < 1e-10


# ----------------------------------------------------------------- independent of the library


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_mdot_is_c_plus_ct(name, seed):
    dyn = dynamics(name)
    q, qd = random_state(dyn, seed)
    M, Mdot, C = coriolis_reference(dyn.model, q, qd)
    assert np.allclose(M, M.T, rtol=0.0, atol=1e-12 * np.abs(M).max())
    assert np.all(np.linalg.eigvalsh(M) > 0.0)
    assert rel(C + C.T, Mdot) < 1e-10
    assert np.abs(C - C.T).max() > 1e-6 * np.abs(C).max()  # C itself is not symmetric


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_c_from_gamma(name, seed):
    dyn = dynamics(name)
    q, qd = random_state(dyn, seed)
    Gamma = christoffel_reference(dyn.model, q)
    C = coriolis_reference(dyn.model, q, qd)[2]
    assert rel(np.einsum("ijk,k->ij", Gamma, qd), C) < 1e-10
    # C is linear in qd: its k-th "page" is Algorithm 1 at qd = e_k
    for k in range(dyn.nv):
        e_k = np.zeros(dyn.nv)
        e_k[k] = 1.0
        Ck = coriolis_reference(dyn.model, q, e_k)[2]
        assert np.abs(Gamma[:, :, k] - Ck).max() <= 1e-10 * np.abs(Gamma).max(), k


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_mdot_finite_differences(name, seed):
    dyn = dynamics(name)
    q, qd = random_state(dyn, seed)
    h = 1e-5
    plus = coriolis_reference(dyn.model, curve(dyn.model, q, qd, h), qd)[0]
    minus = coriolis_reference(dyn.model, curve(dyn.model, q, qd, -h), qd)[0]
    Mdot = coriolis_reference(dyn.model, q, qd)[1]
    assert rel((plus - minus) / (2 * h), Mdot) < 1e-6


@pytest.mark.parametrize("name", FIXED)
def test_christoffel_first_kind_finite_differences(name):
    """Fixed base, qd = dq/dt: Gamma is the Christoffel symbols of the first kind of M."""
    dyn = dynamics(name)
    q, _ = random_state(dyn, 7)
    n, h = dyn.nv, 1e-5

    def mass(x):
        return coriolis_reference(dyn.model, x, np.zeros(n))[0]

    dM = np.empty((n, n, n))  # dM[:, :, k] = dM/dq_k
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        dM[:, :, k] = (mass(q + e) - mass(q - e)) / (2 * h)
    expected = 0.5 * (dM + dM.transpose(0, 2, 1) - dM.transpose(2, 0, 1))
    Gamma = christoffel_reference(dyn.model, q)
    assert rel(Gamma, expected) < 1e-6
    assert np.abs(Gamma - Gamma.transpose(0, 2, 1)).max() < 1e-12 * np.abs(Gamma).max()


def test_floating_christoffel_not_symmetric_in_the_free_flyer():
    """With body-frame velocities Gamma_ijk != Gamma_ikj for j, k in the free flyer only."""
    dyn = dynamics("quadruped12_floating")
    q, _ = random_state(dyn, 3)
    Gamma = christoffel_reference(dyn.model, q)
    asym = np.abs(Gamma - Gamma.transpose(0, 2, 1))
    assert asym[:, :6, :6].max() > 1e-3 * np.abs(Gamma).max()
    asym[:, :6, :6] = 0.0
    assert asym.max() < 1e-12 * np.abs(Gamma).max()


# ----------------------------------------------------------------- helpers


def test_body_factor_is_admissible():
    """Definition 4: B(v, I) v = v x* I v and (v x*) I - I (v x) = B + B^T."""
    rng = np.random.default_rng(11)
    A = rng.normal(size=(3, 3))
    inertia = spatial_inertia(2.5, rng.normal(size=3), A @ A.T + np.eye(3))
    v = rng.normal(size=6)
    B = body_factor(v, inertia)
    assert np.allclose(B @ v, crf(v) @ inertia @ v, rtol=0.0, atol=1e-12)
    assert np.allclose(B + B.T, crf(v) @ inertia - inertia @ crm(v), rtol=0.0, atol=1e-12)
    assert not np.allclose(B, crf(v) @ inertia, atol=1e-3)  # not factorization (9)


def test_mimic_model_rejected():
    urdf = """<?xml version="1.0"?>
<robot name="mimic_pair">
  <link name="base"/>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"
    ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"
    ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="a"/>
    <axis xyz="0 0 1"/></joint>
  <joint name="j2" type="continuous"><parent link="a"/><child link="b"/>
    <origin xyz="1 0 0"/><axis xyz="0 1 0"/><mimic joint="j1" multiplier="2"/></joint>
</robot>
"""
    dyn = Dynamics.from_urdf(urdf)
    with pytest.raises(NotImplementedError, match="mimic"):
        coriolis_reference(dyn.model, np.zeros(dyn.nq), np.zeros(dyn.nv))
