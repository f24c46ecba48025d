"""kernels.loop_closure: what the loop tests leave open.

* The branch test: a revolute loop must close with P's and S's axes pointing the same way
  (opposite axes also zero the residual's cross product). It compares the axes in the world,
  and on every example mechanism they are the world's y axis, so only their y components were
  ever read. The four-bar turned about the vertical (a fixed joint above its base, so that its
  axes have x and y components) closes at every crank angle, where Pinocchio's kinematics of
  its spanning tree puts the loop's frames on top of each other with their axes aligned, and
  at the same joint values as the upright four-bar (turning the whole mechanism moves no joint).
* The residual of a fixed (or prismatic) loop's orientation: its rows are zeroed, then summed
  over the frames' columns. On the planar examples only the row about y was ever nonzero; the
  welded four-bar (its coupler's halves held by a fixed loop) turned about the vertical has
  rows about x and y, and closes where Pinocchio puts its loop frames on top of each other.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from support.floating import MultiDofOracle
from support.urdf_text import welded_four_bar

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

FOUR_BAR = robot_path("four_bar").read_text()
MECHANISMS = {"four_bar": FOUR_BAR, "welded": welded_four_bar(FOUR_BAR)}


def _turned(text: str, alpha: float) -> str:
    """The mechanism under a fixed joint that turns it by alpha about the world's z axis."""
    return text.replace(
        '<link name="base"/>',
        '<link name="ground"/><joint name="turn" type="fixed"><parent link="ground"/>'
        f'<child link="base"/><origin xyz="0 0 0" rpy="0 0 {alpha!r}"/></joint>'
        '<link name="base"/>',
    )


@pytest.mark.parametrize("alpha", [1.4, 2.0])
@pytest.mark.parametrize("name", MECHANISMS)
def test_a_four_bar_turned_about_the_vertical_closes_where_pinocchio_joins_its_loop(name, alpha):
    text = _turned(MECHANISMS[name], alpha)
    upright, turned = Dynamics.from_urdf(MECHANISMS[name]), Dynamics.from_urdf(text)
    oracle = MultiDofOracle(text, turned.closed.tree_dynamics, turned.root_joint)
    m, d = oracle.model, oracle.data
    (loop,) = turned.loops
    axis = np.asarray(loop.axis)
    assert loop.type == ("fixed" if name == "welded" else "revolute")
    for y in np.linspace(-np.pi, np.pi, 13):
        q = turned.full_position([y])
        assert np.abs(q - upright.full_position([y])).max() < 1e-12, y
        pin.framesForwardKinematics(m, d, oracle.q_pin(q))
        P, S = (
            d.oMf[m.getFrameId(link)] * pin.SE3(rot, np.asarray(xyz))
            for link, (rot, xyz) in (
                (loop.predecessor, loop.pred_pose),
                (loop.successor, loop.succ_pose),
            )
        )
        joints_axis = P.rotation[:, 1]  # the mechanism's joint axes: y in every link frame
        assert abs(joints_axis[0]) > 0.5 and abs(joints_axis[1]) > 0.1  # no longer along y
        assert np.linalg.norm(P.translation - S.translation) < 1e-11, y
        if loop.type == "fixed":
            assert np.abs(P.rotation - S.rotation).max() < 1e-11, y
        else:
            assert (P.rotation @ axis) @ (S.rotation @ axis) > 1 - 1e-12, y
