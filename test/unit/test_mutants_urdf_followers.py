"""dynamics.urdf_followers at its edges: a mimic joint locked explicitly next to its leader
must sit where the leader's lock puts it (m x + o) to 1e-9 relative to max(1, |m x + o|),
on both sides, below and above 1; and chains through mimic joints and couplings compose
q = m1 (m2 q + o2) + o1, checked against the positions the full tree is built at."""

from __future__ import annotations

import math

import pytest
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import Dynamics

TOLERANCE = 1e-9  # the module's rule: relative to max(1, |expected position|)


def mimic_pair(multiplier: float, offset: float, jtype: str = "prismatic") -> str:
    return robot(
        link("base", None), link("l1"), link("l2"), link("l3"),
        joint("j1", "base", "l1", jtype=jtype),
        joint("j2", "l1", "l2", jtype=jtype,
              extra=f'\n    <mimic joint="j1" multiplier="{multiplier!r}" offset="{offset!r}"/>'),
        joint("j3", "l2", "l3", axis="0 1 0"),
        name="locks",
    )  # fmt: skip


def last_within(expected: float, allowed: float, direction: float) -> float:
    """The farthest double from ``expected`` in ``direction`` with |x - expected| <= allowed."""
    x = expected + direction * allowed
    while abs(x - expected) > allowed:
        x = math.nextafter(x, expected)
    while abs(math.nextafter(x, direction * math.inf) - expected) <= allowed:
        x = math.nextafter(x, direction * math.inf)
    return x


@pytest.mark.parametrize("leader, multiplier, offset", [(0.0, 1.0, 0.0), (0.03, 1.0, 0.0),
                                                        (0.2, -2.0, 0.1), (40.0, 2.5, 3.0),
                                                        (-30.0, 4.0, -5.0)])  # fmt: skip
def test_an_explicit_follower_lock_at_and_beyond_the_tolerance(leader, multiplier, offset):
    """Expected m x + o: 0 (then exactly ±1e-9 is the last double within), 0.03 and -0.3
    (absolute 1e-9), 103 and -125 (relative: 1.03e-7 and 1.25e-7), accepted at the tolerance
    either way, refused at the next double beyond."""
    urdf = mimic_pair(multiplier, offset)
    expected = multiplier * leader + offset
    allowed = TOLERANCE * max(1.0, abs(expected))
    for direction in (1.0, -1.0):
        at = last_within(expected, allowed, direction)
        dyn = Dynamics.from_urdf(urdf, locked_joints={"j1": leader, "j2": at})
        assert dyn.joint_names == ("j3",)
        assert dyn.locked_joints["j2"] == pytest.approx(expected, abs=0.0)
        beyond = math.nextafter(at, direction * math.inf)
        with pytest.raises(ValueError, match=f"joint 'j2' mimics 'j1' and must be locked at "
                           f"{expected!r}"):  # fmt: skip
            Dynamics.from_urdf(urdf, locked_joints={"j1": leader, "j2": beyond})
    # well inside a relative tolerance but beyond an absolute 1e-9 (|expected| > 1 only)
    if abs(expected) > 1.0:
        inside = expected + 0.5 * allowed
        assert Dynamics.from_urdf(urdf, locked_joints={"j1": leader, "j2": inside}).nv == 1


def test_the_follower_of_a_locked_leader_is_locked_at_m_x_plus_o():
    urdf = mimic_pair(-2.0, 0.1)
    dyn = Dynamics.from_urdf(urdf, locked_joints={"j1": 0.2})
    assert dyn.locked_joints == {"j1": 0.2, "j2": -2.0 * 0.2 + 0.1}
    assert dyn.joint_names == ("j3",)


def _gears(extra: str, jr_extra: str = "", jr2_extra: str = "") -> str:
    """Joints ja (base -> a), jb (a -> b), jr (base -> rot), jr2 (base -> rot2); the rotors'
    joints may carry a <mimic>; ``extra`` holds <coupling> elements."""
    inertial = ('<inertial><mass value="0.1"/>'
                '<inertia ixx="1e-4" iyy="1e-4" izz="2e-4" ixy="0" ixz="0" iyz="0"/></inertial>')
    links = "".join(f'<link name="{n}">{inertial}</link>' for n in ("a", "b", "rot", "rot2"))
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
    return (
        f'<robot name="gears"><link name="base"/>{links}'
        f'<joint name="ja" type="revolute"><parent link="base"/><child link="a"/>'
        f'<axis xyz="0 0 1"/>{limit}</joint>'
        f'<joint name="jb" type="revolute"><parent link="a"/><child link="b"/>'
        f'<origin xyz="0 0 1"/><axis xyz="0 1 0"/>{limit}</joint>'
        f'<joint name="jr" type="continuous"><parent link="base"/><child link="rot"/>'
        f'<axis xyz="0 0 1"/>{jr_extra}</joint>'
        f'<joint name="jr2" type="continuous"><parent link="base"/><child link="rot2"/>'
        f'<origin xyz="0.1 0 0"/><axis xyz="0 0 1"/>{jr2_extra}</joint>'
        f"{extra}</robot>"
    )


def _coupling(pred: str, succ: str, ratio: float, name: str) -> str:
    return (f'<coupling name="{name}"><predecessor link="{pred}"/><successor link="{succ}"/>'
            f'<ratio value="{ratio!r}"/></coupling>')  # fmt: skip


def _positions(dyn, qbar) -> dict[str, float]:
    return dict(zip(dyn.tree_joint_names, dyn.full_position(qbar), strict=True))


def test_a_mimic_joint_of_a_coupled_joint_follows_its_leader_through_both():
    """jr = 9 ja (coupling), jr2 mimics jr with 2 and 0.5: jr2 = 2 (9 ja) + 0.5 = 18 ja + 0.5."""
    urdf = _gears(_coupling("a", "rot", 9.0, "g"),
                  jr2_extra='<mimic joint="jr" multiplier="2" offset="0.5"/>')  # fmt: skip
    dyn = Dynamics.from_urdf(urdf)
    assert dyn.joint_names == ("ja", "jb")
    q = _positions(dyn, [0.3, -0.2])
    assert q["jr"] == pytest.approx(9 * 0.3, rel=1e-15)
    assert q["jr2"] == pytest.approx(18 * 0.3 + 0.5, rel=1e-15)


def test_a_coupling_driven_by_a_mimic_joint_multiplies_its_offset_too():
    """jr mimics ja with 2 and 0.3, jr2 = 3 jr (coupling): jr2 = 3 (2 ja + 0.3) = 6 ja + 0.9."""
    urdf = _gears(_coupling("rot", "rot2", 3.0, "h"),
                  jr_extra='<mimic joint="ja" multiplier="2" offset="0.3"/>')  # fmt: skip
    dyn = Dynamics.from_urdf(urdf)
    assert dyn.joint_names == ("ja", "jb")
    q = _positions(dyn, [0.4, 0.1])
    assert q["jr"] == pytest.approx(2 * 0.4 + 0.3, rel=1e-15)
    assert q["jr2"] == pytest.approx(6 * 0.4 + 0.9, rel=1e-15)


def test_a_cycle_through_a_mimic_joint_and_a_coupling_is_named():
    """jr2 = 3 jr (coupling) and jr mimics jr2: no leader; a URDFError names the cycle."""
    from coriolis_ros.dynamics import URDFError

    urdf = _gears(_coupling("rot", "rot2", 3.0, "h"), jr_extra='<mimic joint="jr2"/>')
    with pytest.raises(URDFError, match="mimic joints and couplings form a cycle through"):
        Dynamics.from_urdf(urdf)
