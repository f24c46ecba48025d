"""dynamics.urdf_model: what a URDF becomes, and each refusal's message, against values
written out by hand.

The bodies are chosen so that their effect is known without the code under test: a
revolute joint about z through a body's centre of mass has M = I_zz of the body and no
gravity torque; a prismatic joint along the world's z carrying a mass m has M = m and a
gravity force m g (g = 9.81, the default, along -z); a body's mass shows in
``Model.total_mass``.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import Dynamics, URDFError
from coriolis_ros.dynamics.urdf_model import model_from_urdf
from coriolis_ros.robots import robot_path


def _inertial(mass, ixx=0.1, iyy=0.1, izz=0.1, xyz="0 0 0") -> str:
    return (
        f'\n    <inertial><origin xyz="{xyz}" rpy="0 0 0"/><mass value="{mass!r}"/>'
        f'<inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" iyz="0" izz="{izz!r}"/></inertial>'
    )


def _slider(inertial: str) -> str:
    """One prismatic joint along the world's z (no rotation) moving link ``b``."""
    return robot(
        link("a", None), link("b", inertial),
        joint("z", "a", "b", jtype="prismatic", axis="0 0 1", xyz="0 0 0", rpy="0 0 0"),
        name="slider",
    )  # fmt: skip


def _spinner(inertial: str) -> str:
    """One revolute joint about the world's z through link ``b``'s origin."""
    return robot(
        link("a", None), link("b", inertial),
        joint("r", "a", "b", axis="0 0 1", xyz="0 0 0", rpy="0 0 0"),
        name="spinner",
    )  # fmt: skip


# ----------------------------------------------------------------------------- defaults


def test_the_default_gravity_is_9_81_down_the_world_z():
    model = model_from_urdf(_slider(_inertial(2.0)))
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -9.81])
    dyn = Dynamics.from_urdf(_slider(_inertial(2.0)))
    assert dyn.gravity(np.zeros(1))[0] == pytest.approx(2.0 * 9.81, rel=1e-14)
    assert dyn.mass_matrix(np.zeros(1))[0, 0] == pytest.approx(2.0, rel=1e-14)


def test_a_model_keeps_the_urdf_name_or_calls_it_robot():
    assert model_from_urdf(_slider(_inertial(1.0))).name == "slider"
    nameless = _slider(_inertial(1.0)).replace('<robot name="slider">', "<robot>")
    assert model_from_urdf(nameless).name == "robot"


def test_a_plain_tree_has_no_followers_armature_or_loops():
    model = model_from_urdf(_slider(_inertial(1.0)))
    assert model.mimic == () and model.couplings == () and model.armature == ()
    assert model.loops == () and model.independent_flags == () and model.locked_joints == ()


# ----------------------------------------------------------------------------- reading


def test_bytes_paths_and_leading_blanks_are_read(tmp_path):
    text = _slider(_inertial(1.5))
    assert model_from_urdf(text.encode()).total_mass == 1.5
    path = tmp_path / "slider.urdf"
    path.write_text("\ufeff\n\n  " + text, encoding="utf-8")
    assert model_from_urdf(path).total_mass == 1.5
    assert model_from_urdf(str(path)).total_mass == 1.5


def test_a_xacro_path_is_expanded(tmp_path):
    path = tmp_path / "slider.urdf.xacro"
    path.write_text(
        _slider(_inertial(1.0)).replace(
            '<robot name="slider">',
            '<robot name="slider" xmlns:xacro="http://www.ros.org/wiki/xacro">'
            '<xacro:property name="m" value="3.25"/>',
        ).replace('<mass value="1.0"/>', '<mass value="${m}"/>')
    )  # fmt: skip
    assert model_from_urdf(path).total_mass == 3.25


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_an_empty_description_is_named(blank):
    with pytest.raises(URDFError, match="^empty robot description$"):
        model_from_urdf(blank)


def test_other_inputs_are_refused_by_type_or_reason(tmp_path):
    with pytest.raises(URDFError, match="^expected a URDF XML string or a file path, got int$"):
        model_from_urdf(42)
    missing = tmp_path / "missing.urdf"
    with pytest.raises(URDFError, match="^not a URDF XML string, and cannot read it as a file: "):
        model_from_urdf(str(missing))


def test_the_root_element_must_be_robot():
    with pytest.raises(URDFError, match=r"^/model: the root element is <model>, expected <robot>$"):
        model_from_urdf('<model name="m"><link name="a"/></model>')


def test_a_robot_without_links_is_refused():
    with pytest.raises(URDFError, match=r"^/robot: the URDF has no <link>$"):
        model_from_urdf('<robot name="r"/>')


def test_a_default_namespace_is_dropped_and_xacro_still_seen():
    text = _slider(_inertial(1.25))
    spaced = text.replace('<robot name="slider">', '<robot name="slider" xmlns="http://e.org/u">')
    assert model_from_urdf(spaced).total_mass == 1.25
    with_xacro = spaced.replace(
        "</robot>",
        '<x:property xmlns:x="http://www.ros.org/wiki/xacro" name="p" value="1"/></robot>',
    )
    with pytest.raises(URDFError, match=r"xacro:property\[@name='p'\] is a xacro element"):
        model_from_urdf(with_xacro)


def test_unnamed_and_duplicate_elements_are_located():
    text = _slider(_inertial(1.0))
    with pytest.raises(URDFError, match=r"^/robot/link\[2\]: a <link> has no name attribute$"):
        model_from_urdf(text.replace('<link name="b">', "<link>"))
    twice = text.replace("</robot>", '<link name="a"/></robot>')
    with pytest.raises(URDFError, match=r"^/robot/link\[@name='a'\]: duplicate link name 'a'$"):
        model_from_urdf(twice)


def test_visuals_and_transmissions_are_dropped_before_parsing():
    text = _slider(_inertial(1.0)).replace(
        '<link name="b">', '<link name="b"><visual><geometry><mesh/></geometry></visual>'
    ).replace("</robot>", "<transmission><bad/></transmission></robot>")  # fmt: skip
    assert model_from_urdf(text).total_mass == 1.0


# ----------------------------------------------------------------------------- gravity


def test_gravity_bound_on_both_sides():
    text = _slider(_inertial(1.0))
    for g in ((0.0, 0.0, -1e6), (1e6, -1e6, 0.0)):
        np.testing.assert_array_equal(model_from_urdf(text, gravity=g).gravity, g)
    beyond = float(np.nextafter(1e6, np.inf))
    with pytest.raises(URDFError, match=r"^gravity must be within ±1e\+06 m/s\^2 per component"):
        model_from_urdf(text, gravity=(0.0, beyond, 0.0))


def test_gravity_must_be_three_finite_numbers():
    text = _slider(_inertial(1.0))
    for bad in ((0.0, -9.81), (0.0, 0.0, 0.0, -9.81)):
        with pytest.raises(URDFError, match=r"^gravity must be 3 finite numbers, got \["):
            model_from_urdf(text, gravity=bad)
    with pytest.raises(URDFError, match=r"^gravity must be 3 finite numbers, got \[0.0, nan, "):
        model_from_urdf(text, gravity=(0.0, float("nan"), -9.81))
    with pytest.raises(URDFError, match=r"^gravity must be 3 finite numbers, got 'down'$"):
        model_from_urdf(text, gravity="down")
    # nested: 3 numbers however they are shaped
    np.testing.assert_array_equal(model_from_urdf(text, gravity=[[0.0], [1.0], [2.0]]).gravity,
                                  [0.0, 1.0, 2.0])  # fmt: skip


# ----------------------------------------------------------------------------- inertia


@pytest.mark.parametrize("mass", [0.75, 1.0])
def test_a_point_mass_without_an_inertia_tensor_has_its_mass(mass):
    text = _slider(f'\n    <inertial><mass value="{mass!r}"/></inertial>')
    dyn = Dynamics.from_urdf(text)
    assert dyn.model.total_mass == mass
    assert dyn.gravity(np.zeros(1))[0] == pytest.approx(mass * 9.81, rel=1e-14)


def test_a_massless_body_with_rotational_inertia_keeps_it():
    dyn = Dynamics.from_urdf(_spinner(_inertial(0.0, 0.1, 0.2, 0.3)))
    assert dyn.model.total_mass == 0.0
    assert dyn.mass_matrix(np.zeros(1))[0, 0] == pytest.approx(0.3, rel=1e-14)
    slider = Dynamics.from_urdf(_slider(_inertial(0.0, 0.1, 0.2, 0.3)))
    assert slider.gravity(np.zeros(1))[0] == 0.0  # no mass, no weight


def test_a_body_of_exactly_unit_mass_and_one_below():
    for mass in (1.0, 0.5):
        dyn = Dynamics.from_urdf(_spinner(_inertial(mass, 0.1, 0.2, 0.3, xyz="0.5 0 0")))
        assert dyn.model.total_mass == mass
        # about the axis: I_zz + m d^2 (d = 0.5 m from the axis)
        expected = 0.3 + mass * 0.25
        assert dyn.mass_matrix(np.zeros(1))[0, 0] == pytest.approx(expected, rel=1e-14)


def test_negative_mass_is_refused_and_zero_is_not():
    where = r"^/robot/link\[@name='b'\]/inertial/mass: "
    with pytest.raises(URDFError, match=where + r"negative mass -0.5$"):
        model_from_urdf(_slider(_inertial(-0.5)))
    assert model_from_urdf(_slider(_inertial(0.0))).total_mass == 0.0


def _moment_tolerance(largest: float) -> float:
    """The most negative principal moment accepted as round-off: 1e-6 of the largest plus
    1e-7 (the module's comment: semi-definite tensors with round-off are real URDFs')."""
    return -(1e-6 * abs(largest) + 1e-7)


@pytest.mark.parametrize("largest", [1.0, 4.0])
def test_a_negative_principal_moment_on_both_sides_of_round_off(largest):
    edge = _moment_tolerance(largest)
    with pytest.warns(Warning):  # no rigid body has a negative moment: warned, used
        model_from_urdf(_spinner(_inertial(1.0, edge, largest, largest)))
    beyond = float(np.nextafter(edge, -np.inf))
    with pytest.raises(URDFError, match=r"^/robot/link\[@name='b'\]/inertial/inertia: inertia is "
                       r"not positive definite \(principal moments "):  # fmt: skip
        model_from_urdf(_spinner(_inertial(1.0, beyond, largest, largest)))


def test_the_principal_moments_are_shown_to_six_digits():
    with pytest.raises(URDFError) as err:
        model_from_urdf(_spinner(_inertial(1.0, -0.1234567, 1.0, 1.0)))
    assert "[-0.123457  1.        1.      ]" in str(err.value)


# ----------------------------------------------------------------------------- the tree


def test_tree_refusals_name_the_joint_and_link():
    base = [link("a", None), link("b", _inertial(1.0))]
    cases = [
        (joint("j", "ghost", "b"), r"^/robot/joint\[@name='j'\]/parent: refers to unknown parent "
                                   r"link 'ghost'$"),
        (joint("j", "a", "ghost"), r"^/robot/joint\[@name='j'\]/child: refers to unknown child "
                                   r"link 'ghost'$"),
        (joint("j", "a", "b", jtype="unknown"),  # urdf_parser_py refuses other names itself
         r"^/robot/joint\[@name='j'\] has type 'unknown', which is not supported \(supported: "
         r"revolute, continuous, prismatic, fixed, floating, planar\)$"),
    ]  # fmt: skip
    for extra, pattern in cases:
        with pytest.raises(URDFError, match=pattern):
            model_from_urdf(robot(*base, extra))
    twice = robot(*base, link("c"), joint("j1", "a", "b"), joint("j2", "c", "b"))
    with pytest.raises(URDFError, match=r"^/robot/joint\[@name='j2'\]/child: link 'b' is the child "
                       r"of several joints: 'j1' and 'j2'$"):  # fmt: skip
        model_from_urdf(twice)


def test_roots_are_counted():
    two = robot(link("a"), link("b"), link("c"), link("d"), joint("j", "a", "b"),
                joint("k", "c", "d"))  # fmt: skip
    with pytest.raises(URDFError, match=r"^/robot: the URDF has several root links: 'a', 'c'$"):
        model_from_urdf(two)
    cycle = robot(link("a"), link("b"), joint("j", "a", "b"), joint("k", "b", "a"))
    with pytest.raises(URDFError, match=r"^/robot: the URDF has no root link: its joints form"):
        model_from_urdf(cycle)


def test_a_robot_without_moving_joints_is_refused():
    still = robot(link("a"), link("b"), joint("j", "a", "b", jtype="fixed"))
    with pytest.raises(URDFError, match=r"^/robot: the robot has no revolute, continuous, "):
        model_from_urdf(still)
    assert model_from_urdf(still, root_joint="planar").nv == 3


def test_the_root_joint_name_and_a_second_floating_root_are_refused():
    taken = robot(link("a"), link("b"), joint("root_joint", "a", "b"))
    assert model_from_urdf(taken).joint_names == ("root_joint",)
    with pytest.raises(URDFError, match=r"^the URDF has a joint named 'root_joint', the name of "
                       r"the root_joint='planar' joint; rename it$"):  # fmt: skip
        model_from_urdf(taken, root_joint="planar")
    floats = robot(link("a"), link("b"), joint("f", "a", "b", jtype="floating"))
    with pytest.raises(URDFError, match=r"^joint 'f' already makes the root link 'a' floating: "):
        model_from_urdf(floats, root_joint="floating")
    # a floating joint below the root is no second root
    deeper = robot(link("a"), link("b"), link("c"), joint("r", "a", "b"),
                   joint("f", "b", "c", jtype="floating"))  # fmt: skip
    assert model_from_urdf(deeper, root_joint="floating").nv == 6 + 1 + 6


def test_locking_the_root_joint_is_refused_only_when_it_moves():
    text = robot(link("a"), link("b"), link("c"), joint("root_joint", "a", "b"),
                 joint("k", "b", "c"))  # fmt: skip
    with pytest.raises(ValueError, match=r"^locked_joints: joint 'root_joint' is floating; "):
        model_from_urdf(text.replace("root_joint", "j0"), root_joint="floating",
                        locked_joints={"root_joint": 0.0})  # fmt: skip
    welded = model_from_urdf(text, locked_joints={"root_joint": 0.5})
    assert welded.joint_names == ("k",) and welded.locked_joints == (("root_joint", 0.5),)


def test_mimic_couplings_and_locks_are_recorded_by_row():
    mimic = '\n    <mimic joint="j1" multiplier="2.5" offset="0.125"/>'
    text = robot(
        link("a", None), link("b"), link("c"), link("d"), link("e"),
        joint("j1", "a", "b"), joint("j2", "b", "c", extra=mimic),
        joint("j3", "c", "d"), joint("j4", "d", "e", extra=mimic.replace("j1", "j3")),
    )  # fmt: skip
    model = model_from_urdf(text)
    assert model.mimic == (("j2", "j1", 2.5, 0.125), ("j4", "j3", 2.5, 0.125))
    assert model.couplings == ()
    assert model_from_urdf(text, mimic="independent").mimic == ()
    # a locked leader takes its mimic joint with it: j4 = 2.5 * 0.5 + 0.125
    locked = model_from_urdf(text, locked_joints={"j3": 0.5})
    assert locked.mimic == (("j2", "j1", 2.5, 0.125),)
    assert dict(locked.locked_joints) == {"j3": 0.5, "j4": 2.5 * 0.5 + 0.125}
    assert locked.joint_names == ("j1", "j2")


def test_rotors_are_couplings_not_mimics_and_armature_folds_them():
    text = robot(link("a", None), link("b"), joint("j", "a", "b"))
    rotor = {"j": {"gear_ratio": 10.0, "mass": 0.1, "inertia": [1e-5, 1e-5, 2e-5, 0, 0, 0]}}
    model = model_from_urdf(text, rotors=rotor)
    assert model.couplings == (("j_rotor", "j", 10.0, 0.0),)
    assert model.mimic == () and model.armature == ()
    folded = model_from_urdf(text, rotors=rotor, rotor_model="armature")
    assert [name for name, _ in folded.armature] == ["j"]
    # locking another joint leaves the rotor's coupling
    longer = robot(link("a", None), link("b"), link("c"), joint("j", "a", "b"),
                   joint("k", "b", "c"))  # fmt: skip
    locked = model_from_urdf(longer, rotors=rotor, locked_joints={"k": 0.25})
    assert locked.couplings == (("j_rotor", "j", 10.0, 0.0),)
    assert locked.locked_joints == (("k", 0.25),)


def test_a_closed_chain_keeps_its_loops_and_independent_flags():
    text = robot_path("four_bar").read_text()
    model = model_from_urdf(text)
    assert [loop.name for loop in model.loops] == ["closure"]
    assert model.independent_flags == ()
    flagged = text.replace('<joint name="crank"', '<joint name="crank" independent="true"', 1)
    assert model_from_urdf(flagged).independent_flags == (("crank", True),)


def test_an_off_axis_centre_of_mass_weighs_on_its_side():
    """About the world's y, a mass m at x = d: V = m g z = -m g d sin q, so g(0) = -m g d."""
    text = robot(
        link("a", None), link("b", _inertial(2.0, xyz="0.5 0 0")), link("c", _inertial(0.5)),
        joint("r", "a", "b", axis="0 1 0", xyz="0 0 0", rpy="0 0 0"),
        joint("w", "b", "c", jtype="fixed", xyz="0 0 0.25", rpy="0 0 0"),  # merged, on the axis' z
    )  # fmt: skip
    dyn = Dynamics.from_urdf(text)
    assert dyn.gravity(np.zeros(1))[0] == pytest.approx(-2.0 * 9.81 * 0.5, rel=1e-14)
    # about y: I_yy 0.1 + 2 * 0.5^2 of b, 0.1 + 0.5 * 0.25^2 of c, merged
    assert dyn.mass_matrix(np.zeros(1))[0, 0] == pytest.approx(0.6 + 0.13125, rel=1e-14)


def _geared(flag: str) -> str:
    """A knee and its rotor, both on the thigh, coupled 9:1 (docs/rotors.md)."""
    return robot(
        link("thigh", None), link("shank"), link("rotor"),
        joint("knee", "thigh", "shank", jtype="continuous").replace(
            'type="continuous"', f'type="continuous"{flag}'
        ),
        joint("rotor_j", "thigh", "rotor", jtype="continuous"),
        '  <coupling name="gear"><predecessor link="shank"/><successor link="rotor"/>'
        '<ratio value="9.0"/></coupling>\n',
    )  # fmt: skip


def test_a_coupling_follows_the_independent_flags():
    assert model_from_urdf(_geared("")).couplings == (("rotor_j", "knee", 9.0, 0.0),)
    (entry,) = model_from_urdf(_geared(' independent="false"')).couplings
    assert entry[:2] == ("knee", "rotor_j") and entry[2] == pytest.approx(1 / 9, rel=1e-15)
