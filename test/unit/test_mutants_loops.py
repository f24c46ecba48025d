"""dynamics.loops: the paths and bounds the loop tests do not pin down.

References, none of them the code under test:
* a loop frame's ``rpy`` against Pinocchio's ``rpyToMatrix``; body placements against
  Pinocchio's forward kinematics of the spanning tree;
* the bounds on both sides: the frame offset (1e6 m), the axis's length (1e-9), Newton's step
  budget (a linear residual closes in exactly ceil(d / 0.2) steps from a guess d away), the
  rank tolerance (1e-9 of the largest singular value) and the dead point (pivot ratio 1e-6);
* a planar root: every loop quantity is relative, so the dependent joints and the velocity
  map's rows are those of the same linkage on a fixed base.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from coriolis_ros.dynamics import Dynamics, URDFError
from coriolis_ros.dynamics.loops import LoopClosure, read_loops
from coriolis_ros.robots import robot_path

FOUR_BAR = robot_path("four_bar").read_text()
LEG = robot_path("leg_knee_linkage")


def _loops(*elements: str):
    return read_loops(ET.fromstring("<robot>" + "".join(elements) + "</robot>"))


def _loop(pred: str = "", succ: str = "", axis: str = "") -> str:
    return (f'<loop name="c"><predecessor link="a">{pred}</predecessor>'
            f'<successor link="b">{succ}</successor>{axis}</loop>')  # fmt: skip


# ----------------------------------------------------------------------------- <loop> element


def test_loop_frames_rpy_and_xyz_are_pinocchios():
    (loop,) = _loops(_loop('<origin xyz="0.1 -0.2 0.3" rpy="0.3 -0.5 1.2"/>',
                           '<origin xyz="-4 5 6" rpy="-2.1 0.7 -0.4"/>'))  # fmt: skip
    for (rot, xyz), rpy, want in (
        (loop.pred_pose, (0.3, -0.5, 1.2), (0.1, -0.2, 0.3)),
        (loop.succ_pose, (-2.1, 0.7, -0.4), (-4.0, 5.0, 6.0)),
    ):
        assert np.abs(rot - pin.rpy.rpyToMatrix(*rpy)).max() < 1e-15
        assert np.array_equal(xyz, want)
    assert (loop.name, loop.type, loop.predecessor, loop.successor) == ("c", "revolute", "a", "b")
    assert loop.axis == (1.0, 0.0, 0.0)  # the default axis


def test_the_axis_is_made_a_unit_vector_and_the_closure_does_not_see_its_length():
    (loop,) = _loops(_loop(axis='<axis xyz="0 3 4"/>'))
    assert np.abs(np.array(loop.axis) - [0.0, 0.6, 0.8]).max() < 1e-16
    longer = Dynamics.from_urdf(FOUR_BAR.replace('<axis xyz="0 1 0"/>\n  </loop>',
                                                 '<axis xyz="0 5 0"/>\n  </loop>'))  # fmt: skip
    assert longer.loops[0].axis == (0.0, 1.0, 0.0)
    unit = Dynamics.from_urdf(FOUR_BAR)
    for y in (-2.0, 0.4, 2.9):
        assert np.abs(longer.full_position([y]) - unit.full_position([y])).max() < 1e-12


def test_an_axis_of_length_1e_9_has_no_direction_and_the_next_double_has():
    with pytest.raises(URDFError, match="has no direction"):
        _loops(_loop(axis='<axis xyz="0 1e-9 0"/>'))
    above = repr(float(np.nextafter(1e-9, 1.0)))
    (loop,) = _loops(_loop(axis=f'<axis xyz="0 {above} 0"/>'))
    assert loop.axis == (0.0, 1.0, 0.0)


@pytest.mark.parametrize("role", ["pred", "succ"])
def test_a_frame_offset_of_1e6_is_accepted_and_the_next_double_refused(role):
    beyond = repr(float(np.nextafter(1e6, np.inf)))
    for xyz in (f"0 {beyond} 0", f"0 0 -{beyond}"):
        with pytest.raises(URDFError, match="beyond 1e"):
            _loops(_loop(**{role: f'<origin xyz="{xyz}"/>'}))
    (loop,) = _loops(_loop(**{role: '<origin xyz="-1e6 1e6 0"/>'}))
    pose = loop.pred_pose if role == "pred" else loop.succ_pose
    assert np.array_equal(pose[1], [-1e6, 1e6, 0.0])


def test_a_loop_is_immutable():
    (loop,) = _loops(_loop())
    with pytest.raises(dataclasses.FrozenInstanceError):
        loop.type = "fixed"


# ----------------------------------------------------------------------------- kinematics


def test_placements_and_motion_axes_are_pinocchios_forward_kinematics():
    dyn = Dynamics.from_urdf(FOUR_BAR)
    closure = dyn.closed.closure
    model = pin.buildModelFromXML(FOUR_BAR)
    data = model.createData()
    rng = np.random.default_rng(3)
    aligns: dict = {}
    for _ in range(3):
        q = rng.uniform(-np.pi, np.pi, 3)  # any tree configuration, closed or not
        pose = closure.placements(q)
        q_pin = np.zeros(model.nq)
        for row, name in enumerate(dyn.tree_joint_names):
            jid = model.getJointId(name)
            at, nq = model.idx_qs[jid], model.joints[jid].nq
            q_pin[at : at + nq] = [np.cos(q[row]), np.sin(q[row])] if nq == 2 else [q[row]]
        pin.forwardKinematics(model, data, q_pin)
        for row, name in enumerate(dyn.tree_joint_names):
            placed = data.oMi[model.getJointId(name)]
            assert np.abs(pose.t[row] - placed.translation).max() < 1e-14
            # a body's z axis is its joint's axis (y in the URDF); its frame is the joint's
            # turned by a constant rotation
            assert np.abs(pose.R[row][:, 2] - placed.rotation[:, 1]).max() < 1e-14
            align = placed.rotation.T @ pose.R[row]
            assert np.abs(align - aligns.setdefault(row, align)).max() < 1e-14
            assert np.abs(align.T @ align - np.eye(3)).max() < 1e-14
            # its motion axis: the world axis, and the velocity of the point at the origin
            w = placed.rotation[:, 1]
            want = np.concatenate([w, np.cross(placed.translation, w)])
            assert pose.S.shape == (3, 6) and np.abs(pose.S[row] - want).max() < 1e-14


def test_a_planar_root_moves_no_loop():
    """The root's own motion drops out of every loop quantity: the linkage on a planar base
    closes, and maps velocities, as it does on a fixed base (the root's rows of A: identity)."""
    fixed = Dynamics.from_urdf(LEG, independent_joints=["hip", "knee_crank"])
    planar = Dynamics.from_urdf(LEG, root_joint="planar", independent_joints=["hip", "knee_crank"])
    assert planar.nv == fixed.nv + 3 and planar.dependent_joints == fixed.dependent_joints
    for y in ([0.3, 0.5], [-0.4, 1.1]):
        q = planar.full_position([0.7, -1.2, 2.5, *y])
        assert np.array_equal(q[:3], [0.7, -1.2, 2.5])
        assert np.abs(q[3:] - fixed.full_position(y)).max() < 1e-12
        A, _ = planar.velocity_map([0.7, -1.2, 2.5, *y])
        A_fixed, _ = fixed.velocity_map(y)
        assert np.abs(A[3:, 3:] - A_fixed).max() < 1e-12
        assert np.array_equal(A[:3], np.eye(3, planar.nv)) and not A[3:, :3].any()


# ----------------------------------------------------------------------------- Newton's bounds


def _body(name: str) -> str:
    return (f'<link name="{name}"><inertial><mass value="0.5"/>'
            '<inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/>'
            "</inertial></link>")  # fmt: skip


def _slide(name: str, child: str, height: float) -> str:
    return (f'<joint name="{name}" type="prismatic"><parent link="base"/><child link="{child}"/>'
            f'<origin xyz="0 0 {height}"/><axis xyz="1 0 0"/>'
            '<limit lower="-100" upper="100" effort="1" velocity="1"/></joint>')  # fmt: skip


# Two carriages sliding along the base's x axis (3 m above it), welded together: one DoF, and a
# residual linear in the dependent slide (its offset from the other), so each Newton step is
# exact unless it is cut to 0.2 m.  (Newton's tolerance, 1e-12 times 1 + the longest offset
# of a joint, 4e-12 here, is met by the exact step.)
def _slides(height: float = 3.0) -> str:
    return ('<robot name="slides"><link name="base"/>' + _body("a") + _body("b")
            + _slide("sa", "a", height) + _slide("sb", "b", height)
            + '<loop name="weld" type="fixed"><predecessor link="a"/><successor link="b"/>'
            "</loop></robot>")  # fmt: skip


def test_newton_takes_at_most_50_steps_of_at_most_0_2():
    dyn = Dynamics.from_urdf(_slides())
    assert dyn.joint_names == ("sa",) and dyn.dependent_joints == ("sb",)
    # 9.9 m away: 49 steps of 0.2 m and an exact one; 10.1 m: 51 steps would be needed
    for start in (9.9, -9.9):
        assert np.abs(dyn.close_loops([0.0], guess=[0.0, start])).max() < 1e-14
    for start in (10.1, -10.1):
        with pytest.raises(ValueError, match=r"'weld' does not close .* residual 0.1 after 50 "):
            dyn.close_loops([0.0], guess=[0.0, start])


@pytest.mark.parametrize("height", [3.0, 0.5])
def test_newtons_tolerance_is_1e_12_times_one_plus_the_longest_joint_offset(height):
    """After 50 steps of 0.2 m from 10 m + e away, the residual left is e: within the
    tolerance 1e-12 (1 + height) the loop is closed, beyond it the closure is refused."""
    dyn = Dynamics.from_urdf(_slides(height))
    tol = 1e-12 * (1.0 + height)
    for sign in (1.0, -1.0):
        assert np.abs(dyn.close_loops([0.0], guess=[0.0, sign * (10 + 0.8 * tol)])).max() < 1e-14
        with pytest.raises(ValueError, match=f"residual {1.2 * tol:.3g} after 50 "):
            dyn.close_loops([0.0], guess=[0.0, sign * (10 + 1.2 * tol)])


def test_rank_counts_singular_values_above_1e_9_of_the_largest():
    assert LoopClosure._rank(np.diag([2.0, 2e-9])) == 1
    assert LoopClosure._rank(np.diag([2.0, np.nextafter(2e-9, 1.0)])) == 2
    assert LoopClosure._rank(np.diag([3.0, 1.0, 0.0])) == 2
    assert LoopClosure._rank(np.zeros((6, 2))) == 0
    assert LoopClosure._rank(np.zeros((6, 0))) == 0
    assert LoopClosure._rank(np.diag([1e-200, 1e-200])) == 2  # small, but not zero


def test_dead_point_bound_is_a_pivot_ratio_of_1e_6():
    """The knee linkage is a parallelogram whose crank and rod line up at crank = pi/2: the
    pivot ratio of K_z there is about (pi/2 - crank) / 6, so 9e-6 rad away it is 1.5e-6 (a
    mechanism still) and 4.5e-6 rad away 7.5e-7 (a dead point)."""
    dyn = Dynamics.from_urdf(LEG, independent_joints=["hip", "knee_crank"])
    near = np.pi / 2 - 9e-6
    q = dyn.close_loops([0.0, near], guess=[0.0, near, near, -near])
    assert np.abs(q - [0.0, near, near, -near]).max() < 1e-9  # Newton's error there: ~1e-10
    at = np.pi / 2 - 4.5e-6
    with pytest.raises(ValueError, match=r"pivot ratio 7\.\d+e-07 below 1e-06"):
        dyn.close_loops([0.0, at], guess=[0.0, at, at, -at])


def test_constraint_jacobian_has_six_rows_per_loop_and_annihilates_the_velocity_map():
    """K qdot = 0 along every closed motion: K A = 0 with A from central differences of the
    closure (not from K), and K has rank nv_tree - nv; ``cols`` picks columns of the same K."""
    dyn = Dynamics.from_urdf(LEG, independent_joints=["hip", "knee_crank"])
    closure = dyn.closed.closure
    y = np.array([0.2, 0.6])
    q = dyn.full_position(y)
    A = np.empty((4, 2))
    for j in range(2):
        step = np.eye(2)[j] * 1e-6
        A[:, j] = (dyn.full_position(y + step) - dyn.full_position(y - step)) / 2e-6
    K = closure.constraint_jacobian(q)
    assert K.shape == (6 * len(dyn.loops), 4)
    assert np.abs(K @ A).max() < 1e-8 * np.abs(K).max()
    assert np.linalg.matrix_rank(K, tol=1e-9 * np.abs(K).max()) == 2
    assert np.array_equal(closure.constraint_jacobian(q, cols=[3, 1]), K[:, [3, 1]])


def test_a_fixed_loop_closed_half_a_turn_apart_is_the_wrong_branch():
    """The four-bar's coupler cut in two, the halves welded by a fixed loop whose frame S sits
    on the second half's joint axis: turning that joint by pi keeps the frames' origins
    together and their orientation residual (a sine) zero, so Newton stops there at once; the
    closure must refuse that assembly, and close from a guess 1.4 rad nearer."""
    rod = ('<link name="coupler_b"><inertial><origin xyz="0.15 0 0"/><mass value="0.3"/>'
           '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="3e-3" iyz="0" izz="3e-3"/></inertial></link>'
           '<joint name="rocker_coupler" type="continuous"><parent link="rocker_link"/>'
           '<child link="coupler_b"/><origin xyz="0.4 0 0" rpy="0 -2.07 0"/>'
           '<axis xyz="0 1 0"/></joint>')  # fmt: skip
    text = FOUR_BAR.replace('<loop name="closure" type="revolute">',
                            rod + '<loop name="closure" type="fixed">').replace(
        '<predecessor link="coupler_link"><origin xyz="0.6 0 0"/></predecessor>\n'
        '    <successor link="rocker_link"><origin xyz="0.4 0 0"/></successor>',
        '<predecessor link="coupler_link"><origin xyz="0.6 0 0" rpy="0 3.141592653589793 0"/>'
        '</predecessor><successor link="coupler_b"/>')  # fmt: skip
    dyn = Dynamics.from_urdf(text)
    assert dyn.loops[0].type == "fixed" and dyn.joint_names == ("crank",)
    q = dyn.full_position([0.4])
    guess = q.copy()
    guess[3] += np.pi
    with pytest.raises(ValueError, match="loop 'closure' closes with its frames turned half a"):
        dyn.close_loops([0.4], guess=guess)
    guess[3] -= np.pi - 1.4
    assert np.abs(dyn.close_loops([0.4], guess=guess) - q).max() < 1e-12


def test_a_continuous_dependent_joint_is_kept_within_a_turn_and_a_revolute_one_is_not():
    """The four-bar's coupler (continuous) is brought back to [-pi, pi] after a closure; the
    rocker (revolute: its limits may span more than a turn) stays where Newton put it."""
    dyn = Dynamics.from_urdf(FOUR_BAR)
    q = dyn.full_position([0.4])
    for turn in (2 * np.pi, -2 * np.pi):
        got = dyn.close_loops([0.4], guess=q + [0.0, turn, turn])
        assert np.abs(got - (q + [0.0, 0.0, turn])).max() < 1e-12


@pytest.mark.parametrize(
    "independent, chosen",
    [([], "0 chosen (none): too few"), (["rocker", "crank"], "2 chosen (crank, rocker): too many")],
)
def test_a_wrong_count_of_independent_joints_names_the_joints_and_the_count(independent, chosen):
    want = ("the loops (closure) leave 1 of their joints (crank, coupler, rocker) independent; "
            f"{chosen} independent joints")  # fmt: skip
    with pytest.raises(ValueError) as info:
        Dynamics.from_urdf(FOUR_BAR, independent_joints=independent)
    assert str(info.value) == want


def test_a_loop_joint_without_the_independent_attribute_is_independent():
    """urdfdom's fork: ``independent`` defaults to true; marking the coupler and the rocker
    false leaves the crank, unmarked, the coordinate."""
    text = FOUR_BAR
    for name in ("coupler", "rocker"):
        kind = "continuous" if name == "coupler" else "revolute"
        text = text.replace(f'<joint name="{name}" type="{kind}">',
                            f'<joint name="{name}" type="{kind}" independent="false">')  # fmt: skip
    assert text.count('independent="false"') == 2
    dyn = Dynamics.from_urdf(text)
    assert dyn.joint_names == ("crank",) and dyn.dependent_joints == ("coupler", "rocker")


@pytest.mark.parametrize(
    "kind, rows",
    [("planar", "angular_z, rocker/linear_x, rocker/linear_y"),
     ("floating", "angular_x, rocker/angular_y, rocker/angular_z, rocker/linear_x, "
                  "rocker/linear_y, rocker/linear_z")],
)  # fmt: skip
def test_a_loop_through_a_planar_or_floating_joint_is_refused_naming_its_rows(kind, rows):
    text = FOUR_BAR.replace('<joint name="rocker" type="revolute">',
                            f'<joint name="rocker" type="{kind}">')  # fmt: skip
    with pytest.raises(URDFError) as info:
        Dynamics.from_urdf(text)
    assert str(info.value) == (
        "/robot/loop[@name='closure']: the loop runs through the floating or planar joint(s) "
        f"rocker/{rows}; loops may only contain revolute and prismatic joints"
    )


def test_a_loop_frame_on_a_fixed_child_link_adds_the_links_offset():
    """The four-bar's frame P, 0.6 m along the coupler, given as 0.1 m along a link welded
    0.5 m along it: the same mechanism, the same closure."""
    text = FOUR_BAR.replace(
        "</robot>",
        '<link name="tip"/><joint name="tip_weld" type="fixed"><parent link="coupler_link"/>'
        '<child link="tip"/><origin xyz="0.5 0 0"/></joint></robot>',
    ).replace('<predecessor link="coupler_link"><origin xyz="0.6 0 0"/>',
              '<predecessor link="tip"><origin xyz="0.1 0 0"/>')  # fmt: skip
    welded, plain = Dynamics.from_urdf(text), Dynamics.from_urdf(FOUR_BAR)
    assert welded.loops[0].predecessor == "tip"
    for y in (-2.0, 0.4, 2.9):
        assert np.abs(welded.full_position([y]) - plain.full_position([y])).max() < 1e-12
