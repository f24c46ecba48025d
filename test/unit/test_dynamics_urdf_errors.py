"""URDF rejection (URDFError naming the problem) and valid edge cases of URDF loading.

Rejections: each test asserts a URDFError (a ValueError subclass) whose message names the
offending element (joint or link name) and the issue.  Valid edge cases are checked against
Pinocchio or against values computed by hand in the test.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from support.oracle import (
    PinOracle,
    assert_close,
    compare_all,
    erd_urdf,
    library_and_oracle,
    random_state,
)

from coriolis_ros.dynamics import Dynamics, URDFError
from support.urdf_text import INERTIAL, joint, link, robot


def two_link(**kwargs) -> str:
    """base -j1-> l1 -j2-> l2, with keyword overrides for j2."""
    return robot(
        link("base"),
        link("l1"),
        link("l2"),
        joint("j1", "base", "l1"),
        joint("j2", "l1", "l2", **kwargs),
    )


def expect_error(urdf: str, *keywords: str) -> str:
    """Loading must raise URDFError whose message contains every keyword (case-insensitive)."""
    with pytest.raises(URDFError) as info:
        Dynamics.from_urdf(urdf)
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    for kw in keywords:
        assert re.search(kw, msg, flags=re.IGNORECASE), f"{kw!r} not in message {msg!r}"
    return msg


# ----------------------------------------------------------------------------- rejections


def test_valid_baseline_loads():
    """The template used by the rejection tests is itself valid (so they test one defect each)."""
    dyn = Dynamics.from_urdf(two_link())
    assert dyn.nv == 2


def test_malformed_xml():
    expect_error('<robot name="x"><link name="a"></robot>', r"xml|malformed|pars")


def test_truncated_xml():
    expect_error(two_link()[:-40], r"xml|malformed|pars")


def test_empty_string():
    with pytest.raises(URDFError):
        Dynamics.from_urdf("")


def test_not_a_robot_element():
    expect_error('<?xml version="1.0"?><model name="x"><link name="a"/></model>', r"robot")


def test_missing_file():
    with pytest.raises(URDFError) as info:
        Dynamics.from_urdf("/nonexistent/dir/robot.urdf")
    assert "robot.urdf" in str(info.value) or "file" in str(info.value).lower()


def test_several_roots():
    urdf = robot(
        link("base"),
        link("l1"),
        link("island"),
        link("l2"),
        joint("j1", "base", "l1"),
        joint("j2", "island", "l2"),
    )
    msg = expect_error(urdf, r"root")
    assert "base" in msg and "island" in msg, msg


def test_unknown_parent_link():
    urdf = robot(link("base"), link("l1"), joint("j1", "ghost_link", "l1"))
    expect_error(urdf, "j1", "ghost_link")


def test_unknown_child_link():
    urdf = robot(link("base"), link("l1"), joint("j1", "base", "l1"), joint("j2", "l1", "phantom"))
    expect_error(urdf, "j2", "phantom")


def test_link_with_two_parents():
    urdf = robot(
        link("base"),
        link("l1"),
        link("l2"),
        joint("j1", "base", "l1"),
        joint("j2", "base", "l2"),
        joint("j3", "l1", "l2"),
    )
    expect_error(urdf, "l2")


def test_kinematic_cycle_without_root():
    urdf = robot(link("a"), link("b"), joint("j1", "a", "b"), joint("j2", "b", "a"))
    expect_error(urdf, r"root|cycle|loop")


def test_duplicate_joint_name():
    urdf = robot(
        link("base"), link("l1"), link("l2"), joint("j1", "base", "l1"), joint("j1", "l1", "l2")
    )
    expect_error(urdf, "j1", r"duplicate|twice|unique")


def test_unknown_joint_type():
    expect_error(two_link(jtype="spherical"), "j2", "spherical")


@pytest.mark.parametrize("jtype,nq,nv", [("floating", 8, 7), ("planar", 4, 4)])
def test_multi_dof_joint_in_the_tree_loads(jtype, nq, nv):
    """floating and planar joints anywhere in the tree are supported (6 and 3 velocity DoF)."""
    dyn = Dynamics.from_urdf(two_link(jtype=jtype))
    assert (dyn.nq, dyn.nv) == (nq, nv)
    assert dyn.joint_names[0] == "j1" and dyn.joint_names[1].startswith("j2/")


def test_root_joint_on_a_urdf_that_already_floats_is_rejected():
    """Go2 given a floating base joint in its URDF: root_joint would float it a second time."""
    text = Path(erd_urdf("go2")).read_text()
    root = re.search(r'<link\s+name="([^"]+)"', text).group(1)
    floating = (
        '<link name="world"/>\n<joint name="floating_base" type="floating">'
        f'<parent link="world"/><child link="{root}"/></joint>\n'
    )
    text = text.replace("</robot>", floating + "</robot>")
    assert Dynamics.from_urdf(text).nv == Dynamics.from_urdf(erd_urdf("go2")).nv + 6
    for root_joint in ("floating", "planar"):
        with pytest.raises(URDFError, match="floating_base.*second one"):
            Dynamics.from_urdf(text, root_joint=root_joint)


@pytest.mark.parametrize("bad", ["free", "", None, "Floating"])
def test_unknown_root_joint_is_rejected(bad):
    with pytest.raises(ValueError, match="root_joint must be one of fixed, floating, planar"):
        Dynamics.from_urdf(two_link(), root_joint=bad)


def test_root_joint_name_taken_is_rejected():
    urdf = robot(link("base"), link("l1"), joint("root_joint", "base", "l1"))
    assert Dynamics.from_urdf(urdf).joint_names == ("root_joint",)
    expect_error_kw = "root_joint"
    with pytest.raises(URDFError, match=expect_error_kw):
        Dynamics.from_urdf(urdf, root_joint="floating")


def test_negative_mass():
    bad = INERTIAL.replace('value="1.5"', 'value="-2.0"')
    urdf = robot(link("base"), link("heavy", bad), joint("j1", "base", "heavy"))
    expect_error(urdf, "heavy", "mass")


@pytest.mark.parametrize(
    "tensor",
    [
        'ixx="-0.01" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.025"',  # negative moment
        'ixx="0.01" ixy="0.05" ixz="0" iyy="0.01" iyz="0" izz="0.025"',  # eigenvalue < 0
    ],
    ids=["negative-diagonal", "indefinite"],
)
def test_non_positive_definite_inertia(tensor):
    bad = re.sub(r"<inertia [^/]*/>", f"<inertia {tensor}/>", INERTIAL)
    urdf = robot(link("base"), link("wobbly", bad), joint("j1", "base", "wobbly"))
    expect_error(urdf, "wobbly", "inertia")


@pytest.mark.parametrize("where", ["xyz", "rpy"])
def test_nan_in_joint_origin(where):
    kwargs = {"xyz": "0.1 nan 0.3"} if where == "xyz" else {"rpy": "0.1 0.2 NaN"}
    expect_error(two_link(**kwargs), "j2", r"origin|nan|finite")


def test_inf_in_joint_origin():
    expect_error(two_link(xyz="inf 0 0"), "j2", r"origin|inf|finite")


def test_nan_in_inertia():
    bad = INERTIAL.replace('iyy="0.03"', 'iyy="nan"')
    urdf = robot(link("base"), link("ghostly", bad), joint("j1", "base", "ghostly"))
    expect_error(urdf, "ghostly", r"inertia|nan|finite")


def test_nan_mass():
    bad = INERTIAL.replace('value="1.5"', 'value="nan"')
    urdf = robot(link("base"), link("ghostly", bad), joint("j1", "base", "ghostly"))
    expect_error(urdf, "ghostly", r"mass|nan|finite")


def test_nan_in_inertial_origin():
    bad = INERTIAL.replace('xyz="0.1 0.02 -0.03"', 'xyz="0.1 nan -0.03"')
    urdf = robot(link("base"), link("ghostly", bad), joint("j1", "base", "ghostly"))
    expect_error(urdf, "ghostly", r"origin|nan|finite")


def test_nan_in_axis():
    expect_error(two_link(axis="0 nan 1"), "j2", "axis")


def test_zero_axis():
    expect_error(two_link(axis="0 0 0"), "j2", "axis")


def test_gravity_must_be_finite_3_vector():
    with pytest.raises(ValueError, match=r"(?i)gravity"):
        Dynamics.from_urdf(two_link(), gravity=(0.0, float("nan"), -9.81))
    with pytest.raises(ValueError, match=r"(?i)gravity"):
        Dynamics.from_urdf(two_link(), gravity=(0.0, -9.81))


# ----------------------------------------------------------------------------- valid edge cases


def _check_against_pinocchio(urdf: str, label: str, states: int = 2) -> None:
    dyn, oracle = library_and_oracle(urdf)
    rng = np.random.default_rng(42)
    for _ in range(states):
        q, qd, qdd = random_state(dyn.nv, rng)
        compare_all(dyn, oracle, q, qd, qdd, label=label)


def test_fixed_joints_merged_matches_pinocchio():
    """Chains of fixed joints, fixed joints at the root and between DoF joints, massive leaves."""
    urdf = robot(
        link("world", None),
        link("base"),
        link("adapter"),
        link("l1"),
        link("flange", INERTIAL.replace("1.5", "0.7")),
        link("tool", INERTIAL.replace("1.5", "2.5")),
        link("l2"),
        link("tcp", None),
        joint("world_fix", "world", "base", "fixed", axis=None),
        joint("adapter_fix", "base", "adapter", "fixed", axis=None, xyz="0 0 0.5"),
        joint("j1", "adapter", "l1", axis="0.6 0 0.8"),
        joint("flange_fix", "l1", "flange", "fixed", axis=None, rpy="1.0 0.5 -0.5"),
        joint("tool_fix", "flange", "tool", "fixed", axis=None, xyz="0 0.1 0.2"),
        joint("j2", "tool", "l2", axis="0 1 0"),
        joint("tcp_fix", "l2", "tcp", "fixed", axis=None),
    )
    dyn = Dynamics.from_urdf(urdf)
    assert sorted(dyn.joint_names) == ["j1", "j2"]
    _check_against_pinocchio(urdf, "fixed joints")


def test_fixed_joint_merge_equals_hand_merged_body():
    """Two links joined by a fixed joint == one link with the hand-combined inertia."""
    m1, c1, I1 = 1.2, np.array([0.1, 0.0, 0.05]), np.diag([0.01, 0.02, 0.015])
    m2, c2_local, I2 = 0.8, np.array([0.0, 0.05, 0.0]), np.diag([0.004, 0.003, 0.005])
    offset = np.array([0.3, -0.1, 0.2])  # fixed joint origin (no rotation)
    c2 = offset + c2_local
    m = m1 + m2
    c = (m1 * c1 + m2 * c2) / m

    def shift(inertia, mass, r):  # parallel-axis theorem, r = CoM relative to the new point
        return inertia + mass * (r @ r * np.eye(3) - np.outer(r, r))

    I_total = shift(I1, m1, c1 - c) + shift(I2, m2, c2 - c)

    def fmt(values) -> str:
        return " ".join(repr(float(v)) for v in values)

    def inertial(mass, com, inertia):
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        idx = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
        tensor = " ".join(f'{k}="{float(inertia[ij])!r}"' for k, ij in zip(keys, idx))
        return (
            f'\n    <inertial><origin xyz="{fmt(com)}" rpy="0 0 0"/>'
            f'<mass value="{float(mass)!r}"/><inertia {tensor}/></inertial>'
        )

    split = robot(
        link("base"),
        link("a", inertial(m1, c1, I1)),
        link("b", inertial(m2, c2_local, I2)),
        joint("j1", "base", "a", axis="0 1 0"),
        joint("fix", "a", "b", "fixed", axis=None, xyz=fmt(offset), rpy="0 0 0"),
    )
    merged = robot(
        link("base"), link("a", inertial(m, c, I_total)), joint("j1", "base", "a", axis="0 1 0")
    )
    d_split = Dynamics.from_urdf(split)
    d_merged = Dynamics.from_urdf(merged)
    for q in (-2.0, 0.3, 1.1):
        qv = np.array([q])
        assert_close(d_split.mass_matrix(qv), d_merged.mass_matrix(qv), 1e-12, "M")
        assert_close(d_split.gravity(qv), d_merged.gravity(qv), 1e-12, "g")
    assert np.linalg.norm(d_split.gravity(np.array([0.3]))) > 0.1


def test_mass_fixed_to_base_has_no_effect():
    with_extra = robot(
        link("base"),
        link("ballast", INERTIAL.replace("1.5", "50.0")),
        link("l1"),
        joint("j1", "base", "l1", axis="1 0 0"),
        joint("ballast_fix", "base", "ballast", "fixed", axis=None),
    )
    without = robot(link("base"), link("l1"), joint("j1", "base", "l1", axis="1 0 0"))
    q = np.array([0.7])
    assert_close(
        Dynamics.from_urdf(with_extra).mass_matrix(q),
        Dynamics.from_urdf(without).mass_matrix(q),
        1e-14,
        "M",
    )
    assert_close(
        Dynamics.from_urdf(with_extra).gravity(q),
        Dynamics.from_urdf(without).gravity(q),
        1e-14,
        "g",
    )


def test_links_without_inertial_are_massless():
    zero = (
        '\n    <inertial><mass value="0"/>'
        '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>'
    )
    parts = dict(
        base=link("base"),
        j1=joint("j1", "base", "mid", axis="0 0 1"),
        j2=joint("j2", "mid", "tip", axis="1 0 0"),
        tip=link("tip"),
    )
    no_inertial = robot(link("mid", None), *parts.values())
    zero_inertial = robot(link("mid", zero), *parts.values())
    a, b = Dynamics.from_urdf(no_inertial), Dynamics.from_urdf(zero_inertial)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, qd, _ = random_state(2, rng)
        for x, y in zip(a.coriolis(q, qd), b.coriolis(q, qd)):
            assert_close(x, y, 1e-14, "massless link")
    _check_against_pinocchio(no_inertial, "massless link")


def test_all_massless_robot_gives_zero_dynamics():
    urdf = robot(link("base", None), link("l1", None), joint("j1", "base", "l1"))
    dyn = Dynamics.from_urdf(urdf)
    q = np.array([0.4])
    assert np.all(dyn.mass_matrix(q) == 0.0)
    assert np.all(dyn.gravity(q) == 0.0)


def test_continuous_joint_by_hand():
    """Pendulum on a continuous joint about y: M = Iyy + m l^2, g = -m g0 l cos q (hand-derived).

    The link's CoM is at (l, 0, 0) in its frame; rotating by q about y puts it at
    (l cos q, 0, -l sin q), so V = -m g0 l sin q and g(q) = dV/dq = -m g0 l cos q.
    """
    m, length, iyy, g0 = 2.0, 0.4, 0.03, 9.81
    tip = (
        f'\n    <inertial><origin xyz="{length} 0 0" rpy="0 0 0"/><mass value="{m}"/>'
        f'<inertia ixx="0.01" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="0.02"/></inertial>'
    )
    urdf = robot(
        link("base"),
        link("bob", tip),
        joint("swing", "base", "bob", "continuous", axis="0 1 0", xyz="0 0 1", rpy="0 0 0"),
    )
    dyn = Dynamics.from_urdf(urdf)
    for q in (-7.0, -1.0, 0.0, 0.5, 4.0, 100.0):
        qv, qd = np.array([q]), np.array([1.3])
        M, Mdot, C = dyn.coriolis(qv, qd)
        assert M[0, 0] == pytest.approx(iyy + m * length**2, rel=1e-12)
        assert dyn.gravity(qv)[0] == pytest.approx(-m * g0 * length * math.cos(q), abs=1e-12)
        assert abs(C[0, 0]) < 1e-14 and abs(Mdot[0, 0]) < 1e-14
    _check_against_pinocchio(urdf, "continuous")


def test_prismatic_joint_by_hand():
    """Slider along a tilted unit axis a: M = m, g = -m (gravity . a_world), C = 0."""
    m = 3.0
    axis = np.array([0.6, 0.0, 0.8])
    body = (
        f'\n    <inertial><origin xyz="0.2 0.1 0" rpy="0.4 0 0"/><mass value="{m}"/>'
        '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial>'
    )
    urdf = robot(
        link("base"),
        link("slider", body),
        joint("slide", "base", "slider", "prismatic", axis="0.6 0 0.8", xyz="0 0 0", rpy="0 0 0"),
    )
    dyn = Dynamics.from_urdf(urdf)
    expected_g = -m * np.dot(np.array([0.0, 0.0, -9.81]), axis)
    for q in (-0.4, 0.0, 0.3):
        qv = np.array([q])
        assert dyn.mass_matrix(qv)[0, 0] == pytest.approx(m, rel=1e-12)
        assert dyn.gravity(qv)[0] == pytest.approx(expected_g, rel=1e-12)
        assert dyn.inverse_dynamics(qv, np.array([2.0]), np.array([0.5]))[0] == pytest.approx(
            m * 0.5 + expected_g, rel=1e-12
        )
    _check_against_pinocchio(urdf, "prismatic")


def test_non_unit_axis_is_normalised_like_pinocchio():
    """URDF axes should be unit vectors; a scaled axis must mean the same direction."""
    unit = two_link(axis="0.6 0 0.8")
    scaled = two_link(axis="3 0 4")
    a, b = Dynamics.from_urdf(unit), Dynamics.from_urdf(scaled)
    q, qd, _ = random_state(2, np.random.default_rng(1))
    for x, y in zip(a.coriolis(q, qd), b.coriolis(q, qd)):
        assert_close(x, y, 1e-12, "scaled axis")


def test_default_axis_is_x():
    """URDF default joint axis is (1, 0, 0)."""
    a = Dynamics.from_urdf(two_link(axis=None))
    b = Dynamics.from_urdf(two_link(axis="1 0 0"))
    q, qd, _ = random_state(2, np.random.default_rng(2))
    for x, y in zip(a.coriolis(q, qd), b.coriolis(q, qd)):
        assert_close(x, y, 1e-14, "default axis")


def test_mimic_joints_are_independent_dofs_on_request():
    mimic = '\n    <mimic joint="j1" multiplier="2.0" offset="0.1"/>'
    urdf = two_link(extra=mimic)
    assert Dynamics.from_urdf(urdf, mimic="independent").nv == 2
    assert Dynamics.from_urdf(urdf).nv == 1  # default: the mimic joint follows j1
    _check_against_pinocchio(urdf, "mimic")


def test_file_path_and_string_give_identical_results(tmp_path):
    text = Path(erd_urdf("panda")).read_text()
    path = tmp_path / "panda copy.urdf"
    path.write_text(text)
    from_string = Dynamics.from_urdf(text)
    for source in (str(path), path):
        from_file = Dynamics.from_urdf(source)
        assert from_file.joint_names == from_string.joint_names
        assert from_file.name == from_string.name
        q, qd, qdd = random_state(from_file.nv, np.random.default_rng(3))
        for x, y in zip(from_file.coriolis(q, qd), from_string.coriolis(q, qd)):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(from_file.christoffel(q), from_string.christoffel(q))
        np.testing.assert_array_equal(
            from_file.inverse_dynamics(q, qd, qdd), from_string.inverse_dynamics(q, qd, qdd)
        )


def test_zero_gravity_gives_zero_g():
    path = str(erd_urdf("talos"))
    dyn = Dynamics.from_urdf(path, gravity=(0, 0, 0))
    oracle = PinOracle(path, order=dyn.joint_names, gravity=(0.0, 0.0, 0.0))
    q, qd, qdd = random_state(dyn.nv, np.random.default_rng(4))
    np.testing.assert_array_equal(dyn.gravity(q), np.zeros(dyn.nv))
    assert_close(dyn.inverse_dynamics(q, qd, qdd), oracle.rnea(q, qd, qdd), 1e-10, "RNEA g=0")
    M, _, C = dyn.coriolis(q, qd)
    assert_close(dyn.inverse_dynamics(q, qd, qdd), M @ qdd + C @ qd, 1e-10, "M qdd + C qd")


def test_visual_and_collision_content_is_irrelevant():
    """Meshes with package:// URIs that do not exist, materials, sensors: dynamics unaffected."""
    decorated = two_link().replace(
        '<link name="l1">',
        '<link name="l1"><visual><geometry><mesh filename="package://nope/x.stl"/></geometry>'
        '<material name="m"><color rgba="1 0 0 1"/></material></visual>'
        '<collision><geometry><box size="1 1 1"/></geometry></collision>',
    )
    a, b = Dynamics.from_urdf(decorated), Dynamics.from_urdf(two_link())
    q, qd, _ = random_state(2, np.random.default_rng(5))
    for x, y in zip(a.coriolis(q, qd), b.coriolis(q, qd)):
        np.testing.assert_array_equal(x, y)
