"""Joints that follow a leader in joint_states, at the bound of the range on both sides: in the
buffer (:mod:`coriolis_ros.stream`), in the node's core and in the bag reader.

A leader value whose follower (q = m q_leader + o, qd = m qd_leader) would lie beyond ±1e50 is
refused with the message, naming both, instead of reaching the library (which refuses that
state: the node's tick failed on it, the observer's update too); the last value inside passes
and gives finite output.  A follower's own value beyond the range is refused naming its leader.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from support.node_core_helpers import Core
from support.ros_helpers import panda_urdf

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.offline.bag_rows import RowStream
from coriolis_ros.robots import robot_urdf
from coriolis_ros.stream.joint_state_buffer import (
    ACCEPTED,
    FOLLOWERS_ONLY,
    MAX_ABS,
    MAX_FOLLOWER_OFFSET,
    REJECTED,
    JointStateBuffer,
)
from coriolis_ros.stream.mimic_check import MimicCheck

BEYOND = math.nextafter(MAX_ABS, math.inf)
JOINTS = ("a", "b", "c")
# a leads two followers (the larger multiplier binds), b one with an offset, c one with |m| < 1
FOLLOWERS = {
    "ra": ("a", 100.0, 0.0),
    "sa": ("a", -3.0, 0.0),
    "mb": ("b", -250.0, 0.5),
    "hc": ("c", 0.5, -1e6),
}


def last_inside(m: float, o: float = 0.0) -> float:
    """The largest x > 0 with |m x + o| <= 1e50 in double arithmetic (as the library rounds)."""
    x = min(MAX_ABS, MAX_ABS / abs(m))
    while x < MAX_ABS and abs(m * x + o) <= MAX_ABS:
        x = math.nextafter(x, math.inf)
    while not abs(m * x + o) <= MAX_ABS:
        x = math.nextafter(x, 0.0)
    return x


def buffer():
    buf = JointStateBuffer(JOINTS, extra_names=tuple(FOLLOWERS))
    MimicCheck(buf, FOLLOWERS, 1e-3)  # tells the buffer its followers
    return buf


def position_reason(follower, value):
    leader, m, o = FOLLOWERS[follower]
    return (
        f"position {value!r} of {leader} puts its follower {follower} at {m!r} × {value!r} + "
        f"{o!r} = {m * value + o!r}, beyond ±1e+50"
    )


def velocity_reason(follower, value):
    leader, m, _ = FOLLOWERS[follower]
    return (
        f"velocity {value!r} of {leader} puts its follower {follower} at {m!r} × {value!r} = "
        f"{m * value!r}, beyond ±1e+50"
    )


# ---------------------------------------------------------------- the buffer


@pytest.mark.parametrize("names", [["a", "b", "c"], ["c", "a"], ["b", "mb", "a"]])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_leader_position_on_both_sides_of_its_followers_bound(names, sign):
    buf = buffer()
    for leader, binding in (("a", "ra"), ("b", "mb")):
        if leader not in names:
            continue
        _, m, o = FOLLOWERS[binding]
        inside = sign * last_inside(m, o)
        outside = sign * math.nextafter(abs(inside), math.inf)
        values = [0.0] * len(names)
        k = names.index(leader)
        if "mb" in names:  # the follower itself, in range
            values[names.index("mb")] = 0.25
        for repeat in range(2):  # a new name list, then the known layout
            values[k] = outside
            r = buf.update(names, values, [], 0, "s", 0.0)
            assert r.status == REJECTED and r.reason == position_reason(binding, outside), repeat
            values[k] = inside
            assert buf.update(names, values, [], 0, "s", 0.0).status == ACCEPTED
            assert buf.position[JOINTS.index(leader)] == inside
        values[k] = 0.5  # a rejected message leaves nothing behind
        buf.update(names, values, [], 0, "kept", 0.0)
        values[k] = outside
        before = buf.pending
        assert buf.update(names, values, [], 0, "bad", 0.0).status == REJECTED
        assert buf.position[JOINTS.index(leader)] == 0.5
        assert buf.stamp == "kept" and buf.pending == before


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_leader_velocity_on_both_sides_of_its_followers_bound(sign):
    buf = buffer()
    names = ["a", "b", "c"]
    for leader, binding in (("a", "ra"), ("b", "mb")):
        m = FOLLOWERS[binding][1]
        inside = sign * last_inside(m)
        outside = sign * math.nextafter(abs(inside), math.inf)
        velocity = [0.0, 0.0, 0.0]
        velocity[names.index(leader)] = outside
        r = buf.update(names, [0.0] * 3, velocity, 0, "s", 0.0)
        assert r.status == REJECTED and r.reason == velocity_reason(binding, outside)
        velocity[names.index(leader)] = inside
        assert buf.update(names, [0.0] * 3, velocity, 0, "s", 0.0).status == ACCEPTED
        assert buf.velocity[names.index(leader)] == inside


def test_the_largest_multiplier_binds_and_a_small_one_leaves_the_leaders_own_bound():
    buf = buffer()
    # a: followers with 100 and -3; the bound is 100's (a value -3 allows is refused)
    value = math.nextafter(last_inside(100.0), math.inf)
    assert abs(-3.0 * value) <= MAX_ABS
    assert buf.update(["a"], [value], [], 0, "s", 0.0).reason == position_reason("ra", value)
    # c: a follower with 0.5 and offset -1e6: the leader's own bound, at MAX_ABS exactly
    assert buf.update(["c"], [-MAX_ABS], [], 0, "s", 0.0).status == ACCEPTED
    assert buf.position[2] == -MAX_ABS
    r = buf.update(["c"], [-BEYOND], [], 0, "s", 0.0)
    assert r.status == REJECTED and r.reason == "position beyond ±1e+50 for c"


def test_a_followers_own_value_is_refused_naming_its_leader():
    buf = buffer()
    assert buf.update(["ra"], [MAX_ABS], [], 0, "s", 0.0).status == FOLLOWERS_ONLY
    r = buf.update(["ra"], [BEYOND], [], 0, "s", 0.0)
    assert r.reason == f"position beyond ±1e+50 for ra (follows a) = {BEYOND!r}"
    r = buf.update(["a", "ra", "mb"], [0.0, math.nan, -math.inf], [], 0, "s", 0.0)
    assert r.reason == (
        "non-finite position (NaN/inf) for ra (follows a) = nan, mb (follows b) = -inf"
    )
    r = buf.update(["a", "mb", "b"], [0.0] * 3, [0.0, -BEYOND, 0.0], 0, "s", 0.0)
    assert r.reason == f"velocity beyond ±1e+50 for mb (follows b) = {-BEYOND!r}"
    r = buf.update(["a", "ra", "b"], [BEYOND, 0.0, 0.0], [], 0, "s", 0.0)
    assert r.reason == "position beyond ±1e+50 for a"  # a model joint: as before


def test_without_followers_nothing_changes():
    buf = JointStateBuffer(JOINTS)
    assert buf.update(["a"], [MAX_ABS], [MAX_ABS], 0, "s", 0.0).status == ACCEPTED
    assert buf.update(["a"], [BEYOND], [], 0, "s", 0.0).reason == "position beyond ±1e+50 for a"


def test_bound_followers_takes_offsets_up_to_the_librarys_bound():
    buf = JointStateBuffer(JOINTS, extra_names=("f",))
    buf.bound_followers({"f": ("a", 2.0, -MAX_FOLLOWER_OFFSET)})
    assert buf.leader_of == {"f": "a"} and MAX_FOLLOWER_OFFSET == 1e6
    with pytest.raises(ValueError) as info:
        buf.bound_followers({"f": ("a", 2.0, math.nextafter(1e6, math.inf))})
    assert str(info.value) == (
        "follower f: multiplier 2.0 must be finite and offset 1000000.0000000001 within ±1e+06"
    )
    with pytest.raises(ValueError, match="multiplier inf must be finite"):
        buf.bound_followers({"f": ("a", math.inf, 0.0)})
    with pytest.raises(ValueError, match="^follower f: its leader z is not a model joint$"):
        buf.bound_followers({"f": ("z", 1.0, 0.0)})
    buf.bound_followers({"f": ("a", 2.0, 0.0)})  # the layouts seen before follow the change
    buf.update(["a"], [0.3e50], [], 0, "s", 0.0)
    buf.bound_followers({"f": ("a", 4.0, 0.0)})
    assert buf.update(["a"], [0.3e50], [], 0, "s", 0.0).status == REJECTED


# ---------------------------------------------------------------- the node's core


@pytest.fixture(scope="module", params=["arm7_rotors", "panda"])
def core(request):
    urdf = robot_urdf("arm7_rotors") if request.param == "arm7_rotors" else panda_urdf()
    core = Core(urdf, observer_enabled=True, publish_coriolis_matrix=True)
    assert core.model is not None, core.log.text()
    return core


def _send(core, names, position, velocity, effort):
    start, rejected = len(core.published), core.state.counters.rejected
    core.joint_state(names, position, velocity, effort)
    new = core.published[start:]
    return new, core.state.counters.rejected - rejected


def test_node_core_on_both_sides_of_a_followers_bound(core):
    model = core.model
    names = list(model.measured_names)
    follower, (leader, m, o) = max(model.mimic.items(), key=lambda item: abs(item[1][1]))
    k = names.index(leader)
    zeros = np.zeros(len(names))
    for sign in (1.0, -1.0):
        inside = sign * last_inside(m, o)
        outside = sign * math.nextafter(abs(inside), math.inf)
        q = zeros.copy()
        q[k] = outside
        new, rejected = _send(core, names, q, zeros, zeros)
        assert rejected == 1 and new == []
        if abs(m) > 1.0:  # arm7_rotors: the rotor's bound
            assert core.state.last_rejection == (
                f"position {outside!r} of {leader} puts its follower {follower} at {m!r} × "
                f"{outside!r} + {o!r} = {m * outside + o!r}, beyond ±1e+50"
            )
        else:  # the Panda's finger (m = 1, o = 0): the same bound as its leader's own
            assert inside == sign * MAX_ABS
            assert core.state.last_rejection == f"position beyond ±1e+50 for {leader}"
        q[k] = inside
        new, rejected = _send(core, names, q, zeros, zeros)
        assert rejected == 0 and len(new) == 1
        fields = new[0][1]
        assert all(np.isfinite(np.asarray(v, float)).all() for v in fields.values())
        direct = [*names, follower]
        new, rejected = _send(core, direct, np.r_[zeros, sign * BEYOND], np.r_[zeros, 0.0], [])
        assert rejected == 1 and new == []
        assert core.state.last_rejection == (
            f"position beyond ±1e+50 for {follower} (follows {leader}) = {sign * BEYOND!r}"
        )
    failures = [t for _, t in core.log.lines if "tick failed" in t or "Traceback" in t]
    assert failures == []


def test_node_services_on_both_sides_of_a_rotors_bound():
    core = Core(robot_urdf("arm7_rotors"))
    names = list(core.model.joint_names)
    leader, m, o = core.model.mimic["joint1_rotor"]
    inside = last_inside(m, o)
    outside = math.nextafter(inside, math.inf)
    for value, ok in ((inside, True), (outside, False)):
        q = np.zeros(7)
        q[names.index(leader)] = value
        request = SimpleNamespace(joint_names=names, position=q, velocity=np.zeros(7),
                                  base_position=[], base_velocity=[], reference_velocity=[],
                                  reference_acceleration=[])  # fmt: skip
        response = core.services.dynamics(request, SimpleNamespace())
        assert response.success is ok, response.message
        if ok:
            assert np.isfinite(np.asarray(response.mass_matrix)).all()
        else:
            assert response.message.endswith(
                f"q: follower joint 'joint1_rotor' = 100.0 × 'joint1' + 0.0 = {100.0 * value!r} "
                f"is beyond ±1e+50 (its leader 'joint1' is {value!r}; a follower's coordinate "
                "is bounded like every other)"
            ), response.message


# ---------------------------------------------------------------- the bag reader


def test_bag_reader_on_both_sides_of_a_followers_bound():
    dyn = Dynamics.from_urdf(robot_urdf("arm7_rotors"))
    stream = RowStream(dyn, None, (50.0, 0.1))
    names = list(dyn.joint_names)
    leader, m, o = dyn.coupled_joints["joint1_rotor"]
    inside = last_inside(m, o)
    outside = math.nextafter(inside, math.inf)
    zeros = np.zeros(7)
    log = 1_700_000_000 * 10**9
    for t, value in enumerate((0.0, outside, inside, -outside, -inside)):
        q = zeros.copy()
        q[names.index(leader)] = value
        stream.joint_state(1 + t, 0, names, q, zeros, zeros, log + t * 10**7)
    reasons = {
        f"rejected: position {x!r} of joint1 puts its follower joint1_rotor at 100.0 × "
        f"{x!r} + 0.0 = {100.0 * x!r}, beyond ±1e+50": 1
        for x in (outside, -outside)
    }
    assert stream.skipped == reasons and stream.observer_failed == 0
    assert [row[0] for row in stream.rows["q"]] == [0.0, inside, -inside]
    assert all(np.isfinite(r).all() for r in stream.rows["r"] if r is not None)


@pytest.mark.parametrize("value", [1e300, -math.inf, math.nan])
def test_a_huge_leader_value_is_refused_without_a_numpy_warning(value):
    buf = buffer()
    for _ in range(2):  # a new name list, then the known layout
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = buf.update(["a", "b"], [value, 0.0], [0.0, value], 0, "s", 0.0)
        what = "position beyond ±1e+50" if value == 1e300 else "non-finite position (NaN/inf)"
        assert r.status == REJECTED and r.reason == f"{what} for a"


@pytest.mark.parametrize("m", [7.0, -7.0, 1.5, 9.0, 1e6])
def test_the_limit_is_the_last_double_inside_not_the_quotient(m):
    """With m = 7, 1e50 / 7 rounds to a double whose next neighbour still gives 7 x <= 1e50
    (rounded, as the library computes it): the limit is that neighbour, not the quotient."""
    buf = JointStateBuffer(JOINTS, extra_names=("f",))
    buf.bound_followers({"f": ("a", m, 0.0)})
    inside = last_inside(m)
    if m == 7.0:
        assert inside > MAX_ABS / 7.0  # the case this is for
    outside = math.nextafter(inside, math.inf)
    for x in (inside, -inside):
        assert buf.update(["a"], [x], [x], 0, "s", 0.0).status == ACCEPTED
    for x in (outside, -outside):
        assert buf.update(["a"], [x], [], 0, "s", 0.0).status == REJECTED
        assert buf.update(["a"], [0.0], [x], 0, "s", 0.0).status == REJECTED


def test_the_reason_names_the_follower_beyond_not_one_at_the_bound():
    buf = JointStateBuffer(JOINTS, extra_names=("at", "past"))
    buf.bound_followers({"at": ("a", 100.0, 0.0), "past": ("a", 200.0, 0.0)})
    assert 100.0 * 1e48 == MAX_ABS  # "at" is exactly at the bound: fine
    r = buf.update(["a"], [1e48], [], 0, "s", 0.0)
    assert r.reason == (
        f"position 1e+48 of a puts its follower past at 200.0 × 1e+48 + 0.0 = {200.0 * 1e48!r}, "
        "beyond ±1e+50"
    )
