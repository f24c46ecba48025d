"""URDF hygiene: xacro input is named as such, every error names its element path, and an
inertia no rigid body can have is used as written with one warning naming the link.

Expected values are written by hand here (paths, and a pendulum's M = I_zz + m r²).
"""

from __future__ import annotations

import importlib.metadata
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics, URDFError
from coriolis_ros.dynamics.urdf_checks import (
    URDFInertiaWarning,
    parser_error_message,
    triangle_violation,
    warn_if_not_rigid_body,
)

XACRO_MESSAGE = "this is xacro: run `xacro` first"

INERTIAL = (
    '<inertial><origin xyz="0.1 0 0" rpy="0 0 0"/><mass value="{mass}"/>'
    '<inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>'
)


def link(name, mass=1.0, ixx=0.01, iyy=0.02, izz=0.025, inertial=None):
    body = INERTIAL.format(mass=mass, ixx=ixx, iyy=iyy, izz=izz) if inertial is None else inertial
    return f'<link name="{name}">{body}</link>'


def joint(name, parent, child, jtype="revolute", axis="0 0 1", origin='xyz="0 0 0.1" rpy="0 0 0"'):
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin {origin}/><axis xyz="{axis}"/>'
        '<limit lower="-2" upper="2" effort="10" velocity="5"/></joint>'
    )


def robot(*parts, attrs=""):
    return f'<?xml version="1.0"?><robot name="r"{attrs}>' + "".join(parts) + "</robot>"


def chain(**j2):
    links = link("base"), link("l1"), link("l2")
    return robot(*links, joint("j1", "base", "l1"), joint("j2", "l1", "l2", **j2))


def error_of(urdf) -> str:
    with pytest.raises(URDFError) as info:
        Dynamics.from_urdf(urdf)
    return str(info.value)


def erd_robots_dir() -> Path:
    dist = importlib.metadata.distribution("example-robot-data")
    return Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))


# ----------------------------------------------------------------------------- xacro

XACRO_NS = ' xmlns:xacro="http://www.ros.org/wiki/xacro"'


def xacro_error(*parts) -> str:
    """The error for a robot with ``parts``, a link l1 on a joint j1 to ``base``, and the
    xacro namespace; it must be the xacro message."""
    msg = error_of(robot(*parts, joint("j1", "base", "l1"), attrs=XACRO_NS))
    assert msg.startswith(XACRO_MESSAGE), msg
    return msg


def test_xacro_file_with_macros_is_named_xacro():
    msg = xacro_error(
        '<xacro:property name="m" value="1.5"/>',
        '<xacro:macro name="arm_link" params="name"><link name="${name}"/></xacro:macro>',
        '<xacro:arm_link name="l1"/>',
        link("base"),
    )
    assert "/robot/xacro:property[@name='m']" in msg


def test_xacro_element_among_unnamed_siblings_is_named_by_its_position():
    """Unnamed siblings of one tag are numbered from 1 (XPath), from two of them on."""
    visual = '<visual><geometry><box size="1 1 1"/></geometry></visual>'
    inner = '<visual><xacro:insert_block name="shape"/></visual>'
    msg = xacro_error(f'<link name="base">{visual}{inner}</link>', link("l1"))  # the 2nd: [2]
    assert "(/robot/link[@name='base']/visual[2]/xacro:insert_block[@name='shape'] is" in msg


def test_any_namespace_uri_with_xacro_in_it_is_xacro():
    """xacro goes by the prefix: xmlns:xacro="xacro" is expanded like the usual URI."""
    text = robot(
        '<xacro:property name="m" value="1.5"/>', link("base"), attrs=' xmlns:xacro="xacro"'
    )
    msg = error_of(text)
    assert msg.startswith(XACRO_MESSAGE) and "/robot/xacro:property[@name='m']" in msg, msg


def test_xacro_prefix_without_namespace_declaration_is_named_xacro():
    """<xacro:include> without xmlns:xacro does not even parse as XML (unbound prefix)."""
    text = robot('<xacro:include filename="$(find my_robot)/urdf/arm.xacro"/>', link("base"))
    assert XACRO_MESSAGE in error_of(text)


def test_substitution_in_a_dynamics_value_is_named_xacro_with_its_path():
    text = robot(
        link("base"),
        link("l1", inertial=INERTIAL.format(mass="${arm_mass}", ixx=1, iyy=1, izz=1)),
        joint("j1", "base", "l1"),
    )
    msg = error_of(text)
    assert XACRO_MESSAGE in msg
    assert "/robot/link[@name='l1']/inertial/mass[@value]" in msg and "${arm_mass}" in msg


def test_find_substitution_is_named_xacro():
    visual = (
        '<visual><geometry><mesh filename="$(find my_robot)/meshes/l1.stl"/></geometry></visual>'
    )
    text = robot(link("base"), f'<link name="l1">{visual}</link>', joint("j1", "base", "l1"))
    msg = error_of(text)
    assert XACRO_MESSAGE in msg and "/robot/link[@name='l1']/visual/geometry/mesh" in msg


def test_escaped_substitution_in_plugin_text_is_fine():
    """xacro turns $${x} into a literal ${x}: plugin text may keep one after expansion."""
    plugin = "<gazebo><plugin name='p' filename='libp.so'><cmd>echo ${HOME}</cmd></plugin></gazebo>"
    text = robot(link("base"), link("l1"), joint("j1", "base", "l1"), plugin)
    assert Dynamics.from_urdf(text).nv == 1


def test_commented_xacro_and_a_bare_namespace_declaration_are_fine():
    """xacro's own output keeps xmlns:xacro and the comments of the source: not xacro."""
    text = robot(
        "<!-- <xacro:leg prefix='FL' x='${0.1}'/> $(find pkg) -->",
        link("base"),
        link("l1"),
        joint("j1", "base", "l1"),
        attrs=XACRO_NS,
    )
    assert Dynamics.from_urdf(text).nv == 1


def test_namespace_declaration_adds_a_hint_to_other_errors():
    msg = error_of(robot(attrs=XACRO_NS))  # like example-robot-data's ur3.urdf: no links
    assert "no <link>" in msg and "xmlns:xacro" in msg and "run `xacro` first" in msg
    assert "xmlns:xacro" not in error_of(robot())


def test_real_expanded_urdfs_with_xacro_leftovers_load():
    """example-robot-data files produced by xacro: xmlns:xacro on <robot>, xacro in comments."""
    base = erd_robots_dir()
    names = [
        "talos_data/robots/talos_full_v2.urdf",  # ${...} in comments
        "finger_edu_description/robots/finger_edu.urdf",  # <xacro:add_geometry> in a comment
        "tiago_description/robots/tiago_dual.urdf",
        "bolt_description/robots/bolt.urdf",
    ]
    for name in names:
        text = (base / name).read_text()
        assert "${" in text or "xacro:" in text, name  # the premise
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", URDFInertiaWarning)
            assert Dynamics.from_urdf(text).nv > 0, name


# ----------------------------------------------------------------------------- element paths

BAD_NUMBER = INERTIAL.format(mass=1, ixx="0.01x", iyy=1, izz=1)


@pytest.mark.parametrize(
    "urdf, path",
    [
        (chain(axis="0 0 0"), "/robot/joint[@name='j2']/axis"),
        (chain(axis="0 nan 1"), "/robot/joint[@name='j2']/axis"),
        (chain(origin='xyz="0 inf 0"'), "/robot/joint[@name='j2']/origin"),
        (chain(origin='xyz="0 0"'), "/robot/joint[@name='j2']/origin[@xyz]"),
        (chain(origin='rpy="a b c"'), "/robot/joint[@name='j2']/origin[@rpy]"),
        (chain(jtype="ball"), "/robot/joint[@name='j2']"),
        (
            robot(link("base"), link("l1", inertial=BAD_NUMBER), joint("j1", "base", "l1")),
            "/robot/link[@name='l1']/inertial/inertia[@ixx]",
        ),
        (
            robot(link("base"), link("l1", mass=-1), joint("j1", "base", "l1")),
            "/robot/link[@name='l1']/inertial/mass",
        ),
        (
            robot(link("base"), link("l1", mass="nan"), joint("j1", "base", "l1")),
            "/robot/link[@name='l1']/inertial/mass",
        ),
        (
            robot(link("base"), link("l1", ixx=-1), joint("j1", "base", "l1")),
            "/robot/link[@name='l1']/inertial/inertia",
        ),
        (
            robot(link("base"), link("l1", iyy="nan"), joint("j1", "base", "l1")),
            "/robot/link[@name='l1']/inertial/inertia",
        ),
        (
            robot(link("base"), link("l1"), joint("j1", "ghost", "l1")),
            "/robot/joint[@name='j1']/parent",
        ),
        (
            robot(link("base"), link("l1"), joint("j1", "base", "ghost")),
            "/robot/joint[@name='j1']/child",
        ),
        (
            robot(
                link("base"),
                link("l1"),
                link("l2"),
                joint("j1", "base", "l1"),
                joint("j2", "base", "l2"),
                joint("j3", "l1", "l2"),
            ),
            "/robot/joint[@name='j3']/child",
        ),
        (
            robot(link("a"), link("b"), link("c"), joint("j1", "a", "b"), joint("j1", "b", "c")),
            "/robot/joint[@name='j1']",
        ),
        (robot(link("a"), "<link/>", link("b")), "/robot/link[2]"),
        (
            robot(link("a"), link("b", inertial="<inertial><mass/></inertial>")),
            "/robot/link[@name='b']/inertial/mass",
        ),
        (
            robot(link("a"), link("b"), '<joint name="j" type="fixed"><child link="b"/></joint>'),
            "/robot/joint[@name='j']",
        ),
        (robot(link("a"), link("b")), "/robot"),  # several roots
        (robot(link("a"), link("b"), joint("j1", "a", "b"), joint("j2", "b", "a")), "/robot"),
        (robot(link("a")), "/robot"),  # no degree of freedom
        ('<model name="m"><link name="a"/></model>', "/model"),
    ],
)
def test_every_urdf_error_names_its_element_path(urdf, path):
    msg = error_of(urdf)
    assert re.match(re.escape(path) + r"[: ]", msg), (path, msg)


def test_parser_errors_without_a_location_are_reported_against_robot():
    reason = parser_error_message(ValueError("bad   value\n  here"))
    assert reason == "/robot: invalid URDF: bad value here"
    assert parser_error_message(KeyError()) == "/robot: invalid URDF: KeyError"
    located = parser_error_message(
        Exception("ParseError in /robot[@name='r']/joint[@name='j']:\n   no axis")
    )
    assert located == "/robot/joint[@name='j']: invalid URDF: no axis"


def test_a_wrong_count_of_numbers_is_named_singular_or_plural():
    one = robot(link("base"), link("l1", mass="1 2"), joint("j1", "base", "l1"))
    assert error_of(one) == (
        "/robot/link[@name='l1']/inertial/mass[@value]: expected 1 number, got 2: '1 2'"
    )
    three = robot(link("base"), link("l1"), joint("j1", "base", "l1", axis="0 1"))
    assert (
        error_of(three) == "/robot/joint[@name='j1']/axis[@xyz]: expected 3 numbers, got 2: '0 1'"
    )


def test_malformed_xml_names_its_position():
    msg = error_of('<robot name="x">\n<link name="a">\n</robot>')
    assert re.search(r"line 3, column \d+", msg), msg


# ----------------------------------------------------------------------------- inertia


def test_triangle_violation_by_hand():
    assert triangle_violation([1.0, 1.0, 3.0]) == pytest.approx(1.0)
    assert triangle_violation([3.0, 1.0, 1.0]) == pytest.approx(1.0)  # any order
    assert triangle_violation([1.0, 2.0, 3.0]) == 0.0  # a flat plate: on the boundary
    assert triangle_violation([0.0, 1.0, 1.0]) == 0.0  # a thin rod
    assert triangle_violation([0.0, 0.0, 0.0]) == 0.0  # a point mass
    assert triangle_violation([2.0, 4.0, 1.0]) == pytest.approx(1.0)  # 4 - 1 - 2, any order


def pendulum(izz, ixx=0.01, iyy=0.01, name="odd"):
    """One link at r = 0.1 m from a z axis: M = izz + m r² (gravity along the axis)."""
    return robot(
        link("base"),
        link(name, mass=2.0, ixx=ixx, iyy=iyy, izz=izz),
        joint("spin", "base", name, axis="0 0 1"),
    )


def load(urdf):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dyn = Dynamics.from_urdf(urdf)
    return dyn, [w for w in caught if issubclass(w.category, URDFInertiaWarning)]


def test_impossible_inertia_is_used_as_written_and_warned_about_naming_the_link():
    dyn, caught = load(pendulum(izz=0.03))  # 0.03 > 0.01 + 0.01
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "/robot/link[@name='odd']" in text and "triangle" in text
    q = np.array([0.7])
    assert dyn.mass_matrix(q)[0, 0] == pytest.approx(0.03 + 2.0 * 0.1**2, rel=1e-12)


@pytest.mark.parametrize(
    "izz, warns",
    [
        (0.02, False),  # I3 = I1 + I2: a flat plate, physical
        (0.02 * (1 + 1e-9), False),  # round-off above the boundary
        (0.02 * (1 + 1e-3), True),  # just beyond
        (0.0199, False),
        # the tolerance, 1e-6 of the largest moment + 1e-12 kg m^2: an excess of 0.9e-6 and
        # 1.1e-6 of the sum of the two others
        (0.02 * (1 + 0.9e-6), False),
        (0.02 * (1 + 1.1e-6), True),
    ],
)
def test_triangle_inequality_bound_both_sides(izz, warns):
    _, caught = load(pendulum(izz=izz))
    assert bool(caught) is warns, [str(w.message) for w in caught]


@pytest.mark.parametrize("excess, warns", [(0.9e-12, False), (1.1e-12, True)])
def test_triangle_tolerance_of_round_off_moments(excess, warns):
    """Moments of ~1e-13 kg m^2 (round-off for a point mass): the absolute 1e-12 decides."""
    _, caught = load(pendulum(izz=2e-13 + excess, ixx=1e-13, iyy=1e-13))
    assert bool(caught) is warns, [str(w.message) for w in caught]


def test_warn_if_not_rigid_body_says_whether_it_warned():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert warn_if_not_rigid_body("/robot/link[@name='a']", [0.01, 0.01, 0.03]) is True
        assert warn_if_not_rigid_body("/robot/link[@name='b']", [0.01, 0.01, 0.02]) is False
    assert [str(w.message).split(":")[0] for w in caught] == ["/robot/link[@name='a']"]


def test_inertia_warning_in_full():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_if_not_rigid_body("/robot/link[@name='a']", [0.0300001234, 0.01, 0.01])
    assert [str(w.message) for w in caught] == [
        "/robot/link[@name='a']: inertia with principal moments [0.01 0.01 0.03] breaks the "
        "triangle inequality (largest exceeds the sum of the other two by 0.01): no rigid body "
        "has it; used as written"
    ]


def test_triangle_tolerance_exactly_and_the_next_double():
    """Moments (0, 0, c): the excess c equals the tolerance 1e-6 c + 1e-12 exactly in doubles
    at c = 1.000001000001e-12; there it is round-off, one double more it is not."""
    c = 1.000001000001e-12
    assert c == 1e-6 * c + 1e-12
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert warn_if_not_rigid_body("/robot/link[@name='a']", [0.0, c, 0.0]) is False
        assert warn_if_not_rigid_body("/robot/link[@name='b']", [0.0, np.nextafter(c, 1), 0.0])
    assert len(caught) == 1


def test_warned_once_per_link_under_the_default_filter():
    urdf = robot(
        link("base"),
        link("a", ixx=0.01, iyy=0.01, izz=0.05),
        link("b", ixx=0.2, iyy=0.01, izz=0.01),
        joint("ja", "base", "a"),
        joint("jb", "a", "b", axis="1 0 0"),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            Dynamics.from_urdf(urdf)
    messages = sorted(str(w.message) for w in caught if w.category is URDFInertiaWarning)
    assert len(messages) == 2, messages
    assert "link[@name='a']" in messages[0] and "link[@name='b']" in messages[1]
