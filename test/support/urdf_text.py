"""Test helpers shared by several test modules (from test_dynamics_urdf_errors.py)."""

from __future__ import annotations


INERTIAL = """
    <inertial>
      <origin xyz="0.1 0.02 -0.03" rpy="0.1 0.2 0.3"/>
      <mass value="1.5"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0.0" iyy="0.03" iyz="-0.002" izz="0.025"/>
    </inertial>"""


def link(name: str, inertial: str | None = INERTIAL) -> str:
    return f'  <link name="{name}">{inertial or ""}\n  </link>\n'


def joint(
    name: str,
    parent: str,
    child: str,
    jtype: str = "revolute",
    axis: str | None = "0 0 1",
    xyz: str = "0.1 0.2 0.3",
    rpy: str = "0.3 -0.2 0.1",
    extra: str = "",
) -> str:
    axis_xml = f'\n    <axis xyz="{axis}"/>' if axis is not None else ""
    limit = (
        '\n    <limit lower="-2" upper="2" effort="10" velocity="5"/>'
        if jtype in ("revolute", "prismatic")
        else ""
    )
    return (
        f'  <joint name="{name}" type="{jtype}">\n'
        f'    <parent link="{parent}"/>\n    <child link="{child}"/>\n'
        f'    <origin xyz="{xyz}" rpy="{rpy}"/>{axis_xml}{limit}{extra}\n  </joint>\n'
    )


def robot(*parts: str, name: str = "edge") -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "".join(parts) + "</robot>\n"


def four_bar_with_rotor(four_bar_text: str) -> str:
    """The bundled four-bar with a geared rotor on its crank: a link ``rotor`` on the base,
    spinning about the crank's axis, coupled to the crank at ratio 9 (a <coupling>)."""
    return four_bar_text.replace(
        '<loop name="closure"',
        '<link name="rotor"><inertial><mass value="0.05"/><inertia ixx="2e-5" ixy="0" '
        'ixz="0" iyy="3e-5" iyz="0" izz="2e-5"/></inertial></link>'
        '<joint name="rotor" type="continuous"><parent link="base"/><child link="rotor"/>'
        '<origin rpy="0 -1.5707963267948966 0"/><axis xyz="0 1 0"/></joint>'
        '<coupling name="gear"><predecessor link="crank_link"/><successor link="rotor"/>'
        '<ratio value="9.0"/></coupling><loop name="closure"',
    )


def welded_four_bar(four_bar_text: str) -> str:
    """The bundled four-bar with its coupler cut in two halves welded by a fixed loop:
    coupler_b turns on the rocker's end and is held to the coupler's far end, pointing back
    along it (the loop's frame P turned half a turn about y)."""
    rod = (
        '<link name="coupler_b"><inertial><origin xyz="0.15 0 0"/><mass value="0.3"/>'
        '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="3e-3" iyz="0" izz="3e-3"/></inertial></link>'
        '<joint name="rocker_coupler" type="continuous"><parent link="rocker_link"/>'
        '<child link="coupler_b"/><origin xyz="0.4 0 0" rpy="0 -2.07 0"/>'
        '<axis xyz="0 1 0"/></joint>'
    )
    return four_bar_text.replace(
        '<loop name="closure" type="revolute">', rod + '<loop name="closure" type="fixed">'
    ).replace(
        '<predecessor link="coupler_link"><origin xyz="0.6 0 0"/></predecessor>\n'
        '    <successor link="rocker_link"><origin xyz="0.4 0 0"/></successor>',
        '<predecessor link="coupler_link"><origin xyz="0.6 0 0" rpy="0 3.141592653589793 0"/>'
        '</predecessor><successor link="coupler_b"/>',
    )


# a 2 kg point mass on three prismatic joints: M = 2 1, C = 0
POINT_MASS = """<robot name="point_mass">
  <link name="world_link"/>
  <link name="x"/><link name="y"/>
  <link name="mass"><inertial><mass value="2.0"/><origin xyz="0 0 0"/>
    <inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="jx" type="prismatic"><parent link="world_link"/><child link="x"/>
    <axis xyz="1 0 0"/><limit lower="-10" upper="10" effort="1" velocity="1"/></joint>
  <joint name="jy" type="prismatic"><parent link="x"/><child link="y"/>
    <axis xyz="0 1 0"/><limit lower="-10" upper="10" effort="1" velocity="1"/></joint>
  <joint name="jz" type="prismatic"><parent link="y"/><child link="mass"/>
    <axis xyz="0 0 1"/><limit lower="-10" upper="10" effort="1" velocity="1"/></joint>
</robot>"""


SMALL_ROTOR = dict(ixx="1.2e-5", iyy="1.2e-5", izz="2e-5", ixy="0", ixz="0", iyz="0")


def rotor_beside_link(com="0 0 0", mass="0.1", inertia=None, kind="continuous", extra=""):
    """A link 'a' on joint 'ja' and a rotor 'rot' on joint 'jr' (``kind``), both on the world
    about z, the rotor following 'ja' with ratio 9 (coupling 'g'); the rotor's inertia
    (``inertia``, default SMALL_ROTOR) about its centre ``com``; ``extra`` more elements."""
    i = inertia or SMALL_ROTOR
    return f"""<robot name="r"><link name="base"/>
      <link name="a"><inertial><mass value="1"/>
        <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="ja" type="continuous"><parent link="base"/><child link="a"/>
        <axis xyz="0 0 1"/></joint>
      <link name="rot"><inertial><origin xyz="{com}"/><mass value="{mass}"/>
        <inertia {" ".join(f'{k}="{v}"' for k, v in i.items())}/></inertial></link>
      <joint name="jr" type="{kind}"><parent link="base"/><child link="rot"/>
        <axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
      {extra}
      <coupling name="g"><predecessor link="a"/><successor link="rot"/><ratio value="9"/>
      </coupling></robot>"""


# Three joints (revolute about z, revolute about y, prismatic along x), each link with
# INERTIAL: the identification tests' small arm.
THREE_JOINTS = robot(
    link("base", None), link("a"), link("b"), link("c"),
    joint("j1", "base", "a"), joint("j2", "a", "b", axis="0 1 0"),
    joint("j3", "b", "c", jtype="prismatic", axis="1 0 0"),
    name="three",
)  # fmt: skip
