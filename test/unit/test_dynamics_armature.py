"""rotor_model="armature": each geared rotor as N^2 I_axis on M's diagonal, its mass and
transverse inertia welded to its parent.

References, none of them the code under test:
- Pinocchio with ``model.armature`` (added to M's diagonal by crba and times q̈ by rnea;
  computeCoriolisMatrix does not see it) on the robot without the rotor bodies, whose parent
  inertias get the rotors' rigid part (mass, centre, inertia minus I_a a a^T) through
  Pinocchio's own Inertia algebra, from Pinocchio's parse of the rotors as links;
- the exact rotor model of this library, which has its own Pinocchio tests
  (test_dynamics_rotors.py): equal to the armature model when no parent of a rotor turns about
  the rotor's axis, and otherwise different by exactly the dropped kinetic energy
  N I_a q̇_j w + I_a w^2 / 2, w = (parent's angular velocity)·axis, with w's Jacobian from
  Pinocchio and C's difference from that energy by finite differences.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from support.cli import run_cli  # noqa: E402
from support.floating import ROOTS, MultiDofOracle, random_configuration  # noqa: E402
from support.urdf_text import rotor_beside_link  # noqa: E402
from support.oracle import assert_close  # noqa: E402
from support.rotors import (  # noqa: E402
    coupled_joints_from_xml,
    strip_couplings,
    with_rotor_links,
)

from coriolis_ros.dynamics import Dynamics  # noqa: E402
from coriolis_ros.node.params import validate  # noqa: E402
from coriolis_ros.robots import robot_path, robot_urdf  # noqa: E402

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

TOL = 1e-10


def balanced(
    axis: str,
    spin: float,
    transverse: tuple[float, float],
    product: float,
    mass: float,
    ratio: float,
) -> dict:
    """A datasheet rotor balanced about its joint's axis ``axis`` ('x' or 'y' or 'z'), with a
    product of inertia between the two transverse axes (allowed: it is not about the spin)."""
    a, b = transverse
    diag = {"x": [spin, a, b], "y": [a, spin, b], "z": [a, b, spin]}[axis]
    products = {"x": [0.0, 0.0, product], "y": [0.0, product, 0.0], "z": [product, 0.0, 0.0]}
    return {"gear_ratio": ratio, "inertia": diag + products[axis], "mass": mass}


# arm7's axes: joint1 z (on the base), joint2 y, joint3 z, joint4 y, joint5 z, joint6 y, joint7 z
AXES = {f"joint{k}": "zy"[(k - 1) % 2] for k in range(1, 8)}
ARM_ROTORS = {
    "joint1": balanced("z", 6.0e-5, (3.5e-5, 3.6e-5), 1e-6, 0.35, 100.0),
    "joint2": balanced("y", 6.0e-5, (3.5e-5, 3.4e-5), -2e-6, 0.35, 100.0),
    "joint3": balanced("z", 4.0e-5, (2.5e-5, 2.5e-5), 0.0, 0.25, -100.0),
    "joint5": balanced("z", 1.5e-5, (1.0e-5, 1.1e-5), 0.0, 0.1, 80.0),
    "joint7": balanced("z", 1.5e-5, (1.0e-5, 1.0e-5), 0.0, 0.0, -80.0),
}
QUADRUPED_ROTORS = {
    f"{leg}_{joint}": balanced(
        "x" if joint == "hip_abduction_joint" else "y",
        6.3e-5,
        (3.3e-5, 3.4e-5),
        1e-6,
        0.055,
        9.0 if joint == "knee_joint" else 6.0,
    )
    for leg in ("FL", "FR", "RL", "RR")
    for joint in ("hip_abduction_joint", "hip_flexion_joint", "knee_joint")
}


# ----------------------------------------------------------------------------- the reference


def _axis(joint) -> np.ndarray:
    elem = joint.find("axis")
    a = np.array([1.0, 0.0, 0.0]) if elem is None else np.array(elem.get("xyz").split(), float)
    return a / np.linalg.norm(a)


class ArmatureOracle(MultiDofOracle):
    """Pinocchio with armature, built from a URDF whose rotors are links (``text``) and the
    followers {rotor joint: (leader, ratio)}: the rotor links and joints removed, each rotor's
    rigid part added to its parent joint's inertia and N^2 I_a to its leader's armature."""

    def __init__(self, text: str, followers: dict, dyn: Dynamics, root_joint: str = "fixed"):
        root = ET.fromstring(strip_couplings(text))
        joints = {j.get("name"): j for j in root.findall("joint")}
        full = (pin.buildModelFromXML(ET.tostring(root, encoding="unicode"), mimic=False)
                if root_joint == "fixed" else
                pin.buildModelFromXML(ET.tostring(root, encoding="unicode"),
                                      ROOTS[root_joint](), mimic=False))  # fmt: skip
        parts = []
        for name, (leader, ratio) in followers.items():
            jid = full.getJointId(name)
            body, a = full.inertias[jid], _axis(joints[name])
            spin = float(a @ body.inertia @ a)
            rigid = pin.Inertia(body.mass, body.lever, body.inertia - spin * np.outer(a, a))
            parent = full.names[full.parents[jid]]
            parts.append((leader, ratio, spin, parent, full.jointPlacements[jid].act(rigid)))
            child = joints[name].find("child").get("link")
            root.remove(joints[name])
            root.remove(next(x for x in root.findall("link") if x.get("name") == child))
        super().__init__(ET.tostring(root, encoding="unicode"), dyn, root_joint)
        m = self.model
        armature = np.zeros(m.nv)
        for leader, ratio, spin, parent, rigid in parts:
            if parent != "universe":
                pj = m.getJointId(parent)
                m.inertias[pj] = m.inertias[pj] + rigid
            armature[m.idx_vs[m.getJointId(leader)]] += ratio**2 * spin
        m.armature = armature
        self.armature = self.vec(armature)
        self.data = m.createData()


def compare(dyn: Dynamics, oracle: MultiDofOracle, q, v, a, label: str, tol=TOL) -> None:
    M_ref, C_ref, g_ref = oracle.M(q), oracle.C(q, v), oracle.g(q)
    M, Mdot, C = dyn.coriolis(q, v)
    assert_close(M, M_ref, tol, f"{label} M")
    assert_close(C, C_ref, tol, f"{label} C")
    assert_close(Mdot, C_ref + C_ref.T, tol, f"{label} Mdot")
    assert_close(dyn.mass_matrix(q), M_ref, tol, f"{label} mass_matrix")
    assert_close(dyn.gravity(q), g_ref, tol, f"{label} g")
    assert_close(dyn.inverse_dynamics(q, v, a), oracle.rnea(q, v, a), tol, f"{label} RNEA")
    Cqd, CTqd, p = dyn.coriolis_vectors(q, v)
    assert_close(Cqd, C_ref @ v, tol, f"{label} C qd")
    assert_close(CTqd, C_ref.T @ v, tol, f"{label} C^T qd")
    assert_close(p, M_ref @ v, tol, f"{label} p")
    tau = dyn.slotine_li(q, v, 0.5 * v, a)
    assert_close(tau, M_ref @ a + C_ref @ (0.5 * v) + g_ref, tol, f"{label} Slotine-Li")
    G = dyn.christoffel(q)
    for k in range(dyn.nv):
        e = np.eye(dyn.nv)[k]
        assert_close(G[:, :, k], oracle.C(q, e), tol, f"{label} Gamma[:, :, {k}]")


def test_pinocchio_armature_is_what_the_reference_assumes():
    """crba adds model.armature to M's diagonal, rnea adds armature * a, the Coriolis matrix
    ignores it: else the reference below would not be Pinocchio's armature model."""
    model = pin.buildModelFromUrdf(str(robot_path("arm7")))
    data = model.createData()
    rng = np.random.default_rng(1)
    q = pin.integrate(model, pin.neutral(model), rng.uniform(-1, 1, model.nv))
    v, a = rng.uniform(-1, 1, (2, model.nv))
    M0, C0 = pin.crba(model, data, q).copy(), pin.computeCoriolisMatrix(model, data, q, v).copy()
    tau0 = pin.rnea(model, data, q, v, a).copy()
    model.armature = np.linspace(0.1, 0.7, model.nv)
    data = model.createData()
    assert_close(pin.crba(model, data, q) - M0, np.diag(model.armature), 1e-14, "crba")
    assert_close(pin.computeCoriolisMatrix(model, data, q, v), C0, 1e-14, "C")
    assert_close(pin.rnea(model, data, q, v, a) - tau0, model.armature * a, 1e-12, "rnea")


# ----------------------------------------------------------------------------- (1) Pinocchio


def test_arm7_rotors_urdf_as_armature_matches_pinocchio():
    text = robot_urdf("arm7_rotors")
    dyn = Dynamics.from_urdf(text, rotor_model="armature")
    oracle = ArmatureOracle(text, coupled_joints_from_xml(text), dyn)
    assert dyn.joint_names == Dynamics.from_urdf(robot_path("arm7")).joint_names
    assert_close(np.array([a for _, a in dyn.tree.armature]), oracle.armature, 1e-15, "armature")
    rng = np.random.default_rng(7)
    for s in range(4):
        q, v, a = rng.uniform(-2, 2, (3, dyn.nv))
        compare(dyn, oracle, q, v, a, f"arm7_rotors s={s}")


def test_datasheet_rotors_as_armature_match_pinocchio():
    dyn = Dynamics.from_urdf(robot_path("arm7"), rotors=ARM_ROTORS, rotor_model="armature")
    text, followers = with_rotor_links(robot_urdf("arm7"), ARM_ROTORS)
    oracle = ArmatureOracle(text, followers, dyn)
    # N^2 I_a, by hand: the spin moment is the datasheet's entry on the joint's axis
    by_hand = {
        j: r["gear_ratio"] ** 2 * r["inertia"]["xyz".index(AXES[j])] for j, r in ARM_ROTORS.items()
    }
    assert dict(dyn.tree.armature) == pytest.approx(by_hand, rel=1e-15)
    rng = np.random.default_rng(8)
    for s in range(4):
        q, v, a = rng.uniform(-2, 2, (3, dyn.nv))
        compare(dyn, oracle, q, v, a, f"arm7 datasheet s={s}")


@pytest.mark.parametrize("root_joint", ["fixed", "floating"])
def test_quadruped_with_armature_matches_pinocchio(root_joint):
    text = robot_urdf("quadruped12")
    dyn = Dynamics.from_urdf(
        text, root_joint=root_joint, rotors=QUADRUPED_ROTORS, rotor_model="armature"
    )
    rotor_text, followers = with_rotor_links(text, QUADRUPED_ROTORS)
    oracle = ArmatureOracle(rotor_text, followers, dyn, root_joint)
    rng = np.random.default_rng(9)
    for s in range(3):
        q = random_configuration(dyn, rng, unit=True)
        v, a = rng.uniform(-2, 2, (2, dyn.nv))
        compare(dyn, oracle, q, v, a, f"quadruped {root_joint} s={s}")


def test_the_armature_model_keeps_the_tree_and_its_services():
    exact = Dynamics.from_urdf(robot_path("arm7_rotors"))
    dyn = Dynamics.from_urdf(robot_path("arm7_rotors"), rotor_model="armature")
    assert dyn.tree_joint_names == exact.tree_joint_names
    assert dyn.coupled_joints == exact.coupled_joints
    assert dyn.frame_names == exact.frame_names
    assert dyn.tree.total_mass == pytest.approx(exact.tree.total_mass - 0.35, rel=1e-14)
    assert exact.tree.armature == ()
    rng = np.random.default_rng(10)
    q, v = rng.uniform(-1, 1, (2, dyn.nv))
    # the rotor link is welded to its parent: where the exact model's rotor is at q_rotor = 0
    oracle = MultiDofOracle(robot_urdf("arm7"), Dynamics.from_urdf(robot_path("arm7")))
    plain, data = oracle.model, oracle.data
    pin.forwardKinematics(plain, data, oracle.q_pin(q))
    placement = data.oMi[plain.getJointId("joint3")] * pin.SE3(np.eye(3), np.array([0.09, 0, 0.2]))
    assert_close(dyn.frame_placement(q, "joint4_rotor"), placement.homogeneous, 1e-12, "frame")
    other = dyn.clone()
    assert_close(other.coriolis(q, v)[2], dyn.coriolis(q, v)[2], 0.0, "clone")
    pi = dyn.inertial_parameters()
    # the spin bodies are massless discs: not physically consistent bodies on their own
    with pytest.raises(ValueError, match="link 'joint7_rotor'.* not physically consistent"):
        dyn.set_inertial_parameters(pi)
    dyn.set_inertial_parameters(pi, check_physical=False)
    assert_close(dyn.coriolis(q, v)[2], other.coriolis(q, v)[2], 1e-14, "parameters round trip")
    Q, V = rng.uniform(-1, 1, (2, 3, dyn.nv))
    assert_close(dyn.coriolis_batch(Q, V)[2][1], dyn.coriolis(Q[1], V[1])[2], 1e-13, "batch")


def test_no_rotors_leaves_the_model_alone():
    plain = Dynamics.from_urdf(robot_path("arm7"))
    dyn = Dynamics.from_urdf(robot_path("arm7"), rotor_model="armature")
    assert np.array_equal(dyn.tree.mf, plain.tree.mf) and dyn.tree.armature == ()


# ----------------------------------------------------------------------------- (2) vs exact
#
# A rotor balanced about its axis a (centre on the axis, a principal), moment I_a, on joint j
# with ratio N, turned by theta = N q_j on a parent of angular velocity omega_p, has
#     T_exact = I_a (N qd_j + w)^2 / 2 + omega_p^T R(theta) I_t R(theta)^T omega_p / 2 + (mass),
# w = omega_p . a, I_t its transverse inertia.  The armature model keeps I_a N^2 qd_j^2 / 2
# and the rest at theta = 0, so the two agree for every motion exactly when
# - the parent is the fixed base (omega_p = 0: joint1), whatever the mass and I_t, or
# - w = 0 identically (every joint above turns about axes perpendicular to a: joint2's y under
#   joint1's z) and I_t is symmetric about a (ixx = iyy, ixy = 0 in the axis frame).
# With I_t symmetric, T_exact - T_armature = N I_a qd_j w + I_a w^2 / 2.


def _all_outputs(dyn, q, v, a):
    M, Mdot, C = dyn.coriolis(q, v)
    return {"M": M, "Mdot": Mdot, "C": C, "Gamma": dyn.christoffel(q), "g": dyn.gravity(q),
            "RNEA": dyn.inverse_dynamics(q, v, a)}  # fmt: skip


def test_armature_equals_the_exact_rotors_when_no_parent_turns_about_the_rotor_axis():
    symmetric = balanced("y", 6.0e-5, (3.5e-5, 3.5e-5), 0.0, 0.35, 100.0)
    # joint1 on the base: any transverse inertia; joint2: w = 0, symmetric transverse inertia
    rotors = {"joint1": ARM_ROTORS["joint1"], "joint2": symmetric}
    exact = Dynamics.from_urdf(robot_path("arm7"), rotors=rotors)
    armature = Dynamics.from_urdf(robot_path("arm7"), rotors=rotors, rotor_model="armature")
    rng = np.random.default_rng(11)
    for s in range(4):
        q, v, a = rng.uniform(-2, 2, (3, exact.nv))
        want, got = _all_outputs(exact, q, v, a), _all_outputs(armature, q, v, a)
        for key in want:
            assert_close(got[key], want[key], TOL, f"s={s} {key}")
    # the other side: joint2's rotor with an asymmetric transverse inertia turns it with q_2
    rotors["joint2"] = ARM_ROTORS["joint2"]
    exact = Dynamics.from_urdf(robot_path("arm7"), rotors=rotors)
    armature = Dynamics.from_urdf(robot_path("arm7"), rotors=rotors, rotor_model="armature")
    q, v = rng.uniform(-2, 2, (2, exact.nv))
    dM = exact.mass_matrix(q) - armature.mass_matrix(q)
    assert 1e-8 < np.abs(dM).max() < 1e-5  # (I_xx - I_zz)/2 and the product, ~1e-6 kg m^2


def test_a_single_joint_with_a_rotor_is_exact():
    text = """<robot name="one"><link name="base"/>
      <link name="arm"><inertial><origin xyz="0.3 0 0"/><mass value="2"/>
        <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
        <origin xyz="0 0 1" rpy="0.3 0.2 0.1"/><axis xyz="0.6 0 0.8"/>
        <limit effort="1" velocity="1" lower="-3" upper="3"/></joint></robot>"""
    rotor = {"j": {"gear_ratio": 50.0, "inertia": [1e-5, 1e-5, 1e-5, 0, 0, 0], "mass": 0.2}}
    exact = Dynamics.from_urdf(text, rotors=rotor)
    armature = Dynamics.from_urdf(text, rotors=rotor, rotor_model="armature")
    for q, v, a in ([0.4], [2.0], [-1.0]), ([-2.0], [-0.3], [0.7]):
        want, got = _all_outputs(exact, q, v, a), _all_outputs(armature, q, v, a)
        for key in want:
            assert_close(got[key], want[key], TOL, f"q={q} {key}")


ARM7 = Dynamics.from_urdf(robot_path("arm7"))  # the velocity order of the oracle below


def _dropped_mass_matrix(q, joint: str, parent_joint: str, rotor) -> np.ndarray:
    """M_exact - M_armature for one datasheet rotor on arm7's ``joint``, from the dropped energy
    and w = J_w(q) . qd from Pinocchio's parent-joint Jacobian (no rotor in that model)."""
    oracle = MultiDofOracle(robot_urdf("arm7"), ARM7)
    model, data = oracle.model, oracle.data
    jid, pid = model.getJointId(joint), model.getJointId(parent_joint)
    pin.computeJointJacobians(model, data, oracle.q_pin(q))
    J = pin.getJointJacobian(model, data, pid, pin.ReferenceFrame.LOCAL)[3:]
    axis = np.zeros(3)
    axis["xyz".index(AXES[joint])] = 1.0
    Jw = oracle.vec(J.T @ (model.jointPlacements[jid].rotation @ axis))
    e = oracle.vec(np.eye(model.nv)[model.idx_vs[jid]])
    spin, ratio = rotor["inertia"]["xyz".index(AXES[joint])], rotor["gear_ratio"]
    return spin * (ratio * (np.outer(e, Jw) + np.outer(Jw, e)) + np.outer(Jw, Jw))


def test_where_a_parent_turns_about_the_axis_the_difference_is_the_dropped_energy():
    joint, parent, rotor = "joint3", "joint2", ARM_ROTORS["joint3"]
    exact = Dynamics.from_urdf(robot_path("arm7"), rotors={joint: rotor})
    armature = Dynamics.from_urdf(robot_path("arm7"), rotors={joint: rotor}, rotor_model="armature")
    rng = np.random.default_rng(12)
    h = 1e-5
    for s in range(3):
        q, v, a = rng.uniform(-1.5, 1.5, (3, exact.nv))
        Me, _, Ce = exact.coriolis(q, v)
        Ma, _, Ca = armature.coriolis(q, v)
        dM = _dropped_mass_matrix(q, joint, parent, rotor)
        assert_close(Me - Ma, dM, 1e-9, f"s={s} M difference")
        assert np.abs(dM).max() > 1e-4 * np.abs(Me).max()  # not a vanishing difference
        # C's difference is the Christoffel factorization of dM(q): central differences
        dMdq = np.empty((exact.nv,) * 3)
        for k in range(exact.nv):
            step = np.eye(exact.nv)[k] * h
            dMdq[:, :, k] = (
                _dropped_mass_matrix(q + step, joint, parent, rotor)
                - _dropped_mass_matrix(q - step, joint, parent, rotor)
            ) / (2 * h)
        gamma = 0.5 * (dMdq + dMdq.transpose(0, 2, 1) - dMdq.transpose(2, 1, 0))
        dC = gamma @ v
        assert_close(Ce - Ca, dC, 1e-7, f"s={s} C difference")
        assert np.abs(dC).max() > 1e-4 * np.abs(Ce).max()
        # a balanced rotor's mass stays where it was: gravity is the same in both models
        assert_close(armature.gravity(q), exact.gravity(q), TOL, f"s={s} g")
        tau = exact.inverse_dynamics(q, v, a) - armature.inverse_dynamics(q, v, a)
        assert_close(tau, dM @ a + dC @ v, 1e-7, f"s={s} RNEA difference")


# ----------------------------------------------------------------------------- (3) bad input


@pytest.mark.parametrize("value", ["Armature", "rigid", "", None, 1])
def test_an_unknown_rotor_model_is_refused_naming_the_choices(value):
    message = "rotor_model must be one of 'exact', 'armature', got " + repr(value)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Dynamics.from_urdf(robot_path("arm7_rotors"), rotor_model=value)
    assert validate("rotor_model", value).startswith("rotor_model must be one of")
    assert validate("rotor_model", "armature") is None and validate("rotor_model", "exact") is None


def test_a_balanced_rotor_within_round_off_is_accepted_both_sides_of_the_bounds():
    Dynamics.from_urdf(rotor_beside_link(com="1e-10 0 0.3"), rotor_model="armature")
    with pytest.raises(ValueError, match="'jr' .*centre of mass is 1e-06 m off its spin axis"):
        Dynamics.from_urdf(rotor_beside_link(com="1e-6 0 0.3"), rotor_model="armature")
    small = dict(ixx="1.2e-5", iyy="1.2e-5", izz="2e-5", ixy="3e-6", ixz="1e-15", iyz="0")
    Dynamics.from_urdf(rotor_beside_link(inertia=small), rotor_model="armature")
    tilted = dict(small, ixz="1e-8")
    with pytest.raises(ValueError, match="'jr' .*not a principal axis.*1e-08"):
        Dynamics.from_urdf(rotor_beside_link(inertia=tilted), rotor_model="armature")
    # the exact model takes them all
    Dynamics.from_urdf(rotor_beside_link(com="1e-6 0 0.3", inertia=tilted))


def test_coupled_bodies_that_are_not_rotors_are_refused_naming_them():
    with pytest.raises(ValueError, match="'jr' .*is prismatic"):
        Dynamics.from_urdf(rotor_beside_link(kind="prismatic"), rotor_model="armature")
    below = """<link name="tip"><inertial><mass value="1"/>
        <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="jt" type="continuous"><parent link="rot"/><child link="tip"/></joint>"""
    with pytest.raises(ValueError, match="'jr' .*carries moving joints \\('jt'\\)"):
        Dynamics.from_urdf(rotor_beside_link(extra=below), rotor_model="armature")


def test_cli_rotor_model_option(tmp_path):
    q = ["0.3", "-0.2", "0.5", "-1.0", "0.4", "0.7", "-0.3"]
    qd = ["0.5", "-0.4", "0.3", "0.2", "-0.6", "0.1", "0.9"]
    args = ("compute", str(robot_path("arm7_rotors")), "--format", "json", "--q", *q, "--qd", *qd)
    result = run_cli(*args, "--rotor-model", "armature")
    assert result.returncode == 0, result.stderr
    dyn = Dynamics.from_urdf(robot_path("arm7_rotors"), rotor_model="armature")
    assert_close(
        np.array(json.loads(result.stdout)["coriolis_matrix"]),
        dyn.coriolis(np.array(q, float), np.array(qd, float))[2],
        1e-12,
        "C",
    )
    bad = run_cli(*args, "--rotor-model", "rigid")
    assert bad.returncode == 2 and "--rotor-model" in bad.stderr and "Traceback" not in bad.stderr


def test_docs_figure_script_runs_and_shows_the_dropped_terms(tmp_path):
    script = Path(__file__).resolve().parents[2] / "docs" / "figures" / "armature.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "armature.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    numbers = json.loads(proc.stdout[proc.stdout.index("{") :])
    arm = numbers["arm7_rotors (N = 100, 80)"]
    assert 1e-4 < arm["C relative error median"] < 1e-1
    # a fixed-base quadruped's rotor axes are parallel or perpendicular to every axis above:
    # the dropped terms are constant in M, and C is exact
    fixed = numbers["quadruped12, base fixed (N = 6, 9)"]
    assert fixed["C relative error max"] < 1e-12 < 1e-4 < fixed["M relative error median"]


def test_node_rotor_model_parameter_publishes_the_armature_dynamics(ros_domain_env, tmp_path):
    pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")
    from support.ros_helpers import NodeProcess, Peer, as_matrix, close, library_terms

    domain_id, env = ros_domain_env
    urdf = robot_path("arm7_rotors")
    dyn = Dynamics.from_urdf(urdf, rotor_model="armature")
    exact = Dynamics.from_urdf(urdf)
    names, n = list(dyn.joint_names), dyn.nv
    q, qd = np.linspace(-0.7, 0.7, n), np.linspace(0.5, -0.5, n)
    assert not close(dyn.coriolis(q, qd)[2], exact.coriolis(q, qd)[2], rtol=1e-6)
    params = {"robot_description_file": str(urdf), "rotor_model": "armature"}
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params=params)
        try:
            node.wait_ready("arm7_rotors")
            peer.collect_states()
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            msg = peer.send_until_state(js, peer.joint_state(names, q, qd, stamp_ns=1001))
            assert list(msg.joint_names) == names
            for key, want in library_terms(dyn, q, qd).items():
                got = np.asarray(getattr(msg, key))
                got = as_matrix(got, n) if want.ndim == 2 else got
                assert close(got, want, rtol=1e-12), key
        finally:
            node.stop()
