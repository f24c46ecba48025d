"""dynamics.couplings read directly: the elements, the datasheet entries and their bounds.

The rotor tests go through Dynamics.from_urdf and match messages by their middle; here each
reader's result is compared with what the XML or the mapping says, messages in full (the
element's path included), and every bound on both sides: the inertia's tolerance of -1e-12
relative to max(1, largest moment) exactly at it and at the next double beyond, a mass of 0
and the smallest negative double.
"""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from coriolis_ros.dynamics import URDFError
from coriolis_ros.dynamics import couplings as cp

GOOD = {"gear_ratio": 9.0, "inertia": [1e-4, 1e-4, 2e-4, 0, 0, 0], "mass": 0.1}


def robot(*parts: str) -> ET.Element:
    return ET.fromstring('<robot name="r">' + "".join(parts) + "</robot>")


def coupling(name="g", pred="a", succ="rot", ratio: str | None = "9") -> str:
    ratio_elem = "" if ratio is None else f'<ratio value="{ratio}"/>'
    named = "" if name is None else f' name="{name}"'
    return (f'<coupling{named}><predecessor link="{pred}"/><successor link="{succ}"/>'
            f"{ratio_elem}</coupling>")  # fmt: skip


def test_read_couplings_gives_the_elements_in_order_with_the_default_ratio():
    out = cp.read_couplings(robot(coupling(), coupling("h", "b", "rot2", None),
                                  coupling("k", "c", "d", "-2.5")))  # fmt: skip
    assert out == [cp.Coupling("g", "a", "rot", 9.0), cp.Coupling("h", "b", "rot2", 1.0),
                   cp.Coupling("k", "c", "d", -2.5)]  # fmt: skip
    with pytest.raises(dataclasses.FrozenInstanceError):
        out[0].ratio = 2.0


@pytest.mark.parametrize(
    "parts, message",
    [
        ((coupling(), coupling(None)), "/robot/coupling[2]: a <coupling> has no name attribute"),
        ((coupling(None),), "/robot/coupling[1]: a <coupling> has no name attribute"),
        ((coupling(), coupling()), "/robot/coupling[@name='g']: duplicate coupling name 'g'"),
        (('<coupling name="g"><predecessor link="a"/></coupling>',),
         "/robot/coupling[@name='g']: needs <successor link=\"...\"/>"),
        (('<coupling name="g"><predecessor/><successor link="a"/></coupling>',),
         "/robot/coupling[@name='g']: needs <predecessor link=\"...\"/>"),
        ((coupling(ratio="x"),), "/robot/coupling[@name='g']/ratio: value 'x' is not a number"),
        (('<coupling name="g"><predecessor link="a"/><successor link="b"/><ratio/></coupling>',),
         "/robot/coupling[@name='g']/ratio: value None is not a number"),
        ((coupling(ratio="9.999999999999997e-07"),),
         "/robot/coupling[@name='g']/ratio: the ratio must be finite and nonzero, between 1e-06 "
         "and 1e+06 in magnitude, got 9.999999999999997e-07"),
        ((coupling(ratio="-1000000.0000000001"),),
         "/robot/coupling[@name='g']/ratio: the ratio must be finite and nonzero, between 1e-06 "
         "and 1e+06 in magnitude, got -1000000.0000000001"),
    ],
)  # fmt: skip
def test_read_couplings_refuses_naming_the_element(parts, message):
    with pytest.raises(URDFError) as info:
        cp.read_couplings(robot(*parts))
    assert str(info.value) == message


def test_the_ratio_bounds_are_inclusive_and_the_next_doubles_beyond_are_not():
    assert math.nextafter(1e-6, 0.0) == 9.999999999999997e-07
    assert math.nextafter(1e6, math.inf) == 1000000.0000000001
    for ratio in (1e-6, -1e-6, 1e6, -1e6):
        assert cp.read_couplings(robot(coupling(ratio=repr(ratio))))[0].ratio == ratio
        assert cp.check_rotor("j", {**GOOD, "gear_ratio": ratio})[0] == ratio
    for ratio in (9.999999999999997e-07, -1000000.0000000001):
        with pytest.raises(ValueError, match="gear_ratio must be nonzero, between 1e-06 and"):
            cp.check_rotor("j", {**GOOD, "gear_ratio": ratio})


def inertia_at(smallest: float, largest: float) -> list[float]:
    """A diagonal inertia [smallest, largest / 2, largest]: its principal moments, exactly."""
    values = [smallest, 0.5 * largest, largest, 0.0, 0.0, 0.0]
    eig = np.linalg.eigvalsh(np.diag(values[:3]))
    assert eig[0] == smallest and eig[-1] == largest
    return values


@pytest.mark.parametrize("largest", [0.5, 1.0, 4.0, 1e3])
def test_the_inertia_tolerance_both_sides(largest):
    """A principal moment down to -1e-12 max(1, largest) is round-off (accepted); the next
    double below it is refused, the moments named (the middle one is not the largest)."""
    edge = -1e-12 * max(1.0, largest)
    ratio, inertia, mass = cp.check_rotor("j", {**GOOD, "inertia": inertia_at(edge, largest)})
    assert (ratio, inertia, mass) == (9.0, [edge, 0.5 * largest, largest, 0.0, 0.0, 0.0], 0.1)
    beyond = math.nextafter(edge, -math.inf)
    with pytest.raises(ValueError) as info:
        cp.check_rotor("j", {**GOOD, "inertia": inertia_at(beyond, largest)})
    moments = np.array2string(np.array([beyond, 0.5 * largest, largest]), precision=6)
    assert str(info.value) == (
        f"rotors: joint 'j': inertia is not positive semidefinite (principal moments {moments})"
    )


def test_the_moments_are_named_to_six_digits():
    with pytest.raises(ValueError) as info:
        cp.check_rotor("j", {**GOOD, "inertia": [-1.23456789e-3, 1.0, 1.0, 0, 0, 0]})
    assert "(principal moments [-0.001235  1.        1.      ])" in str(info.value)


def test_mass_zero_and_default_accepted_the_smallest_negative_refused():
    assert cp.check_rotor("j", {**GOOD, "mass": 0.0})[2] == 0.0
    assert cp.check_rotor("j", {"gear_ratio": 2.0, "inertia": GOOD["inertia"]})[2] == 0.0
    with pytest.raises(ValueError) as info:
        cp.check_rotor("j", {**GOOD, "mass": -5e-324})
    assert str(info.value) == "rotors: joint 'j': mass must be >= 0, got -5e-324"


def test_add_rotors_writes_the_link_and_joint_the_datasheet_says():
    root = robot('<link name="base"/><link name="a"/>',
                 '<joint name="ja" type="revolute"><parent link="base"/><child link="a"/>'
                 '<origin xyz="0.1 0 0" rpy="0 0 0.5"/><axis xyz="0 1 0"/></joint>')  # fmt: skip
    out = cp.add_rotors(root, {"ja": {"gear_ratio": -7.0, "inertia": [1, 2, 3, 0.1, 0.2, 0.3],
                                      "mass": 0.25}})  # fmt: skip
    assert out == [cp.Coupling("ja_rotor", "a", "ja_rotor", -7.0)]
    link = root.find("link[@name='ja_rotor']")
    inertia = link.find("inertial/inertia").attrib
    assert inertia == {"ixx": "1.0", "iyy": "2.0", "izz": "3.0", "ixy": "0.1", "ixz": "0.2",
                       "iyz": "0.3"}  # fmt: skip
    assert link.find("inertial/mass").get("value") == "0.25"
    joint = root.find("joint[@name='ja_rotor']")
    assert joint.get("type") == "continuous" and joint.find("parent").get("link") == "base"
    assert joint.find("child").get("link") == "ja_rotor"
    assert joint.find("origin").attrib == {"xyz": "0.1 0 0", "rpy": "0 0 0.5"}
    assert joint.find("axis").attrib == {"xyz": "0 1 0"}
    assert cp.add_rotors(root, {}) == [] and cp.add_rotors(root, None) == []


def test_independent_flags_take_two_spellings_of_true():
    root = robot('<joint name="ja" independent="true"/><joint name="jb" independent="True"/>'
                 '<joint name="jc" independent="false"/><joint name="jd" independent="yes"/>'
                 '<joint name="je"/>')  # fmt: skip
    assert cp.independent_flags(root) == {"ja": True, "jb": True, "jc": False, "jd": False}


@pytest.mark.parametrize(
    "text, message",
    [
        ("rotors: [1, 2]", "expected a mapping of joint names to {gear_ratio, inertia, mass}"),
        ("{}", "expected a mapping of joint names to {gear_ratio, inertia, mass}"),
        ("{1: {gear_ratio: 2}}", "joint names must be strings"),
        ("a: [", "not valid YAML"),
    ],
)
def test_load_rotors_messages_name_the_file(tmp_path, text, message):
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        cp.load_rotors(path)
    assert str(info.value).startswith(f"rotors file {path}: {message}")


def test_load_rotors_of_a_missing_file_and_a_directory_give_the_reason(tmp_path):
    with pytest.raises(ValueError) as info:
        cp.load_rotors(tmp_path / "none.yaml")
    assert str(info.value) == f"rotors file {tmp_path / 'none.yaml'}: No such file or directory"
    with pytest.raises(ValueError) as info:
        cp.load_rotors(tmp_path)
    assert str(info.value) == f"rotors file {tmp_path}: Is a directory"
    (tmp_path / "r.yaml").write_text("rotors: {j: {gear_ratio: 2}}\nother: 1\n")
    assert cp.load_rotors(tmp_path / "r.yaml") == {"rotors": {"j": {"gear_ratio": 2}}, "other": 1}


def test_which_joint_follows_by_the_independent_flags():
    """The successor's joint follows, unless the predecessor's is marked independent="false":
    then the predecessor's follows at 1 / ratio. As in urdfdom's fork, a joint without the
    attribute is independent; both marked "false" is refused, naming the coupling."""
    from types import SimpleNamespace

    joints = {name: SimpleNamespace(name=name, type=kind, parent="base")
              for name, kind in (("ja", "revolute"), ("jr", "continuous"))}  # fmt: skip
    parent_joint = {"a": "ja", "rot": "jr"}
    couplings = [cp.Coupling("g", "a", "rot", 8.0)]
    for flags in ({}, {"jr": True}, {"ja": True}, {"ja": True, "jr": True}, {"jr": False},
                  {"ja": True, "jr": False}):  # fmt: skip
        assert cp.resolve_couplings(couplings, joints, parent_joint, flags) == (
            {"jr": ("ja", 8.0)},
            {},
        ), flags
    for flags in ({"ja": False, "jr": True}, {"ja": False}):  # the successor unmarked: independent
        swapped = cp.resolve_couplings(couplings, joints, parent_joint, flags)
        assert swapped == ({"ja": ("jr", 0.125)}, {}), flags
    with pytest.raises(URDFError) as info:
        cp.resolve_couplings(couplings, joints, parent_joint, {"ja": False, "jr": False})
    assert str(info.value) == (
        "/robot/coupling[@name='g']: both joints, 'ja' and 'jr', are marked "
        'independent="false": one of the two must be the coordinate'
    )


def test_the_ways_to_choose_followers_are_bounded_both_sides():
    """_best_choice enumerates the ways; at most MAX_CHOICES (4096) are tried, beyond that
    the couplings are refused naming them. Two couplings with a marked joint each and 63 or
    more unmarked alternatives: 64 x 64 = 4096 ways choose the two marked joints, 17 x 241
    = 4097 ways are refused."""
    from types import SimpleNamespace

    def found(name):
        return (SimpleNamespace(name=name), f"/robot/coupling[@name='{name}']", "base", [], [])

    def opts(head, others):
        return [(head, 1)] + [(f"{head}_{i}", 0) for i in range(others)]

    assert cp.MAX_CHOICES == 4096
    group = [found("a"), found("b")]
    assert cp._best_choice(group, [opts("ja", 63), opts("jb", 63)], [0, 1]) == ["ja", "jb"]
    with pytest.raises(URDFError) as info:
        cp._best_choice(group, [opts("ja", 16), opts("jb", 240)], [0, 1])
    assert str(info.value) == (
        "couplings 'a', 'b': 4097 ways to choose the joints that follow; mark exactly those "
        'joints independent="false"'
    )


def test_a_tie_between_couplings_names_at_most_three_ways():
    """Two couplings with two marked joints each, none shared: four ways tie; the message
    names the couplings and the first three ways."""
    from types import SimpleNamespace

    group = [(SimpleNamespace(name=n), f"/robot/coupling[@name='{n}']", "base", [], [])
             for n in ("a", "b")]  # fmt: skip
    options = [[("x", 1), ("y", 1)], [("z", 1), ("w", 1)]]
    with pytest.raises(URDFError) as info:
        cp._best_choice(group, options, [0, 1])
    assert str(info.value) == (
        "couplings 'a', 'b': the joints that follow can be chosen in more than one way "
        '(x, z; x, w; y, z); mark exactly those joints independent="false"'
    )
