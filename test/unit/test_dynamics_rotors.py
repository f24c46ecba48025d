"""Geared rotors (<coupling> elements, datasheet rotors): outputs over the independent joints.

Reference: Pinocchio on the spanning tree (rotors as ordinary bodies on their own joints;
Pinocchio ignores <coupling>) reduced by a constant A = dq/dqbar that this file builds from
the XML itself: Mbar = A^T M A, Cbar = A^T C A, gbar = A^T g, taubar = A^T tau,
Gammabar = A.A.A Gamma.  Datasheet rotors are checked against rotor links that this file
writes into the URDF (ElementTree), so the datasheet's frame convention is checked too.
Plus the identities Mdotbar = Cbar + Cbar^T, Cbar qd = RNEA(q, qd, 0) - g,
Cbar = sum_k Gammabar[:, :, k] qd_k and finite differences of Mbar.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from support.floating import random_configuration
from support.oracle import assert_close

from coriolis_ros.dynamics import Dynamics, MomentumObserver, URDFError
from coriolis_ros.robots import robot_path, robot_urdf
from support.rotors import Reduced, check_by_differences, compare, strip_couplings
from support.rotors import coupled_joints_from_xml, with_rotor_links
from support.random_trees import random_tree

TOL = 1e-10

# Quasi-direct-drive actuators of a quadruped (ratio 6 at the hips, 9 at the knees; the rotor
# spins about the joint axis, its transverse inertia half the axial one).
QUADRUPED_ROTORS = {
    f"{leg}_{joint}": {
        "gear_ratio": 9.0 if joint == "knee_joint" else 6.0,
        "inertia": [3.3e-5, 6.3e-5, 3.3e-5, 1e-6, 0.0, -2e-6],
        "mass": 0.055,
    }
    for leg in ("FL", "FR", "RL", "RR")
    for joint in ("hip_abduction_joint", "hip_flexion_joint", "knee_joint")
}


# ----------------------------------------------------------------------------- the arm


def test_arm_with_rotors_in_the_urdf_matches_the_reduced_spanning_tree():
    text = robot_urdf("arm7_rotors")
    followers = coupled_joints_from_xml(text)
    dyn = Dynamics.from_urdf(text)
    assert len(followers) == 7
    assert dyn.joint_names == tuple(f"joint{k}" for k in range(1, 8))
    assert set(dyn.tree_joint_names) == set(dyn.joint_names) | set(followers)
    assert {k: (v[0], v[1]) for k, v in dyn.coupled_joints.items()} == followers
    assert dyn.mimic_joints == {}
    ref = Reduced(strip_couplings(text), followers, dyn.joint_names)
    rng = np.random.default_rng(7)
    for s in range(3):
        qbar = rng.uniform(-2.0, 2.0, dyn.nv)
        compare(dyn, ref, qbar, rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv), f"arm {s}")


def test_the_rotors_change_the_dynamics_by_their_reflected_inertia():
    """The premise: with N = 100 the rotors are not a small correction.  About its own axis, a
    rotor spinning with the last joint adds N^2 I_axial (+ its small inertia as a body of the
    joint's parent, which does not move with the joint) to M[6, 6] (joint7's rotor: 1.5e-5)."""
    plain = Dynamics.from_urdf(robot_path("arm7"))
    geared = Dynamics.from_urdf(robot_path("arm7_rotors"))
    q = np.zeros(7)
    added = geared.mass_matrix(q)[6, 6] - plain.mass_matrix(q)[6, 6]
    assert added == pytest.approx(80.0**2 * 1.5e-5, rel=1e-12)
    qd = np.full(7, 0.5)
    Cg, Cp = geared.coriolis(q + 0.3, qd)[2], plain.coriolis(q + 0.3, qd)[2]
    assert np.abs(Cg - Cp).max() > 1e-3  # the gyroscopic terms of the rotors


def test_datasheet_rotors_equal_the_same_rotors_written_in_the_urdf():
    """rotors={...} on arm7 gives the dynamics of arm7_rotors' rotors (those on the joint axis)."""
    text = robot_urdf("arm7_rotors")
    root = ET.fromstring(text)
    spec = {}
    for c in root.findall("coupling"):
        rotor = c.find("successor").get("link")
        if rotor == "joint4_rotor":  # its axis is offset from the joint: no datasheet for it
            continue
        inertia = root.find(f"link[@name='{rotor}']/inertial/inertia").attrib
        mass = float(root.find(f"link[@name='{rotor}']/inertial/mass").get("value"))
        spec[rotor.removesuffix("_rotor")] = {
            "gear_ratio": float(c.find("ratio").get("value")),
            "inertia": [float(inertia[k]) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")],
            "mass": mass,
        }
    for c in root.findall("coupling"):
        if c.find("successor").get("link") == "joint4_rotor":
            continue
        root.remove(c)
    for tag in ("link", "joint"):
        for elem in root.findall(tag):
            if elem.get("name").endswith("_rotor") and elem.get("name") != "joint4_rotor":
                root.remove(elem)
    from_datasheet = Dynamics.from_urdf(ET.tostring(root, encoding="unicode"), rotors=spec)
    from_urdf = Dynamics.from_urdf(text)
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-2, 2, 7), rng.normal(0, 2, 7)
    pairs = zip(
        from_datasheet.coriolis(q, qd), from_urdf.coriolis(q, qd), "M Md C".split(), strict=True
    )
    for a, b, what in pairs:
        assert_close(a, b, 1e-13, what)
    assert_close(from_datasheet.christoffel(q), from_urdf.christoffel(q), 1e-13, "Gamma")
    assert_close(from_datasheet.gravity(q), from_urdf.gravity(q), 1e-13, "g")


# ----------------------------------------------------------------------------- a floating quadruped


@pytest.mark.parametrize("root_joint", ["fixed", "floating"])
def test_quadruped_with_datasheet_rotors_matches_the_reduced_spanning_tree(root_joint):
    text = robot_urdf("quadruped12")
    dyn = Dynamics.from_urdf(text, root_joint=root_joint, rotors=QUADRUPED_ROTORS)
    _, followers = with_rotor_links(text, QUADRUPED_ROTORS)
    ours = {k: v for k, v in dyn.coupled_joints.items()}
    assert {f"test_rotor_{v[0]}" for v in ours.values()} == set(followers)
    # the reference names its rotor joints test_rotor_<joint>, the library <joint>_rotor
    compare_quadruped(dyn, QUADRUPED_ROTORS, root_joint, 12, 2, f"quadruped {root_joint}")


def compare_quadruped(dyn, rotors, root_joint, seed, states, label):
    """compare() at random states against the quadruped's spanning tree with ``rotors``."""
    tree_text, followers = with_rotor_links(robot_urdf("quadruped12"), rotors)
    ref = Reduced(tree_text, followers, dyn.joint_names, root_joint)
    rng = np.random.default_rng(seed)
    for s in range(states):
        qbar = random_configuration(dyn, rng, unit=True)
        v, a = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
        compare(dyn, ref, qbar, v, a, f"{label} {s}")


def test_identities_and_finite_differences_on_the_arm_with_rotors():
    dyn = Dynamics.from_urdf(robot_path("arm7_rotors"))
    rng = np.random.default_rng(11)
    check_by_differences(dyn, rng.uniform(-2, 2, 7), rng.normal(0, 1, 7))


def test_observer_and_clone_on_the_arm_with_rotors():
    """The momentum observer uses the reduced p, C^T qd and g: a constant external torque from
    rest is recovered as r = tau_ext (1 - exp(-K t)) at the stamps."""
    dyn = Dynamics.from_urdf(robot_path("arm7_rotors"))
    assert dyn.clone().coupled_joints == dyn.coupled_joints
    obs = MomentumObserver(dyn, gain=20.0)
    q, z = np.full(7, 0.2), np.zeros(7)
    tau_ext = np.linspace(-1.0, 1.0, 7)
    g = dyn.gravity(q)
    obs.update(0.0, q, z, g)
    r = obs.update(0.1, q, z, g + tau_ext)  # held still: the joints feel tau_ext's opposite
    assert np.all(np.isfinite(r))
    # r_1 = (1 - e^(-K h)) [(p_1 - p_0) / h - (w_1 + w_0) / 2], p constant, w_0 = 0, w_1 = tau_ext
    assert_close(-r, tau_ext * (1 - math.exp(-20.0 * 0.1)) * 0.5, TOL, "residual")


# ----------------------------------------------------------------------------- bad input


def _link(name, mass, inertia):
    ixx, iyy, izz = inertia
    return (
        f'<link name="{name}"><inertial><mass value="{mass}"/><inertia ixx="{ixx}" '
        f'iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    )


def _joint(name, kind, parent, child, xyz="0 0 0", axis="0 0 1"):
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' if kind == "revolute" else ""
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>{limit}</joint>'
    )


COUPLING = "\n".join(
    [
        '<robot name="r">',
        '<link name="base"/>',
        _link("a", 1, (1, 1, 1)),
        _link("b", 1, (1, 1, 1)),
        _link("rot", 0.1, (1e-4, 1e-4, 2e-4)),
        _link("rot2", 0.1, (1e-4, 1e-4, 2e-4)),
        _joint("ja", "revolute", "base", "a"),
        _joint("jb", "revolute", "a", "b", xyz="0 0 1", axis="0 1 0"),
        _joint("jr", "continuous", "base", "rot"),
        _joint("jr2", "continuous", "base", "rot2", xyz="0.1 0 0"),
        "{extra}",
        "</robot>",
    ]
)


def coupling(pred="a", succ="rot", ratio="9", name="g"):
    ratio_elem = "" if ratio is None else f'<ratio value="{ratio}"/>'
    return (
        f'<coupling name="{name}"><predecessor link="{pred}"/><successor link="{succ}"/>'
        f"{ratio_elem}</coupling>"
    )


def test_a_marked_joint_on_a_successor_path_of_two_follows_their_sum():
    """b hangs from base by ja and jb; with jb marked, 9 q_jr = q_ja + q_jb gives
    q_jb = 9 q_jr - q_ja."""
    text = COUPLING.format(extra=coupling(pred="rot", succ="b")).replace(
        '<joint name="jb" type="revolute">', '<joint name="jb" type="revolute" independent="false">'
    )
    assert Dynamics.from_urdf(text).summed_joints == {"jb": ({"jr": 9.0, "ja": -1.0}, 0.0)}


def test_a_good_coupling_and_its_ratio_default():
    dyn = Dynamics.from_urdf(COUPLING.format(extra=coupling()))
    assert dyn.joint_names == ("ja", "jb", "jr2")
    assert dyn.coupled_joints == {"jr": ("ja", 9.0, 0.0)}
    assert Dynamics.from_urdf(COUPLING.format(extra=coupling(ratio=None))).coupled_joints == {
        "jr": ("ja", 1.0, 0.0)
    }
    # a negative ratio (the rotor turns the other way) and a tiny one are couplings too
    assert Dynamics.from_urdf(COUPLING.format(extra=coupling(ratio="-6"))).coupled_joints["jr"] == (
        "ja",
        -6.0,
        0.0,
    )
    # the bounds on |ratio|, 1e-6 .. 1e6, are inclusive
    for ratio in ("1e-6", "-1e-6", "1e6", "-1e6"):
        assert Dynamics.from_urdf(COUPLING.format(extra=coupling(ratio=ratio))).nv == 3


@pytest.mark.parametrize(
    "extra, message",
    [
        (coupling(pred="nowhere"), "predecessor: refers to unknown link 'nowhere'"),
        (coupling(succ="nowhere"), "successor: refers to unknown link 'nowhere'"),
        (coupling(ratio="0"), "ratio must be finite and nonzero"),
        (coupling(ratio="-0.0"), "ratio must be finite and nonzero"),
        (coupling(ratio="nan"), "ratio must be finite and nonzero"),
        (coupling(ratio="inf"), "ratio must be finite and nonzero"),
        (coupling(ratio="nine"), "is not a number"),
        (coupling(ratio="9.99e-7"), "between 1e-06 and 1e+06 in magnitude, got 9.99e-7"),
        (coupling(ratio="-1.01e6"), "between 1e-06 and 1e+06 in magnitude, got -1.01e6"),
        (coupling(ratio="1e200"), "between 1e-06 and 1e+06 in magnitude"),
        (coupling() + coupling(name="g"), "duplicate coupling name 'g'"),
        (
            coupling() + coupling(pred="rot2", name="h"),
            "/robot/coupling[@name='h']: joint 'jr' is coupled twice (also by coupling 'g')",
        ),
        (
            coupling(pred="rot", succ="b"),
            "the successor hangs from the links' nearest common ancestor 'base' by 2 moving "
            "joints ('jb', 'ja') and none is marked independent=\"false\"",
        ),  # b hangs from base by ja and jb: which of the two follows is not said
        (
            coupling(pred="a", succ="b"),
            "the predecessor hangs from the links' nearest common ancestor 'a' by 0 moving joints",
        ),  # b hangs below a
        (
            coupling(pred="rot", succ="a", name="g") + coupling(pred="a", succ="rot", name="h"),
            "couplings form a cycle",
        ),
        ('<coupling name="g"><successor link="rot"/></coupling>', "needs <predecessor"),
        ('<coupling><predecessor link="a"/><successor link="rot"/></coupling>', "has no name"),
    ],
)
def test_bad_couplings_are_urdf_errors_naming_them(extra, message):
    with pytest.raises(URDFError, match=".*".join(map(_re_escape, message.split(".*")))):
        Dynamics.from_urdf(COUPLING.format(extra=extra))


def _re_escape(text):
    return re.escape(text)


def test_a_coupled_joint_that_also_mimics_is_refused():
    extra = coupling()
    text = COUPLING.format(extra=extra).replace(
        '<joint name="jr" type="continuous">',
        '<joint name="jr" type="continuous"><mimic joint="jb"/>',
    )
    with pytest.raises(URDFError, match="joint 'jr' has a <mimic> and is coupled"):
        Dynamics.from_urdf(text)


def test_a_gear_train_multiplies_the_ratios():
    """rot2 is geared to rot (ratio 3), which is geared to a (ratio 9): q_rot2 = 27 q_a."""
    text = COUPLING.format(
        extra=coupling() + coupling(pred="rot", succ="rot2", ratio="3", name="h")
    )
    dyn = Dynamics.from_urdf(text)
    assert dyn.coupled_joints == {"jr": ("ja", 9.0, 0.0), "jr2": ("ja", 27.0, 0.0)}
    # both rotors spin about z axes fixed in the base: M[0, 0] gains 9^2 Izz + 27^2 Izz (their
    # masses do not move); in the plain tree they are DoF of their own (rows 2 and 3)
    plain = Dynamics.from_urdf(COUPLING.format(extra=""))
    assert plain.nv == 4
    base = plain.mass_matrix(np.zeros(4))[0, 0]
    assert dyn.mass_matrix(np.zeros(2))[0, 0] == pytest.approx(
        base + 81 * 2e-4 + 729 * 2e-4, rel=1e-12
    )


def _flagged(flags):
    text = COUPLING.format(extra=coupling())
    for joint, flag in flags:
        new = f'<joint independent="{flag}" name="{joint}" '
        text = text.replace(f'<joint name="{joint}" ', new)
    return text


@pytest.mark.parametrize("flags", [(("ja", "false"), ("jr", "true")), (("ja", "false"),)])
def test_the_independent_attribute_picks_the_follower(flags):
    """With the predecessor's joint marked independent="false" (the successor's "true", or
    unmarked: independent in urdfdom's fork), it follows: q_a = q_r / 9."""
    dyn = Dynamics.from_urdf(_flagged(flags))
    assert set(dyn.joint_names) == {"jb", "jr", "jr2"}
    assert dyn.coupled_joints == {"ja": ("jr", 1.0 / 9.0, 0.0)}


def test_both_joints_of_a_coupling_marked_not_independent_are_refused():
    with pytest.raises(URDFError, match="both joints, 'ja' and 'jr', are marked independent"):
        Dynamics.from_urdf(_flagged((("ja", "false"), ("jr", "false"))))
    dyn = Dynamics.from_urdf(_flagged((("ja", "true"), ("jr", "false"))))
    assert dyn.coupled_joints == {"jr": ("ja", 9.0, 0.0)}


GOOD = {"gear_ratio": 9.0, "inertia": [1e-4, 1e-4, 2e-4, 0, 0, 0], "mass": 0.1}


@pytest.mark.parametrize(
    "rotors, message",
    [
        ({"nope": GOOD}, "rotors: unknown joint 'nope'"),
        ({"jb": {**GOOD, "gear_ratio": 0.0}}, "gear_ratio must be nonzero"),
        ({"jb": {**GOOD, "gear_ratio": 9.99e-7}}, "between 1e-06 and 1e+06 in magnitude"),
        ({"jb": {**GOOD, "gear_ratio": -1.000001e6}}, "between 1e-06 and 1e+06 in magnitude"),
        ({"jb": {**GOOD, "gear_ratio": float("nan")}}, "gear_ratio must be finite"),
        ({"jb": {**GOOD, "gear_ratio": "x"}}, "gear_ratio must be a number"),
        ({"jb": {**GOOD, "gear_ratio": "nine"}}, "gear_ratio must be a number, got 'nine'"),
        ({"jb": {**GOOD, "gear_ratio": True}}, "gear_ratio must be a number, got True"),
        ({"jb": {**GOOD, "mass": False}}, "mass must be a number, got False"),
        ({"jb": {**GOOD, "inertia": [1, 1, True, 0, 0, 0]}}, "inertia must be a number"),
        ({"jb": {**GOOD, "mass": -1e-300}}, "mass must be >= 0"),
        ({"jb": {**GOOD, "mass": float("inf")}}, "mass must be finite"),
        ({"jb": {**GOOD, "inertia": [1, 1, 1, 0, 0]}}, "inertia must be six numbers"),
        ({"jb": {**GOOD, "inertia": [1, 1, 1, 0, 0, 0, 0]}}, "inertia must be six numbers"),
        ({"jb": {**GOOD, "inertia": [1, 1, 1, 2, 0, 0]}}, "not positive semidefinite"),
        ({"jb": {**GOOD, "inertia": [1, 1, float("nan"), 0, 0, 0]}}, "inertia must be finite"),
        ({"jb": {"inertia": GOOD["inertia"]}}, "'gear_ratio' is missing"),
        ({"jb": {"gear_ratio": 9.0}}, "'inertia' is missing"),
        ({"jb": {**GOOD, "ratio": 3}}, "unknown key(s) 'ratio'"),
        ({"jb": [9.0]}, "expected a mapping"),
        ([("jb", GOOD)], "rotors must be a mapping"),
    ],
)
def test_bad_datasheet_rotors_are_value_errors_naming_the_joint(rotors, message):
    with pytest.raises(ValueError, match=_re_escape(message)):
        Dynamics.from_urdf(COUPLING.format(extra=""), rotors=rotors)


def test_datasheet_rotor_bounds_accepted_side():
    """mass 0 and a negative gear ratio are fine; a rotor on a fixed joint or a taken name not."""
    text = COUPLING.format(extra="")
    dyn = Dynamics.from_urdf(text, rotors={"jb": {**GOOD, "mass": 0.0, "gear_ratio": -9.0}})
    assert dyn.coupled_joints["jb_rotor"] == ("jb", -9.0, 0.0)
    for ratio in (1e-6, -1e6):  # the bounds are inclusive
        dyn = Dynamics.from_urdf(text, rotors={"jb": {**GOOD, "gear_ratio": ratio}})
        assert dyn.coupled_joints["jb_rotor"] == ("jb", ratio, 0.0)
        M, _, C = dyn.coriolis(np.full(dyn.nv, 0.2), np.full(dyn.nv, 1.0))
        assert np.all(np.isfinite(M)) and np.all(np.isfinite(C))
    fixed = text.replace('<joint name="jr" type="continuous">', '<joint name="jr" type="fixed">')
    with pytest.raises(ValueError, match="rotors: joint 'jr' is fixed"):
        Dynamics.from_urdf(fixed, rotors={"jr": GOOD})
    taken = text.replace('<link name="rot">', '<link name="jb_rotor">').replace(
        '<child link="rot"/>', '<child link="jb_rotor"/>'
    )
    with pytest.raises(ValueError, match="the name 'jb_rotor' is taken"):
        Dynamics.from_urdf(taken, rotors={"jb": GOOD})


# ----------------------------------------------------------------------------- found in review


def test_a_coupling_into_a_joint_cycle_is_an_error_not_a_hang():
    cycle = COUPLING.format(extra=coupling(pred="a", succ="y")).replace(
        "</robot>",
        _link("x", 1, (1, 1, 1))
        + _link("y", 1, (1, 1, 1))
        + _joint("jy", "revolute", "x", "y")
        + _joint("jx", "revolute", "y", "x")
        + "</robot>",
    )
    with pytest.raises(URDFError, match="the joints form a cycle through link"):
        Dynamics.from_urdf(cycle)


def test_a_coupling_between_disconnected_links_is_a_urdf_error():
    """Two roots: the coupling's links share no ancestor (the tree check would say so later)."""
    text = COUPLING.format(extra=coupling(pred="a", succ="y")).replace(
        "</robot>",
        _link("x", 1, (1, 1, 1))
        + _link("y", 1, (1, 1, 1))
        + _joint("jy", "revolute", "x", "y")
        + "</robot>",
    )
    with pytest.raises(URDFError, match="links 'a' and 'y' are not connected"):
        Dynamics.from_urdf(text)


def test_a_datasheet_rotor_on_a_joint_without_parent_is_a_value_error():
    text = COUPLING.format(extra="").replace('<parent link="a"/>', "")
    with pytest.raises((ValueError, URDFError), match="jb"):
        Dynamics.from_urdf(text, rotors={"jb": GOOD})


def test_integrate_refuses_a_zero_quaternion_on_a_floating_model_with_rotors():
    dyn = Dynamics.from_urdf(
        robot_urdf("quadruped12"),
        root_joint="floating",
        rotors={"FL_knee_joint": QUADRUPED_ROTORS["FL_knee_joint"]},
    )
    q = dyn.neutral()
    v = np.full(dyn.nv, 0.1)
    assert np.all(np.isfinite(dyn.integrate(q, v, 0.01)))
    q[3:7] = 0.0
    with pytest.raises(ValueError, match="zero quaternion"):
        dyn.integrate(q, v, 0.01)


def test_a_dynamics_of_another_instances_reduced_model_is_that_model():
    dyn = Dynamics.from_urdf(robot_path("arm7_rotors"))
    again = Dynamics(dyn.model)
    q, qd = np.full(7, 0.3), np.linspace(-1, 1, 7)
    assert again.joint_names == dyn.joint_names
    for a, b in zip(again.coriolis(q, qd), dyn.coriolis(q, qd), strict=True):
        np.testing.assert_array_equal(a, b)


def test_locking_a_rotor_alone_names_its_leader():
    text = COUPLING.format(extra=coupling())
    with pytest.raises(ValueError, match="joint 'jr' follows 'ja', which is not locked") as info:
        Dynamics.from_urdf(text, locked_joints={"jr": 0.0})
    assert "mimic='independent'" not in str(info.value)
    dyn = Dynamics.from_urdf(text, locked_joints={"ja": 0.1})
    assert dyn.locked_joints == {"ja": 0.1, "jr": pytest.approx(0.9)}


# ----------------------------------------------------------------------------- folded rotors
# Balanced rotors are welded to their parents and their spin added in closed form
# (dynamics.rotor_fold); the others run as bodies of their own. Both against the same
# Pinocchio spanning tree.

# balanced about the joint's axis (hip abduction: x; hip flexion and knee: y), in its frame
BALANCED = {
    name: {**spec, "inertia": ([6.3e-5, 3.3e-5, 3.3e-5] if "abduction" in name
                               else [3.3e-5, 6.3e-5, 3.3e-5]) + [0.0, 0.0, 0.0]}
    for name, spec in QUADRUPED_ROTORS.items()
}  # fmt: skip


def folded_names(dyn):
    return {dyn.tree_joint_names[r] for r in dyn.engine.folded_rows}


@pytest.mark.parametrize("root_joint", ["fixed", "floating"])
def test_quadruped_with_balanced_rotors_folded_matches_the_reduced_spanning_tree(root_joint):
    """The floating base's free joint (six rows, generalized speeds) above every folded rotor:
    the spin's Christoffel terms for later rows of a multi-DoF joint included."""
    text = robot_urdf("quadruped12")
    dyn = Dynamics.from_urdf(text, root_joint=root_joint, rotors=BALANCED)
    assert len(folded_names(dyn)) == 12
    compare_quadruped(dyn, BALANCED, root_joint, 21, 2, f"quadruped {root_joint} folded")


def balanced_rotors(text: str, rng) -> dict:
    """A balanced datasheet rotor on every revolute or continuous joint of ``text``: moment c
    about the joint's axis e and a about any axis across it, I = a 1 + (c - a) e e^T in the
    joint's frame (products of inertia wherever e is not a coordinate axis), centre on the
    axis, random ratio of either sign."""
    rotors = {}
    for joint in ET.fromstring(text).findall("joint"):
        if joint.get("type") not in ("revolute", "continuous"):
            continue
        axis = joint.find("axis")
        e = np.array([float(x) for x in (axis.get("xyz") if axis is not None else "1 0 0").split()])
        e /= np.linalg.norm(e)
        c = rng.uniform(5e-5, 2e-4)
        a = c * rng.uniform(0.5, 0.9)  # a disc's c = 2a, a long cylinder's c < a: c/2 < a
        inertia = a * np.eye(3) + (c - a) * np.outer(e, e)
        rotors[joint.get("name")] = {
            "gear_ratio": float(rng.choice([-1.0, 1.0]) * rng.uniform(5.0, 120.0)),
            "inertia": [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1],
                        inertia[0, 2], inertia[1, 2]],
            "mass": float(rng.uniform(0.02, 0.3)),
        }  # fmt: skip
    return rotors


@pytest.mark.parametrize(
    "topology, root_joint, seed",
    [("binary_tree", "fixed", 1), ("biped", "floating", 2), ("quadruped", "planar", 3),
     ("serial_chain", "floating", 4)],
)  # fmt: skip
def test_random_trees_with_balanced_rotors_everywhere_match_the_reduced_spanning_tree(
    topology, root_joint, seed
):
    """Every rotor folded and hanging from its leader's parent: the spin's symbols are added
    inside Algorithm 2's sweep, on branching trees and below free-flyer and planar roots
    (whose rows are multi-DoF joints' later rows), against Pinocchio on the spanning tree."""
    rng = np.random.default_rng(seed)
    text = random_tree(topology, 12, seed=seed)
    rotors = balanced_rotors(text, rng)
    assert len(rotors) >= 4
    dyn = Dynamics.from_urdf(text, root_joint=root_joint, rotors=rotors)
    assert len(folded_names(dyn)) == len(rotors)
    tree_text, followers = with_rotor_links(text, rotors)
    ref = Reduced(tree_text, followers, dyn.joint_names, root_joint)
    for s in range(2):
        qbar = random_configuration(dyn, rng, unit=True)
        v, a = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
        compare(dyn, ref, qbar, v, a, f"{topology} {root_joint} {s}")


def test_unbalanced_rotors_are_not_folded_and_a_mix_matches_the_spanning_tree():
    """QUADRUPED_ROTORS have products of inertia: none folded (the test above them runs the
    rotors as bodies). Half balanced, half not: six folded, and the results still agree."""
    text = robot_urdf("quadruped12")
    assert folded_names(Dynamics.from_urdf(text, rotors=QUADRUPED_ROTORS)) == set()
    mixed = {name: (BALANCED if k % 2 else QUADRUPED_ROTORS)[name]
             for k, name in enumerate(sorted(QUADRUPED_ROTORS))}  # fmt: skip
    dyn = Dynamics.from_urdf(text, root_joint="floating", rotors=mixed)
    assert len(folded_names(dyn)) == 6
    compare_quadruped(dyn, mixed, "floating", 22, 1, "mixed")


def test_the_arm_folds_its_seven_rotors_and_set_inertial_parameters_refolds():
    """arm7_rotors' rotors are balanced: all folded. New parameters that unbalance one rotor
    (its I_xx + 1e-5, so I_xx != I_yy) unfold it, and the results follow them: against the
    Pinocchio spanning tree of the URDF written with that inertia. Balancing it again folds
    it again, equal to a fresh instance. Batches made before use the refolded workspace."""
    text = robot_urdf("arm7_rotors")
    dyn = Dynamics.from_urdf(text)
    assert len(dyn.engine.folded_rows) == 7
    rng = np.random.default_rng(5)
    Q, V = rng.uniform(-2, 2, (3, 7)), rng.normal(0, 2, (3, 7))
    before = [x.copy() for x in dyn.coriolis_batch(Q, V)]  # the batch workspaces exist now
    pi = dyn.inertial_parameters()
    k = dyn.parameter_links.index("joint3_rotor")
    changed = pi.copy()
    changed[10 * k + 4] += 1e-5  # I_xx about the link origin: the URDF's ixx + 1e-5
    dyn.set_inertial_parameters(changed)
    assert "joint3_rotor" not in folded_names(dyn) and len(dyn.engine.folded_rows) == 6
    edited = text.replace('<inertia ixx="2.5e-05" iyy="2.5e-05" izz="4e-05"',
                          '<inertia ixx="3.5e-05" iyy="2.5e-05" izz="4e-05"', 1)  # fmt: skip
    assert edited != text
    followers = coupled_joints_from_xml(text)
    ref = Reduced(strip_couplings(edited), followers, dyn.joint_names)
    compare(dyn, ref, Q[0], V[0], V[1], "refolded")
    batch = dyn.coriolis_batch(Q, V)
    for t in range(3):
        for got, want in zip(batch, dyn.coriolis(Q[t], V[t]), strict=True):
            assert_close(got[t], want, 1e-13, f"batch state {t}")
    assert np.abs(batch[2] - before[2]).max() > 1e-6  # the change shows in the batch
    dyn.set_inertial_parameters(pi)
    assert len(dyn.engine.folded_rows) == 7
    fresh = Dynamics.from_urdf(text)
    for got, want in zip(dyn.coriolis(Q[0], V[0]), fresh.coriolis(Q[0], V[0]), strict=True):
        assert_close(got, want, 1e-13, "balanced again")
    assert_close(dyn.christoffel(Q[0]), fresh.christoffel(Q[0]), 1e-13, "Gamma balanced again")
    clone = dyn.clone()
    assert clone.engine.folded_rows == dyn.engine.folded_rows
    # the armature model's spinning discs hang from the world: folded too (their M entry)
    armature = Dynamics.from_urdf(text, rotor_model="armature")
    assert len(armature.engine.folded_rows) == 7


def test_balanced_tolerance_both_sides():
    """A rotor body is balanced with products, transverse difference and centre offset at
    the tolerance (1e-12 relative, 1e-12 m) and not beyond it (twice)."""
    from coriolis_ros.dynamics.model import MF_C, MF_I, MF_M, MF_WIDTH
    from coriolis_ros.dynamics.rotor_fold import OFF_AXIS, RELATIVE, balanced

    row = np.zeros(MF_WIDTH)
    row[MF_M] = 0.5
    row[MF_I : MF_I + 9] = np.diag([2.0, 2.0, 3.0]).reshape(-1)
    assert balanced(row) == 3.0
    for index, value in ((MF_I + 1, RELATIVE * 3.0), (MF_I + 5, RELATIVE * 3.0),
                         (MF_I + 0, 2.0 + RELATIVE * 3.0), (MF_C, OFF_AXIS)):  # fmt: skip
        at = row.copy()
        at[index] = value
        assert balanced(at) == 3.0, index
        beyond = row.copy()
        beyond[index] = 2.0 * value if index != MF_I else 2.0 + 2 * RELATIVE * 3.0
        assert balanced(beyond) is None, index
    offset_along_axis = row.copy()
    offset_along_axis[MF_C + 2] = 0.3  # the centre along the spin axis is fine
    assert balanced(offset_along_axis) == 3.0
