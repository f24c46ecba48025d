"""The bag reader and the node tell the same story: one recorded stream of JointState messages
(partial and merged, without velocity or effort, rejected, mimic- or rotor-only, repeated
stamps, a stamp gap, a stamp going back, unknown names) goes through the node's ROS-free core
(intake and tick, as the node wires them: test/node_core_helpers.Core) and, written to a bag
with rosbags, through ``coriolis-ros bag``; every row must be equal bit for bit: the state, C,
M, Ṁ, C q̇, Cᵀ q̇, g, p, the effort and the momentum observer's estimate.

Models: the Panda with its hand (panda_finger_joint2 mimics panda_finger_joint1 and follows
it: left out of the rows, checked) and arm7_rotors (seven geared rotors coupled to their
joints).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.bag_helpers import joint_state, write_bag
from support.node_core_helpers import Core
from support.ros_helpers import panda_urdf
from support.urdf_text import four_bar_with_rotor

import coriolis_ros
from coriolis_ros.offline import bag as offline

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

ROBOTS = Path(coriolis_ros.__file__).parent / "robots"
T0 = 1_700_000_000 * 10**9
DT = 2_000_000  # 500 Hz
FIELDS = (
    "position", "velocity", "coriolis_matrix", "mass_matrix", "mass_matrix_derivative",
    "coriolis_force", "coriolis_transpose_force", "gravity_force", "momentum",
)  # fmt: skip
PUBLISH_ALL = {
    f"publish_{name}": True
    for name in (
        "coriolis_matrix", "coriolis_force", "coriolis_transpose_force", "mass_matrix",
        "mass_matrix_derivative", "gravity", "momentum",
    )
}  # fmt: skip


def _messages(names, followers, rng, count=160):
    """(stamp ns, names, position, velocity, effort) of a messy recording of ``names`` (the
    model's joints) and ``followers`` ({name: (leader, multiplier, offset)})."""
    n = len(names)
    half = n // 2
    out = []
    stamp = T0
    for k in range(count):
        q = rng.uniform(-1.0, 1.0, n) * 0.8
        v = rng.normal(0.0, 1.0, n)
        e = rng.normal(0.0, 5.0, n)
        kind = k % 16
        stamp += DT
        all_names = list(names)
        if kind == 3:  # without velocity
            out.append((stamp, all_names, q, [], e))
        elif kind == 4:  # without effort: the observer pauses
            out.append((stamp, all_names, q, v, []))
        elif kind == 5:  # partial: first half, then the rest with the same stamp
            out.append((stamp, all_names[:half], q[:half], v[:half], e[:half]))
            out.append((stamp, all_names[half:], q[half:], v[half:], e[half:]))
        elif kind == 6:  # rejected: duplicate names
            out.append((stamp, [*all_names, all_names[0]], [*q, 0.0], [*v, 0.0], []))
        elif kind == 7:  # rejected: effort of another length
            out.append((stamp, all_names, q, v, e[:-1]))
        elif kind == 8:  # rejected: NaN velocity
            out.append((stamp, all_names, q, [*v[:-1], float("nan")], e))
        elif kind == 9 and followers:  # followers only, off their leader: no new state
            fnames = list(followers)
            out.append((stamp, fnames, np.full(len(fnames), 0.7), [], []))
        elif kind == 10:  # repeated stamp with effort
            out.append((stamp - DT, all_names, q, v, e))
        elif kind == 11 and k > 60:  # a gap longer than observer_max_gap
            stamp += 150_000_000
            out.append((stamp, all_names, q, v, e))
        elif kind == 12 and 90 < k < 110:  # the stamp goes back
            out.append((stamp - 40_000_000, all_names, q, v, e))
        elif kind == 13:  # with followers (on their leader) and an unknown name
            fq, fv, fe = [], [], []
            for leader, mult, off in followers.values():
                i = all_names.index(leader)
                fq.append(mult * q[i] + off)
                fv.append(mult * v[i])
                fe.append(0.0)
            extra = [*followers, "not_a_joint"]
            out.append((stamp, all_names + extra, [*q, *fq, 1.0], [*v, *fv, 0.0], [*e, *fe, 0.0]))
        else:
            out.append((stamp, all_names, q, v, e))
    return out


def _node_rows(urdf, messages):
    core = Core(urdf, observer_enabled=True, observer_gain=40.0, observer_max_gap=0.1,
                **PUBLISH_ALL)  # fmt: skip
    assert core.model is not None, core.log.text()
    for stamp, names, q, v, e in messages:
        core.joint_state(names, q, v, e, stamp_ns=stamp)
    return core, core.published


def _bag_rows(tmp_path, urdf, messages, storage):
    # received in the order sent (the log times increase; the stamps need not)
    recorded = [
        (T0 + k * DT + 300_000, joint_state(stamp, names, q, v, e))
        for k, (stamp, names, q, v, e) in enumerate(messages)
    ]
    bag = write_bag(tmp_path / f"rec_{storage}", storage, recorded, urdf=urdf)
    result = offline.process_bag(
        bag, tmp_path / f"rec_{storage}.npz", observer_gain=40.0, observer_max_gap=0.1
    )
    assert result.ok, result.error
    return result, dict(np.load(tmp_path / f"rec_{storage}.npz"))


def _bits(x):
    return np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)


@pytest.mark.parametrize(
    "robot", ["panda", "arm7_rotors"],
)
@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_bag_rows_equal_node_messages_bit_for_bit(tmp_path, robot, storage):
    urdf = panda_urdf() if robot == "panda" else (ROBOTS / "arm7_rotors.urdf").read_text()
    core = Core(urdf)
    names = list(core.model.measured_names)
    followers = dict(core.model.mimic)
    assert followers, "the model must have joints that follow a leader"
    messages = _messages(names, followers, np.random.default_rng(len(robot)))
    core, published = _node_rows(urdf, messages)
    result, rows = _bag_rows(tmp_path, urdf, messages, storage)

    assert len(published) > 100 and len(rows["header.stamp"]) == len(published)
    assert [str(x) for x in rows["joint_names"]] == list(core.model.joint_names)
    for t, (stamp, fields) in enumerate(published):
        assert int(rows["header.stamp"][t]) == stamp.sec * 10**9 + stamp.nanosec, t
        for key in FIELDS:
            want = fields[key]
            got = rows[key][t].reshape(want.shape)
            assert np.array_equal(_bits(got), _bits(want)), (t, key)
        # effort and the observer's estimate: where the node publishes them, the same bits;
        # where it does not, the bag's row has no value (NaN)
        for key in ("effort", "external_effort"):
            if key in fields:
                assert np.array_equal(_bits(rows[key][t]), _bits(fields[key])), (t, key)
            else:
                assert np.isnan(rows[key][t]).any(), (t, key)
    have_estimate = sum("external_effort" in f for _, f in published)
    assert 0 < have_estimate < len(published)  # the observer ran, and paused somewhere
    # the node's rejections are the bag's skipped messages
    counters = core.state.counters
    rejected = sum(c for r, c in result.skipped.items() if r.startswith("rejected"))
    assert rejected == counters.rejected > 0
    assert any("off their leader" in note for note in result.notes)
    assert "not_a_joint" in " ".join(result.notes)


@pytest.mark.parametrize("robot", ["four_bar_rotor", "leg_belt_rotors"])
def test_a_closed_chain_with_a_geared_rotor_gives_the_node_s_rows(tmp_path, robot):
    """The four-bar with a geared rotor (a <coupling>), and the leg whose ankle rotor follows
    knee + ankle (computed as a closed chain without loops): a driver publishes every tree
    joint, the rotors included; the bag's rows are the node's, bit for bit (the bag computes
    each row as the tick does, in its order: on a closed chain the last bits depend on the
    order of the calls, each closing the loops from the last solution)."""
    from coriolis_ros.dynamics import Dynamics

    if robot == "four_bar_rotor":
        urdf = four_bar_with_rotor((ROBOTS / "four_bar.urdf").read_text())
    else:
        urdf = (ROBOTS / f"{robot}.urdf").read_text()
    dyn = Dynamics.from_urdf(urdf)
    names = list(dyn.tree_joint_names)
    messages = []
    for k in range(40):
        y = 0.3 + 0.02 * k + np.arange(dyn.nq) * 0.1
        yd = np.ones(dyn.nv)
        q = dyn.close_loops(y)
        A, _ = dyn.velocity_map(y)
        messages.append((T0 + k * DT, names, q, A @ yd, []))
    core, published = _node_rows(urdf, messages)
    result, rows = _bag_rows(tmp_path, urdf, messages, "mcap")
    assert len(published) == 40 and len(rows["header.stamp"]) == 40
    for t, (_, fields) in enumerate(published):
        for key in FIELDS:
            want = fields[key]
            got = rows[key][t].reshape(want.shape)
            assert np.array_equal(_bits(got), _bits(want)), (t, key)
    assert "off the closure" not in core.log.text()
    assert result.skipped == {} and not any("leader" in note for note in result.notes)
    # and the node's numbers are the library's at the published state
    fields = published[-1][1]
    q, qd = fields["position"], fields["velocity"]
    M, Mdot, C = Dynamics.from_urdf(urdf).coriolis(q, qd)
    for key, want in (("mass_matrix", M), ("coriolis_matrix", C)):
        got = fields[key].reshape(want.shape)
        assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max(), key


def test_a_messy_closed_chain_stream_gives_the_node_s_rows_and_notes(tmp_path):
    """A revolute-crank four-bar: crank-only messages, the linkage sent apart (once 0.3 rad off
    the closure), a jump of 300 rad that only the received linkage lets Newton follow, and a
    jump without it (refused by both). Rows bit for bit, the same refusals, the same check."""
    from coriolis_ros.dynamics import Dynamics

    urdf = (ROBOTS / "four_bar.urdf").read_text().replace(
        '<joint name="crank" type="continuous">',
        '<joint name="crank" type="revolute"><limit lower="-1e4" upper="1e4" effort="10" '
        'velocity="10"/>',
    )
    dyn = Dynamics.from_urdf((ROBOTS / "four_bar.urdf").read_text())

    def linkage(y):
        return dyn.close_loops([y], guess=[y, 0.0, 0.5])[1:]

    messages, stamp = [], T0
    for k in range(60):
        stamp += DT
        y = 0.3 + 0.01 * k if k < 30 else 300.3 + 0.01 * (k - 30)
        if k == 30:  # the jump, with the linkage (at the crank's angle less its turns)
            angle = float(np.arctan2(np.sin(y), np.cos(y)))
            messages.append((stamp, ["crank", "coupler", "rocker"], [y, *linkage(angle)],
                             [1.0, 0.0, 0.0], []))  # fmt: skip
        elif k in (10, 20):  # the linkage alone: no state; compared at the next one
            messages.append((stamp, ["coupler", "rocker"], linkage(y) + (0.3 if k == 10 else 0),
                             [], []))  # fmt: skip
            stamp += DT
            messages.append((stamp, ["crank"], [y], [1.0], []))
        elif k == 45:  # a jump back without the linkage: refused
            messages.append((stamp, ["crank"], [0.3], [1.0], []))
        else:
            messages.append((stamp, ["crank"], [y], [1.0], []))
    core, published = _node_rows(urdf, messages)
    result, rows = _bag_rows(tmp_path, urdf, messages, "sqlite3")
    assert len(rows["header.stamp"]) == len(published) == 59  # all but the refused jump back
    for t, (when, fields) in enumerate(published):
        assert int(rows["header.stamp"][t]) == when.sec * 10**9 + when.nanosec, t
        for key in FIELDS:
            want = fields[key]
            got = rows[key][t].reshape(want.shape)
            assert np.array_equal(_bits(got), _bits(want)), (t, key)
    text = core.log.text()
    assert "off the closure" in text and "moved by 300" in text
    notes = " ".join(result.notes)
    assert "off the closure by more than 0.001 (not used): 1, first: 'coupler'" in notes
    assert "rows refused by the model: 1, first:" in notes and "moved by 300" in notes
