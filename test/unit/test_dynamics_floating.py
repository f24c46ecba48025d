"""Floating and planar bases, multi-DoF joints inside the tree, generalized Christoffel symbols.

References, all independent of the code under test:

* Pinocchio, built from the same URDF with ``JointModelFreeFlyer`` / ``JointModelPlanar`` as the
  root joint (or parsing the URDF's own floating / planar joints): M, C, Mdot = C + C^T, g, RNEA,
  the O(N) vectors (C v, C^T v, p, C x, M a + C x + g), ``integrate``, and Gamma[:, :, k] =
  ``computeCoriolisMatrix(q, e_k)``;
* finite differences of the library's own M along ``integrate`` (a curve on the configuration
  manifold), for Mdot and for Gamma_ijk + Gamma_jik = dM_ij along the k-th velocity.

Pinocchio stores a planar joint's angle and a continuous joint's angle as (cos, sin); the oracle
converts.  Tolerance: ||A - B|| <= 1e-10 max(1, ||B||).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pinocchio as pin  # test-only dependency
import pytest

from support.random_trees import random_tree
from support.oracle import assert_close, erd_urdf

from coriolis_ros.dynamics import Dynamics
from support.floating import MultiDofOracle, random_configuration

TOL = 1e-10


def _from_urdf(urdf, **kwargs):
    """Mimic joints as independent DoF, as in the Pinocchio oracle (built with mimic=False)."""
    return Dynamics.from_urdf(urdf, mimic="independent", **kwargs)


LEGGED = ["solo12", "anymal_b", "anymal_c", "hyq", "go2", "talos_full", "romeo", "g1"]


def compare(dyn: Dynamics, oracle: MultiDofOracle, q, v, a, label: str) -> None:
    M_ref, C_ref = oracle.M(q), oracle.C(q, v)
    M, Mdot, C = dyn.coriolis(q, v)
    assert_close(M, M_ref, TOL, f"{label} M")
    assert_close(C, C_ref, TOL, f"{label} C")
    assert_close(Mdot, C_ref + C_ref.T, TOL, f"{label} Mdot")
    assert_close(dyn.mass_matrix(q), M_ref, TOL, f"{label} M (crba)")
    assert_close(dyn.gravity(q), oracle.g(q), TOL, f"{label} g")
    assert_close(dyn.inverse_dynamics(q, v, a), oracle.rnea(q, v, a), TOL, f"{label} RNEA")
    cqd, ctqd, p = dyn.coriolis_vectors(q, v)
    assert_close(cqd, C_ref @ v, TOL, f"{label} C v")
    assert_close(ctqd, C_ref.T @ v, TOL, f"{label} C^T v")
    assert_close(p, M_ref @ v, TOL, f"{label} p")
    assert_close(cqd, oracle.rnea(q, v, 0 * v) - oracle.g(q), TOL, f"{label} C v (RNEA)")
    x = np.cos(np.arange(dyn.nv))  # any vector: C x and the Slotine-Li terms in O(N)
    assert_close(dyn.coriolis_times(q, v, x), C_ref @ x, TOL, f"{label} C x")
    slotine_li = M_ref @ a + C_ref @ x + oracle.g(q)
    assert_close(dyn.slotine_li(q, v, x, a), slotine_li, TOL, f"{label} Slotine-Li")


def check_christoffel(dyn: Dynamics, oracle: MultiDofOracle, q, v, label: str) -> np.ndarray:
    G = dyn.christoffel(q)
    for k in range(dyn.nv):
        e = np.zeros(dyn.nv)
        e[k] = 1.0
        assert_close(G[:, :, k], oracle.C(q, e), TOL, f"{label} Gamma[:, :, {k}]")
    assert_close(np.einsum("ijk,k->ij", G, v), dyn.coriolis(q, v)[2], TOL, f"{label} sum Gamma v")
    return G


# ----------------------------------------------------------------------------- real robots


@pytest.mark.parametrize("robot", LEGGED)
def test_legged_robot_floating_matches_pinocchio(robot):
    path = str(erd_urdf(robot))
    dyn = _from_urdf(path, root_joint="floating")
    fixed = _from_urdf(path)
    assert (dyn.nq, dyn.nv) == (fixed.nv + 7, fixed.nv + 6)
    assert dyn.joint_names[6:] == fixed.joint_names
    assert dyn.joint_names[:6] == tuple(
        f"root_joint/{s}"
        for s in ("linear_x", "linear_y", "linear_z", "angular_x", "angular_y", "angular_z")
    )
    assert dyn.position_names[:7] == tuple(
        f"root_joint/{s}" for s in ("x", "y", "z", "qx", "qy", "qz", "qw")
    )
    assert dyn.position_names[7:] == fixed.joint_names
    assert dyn.root_joint == "floating" and dyn.root_link == fixed.root_link
    oracle = MultiDofOracle(path, dyn, "floating")
    rng = np.random.default_rng(sum(map(ord, robot)))
    for s in range(2):
        q = random_configuration(dyn, rng)
        v, a = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
        compare(dyn, oracle, q, v, a, f"{robot} state {s}")


@pytest.mark.parametrize("robot", ["solo12", "talos_full", "g1"])
def test_generalized_christoffel_matches_pinocchio(robot):
    path = str(erd_urdf(robot))
    dyn = _from_urdf(path, root_joint="floating")
    oracle = MultiDofOracle(path, dyn, "floating")
    rng = np.random.default_rng(3)
    q = random_configuration(dyn, rng)
    G = check_christoffel(dyn, oracle, q, rng.normal(size=dyn.nv), robot)
    # generalized speeds: the base's angular velocity breaks the (j, k) symmetry
    assert np.abs(G - G.transpose(0, 2, 1)).max() > 1e-3
    # ... but the joints below the base keep it among themselves
    assert_close(G[:, 6:, 6:], G[:, 6:, 6:].transpose(0, 2, 1), TOL, f"{robot} joint block")


@pytest.mark.parametrize("robot", ["solo12", "anymal_c"])
def test_planar_root_matches_pinocchio(robot):
    path = str(erd_urdf(robot))
    dyn = _from_urdf(path, root_joint="planar")
    assert (dyn.nq, dyn.nv) == (_from_urdf(path).nv + 3,) * 2
    assert dyn.position_names[:3] == ("root_joint/x", "root_joint/y", "root_joint/theta")
    oracle = MultiDofOracle(path, dyn, "planar")
    rng = np.random.default_rng(11)
    q = random_configuration(dyn, rng)
    v, a = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
    compare(dyn, oracle, q, v, a, f"{robot} planar")
    check_christoffel(dyn, oracle, q, v, f"{robot} planar")


# ----------------------------------------------------------------------------- random trees


@pytest.mark.parametrize(
    "topology,n", [("serial", 12), ("binary", 15), ("biped", 20), ("quadruped", 24), ("biped", 60)]
)
@pytest.mark.parametrize("root_joint", ["floating", "planar"])
def test_random_floating_trees(topology, n, root_joint):
    urdf = random_tree(topology, n, seed=n + len(topology))
    dyn = _from_urdf(urdf, root_joint=root_joint)
    oracle = MultiDofOracle(urdf, dyn, root_joint)
    rng = np.random.default_rng(n)
    q = random_configuration(dyn, rng)
    v, a = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
    compare(dyn, oracle, q, v, a, f"{topology} {n} {root_joint}")
    if n <= 24:
        check_christoffel(dyn, oracle, q, v, f"{topology} {n} {root_joint}")


def with_joint_type(urdf: str, index: int, jtype: str, axis_z: bool = False) -> tuple[str, str]:
    """The URDF with its index-th movable joint turned into ``jtype`` (and its name)."""
    names = re.findall(r'<joint name="([^"]+)" type="(?:revolute|continuous|prismatic)"', urdf)
    name = names[index]
    out = re.sub(rf'<joint name="{name}" type="\w+"', f'<joint name="{name}" type="{jtype}"', urdf)
    if axis_z:  # Pinocchio's planar joint is the x-y plane of the joint frame
        block = re.search(rf'<joint name="{name}".*?</joint>', out, re.S).group(0)
        out = out.replace(block, re.sub(r'<axis xyz="[^"]*"/>', '<axis xyz="0 0 1"/>', block))
    return out, name


@pytest.mark.parametrize("jtype", ["floating", "planar"])
@pytest.mark.parametrize("root_joint", ["fixed", "floating"])
def test_multi_dof_joints_inside_the_tree(jtype, root_joint):
    """Free-flyer and planar joints in the middle of a tree (two of them), against Pinocchio."""
    urdf, first = with_joint_type(random_tree("quadruped", 16, seed=4), 2, jtype, axis_z=True)
    urdf, second = with_joint_type(urdf, 9, jtype, axis_z=True)
    dyn = _from_urdf(urdf, root_joint=root_joint)
    assert f"{first}/angular_z" in dyn.joint_names and f"{second}/linear_x" in dyn.joint_names
    oracle = MultiDofOracle(urdf, dyn, root_joint)
    rng = np.random.default_rng(8)
    q = random_configuration(dyn, rng)
    v, a = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
    compare(dyn, oracle, q, v, a, f"{jtype} inside, root {root_joint}")
    check_christoffel(dyn, oracle, q, v, f"{jtype} inside, root {root_joint}")
    q2 = dyn.integrate(q, v, 0.2)
    oracle.same_configuration(q2, oracle.integrate(q, 0.2 * v), "integrate")


@pytest.mark.parametrize("jtype", ["floating", "planar"])
def test_a_multi_dof_joint_on_the_first_row(jtype):
    """A free-flyer or planar joint whose parent is row 0 (the first joint's body): its
    translation and its parent's velocity count like any other parent's, against Pinocchio."""
    urdf = random_tree("serial_chain", 5, seed=3)
    # the first joint turns (it slides in this tree): a slide of the parent would leave the
    # dynamics blind to where the child sits on it
    urdf = urdf.replace('<joint name="chain_joint0" type="prismatic"',
                        '<joint name="chain_joint0" type="continuous"')  # fmt: skip
    movable = re.findall(r'<joint name="([^"]+)" type="(?:revolute|continuous|prismatic)"', urdf)
    urdf, name = with_joint_type(urdf, movable.index("chain_joint1"), jtype, axis_z=True)
    dyn = _from_urdf(urdf, root_joint="fixed")
    first = dyn.joint_names.index(f"{name}/linear_x")
    assert first == 1 and dyn.model.parent[first] == 0 and dyn.model.joint_types[0] == "continuous"
    oracle = MultiDofOracle(urdf, dyn, "fixed")
    rng = np.random.default_rng(5)
    q = random_configuration(dyn, rng)
    q[0] = 0.9  # the first joint turned, its body moving: the child's terms depend on both
    v, a = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
    compare(dyn, oracle, q, v, a, f"{jtype} on row 0")
    check_christoffel(dyn, oracle, q, v, f"{jtype} on row 0")


@pytest.mark.parametrize("axis,in_plane", [("0 0 1", 0.0), ("1 0 0", 1.0), ("0 0.6 0.8", 0.6)])
def test_planar_joint_moves_in_the_plane_normal_to_its_axis(axis, in_plane):
    """URDF: a planar joint allows motion in the plane perpendicular to its axis.

    Gravity (0, 0, -9.81) on a 2 kg body: its component in the plane, seen through the two
    translational DoF, has magnitude 2 * 9.81 * |sin(angle between the axis and z)|, and the
    rotational DoF feels no gravity torque (centre of mass on the joint origin).
    """
    urdf = (
        '<robot name="p"><link name="world"/><link name="body"><inertial><mass value="2"/>'
        '<inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="slide" type="planar"><parent link="world"/><child link="body"/>'
        f'<origin xyz="0.3 -0.2 0.1" rpy="0 0 0"/><axis xyz="{axis}"/></joint></robot>'
    )
    dyn = _from_urdf(urdf)
    assert dyn.joint_names == ("slide/linear_x", "slide/linear_y", "slide/angular_z")
    for theta in (0.0, 1.1):
        g = dyn.gravity(np.array([0.4, -0.7, theta]))
        assert abs(np.linalg.norm(g[:2]) - 2 * 9.81 * in_plane) < 1e-12
        assert abs(g[2]) < 1e-12
    M = dyn.mass_matrix(np.zeros(3))
    assert_close(M[:2, :2], 2 * np.eye(2), 1e-15, "translational mass")


# ----------------------------------------------------------------------------- identities


@pytest.mark.parametrize("robot", ["solo12", "g1"])
def test_mdot_and_christoffel_against_finite_differences_along_integrate(robot):
    """Mdot = d/dt M(q (+) t v) and Gamma_ijk + Gamma_jik = d/dt M_ij(q (+) t e_k)."""
    dyn = _from_urdf(str(erd_urdf(robot)), root_joint="floating")
    rng = np.random.default_rng(5)
    q = random_configuration(dyn, rng, unit=True)
    v = rng.normal(size=dyn.nv)
    h = 1e-5

    def fd(direction):
        plus = dyn.mass_matrix(dyn.integrate(q, direction, h))
        minus = dyn.mass_matrix(dyn.integrate(q, direction, -h))
        return (plus - minus) / (2 * h)

    _, Mdot, _ = dyn.coriolis(q, v)
    assert_close(Mdot, fd(v), 1e-7, f"{robot} Mdot vs FD")
    G = dyn.christoffel(q)
    for k in list(range(6)) + [6, dyn.nv - 1]:
        e = np.zeros(dyn.nv)
        e[k] = 1.0
        assert_close(G[:, :, k] + G[:, :, k].T, fd(e), 1e-7, f"{robot} Gamma sym part, k={k}")


def test_explicit_floating_joint_equals_root_joint():
    """A URDF with its own floating joint from a massless world link = root_joint='floating'."""
    path = erd_urdf("anymal_c")
    text = Path(path).read_text()
    root = _from_urdf(path).root_link
    explicit = text.replace(
        "</robot>",
        '<link name="world"/><joint name="root_joint" type="floating">'
        f'<parent link="world"/><child link="{root}"/></joint></robot>',
    )
    a = _from_urdf(path, root_joint="floating")
    b = _from_urdf(explicit)
    assert a.joint_names == b.joint_names and a.position_names == b.position_names
    assert b.root_joint == "fixed" and b.root_link == "world"
    rng = np.random.default_rng(1)
    q = random_configuration(a, rng)
    v = rng.normal(size=a.nv)
    for x, y in zip(a.coriolis(q, v), b.coriolis(q, v), strict=True):
        assert_close(x, y, 1e-13, "explicit floating joint")
    assert_close(a.christoffel(q), b.christoffel(q), 1e-13, "Gamma")
    assert_close(a.gravity(q), b.gravity(q), 1e-13, "g")


def test_fixed_base_christoffel_unchanged_and_symmetric():
    dyn = _from_urdf(str(erd_urdf("panda")))
    q = np.random.default_rng(0).uniform(-1, 1, dyn.nv)
    G = dyn.christoffel(q)
    assert_close(G, G.transpose(0, 2, 1), 1e-14, "Gamma_ijk = Gamma_ikj")
    assert dyn.nq == dyn.nv and dyn.position_names == dyn.joint_names
    assert dyn.root_joint == "fixed"


# ----------------------------------------------------------------------------- configuration


def test_neutral_and_integrate_against_pinocchio():
    path = str(erd_urdf("go2"))
    dyn = _from_urdf(path, root_joint="floating")
    oracle = MultiDofOracle(path, dyn, "floating")
    q0 = dyn.neutral()
    assert q0.shape == (dyn.nq,)
    assert_close(oracle.q_pin(q0), pin.neutral(oracle.model), 0.0, "neutral")
    rng = np.random.default_rng(4)
    for scale in (1e-9, 1e-3, 1.0, 7.0):  # small and large rotations (series branch and exact)
        q = random_configuration(dyn, rng, unit=True)
        v = scale * rng.normal(size=dyn.nv)
        q2 = dyn.integrate(q, v, 0.5)
        oracle.same_configuration(q2, oracle.integrate(q, 0.5 * v), f"integrate x{scale}")
        assert abs(np.linalg.norm(q2[3:7]) - 1.0) < 1e-14
    planar = _from_urdf(path, root_joint="planar")
    poracle = MultiDofOracle(path, planar, "planar")
    for scale in (1e-9, 1.0, -3.0):
        q = random_configuration(planar, rng)
        v = scale * rng.normal(size=planar.nv)
        q2 = planar.integrate(q, v, 0.3)
        poracle.same_configuration(q2, poracle.integrate(q, 0.3 * v), "planar integrate")


# ----------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def solo():
    return _from_urdf(str(erd_urdf("solo12")), root_joint="floating")


def test_quaternion_is_normalized_before_use(solo):
    rng = np.random.default_rng(6)
    q = random_configuration(solo, rng, unit=True)
    v = rng.normal(size=solo.nv)
    scaled = q.copy()
    scaled[3:7] *= 1e-6
    for x, y in zip(solo.coriolis(q, v), solo.coriolis(scaled, v), strict=True):
        assert_close(y, x, 1e-13, "scaled quaternion")
    flipped = q.copy()
    flipped[3:7] *= -3.0  # -q is the same rotation
    assert_close(solo.christoffel(flipped), solo.christoffel(q), 1e-13, "flipped quaternion")


@pytest.mark.parametrize("norm", [0.0, 1e-11, 1e-10 * 0.999])
def test_zero_quaternion_is_rejected(solo, norm):
    q = solo.neutral()
    q[3:7] = [0.0, 0.0, 0.0, norm]
    v = np.zeros(solo.nv)
    for call in (
        lambda: solo.coriolis(q, v),
        lambda: solo.christoffel(q),
        lambda: solo.mass_matrix(q),
        lambda: solo.gravity(q),
        lambda: solo.inverse_dynamics(q, v, v),
        lambda: solo.coriolis_vectors(q, v),
        lambda: solo.integrate(q, v),
    ):
        with pytest.raises(ValueError, match="zero quaternion"):
            call()


def test_quaternion_just_above_the_limit_is_used(solo):
    q = solo.neutral()
    q[3:7] = [0.0, 0.0, 0.0, 1e-10 * 1.001]
    M = solo.mass_matrix(q)
    assert_close(M, solo.mass_matrix(solo.neutral()), 1e-13, "tiny quaternion")


@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e51])
def test_non_finite_quaternion_is_rejected(solo, bad):
    q = solo.neutral()
    q[5] = bad
    with pytest.raises(ValueError, match="q has a NaN"):
        solo.coriolis(q, np.zeros(solo.nv))


@pytest.mark.parametrize("delta", [-1, 1])
def test_configuration_length_is_nq(solo, delta):
    v = np.zeros(solo.nv)
    with pytest.raises(ValueError, match=rf"q must have shape \({solo.nq},\)"):
        solo.coriolis(np.zeros(solo.nq + delta), v)
    with pytest.raises(ValueError, match=rf"q must have shape \({solo.nq},\)"):
        solo.christoffel(np.zeros(solo.nq + delta))
    with pytest.raises(ValueError, match=rf"qd must have shape \({solo.nv},\)"):
        solo.coriolis(solo.neutral(), np.zeros(solo.nv + delta))
    with pytest.raises(ValueError, match=rf"q must have shape \({solo.nq},\)"):
        solo.integrate(np.zeros(solo.nq + delta), v)
    with pytest.raises(ValueError, match=rf"qd must have shape \({solo.nv},\)"):
        solo.integrate(solo.neutral(), np.zeros(solo.nv + delta))


@pytest.mark.parametrize("dt", [np.nan, np.inf])
def test_integrate_rejects_non_finite_dt(solo, dt):
    with pytest.raises(ValueError, match="dt must be finite"):
        solo.integrate(solo.neutral(), np.zeros(solo.nv), dt)


def test_warmup_and_clone_on_a_floating_base(solo):
    solo.warmup()  # the neutral configuration has a unit quaternion
    twin = solo.clone()
    assert twin.nq == solo.nq and twin.root_joint == "floating"
