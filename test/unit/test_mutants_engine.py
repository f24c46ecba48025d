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
    # the packed model the kernels read: a read-only view of the engine's own copy
    assert not dyn.engine.mf.flags.writeable and dyn.engine.mf.base is dyn.engine.mf_store
    with pytest.raises(ValueError, match="read-only"):
        dyn.engine.mf[0, 0] = 1.0


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


def _beyond(what: str, value, position: bool) -> str:
    value = float(value)
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


def test_each_kernel_status_is_the_error_naming_its_cause():
    dyn = Dynamics.from_urdf(TREE, root_joint="floating")  # nq 10, nv 9: the sizes differ
    q, v = dyn.neutral(), np.zeros(9)
    bad = np.full(9, np.nan)
    M = np.empty((9, 9))
    cases = [
        (lambda: dyn.coriolis(q, np.zeros(10)), r"qd must have shape \(9,\), got \(10,\)"),
        (lambda: dyn.coriolis(q[:-1], v), r"q must have shape \(10,\), got \(9,\)"),
        (lambda: dyn.inverse_dynamics(q, v, v[:3]), r"qdd must have shape \(9,\), got \(3,\)"),
        (lambda: dyn.slotine_li(q, v, v, v[:3]), r"qdd_ref must have shape \(9,\), got \(3,\)"),
        (lambda: dyn.coriolis(np.zeros(10), v),
         r"q has a zero quaternion \(norm below 1e-10\) for a floating joint"),
        (lambda: dyn.inverse_dynamics(q, v, bad),
         r"qdd has a NaN, infinite or huge \(beyond ±1e\+50\) entry"),
        (lambda: dyn.slotine_li(q, v, v, bad), r"qdd_ref has a NaN, infinite or huge"),
        (lambda: dyn.coriolis_times(q, v, -bad), r"x has a NaN, infinite or huge"),
        (lambda: dyn.coriolis(q, v, out=(M, M, np.empty((9, 9)))),
         r"out arrays must not share memory"),
        (lambda: dyn.coriolis(q, v, out=(np.empty((2, 2)),) * 3),
         r"out arrays have the wrong shape: \(2, 2\), \(2, 2\), \(2, 2\)"),
        # a list q: the call is retried with the inputs converted, then the outputs explained
        (lambda: dyn.coriolis(q.tolist(), v, out=(np.empty((2, 2)),) * 3),
         r"out arrays have the wrong shape: \(2, 2\), \(2, 2\), \(2, 2\)"),
        (lambda: dyn.coriolis(q.tolist(), v, out=(np.empty((9, 9), dtype=np.float32),) * 3),
         r"out arrays must be writeable C-contiguous float64, got ndarray float32"),
        (lambda: dyn.coriolis(q.tolist(), v, out=(np.empty((9, 9, 1)),) * 3),
         r"out arrays have the wrong shape: \(9, 9, 1\), \(9, 9, 1\), \(9, 9, 1\)"),
    ]  # fmt: skip
    for call, message in cases:
        with pytest.raises(ValueError, match=f"^{message}"):
            call()
    with pytest.raises(RuntimeError, match="^internal error: kernel status 99$"):
        dyn.engine.fail(99, (q,), ())
    assert np.all(np.isfinite(dyn.coriolis(q.tolist(), v.tolist())[2]))


def test_an_expanded_input_beyond_the_followers_bound_is_named_with_its_row():
    """The regressors expand qdd_ref (and a batch's rows of it) without checking it: the engine
    names the follower; a plain tree, or an input the kernel refuses anyway, passes."""
    dyn = Dynamics.from_urdf(MIMIC)
    zero, far = np.zeros(2), np.array([0.0, 1.01 * INSIDE])
    with pytest.raises(ValueError) as info:
        dyn.regressor(zero, zero, zero, far)
    assert str(info.value) == _beyond("qdd_ref", far[1], position=False)
    rows = np.zeros((3, 2))
    rows[0, 1] = 1e50 / 250  # its follower at exactly -1e50: within the bound
    rows[2] = far
    with pytest.raises(ValueError) as info:
        dyn.engine.check_expanded(rows, "QddR")
    assert str(info.value) == _beyond("QddR row 2", far[1], position=False)
    for fine in (
        np.array([0.0, INSIDE]),
        np.array([[0.0, -INSIDE]] * 2),
        np.zeros(3),
        np.array([0.0, np.nan]),
        np.array([0.0, 2e50]),
        "x",
        np.zeros((2, 2, 2)),
    ):
        assert dyn.engine.check_expanded(fine, "qdd_ref") is None  # fmt: skip
    tree = Dynamics.from_urdf(TREE)
    assert tree.engine.check_expanded(np.array([1e50, 1e50, 1e50]), "qdd_ref") is None
    with pytest.raises(ValueError, match="^qdd_ref has a NaN"):
        dyn.regressor(zero, zero, zero, [0.0, np.nan])


def test_new_inertial_parameters_reach_the_batches_workspaces():
    """Every inertial parameter times 1.5 (the rotors stay balanced, so still folded) makes M,
    Mdot and C 1.5 times what they were, in a batch made before the change too."""
    from coriolis_ros.robots import robot_path

    dyn = Dynamics.from_urdf(robot_path("arm7_rotors"))
    assert dyn.engine.folded_rows == tuple(range(7, 14))
    assert Dynamics.from_urdf(TREE).engine.folded_rows == ()
    rng = np.random.default_rng(0)
    Q, V = rng.uniform(-1, 1, (3, 7)), rng.uniform(-1, 1, (3, 7))
    before = [x.copy() for x in dyn.coriolis_batch(Q, V)]
    dyn.set_inertial_parameters(1.5 * dyn.inertial_parameters())
    for got, was in zip(dyn.coriolis_batch(Q, V), before, strict=True):
        assert np.abs(got - 1.5 * was).max() < 1e-12 * np.abs(was).max()


def test_the_full_coordinates_accept_1e50_and_refuse_the_next_double():
    dyn = Dynamics.from_urdf(TREE)  # no followers: q and v themselves are checked
    edge, beyond = np.array([1e50, -1e50, 0.0]), np.array([0.0, np.nextafter(-1e50, -np.inf), 0.0])
    assert np.array_equal(dyn.full_position(edge), edge)
    assert np.array_equal(dyn.full_velocity(edge), edge)
    with pytest.raises(ValueError, match=r"^q has a NaN, infinite or huge \(beyond ±1e\+50\)"):
        dyn.full_position(beyond)
    with pytest.raises(ValueError, match=r"^qd has a NaN, infinite or huge \(beyond ±1e\+50\)"):
        dyn.full_velocity(beyond)


def test_an_expanded_input_of_exactly_1e50_is_checked_for_its_followers():
    dyn = Dynamics.from_urdf(MIMIC)
    with pytest.raises(ValueError) as info:
        dyn.engine.check_expanded(np.array([0.0, 1e50]), "qdd_ref")
    assert str(info.value) == _beyond("qdd_ref", 1e50, position=False)


def _disc(name: str) -> str:
    """A body balanced about its z axis (centre on it, ixx = iyy): foldable."""
    return (f'<link name="{name}"><inertial><origin xyz="0 0 0"/><mass value="0.5"/>'
            '<inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1.5e-3"/></inertial>'
            "</link>")  # fmt: skip


def _geared(order: str) -> str:
    """j0 turns link b; ja turns link a on b; the rotor jr (ratio 5, balanced about its axis)
    turns on b too, its joint before ja's in the URDF if order is "rotor first"."""

    def joint(name, parent, child, axis="0 0 1"):
        return (f'<joint name="{name}" type="continuous"><parent link="{parent}"/>'
                f'<child link="{child}"/><origin xyz="0.3 0 0"/><axis xyz="{axis}"/>'
                "</joint>")  # fmt: skip

    def body(name, centre="0 0 0"):
        return _link(name).replace('xyz="0.1 0.02 0.03"', f'xyz="{centre}"')

    pair = [joint("jr", "b", "rot"), joint("ja", "b", "a")]
    if order != "rotor first":
        pair.reverse()
    return ('<robot name="geared"><link name="base"/>' + body("b", "0.1 0 0") + _disc("rot")
            + body("a", "0.2 0.1 0") + joint("j0", "base", "b", "0 1 0") + "".join(pair)
            + '<coupling name="g"><predecessor link="a"/><successor link="rot"/>'
            '<ratio value="5"/></coupling></robot>')  # fmt: skip


def test_a_rotor_is_folded_when_its_leader_comes_first_beside_it():
    """rotor_fold's rule, with the cluster leaders the engine finds: a balanced rotor beside
    its leader (same parent) and after it in the tree is folded; before it, or on another
    link, it is not; the dynamics are the same either way."""
    after = Dynamics.from_urdf(_geared("rotor after"))
    first = Dynamics.from_urdf(_geared("rotor first"))
    # a balanced mimic follower on its leader's link: a follower, but not beside its leader
    on_b = Dynamics.from_urdf('<robot name="on_b"><link name="base"/>' + _link("a") + _link("b")
                              + _disc("c") + _joint("j0", "base", "a", "0 0 1")
                              + _joint("j1", "a", "b", "0 1 0")
                              + _joint("j2", "b", "c", "0 0 1", '<mimic joint="j1"/>')
                              + "</robot>")  # fmt: skip
    assert after.tree_joint_names == ("j0", "ja", "jr") and after.engine.folded_rows == (2,)
    assert first.tree_joint_names == ("j0", "jr", "ja") and first.engine.folded_rows == ()
    assert on_b.tree_joint_names == ("j0", "j1", "j2") and on_b.engine.folded_rows == ()
    q, v = np.array([0.3, -0.7]), np.array([0.9, 1.3])
    for got, want in zip(first.coriolis(q, v), after.coriolis(q, v), strict=True):
        assert np.abs(got - want).max() < 1e-15
