"""Mimic joints that follow their leader (the default): every output in independent coordinates.

References:
* Pinocchio built with mimic=False (mimic joints independent) plus an explicit A = dq/dqbar
  built here from the URDF's <mimic> tags (ElementTree, chains resolved in this file):
  Mbar = A^T M A, Cbar = A^T C A, gbar = A^T g, Gammabar = A.A.A Gamma, taubar = A^T tau;
  Pinocchio's Gamma[:, :, k] is its C(q, e_k) (C is linear in qd).
* Pinocchio 4.1's own mimic support (buildModelFromUrdf(..., mimic=True)) for the quantities
  its algorithms reduce: crba (M), computeGeneralizedGravity, rnea and nonLinearEffects.  Its
  computeCoriolisMatrix is not reduced for mimic joints (it differs from A^T C A by 0.02 on
  Panda and 4.4 on Baxter), and it cannot build Talos full_v2 or Romeo ("the parent joint of
  the mimic joint is not in the kinematic tree"), so those use the first reference only.
* Mathematics on random trees with random mimic chains: Mdotbar = Cbar + Cbar^T and
  finite differences of Mbar along qbar + t qbardot, Cbar = sum_k Gammabar[:, :, k] qbardot_k.

G1 with hands (g1_29dof_with_hand_rev_1_0.urdf) has no <mimic> tag, so it is not used here.
"""

from __future__ import annotations

import math
import tracemalloc
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from support.random_trees import random_tree
from support.oracle import assert_close, erd_urdf

from coriolis_ros.dynamics import Dynamics, URDFError
from support.mimic import Reference, mimic_tags

TOL = 1e-10
MIMIC_ROBOTS = ["panda", "talos_full", "romeo", "baxter"]


# ----------------------------------------------------------------------------- reference A


def compare_reduced(dyn, ref: Reference, qbar, qdbar, qddbar, label, gamma=True):
    A = ref.A
    q, qd, qdd = ref.q_full(qbar), A @ qdbar, A @ qddbar
    M_ref = A.T @ ref.oracle.M(q) @ A
    C_ref = A.T @ ref.oracle.C(q, qd) @ A
    M, Mdot, C = dyn.coriolis(qbar, qdbar)
    assert_close(M, M_ref, TOL, f"{label} Mbar")
    assert_close(C, C_ref, TOL, f"{label} Cbar")
    assert_close(Mdot, C_ref + C_ref.T, TOL, f"{label} Mdotbar")
    assert_close(dyn.mass_matrix(qbar), M_ref, TOL, f"{label} mass_matrix")
    assert_close(dyn.gravity(qbar), A.T @ ref.oracle.g(q), TOL, f"{label} gbar")
    tau_ref = A.T @ ref.oracle.rnea(q, qd, qdd)
    assert_close(dyn.inverse_dynamics(qbar, qdbar, qddbar), tau_ref, TOL, f"{label} taubar")
    Cqd, CTqd, p = dyn.coriolis_vectors(qbar, qdbar)
    assert_close(Cqd, C_ref @ qdbar, TOL, f"{label} Cbar qbardot")
    assert_close(CTqd, C_ref.T @ qdbar, TOL, f"{label} Cbar^T qbardot")
    assert_close(p, M_ref @ qdbar, TOL, f"{label} pbar")
    xbar = np.sin(np.arange(dyn.nv) + 1.0)  # C x and the Slotine-Li terms, reduced
    assert_close(dyn.coriolis_times(qbar, qdbar, xbar), C_ref @ xbar, TOL, f"{label} Cbar x")
    slotine_li = M_ref @ qddbar + C_ref @ xbar + A.T @ ref.oracle.g(q)
    got = dyn.slotine_li(qbar, qdbar, xbar, qddbar)
    assert_close(got, slotine_li, TOL, f"{label} Slotine-Li")
    if gamma:
        G_ref = np.einsum("ai,bj,ck,abc->ijk", A, A, A, ref.gamma(q), optimize=True)
        assert_close(dyn.christoffel(qbar), G_ref, TOL, f"{label} Gammabar")


# ----------------------------------------------------------------------------- real robots


@pytest.mark.parametrize("robot", MIMIC_ROBOTS)
def test_robot_mimic_follow_matches_pinocchio_with_explicit_A(robot):
    path = str(erd_urdf(robot))
    ref = Reference(path)
    dyn = Dynamics.from_urdf(path)
    assert ref.mimic, "the premise: the robot has mimic joints"
    assert dyn.joint_names == tuple(ref.indep)
    assert not set(dyn.joint_names) & set(ref.mimic)
    assert dyn.nv == ref.A.shape[1] < ref.full.nv
    assert dyn.mimic_joints == ref.mimic
    assert_close(dyn.map.matrix(), ref.A, 0.0, "A")
    rng = np.random.default_rng(len(robot))
    for s in range(2):
        qbar = rng.uniform(-1.0, 1.0, dyn.nv)
        qdbar, qddbar = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
        compare_reduced(dyn, ref, qbar, qdbar, qddbar, f"{robot} {s}", gamma=s == 0)


def test_panda_finger_joint2_follows_finger_joint1():
    dyn = Dynamics.from_urdf(str(erd_urdf("panda")))
    assert dyn.nv == 8 and "panda_finger_joint2" not in dyn.joint_names
    assert dyn.mimic_joints == {"panda_finger_joint2": ("panda_finger_joint1", 1.0, 0.0)}
    q = np.linspace(-0.5, 0.5, 8)
    full = dyn.full_position(q)
    assert full.shape == (9,) and full[8] == full[7] == q[7]
    assert np.array_equal(dyn.full_velocity(np.arange(8.0))[7:], [7.0, 7.0])


def _pin_mimic_layout(model, dyn):
    """(q index, nq, v index) of each library joint in a Pinocchio mimic=True model."""
    out = []
    for name in dyn.joint_names:
        jid = model.getJointId(name)
        out.append((model.idx_qs[jid], model.joints[jid].nq, model.idx_vs[jid]))
    return out


@pytest.mark.parametrize("robot", ["panda", "baxter"])
def test_robot_mimic_matches_pinocchio_mimic_true(robot):
    path = str(erd_urdf(robot))
    model = pin.buildModelFromUrdf(path, mimic=True)
    data = model.createData()
    dyn = Dynamics.from_urdf(path)
    assert model.nv == dyn.nv
    layout = _pin_mimic_layout(model, dyn)
    V = [iv for _, _, iv in layout]
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v, a = rng.uniform(-1, 1, dyn.nv), rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
        qp, vp, ap = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
        for k, (iq, nq, iv) in enumerate(layout):
            if nq == 2:
                qp[iq : iq + 2] = math.cos(q[k]), math.sin(q[k])
            else:
                qp[iq] = q[k]
            vp[iv], ap[iv] = v[k], a[k]
        Mp = pin.crba(model, data, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert_close(dyn.mass_matrix(q), Mp[np.ix_(V, V)], TOL, f"{robot} M")
        g = pin.computeGeneralizedGravity(model, data, qp)[V]
        assert_close(dyn.gravity(q), g, TOL, f"{robot} g")
        tau = pin.rnea(model, data, qp, vp, ap)[V]
        assert_close(dyn.inverse_dynamics(q, v, a), tau, TOL, f"{robot} RNEA")
        nle = pin.nonLinearEffects(model, data, qp, vp)[V]
        _, _, C = dyn.coriolis(q, v)
        assert_close(C @ v + dyn.gravity(q), nle, TOL, f"{robot} Cbar qbardot + gbar")


# ----------------------------------------------------------------------------- random mimics


def add_random_mimics(urdf: str, seed: int, count: int) -> str:
    """Make ``count`` >= 2 random DoF joints mimic others, with chains and never a cycle.

    The mimic joints s0, s1, ... (a random draw) take their leader among the joints that do
    not mimic or among the earlier s's: s1 always mimics s0 (a chain), later ones half the time.
    """
    root = ET.fromstring(urdf)
    rng = np.random.default_rng(seed)
    joints = [j for j in root.findall("joint") if j.get("type") != "fixed"]
    order = [int(k) for k in rng.permutation(len(joints))]
    mimics, free = order[:count], order[count:]
    for k, a in enumerate(mimics):
        if k == 1 or (k > 1 and rng.random() < 0.5):
            b = mimics[int(rng.integers(k))]
        else:
            b = free[int(rng.integers(len(free)))]
        ET.SubElement(
            joints[a],
            "mimic",
            joint=joints[b].get("name"),
            multiplier=repr(float(rng.choice([-1.0, 1.0]) * rng.uniform(0.3, 2.0))),
            offset=repr(float(rng.uniform(-0.5, 0.5))),
        )
    return ET.tostring(root, encoding="unicode")


def random_mimic_trees():
    specs = [("serial", 8), ("binary", 12), ("biped", 14), ("quadruped", 16), ("serial", 20)]
    return {
        f"{topo}_{n}": add_random_mimics(random_tree(topo, n, seed=40 + k), 40 + k, n // 3)
        for k, (topo, n) in enumerate(specs)
    }


TREES = random_mimic_trees()


@pytest.mark.parametrize("name", sorted(TREES))
def test_random_trees_with_mimic_chains(name):
    urdf = TREES[name]
    ref = Reference(urdf)
    dyn = Dynamics.from_urdf(urdf)
    tags = mimic_tags(urdf)
    assert any(t[0] in tags for t in tags.values()), "the premise: a chain of mimics"
    rng = np.random.default_rng(7)
    qbar = rng.uniform(-math.pi, math.pi, dyn.nv)
    qdbar, qddbar = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
    compare_reduced(dyn, ref, qbar, qdbar, qddbar, name)
    # identities in the independent coordinates, against mathematics only
    M, Mdot, C = dyn.coriolis(qbar, qdbar)
    G = dyn.christoffel(qbar)
    assert_close(Mdot, C + C.T, TOL, f"{name} Mdotbar = Cbar + Cbar^T")
    assert_close(np.einsum("ijk,k->ij", G, qdbar), C, TOL, f"{name} Cbar = Gammabar qbardot")
    assert_close(G, G.transpose(0, 2, 1), TOL, f"{name} Gammabar symmetric")
    h = 1e-6
    fd = (dyn.mass_matrix(qbar + h * qdbar) - dyn.mass_matrix(qbar - h * qdbar)) / (2 * h)
    assert_close(Mdot, fd, 1e-6, f"{name} Mdotbar vs FD of Mbar")


def test_mimic_composes_with_floating_base():
    path = str(erd_urdf("talos_full"))
    dyn = Dynamics.from_urdf(path, root_joint="floating")
    full = Dynamics.from_urdf(path, root_joint="floating", mimic="independent")
    assert dyn.nq == dyn.nv + 1 and dyn.joint_names[:6] == full.joint_names[:6]
    assert dyn.nv == full.nv - len(dyn.mimic_joints)
    rng = np.random.default_rng(4)
    q = dyn.neutral()
    q[:3] = rng.normal(size=3)
    q[3:7] = rng.normal(size=4)
    q[7:] = rng.uniform(-1, 1, dyn.nq - 7)
    v = rng.normal(size=dyn.nv)
    A = np.zeros((full.nv, dyn.nv))
    for r, name in enumerate(full.joint_names):
        leader, m, _ = dyn.mimic_joints.get(name, (name, 1.0, 0.0))
        A[r, dyn.joint_names.index(leader)] = m
    qf, vf = dyn.full_position(q), dyn.full_velocity(v)
    assert_close(vf, A @ v, 0.0, "A v")
    Mf, Mdf, Cf = full.coriolis(qf, vf)
    M, Mdot, C = dyn.coriolis(q, v)
    assert_close(M, A.T @ Mf @ A, TOL, "Mbar floating")
    assert_close(C, A.T @ Cf @ A, TOL, "Cbar floating")
    assert_close(Mdot, C + C.T, TOL, "Mdotbar floating")
    G = dyn.christoffel(q)
    assert_close(np.einsum("ijk,k->ij", G, v), C, TOL, "Cbar = Gammabar v floating")
    assert_close(dyn.gravity(q), A.T @ full.gravity(qf), TOL, "gbar floating")
    # integrate in reduced coordinates = integrate the full tree, then drop the mimic joints
    step = dyn.integrate(q, v, 0.01)
    keep = [full.position_names.index(n) for n in dyn.position_names]
    assert_close(step, full.integrate(qf, vf, 0.01)[keep], 1e-14, "integrate")
    assert dyn.neutral().shape == (dyn.nq,)


# ----------------------------------------------------------------------------- URDF errors


def two_joint_robot(j2_extra: str = "", j1_type: str = "revolute", j2_type: str = "revolute"):
    inertial = (
        '<inertial><mass value="1"/>'
        '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>'
    )
    return f"""<robot name="r">
  <link name="base"/>
  <link name="a">{inertial}</link>
  <link name="b">{inertial}</link>
  <link name="c">{inertial}</link>
  <joint name="j1" type="{j1_type}"><parent link="base"/><child link="a"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j2" type="{j2_type}"><parent link="a"/><child link="b"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>{j2_extra}</joint>
  <joint name="j3" type="revolute"><parent link="b"/><child link="c"/>
    <origin xyz="0.3 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


@pytest.mark.parametrize(
    "urdf, match",
    [
        (two_joint_robot('<mimic joint="nope"/>'), "'j2' mimics unknown joint 'nope'"),
        (two_joint_robot('<mimic joint="j1"/>', j1_type="fixed"), "'j2' mimics fixed joint 'j1'"),
        (two_joint_robot('<mimic joint="j1"/>', j1_type="floating"), "'j2' mimics floating joint"),
        (two_joint_robot('<mimic joint="j1"/>', j1_type="planar"), "'j2' mimics planar joint"),
        (two_joint_robot('<mimic joint="j1"/>', j2_type="floating"), "'j2' is floating"),
        (two_joint_robot('<mimic joint="j2"/>'), "cycle: 'j2' -> 'j2'"),
        (two_joint_robot('<mimic joint="j1" multiplier="nan"/>'), "mimic: multiplier=nan is not"),
    ],
)
def test_bad_mimic_is_a_urdf_error_naming_the_joints(urdf, match):
    with pytest.raises(URDFError, match=match):
        Dynamics.from_urdf(urdf)
    if "cycle" not in match and "unknown" not in match:
        return
    # independent mode ignores the tags (today's behaviour)
    assert Dynamics.from_urdf(urdf, mimic="independent").nv == 3


def test_mimic_cycle_of_two_names_both():
    urdf = two_joint_robot('<mimic joint="j3"/>').replace(
        '<axis xyz="1 0 0"/>', '<axis xyz="1 0 0"/><mimic joint="j2" multiplier="2"/>'
    )
    with pytest.raises(URDFError, match="cycle: 'j2' -> 'j3' -> 'j2'|cycle: 'j3' -> 'j2' -> 'j3'"):
        Dynamics.from_urdf(urdf)


def test_mimic_chain_resolves_and_fixed_mimic_tag_is_ignored():
    urdf = two_joint_robot('<mimic joint="j1" multiplier="2" offset="0.1"/>').replace(
        '<axis xyz="1 0 0"/>', '<axis xyz="1 0 0"/><mimic joint="j2" multiplier="-3" offset="1"/>'
    )
    dyn = Dynamics.from_urdf(urdf)
    assert dyn.joint_names == ("j1",)
    # q3 = -3 (2 q1 + 0.1) + 1
    leader, m, o = dyn.mimic_joints["j3"]
    assert leader == "j1" and (m, o) == pytest.approx((-6.0, 0.7))
    assert dyn.full_position([0.5]) == pytest.approx([0.5, 1.1, -2.3])
    # a <mimic> on a fixed joint (Talos' reduced URDF has them) changes nothing
    fixed = two_joint_robot('<mimic joint="j1"/>', j2_type="fixed")
    assert Dynamics.from_urdf(fixed).joint_names == ("j1", "j3")
    talos = Dynamics.from_urdf(str(erd_urdf("talos")))
    assert talos.nv == Dynamics.from_urdf(str(erd_urdf("talos")), mimic="independent").nv


def test_bad_mimic_mode():
    with pytest.raises(ValueError, match="mimic must be one of follow, independent"):
        Dynamics.from_urdf(two_joint_robot(), mimic="yes")


# ----------------------------------------------------------------------------- API


@pytest.fixture(scope="module")
def panda():
    return Dynamics.from_urdf(str(erd_urdf("panda")))


def test_inputs_are_checked_at_the_reduced_sizes(panda):
    q = np.zeros(8)
    for bad, match in [
        (np.zeros(9), r"q must have shape \(8,\), got \(9,\)"),
        (np.r_[np.zeros(7), np.nan], "q has a NaN"),
        (np.r_[np.zeros(7), 2e50], "q has a NaN, infinite or huge"),
    ]:
        with pytest.raises(ValueError, match=match):
            panda.coriolis(bad, q)
        with pytest.raises(ValueError, match=match):
            panda.christoffel(bad)
        with pytest.raises(ValueError, match=match):
            panda.gravity(bad)
        with pytest.raises(ValueError, match=match):
            panda.mass_matrix(bad)
    with pytest.raises(ValueError, match=r"qd must have shape \(8,\)"):
        panda.coriolis_vectors(q, np.zeros(9))
    with pytest.raises(ValueError, match="qdd has a NaN"):
        panda.inverse_dynamics(q, q, np.full(8, np.inf))
    with pytest.raises(ValueError, match="wrong shape"):
        panda.coriolis(q, q, out=(np.empty((9, 9)),) * 3)
    M = np.empty((8, 8))
    with pytest.raises(ValueError, match="must not share memory"):
        panda.coriolis(q, q, out=(M, M, np.empty((8, 8))))
    with pytest.raises(ValueError, match="out must be a tuple of 3"):
        panda.coriolis_vectors(q, q, out=np.empty(8))
    with pytest.raises(ValueError, match="writeable C-contiguous float64"):
        panda.gravity(q, out=np.empty(8, dtype=np.float32))
    # the edges of the input range are accepted
    big = np.full(8, 1e50)
    assert np.all(np.isfinite(panda.gravity(np.r_[np.zeros(7), 0.01])))
    assert panda.coriolis_vectors(q, big)[0].shape == (8,)


def test_out_calls_allocate_no_numpy_memory(panda):
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.normal(size=8), rng.normal(size=8), rng.normal(size=8)
    outs = [np.empty((8, 8)) for _ in range(3)]
    G, v1, v2, v3 = np.empty((8, 8, 8)), np.empty(8), np.empty(8), np.empty(8)
    calls = [
        lambda: panda.coriolis(q, qd, out=outs),
        lambda: panda.christoffel(q, out=G),
        lambda: panda.mass_matrix(q, out=outs[0]),
        lambda: panda.gravity(q, out=v1),
        lambda: panda.inverse_dynamics(q, qd, qdd, out=v1),
        lambda: panda.coriolis_vectors(q, qd, out=(v1, v2, v3)),
    ]
    for call in calls:
        call()  # compile / load
    numpy_domain = tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)
    tracemalloc.start()
    try:
        for _ in range(20):
            for call in calls:
                call()
        snapshot = tracemalloc.take_snapshot().filter_traces([numpy_domain])
    finally:
        tracemalloc.stop()
    assert sum(s.size for s in snapshot.statistics("lineno")) == 0


def test_clone_keeps_the_reduction(panda):
    other = panda.clone()
    assert type(other) is type(panda) and other.joint_names == panda.joint_names
    q = np.linspace(0, 1, 8)
    assert_close(other.christoffel(q), panda.christoffel(q), 0.0, "clone")
    assert "nv=8" in repr(panda)


@pytest.mark.parametrize("robot", ["talos_full", "romeo"])
def test_model_describes_the_independent_coordinates(robot):
    """dyn.model (what the node and the CLI read next to joint_names) is the reduced view."""
    path = str(erd_urdf(robot))
    dyn = Dynamics.from_urdf(path, root_joint="floating")
    full = Dynamics.from_urdf(path, root_joint="floating", mimic="independent")
    model = dyn.model
    assert model.joint_names == dyn.joint_names and len(model.joint_types) == dyn.nv
    assert model.position_names == dyn.position_names and (model.nv, model.nq) == (dyn.nv, dyn.nq)
    for name, kind in zip(dyn.joint_names, model.joint_types, strict=True):
        assert kind == full.model.joint_types[full.joint_names.index(name)]
    joints = model.joints()
    assert sum(nv for _, _, nv, _ in joints) == dyn.nv
    for kind, first, nv, iq in joints:  # first row and first coordinate name the same joint
        assert dyn.position_names[iq].split("/")[0] == dyn.joint_names[first].split("/")[0]
    parent = model.parent
    assert parent[0] == -1 and all(-1 <= p < k for k, p in enumerate(parent))
    assert dyn.tree_depth == full.tree_depth and model.total_mass == full.model.total_mass
    assert dyn.clone().model.joint_names == dyn.joint_names


@pytest.mark.parametrize("model", ["panda", "arm7_rotors", "quadruped_rotors"])
def test_batches_of_a_coupled_model_equal_its_single_state_calls_bitwise(panda, model):
    """Mimic joints following and geared rotors: every batch row is the single-state call."""
    from coriolis_ros.robots import robot_path, robot_urdf

    if model == "panda":
        dyn = panda
    elif model == "arm7_rotors":
        dyn = Dynamics.from_urdf(robot_path("arm7_rotors"))
    else:
        rotor = {"gear_ratio": 9.0, "inertia": [3e-5, 6e-5, 3e-5, 0, 0, 0], "mass": 0.05}
        dyn = Dynamics.from_urdf(
            robot_urdf("quadruped12"),
            root_joint="floating",
            rotors={f"{leg}_knee_joint": rotor for leg in ("FL", "RR")},
        )
    rng = np.random.default_rng(5)
    T = 40  # enough rows for several chunks on two threads
    Q = np.array([dyn.integrate(dyn.neutral(), rng.normal(0, 1, dyn.nv)) for _ in range(T)])
    V, A, R = (rng.normal(0, 2, (T, dyn.nv)) for _ in range(3))
    M, Mdot, C = dyn.coriolis_batch(Q, V)
    G = dyn.christoffel_batch(Q)
    cqd, ctqd, p = dyn.coriolis_vectors_batch(Q, V)
    tau = dyn.inverse_dynamics_batch(Q, V, A)
    sl = dyn.slotine_li_batch(Q, V, R, A)
    g = dyn.gravity_batch(Q)
    assert M.shape == (T, dyn.nv, dyn.nv) and G.shape == (T, dyn.nv, dyn.nv, dyn.nv)
    for t in range(T):
        for got, want in zip((M[t], Mdot[t], C[t]), dyn.coriolis(Q[t], V[t]), strict=True):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(G[t], dyn.christoffel(Q[t]))
        for got, want in zip(
            (cqd[t], ctqd[t], p[t]), dyn.coriolis_vectors(Q[t], V[t]), strict=True
        ):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(tau[t], dyn.inverse_dynamics(Q[t], V[t], A[t]))
        np.testing.assert_array_equal(sl[t], dyn.slotine_li(Q[t], V[t], R[t], A[t]))
        np.testing.assert_array_equal(g[t], dyn.gravity(Q[t]))
    bad = V.copy()
    bad[T - 3, 0] = np.nan
    with pytest.raises(ValueError, match=f"V row {T - 3} has a NaN"):
        dyn.coriolis_batch(Q, bad)
    with pytest.raises(ValueError, match=r"Q must have shape \(T, " + str(dyn.nq) + r"\)"):
        dyn.christoffel_batch(np.zeros((3, dyn.nq + 1)))
