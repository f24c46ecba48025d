"""dynamics.engine: the input checks and the tables the other tests reach only indirectly.

* ``link_rotations``: E maps each row's joint axis, given in its link's frame, to the body's
  z axis (the kernels' convention), a fixed child link leaving its parent's E alone;
* ``as_vector`` copies, and names the input and the size;
* every kernel status is the ValueError naming its cause, an unknown one an internal error.
"""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.engine import as_vector


def _link(name: str) -> str:
    return (f'<link name="{name}"><inertial><origin xyz="0.1 0.02 0.03"/><mass value="0.5"/>'
            '<inertia ixx="1e-3" ixy="0" ixz="0" iyy="2e-3" iyz="0" izz="3e-3"/>'
            "</inertial></link>")  # fmt: skip


def _joint(name: str, parent: str, child: str, axis: str, extra: str = "") -> str:
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="0.1 0 0" rpy="0.1 0.2 0.3"/>'
            f'<axis xyz="{axis}"/><limit lower="-3" upper="3" effort="1" velocity="1"/>{extra}'
            "</joint>")  # fmt: skip


AXES = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.0, 0.8])
# three joints off the z axis (the first on the world), a fixed child turned under the second
TREE = ('<robot name="axes"><link name="base"/>' + _link("a") + _link("b") + _link("c")
        + _link("tip") + _joint("ja", "base", "a", "1 0 0") + _joint("jb", "a", "b", "0 1 0")
        + _joint("jc", "a", "c", "0.6 0 0.8")
        + '<joint name="weld" type="fixed"><parent link="b"/><child link="tip"/>'
        '<origin rpy="0.5 0.4 0.3"/></joint></robot>')  # fmt: skip


def test_link_rotations_turn_each_joint_axis_onto_its_body_z_axis():
    dyn = Dynamics.from_urdf(TREE)
    E = dyn.engine.link_rotations
    assert dyn.tree.body_links == ("a", "b", "c") and E.shape == (3, 9)
    for row, axis in enumerate(AXES):
        rot = E[row].reshape(3, 3)
        assert np.abs(rot @ axis - [0.0, 0.0, 1.0]).max() < 1e-15
        assert np.abs(rot @ rot.T - np.eye(3)).max() < 1e-15
    assert not E.flags.writeable


def test_as_vector_copies_and_names_the_input():
    x = np.arange(3.0)
    got = as_vector(x, 3, "q")
    got[0] = 7.0
    assert x[0] == 0.0 and got.dtype == np.float64
    assert np.array_equal(as_vector([1, 2], 2, "qd"), [1.0, 2.0])
    with pytest.raises(ValueError, match=r"^qd must have shape \(2,\), got \(3,\)$"):
        as_vector(x, 2, "qd")
    with pytest.raises(ValueError, match=r"^q must be a sequence of 3 numbers: "):
        as_vector(["a", 1, 2], 3, "q")


# a leader and its mimic follower at multiplier -250, offset 0.5 (after a root joint)
MIMIC = ('<robot name="mimic"><link name="base"/>' + _link("a") + _link("b") + _link("c")
         + _joint("j0", "base", "a", "0 0 1") + _joint("j1", "a", "b", "0 1 0")
         + _joint("j2", "a", "c", "1 0 0", '<mimic joint="j1" multiplier="-250" offset="0.5"/>')
         + "</robot>")  # fmt: skip
INSIDE = (1e50 - 0.5) / 250  # the follower of j1 = INSIDE is within ±1e50, of 1.01 INSIDE not


def _beyond(what: str, value: float, position: bool) -> str:
    rule = "-250.0 × 'j1'" + (" + 0.5" if position else "")
    got = -250.0 * value + (0.5 if position else 0.0)
    return (
        f"{what}: follower joint 'j2' = {rule} = {got!r} is beyond ±1e+50 (its leader "
        f"'j1' is {value!r}; a follower's coordinate is bounded like every other)"
    )


def test_a_follower_beyond_the_bound_is_named_by_every_check():
    dyn = Dynamics.from_urdf(MIMIC)
    assert dyn.engine.coupled and dyn.joint_names == ("j0", "j1")
    far = 1.01 * INSIDE
    ok = np.array([0.3, INSIDE])
    bad = np.array([0.3, far])
    dyn.coriolis(ok, ok)
    dyn.full_position(ok), dyn.full_velocity(ok), dyn.velocity_map(ok)
    for call, what, position in (
        (lambda: dyn.coriolis(bad, ok), "q", True),
        (lambda: dyn.coriolis(ok, bad), "qd", False),
        (lambda: dyn.inverse_dynamics(ok, ok, bad), "qdd", False),
        (lambda: dyn.full_position(bad), "q", True),
        (lambda: dyn.velocity_map(bad), "q", True),
        (lambda: dyn.full_velocity(bad), "qd", False),
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == _beyond(what, far, position)
