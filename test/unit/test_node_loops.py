"""The node on a closed chain (ROS-free core, as the node wires it): joint_states that carry the
loop's dependent joints are accepted, the state is the library's in the independent
coordinates, and dependent joints off the closure are reported, never used."""

import numpy as np
from support.node_core_helpers import Core
from support.urdf_text import four_bar_with_rotor

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_urdf

URDF = robot_urdf("four_bar")


def _closed(y):
    dyn = Dynamics.from_urdf(URDF)
    q_tree = dyn.close_loops([y], guess=[y, 0.0, 0.5])
    return dyn, q_tree


def test_closed_chain_state_is_the_library_s_and_dependent_joints_are_checked():
    core = Core(URDF, mimic_tolerance=1e-3)
    model = core.model
    assert model.joint_names == ("crank",) and model.dependent == ("coupler", "rocker")
    assert "closed loop(s) closure: 2 joint(s) follow from the closure" in core.log.text()
    dyn, q_tree = _closed(0.3)
    names = list(dyn.tree_joint_names)
    assert core.joint_state(names, q_tree, [1.5, 0.0, 0.0], stamp_ns=1_000)
    ((_, fields),) = core.published
    M, Mdot, C = dyn.coriolis([0.3], [1.5])
    np.testing.assert_allclose(fields["coriolis_matrix"].reshape(1, 1), C, rtol=1e-12)
    np.testing.assert_allclose(fields["mass_matrix"].reshape(1, 1), M, rtol=1e-12)
    text = core.log.text()
    assert "unknown joint" not in text and "off the closure" not in text
    # the rocker reported 0.01 rad off the closure (beyond 1e-3): a warning naming it
    off = q_tree.copy()
    off[2] += 0.01
    assert core.joint_state(names, off, [1.5, 0.0, 0.0], stamp_ns=2_000)
    assert len(core.published) == 2
    assert "'rocker' = " in core.log.text() and "off the closure" in core.log.text()
    # ... and its value was not used: the same state as from the closed values
    again = core.published[1][1]["coriolis_matrix"]
    np.testing.assert_array_equal(again, fields["coriolis_matrix"])


def test_within_the_tolerance_is_not_reported():
    core = Core(URDF, mimic_tolerance=1e-3)
    dyn, q_tree = _closed(-0.4)
    near = q_tree.copy()
    near[1] += 9e-4
    assert core.joint_state(list(dyn.tree_joint_names), near, [0.0, 0.0, 0.0], stamp_ns=5)
    assert len(core.published) == 1
    assert "off the closure" not in core.log.text()


def test_a_closed_chain_with_a_geared_rotor_checks_the_rotor_against_the_closure():
    """The four-bar with a geared rotor on its crank (a <coupling> in the URDF): the state is
    the library's; a driver that publishes the rotor at a value its gear ratio does not give
    is reported, never used."""
    urdf = four_bar_with_rotor(URDF)
    core = Core(urdf, mimic_tolerance=1e-3)
    model = core.model
    assert model.joint_names == ("crank",)
    assert model.dependent == ("coupler", "rocker", "rotor") and not model.mimic
    dyn = Dynamics.from_urdf(urdf)
    q_tree = dyn.close_loops([0.3], guess=[0.3, 0.0, 0.5, 0.0])
    assert abs(q_tree[3] - 2.7) < 1e-12  # the rotor turns 9 times the crank
    names = list(dyn.tree_joint_names)
    assert core.joint_state(names, q_tree, [1.5, 0.0, 0.0, 13.5], stamp_ns=1_000)
    ((_, fields),) = core.published
    M, _, C = dyn.coriolis([0.3], [1.5])
    np.testing.assert_allclose(fields["coriolis_matrix"].reshape(1, 1), C, rtol=1e-12)
    np.testing.assert_allclose(fields["mass_matrix"].reshape(1, 1), M, rtol=1e-12)
    assert "off the closure" not in core.log.text()
    off = q_tree.copy()
    off[3] += 0.01  # the rotor's encoder disagrees with the gear ratio
    assert core.joint_state(names, off, [1.5, 0.0, 0.0, 13.5], stamp_ns=2_000)
    assert "'rotor' = " in core.log.text() and "off the closure" in core.log.text()
    again = core.published[1][1]["coriolis_matrix"]
    np.testing.assert_array_equal(again, fields["coriolis_matrix"])


def test_continuous_dependent_joints_are_compared_modulo_a_turn():
    """The library keeps a continuous dependent joint in [-pi, pi); a driver may count its
    turns. A whole number of turns apart is no disagreement; the tolerance still holds on
    both sides of a turn, and a revolute joint a turn off is reported."""
    from coriolis_ros.stream.joint_state_buffer import JointStateBuffer
    from coriolis_ros.stream.loop_check import LoopCheck

    buf = JointStateBuffer(("crank",), extra_names=("coupler", "rocker"))
    check = LoopCheck(buf, ("coupler", "rocker"), 1e-3, periodic=("coupler",))
    turn = 2 * np.pi
    seam = np.pi - 1e-4  # the closure just below +pi, a driver just above -pi: 2e-4 apart
    for closure_coupler, received, reported in (
        (3.0, [3.0 + 7 * turn, -0.5], []),
        (3.0, [3.0 - 3 * turn, -0.5], []),
        (3.0, [3.0 + turn + 9.9e-4, -0.5 - 9.9e-4], []),
        (3.0, [3.0 + turn + 1.1e-3, -0.5], ["coupler"]),
        (3.0, [3.0 - turn - 1.1e-3, -0.5], ["coupler"]),
        (3.0, [3.0, -0.5 + turn], ["rocker"]),
        (seam, [-seam, -0.5], []),
        (seam, [-seam + 1e-3, -0.5], ["coupler"]),
    ):
        buf.update(["coupler", "rocker"], received, [], 0, "s", 0.0)
        check.snapshot()
        got = check.compare(np.array([closure_coupler, -0.5]))
        assert [name for name, *_ in got] == reported, received


def test_a_lead_joint_jump_beyond_the_budget_is_refused_and_the_node_goes_on():
    """A revolute crank reported 300 rad from the last closed state: that tick publishes
    nothing and says why; the next state near the last one publishes the library's numbers.
    A continuous crank 1000 turns away publishes at once (its turns do not move the loop)."""
    urdf = URDF.replace('<joint name="crank" type="continuous">',
                        '<joint name="crank" type="revolute">'
                        '<limit lower="-1e4" upper="1e4" effort="10" velocity="10"/>')  # fmt: skip
    core = Core(urdf)
    assert core.joint_state(["crank"], [0.3], [1.0], stamp_ns=1_000)
    assert len(core.published) == 1
    core.joint_state(["crank"], [300.3], [1.0], stamp_ns=2_000)
    assert len(core.published) == 1
    assert "moved by 300" in core.log.text() and "crank" in core.log.text()
    assert core.joint_state(["crank"], [0.35], [1.0], stamp_ns=3_000)
    assert len(core.published) == 2
    _, _, C = Dynamics.from_urdf(URDF).coriolis([0.35], [1.0])
    np.testing.assert_allclose(core.published[1][1]["coriolis_matrix"].reshape(1, 1), C,
                               rtol=1e-12)  # fmt: skip
    turning = Core(URDF)
    assert turning.joint_state(["crank"], [0.3], [1.0], stamp_ns=1_000)
    assert turning.joint_state(["crank"], [0.35 + 2000 * np.pi], [1.0], stamp_ns=2_000)
    assert len(turning.published) == 2
    np.testing.assert_allclose(turning.published[1][1]["coriolis_matrix"].reshape(1, 1), C,
                               rtol=1e-9)  # fmt: skip


def test_after_a_refused_jump_the_received_dependent_joints_start_newton():
    """The same 300 rad jump of a revolute crank, but the message carries the coupler and the
    rocker too (as a driver or a simulator sends them): Newton starts from those values and
    the state is the library's at that crank angle. Received values from the other assembly
    branch are refused with both reasons, and nothing is published."""
    urdf = URDF.replace('<joint name="crank" type="continuous">',
                        '<joint name="crank" type="revolute">'
                        '<limit lower="-1e4" upper="1e4" effort="10" velocity="10"/>')  # fmt: skip
    names = ["crank", "coupler", "rocker"]
    far = 300.3
    angle = float(np.arctan2(np.sin(far), np.cos(far)))
    dyn, q_tree = _closed(angle)  # the continuous four-bar at the same pose
    received = [far, q_tree[1], q_tree[2]]
    core = Core(urdf, mimic_tolerance=1e-3)
    assert core.joint_state(names, [0.3, *_closed(0.3)[1][1:]], [1.0, 0.0, 0.0], stamp_ns=1)
    assert core.joint_state(names, received, [1.0, 0.0, 0.0], stamp_ns=2)
    assert len(core.published) == 2
    _, _, C = dyn.coriolis([angle], [1.0])
    np.testing.assert_allclose(core.published[1][1]["coriolis_matrix"].reshape(1, 1), C,
                               rtol=1e-9)  # fmt: skip
    assert "tick failed" not in core.log.text()
    # without the dependent joints the same jump is refused (the other side)
    plain = Core(urdf)
    plain.joint_state(["crank"], [0.3], [1.0], stamp_ns=1)
    plain.joint_state(["crank"], [far], [1.0], stamp_ns=2)
    assert len(plain.published) == 1 and "moved by 300" in plain.log.text()
    # the rocker of the other assembly (the loop's mirror image): Newton from there lands on
    # the other branch or fails; either way the tick is refused with both reasons
    mirror = Core(urdf, mimic_tolerance=1e-3)
    mirror.joint_state(names, [0.3, *_closed(0.3)[1][1:]], [1.0, 0.0, 0.0], stamp_ns=1)
    mirror.joint_state(names, [far, q_tree[1] + np.pi, q_tree[2] + np.pi], [1.0, 0.0, 0.0],
                       stamp_ns=2)  # fmt: skip
    text = mirror.log.text()
    assert len(mirror.published) == 1
    assert "moved by 300" in text and "from the dependent joints received:" in text


def _revolute_crank():
    return URDF.replace('<joint name="crank" type="continuous">',
                        '<joint name="crank" type="revolute">'
                        '<limit lower="-1e4" upper="1e4" effort="10" velocity="10"/>')  # fmt: skip


def test_dependent_joints_in_a_message_of_their_own_are_checked_at_the_next_state():
    """A driver that sends the linkage's joints apart from the crank: 0.3 rad off the closure,
    they are reported once the crank's state is computed; on the closure, not."""
    names = ["coupler", "rocker"]
    for offset, reported in ((0.3, True), (0.0, False)):
        core = Core(URDF, mimic_tolerance=1e-3, warning_period=0.0)
        dyn, q_tree = _closed(0.3)
        core.joint_state(names, q_tree[1:] + offset)  # no state: nothing computed
        assert core.published == []
        assert core.joint_state(["crank"], [0.3], [1.0])
        assert len(core.published) == 1
        assert ("off the closure" in core.log.text()) == reported


def test_the_observer_publishes_no_old_estimate_after_a_jump_and_follows_it():
    """A revolute crank at rest under an external torque of 0.7 N m (effort = g - 0.7), then
    reported 300 rad away with its linkage (the tick closes the loops from them), at rest with
    effort = g: the estimate there is 0, never the old 0.7. Reference: at rest the observer's
    residual is tau_ext = g - effort."""
    urdf = _revolute_crank()
    names = ["crank", "coupler", "rocker"]
    dyn = Dynamics.from_urdf(URDF)
    core = Core(urdf, observer_enabled=True, observer_gain=50.0, observer_max_gap=0.1,
                warning_period=0.0)  # fmt: skip
    t0 = 1_700_000_000 * 10**9
    q_tree = dyn.close_loops([0.3], guess=[0.3, 0.0, 0.5])
    g = dyn.gravity([0.3])[0]
    for k in range(300):
        core.joint_state(names, q_tree, [0.0] * 3, [g - 0.7, 0.0, 0.0], stamp_ns=t0 + k * 2_000_000)
    assert abs(core.published[-1][1]["external_effort"][0] - 0.7) < 1e-6
    far = 300.3
    angle = float(np.arctan2(np.sin(far), np.cos(far)))
    at_far = dyn.close_loops([angle], guess=[angle, 0.0, 0.5])
    g_far = dyn.gravity([angle])[0]
    received = [far, at_far[1], at_far[2]]
    for k in range(300, 400):
        core.joint_state(names, received, [0.0] * 3, [g_far, 0.0, 0.0], stamp_ns=t0 + k * 2_000_000)
        estimate = core.published[-1][1].get("external_effort")
        assert estimate is None or abs(estimate[0]) < 1e-9, (k, estimate)
    assert abs(core.published[-1][1]["external_effort"][0]) < 1e-9  # it follows the jump
    text = core.log.text()
    assert "momentum observer update failed" not in text
    assert "momentum observer reset: the closed chain jumped" in text


def test_after_a_refused_jump_the_linkage_without_its_rotor_starts_newton():
    """The four-bar with a rotor geared to its crank, the crank revolute, a 300 rad jump: a
    message carrying the coupler and the rocker but not the rotor (drivers seldom publish a
    rotor's angle) is enough to close the loop from, as without the rotor."""
    urdf = four_bar_with_rotor(URDF).replace(
        '<joint name="crank" type="continuous">',
        '<joint name="crank" type="revolute">'
        '<limit lower="-1e4" upper="1e4" effort="10" velocity="10"/>',
    )
    names = ["crank", "coupler", "rocker"]
    far = 300.3
    angle = float(np.arctan2(np.sin(far), np.cos(far)))
    geared = Dynamics.from_urdf(four_bar_with_rotor(URDF))
    at_far = geared.close_loops([angle], guess=[angle, 0.0, 0.5, 9.0 * angle])
    tree = geared.tree_joint_names
    core = Core(urdf, mimic_tolerance=1e-3)
    start = Dynamics.from_urdf(four_bar_with_rotor(URDF)).close_loops(
        [0.3], guess=[0.3, 0.0, 0.5, 2.7]
    )
    linkage = [tree.index("coupler"), tree.index("rocker")]
    assert core.joint_state(names, [0.3, *start[linkage]], [1.0, 0.0, 0.0], stamp_ns=1)
    assert core.joint_state(names, [far, *at_far[linkage]], [1.0, 0.0, 0.0], stamp_ns=2)
    assert len(core.published) == 2, core.log.text()
    _, _, C = geared.coriolis([angle], [1.0])
    np.testing.assert_allclose(core.published[1][1]["coriolis_matrix"].reshape(1, 1), C,
                               rtol=1e-9)  # fmt: skip
