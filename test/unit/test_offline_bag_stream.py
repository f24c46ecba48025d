"""`coriolis-ros bag` takes joint states as the node does, and never lets a wrong row out:
mimic joints follow, missing joints and a wrong URDF are named errors, damaged storage is named,
bad messages are counted and skipped (fatal with --strict), stamps checked, a directory of bags
read in natural order. Each bound is tested on both sides."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.bag_helpers import (
    STORAGES,
    TYPESTORE,
    joint_state,
    storage_file,
    trajectory,
    write_bag,
)
from support.ros_helpers import panda_urdf

import coriolis_ros
from coriolis_ros.cli import main
from coriolis_ros.dynamics import Dynamics, MomentumObserver
from coriolis_ros.offline import bag as offline

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

ARM = Path(coriolis_ros.__file__).parent / "robots" / "arm7.urdf"
URDF = ARM.read_text()
JS = "sensor_msgs/msg/JointState"


@pytest.fixture(scope="module")
def dyn():
    return Dynamics.from_urdf(URDF)


def _bag(tmp_path, name, names, T=20, urdf=URDF, storage="mcap", seed=0, drop=None):
    stamps, Q, V = trajectory(len(names), T, seed=seed)
    keep = [k for k, nm in enumerate(names) if nm != drop]
    msgs = [
        (int(stamps[t]) + 1000, joint_state(stamps[t], [names[k] for k in keep], Q[t, keep],
                                            V[t, keep]))
        for t in range(T)
    ]  # fmt: skip
    return write_bag(tmp_path / name, storage, msgs, urdf), stamps, Q, V


def _run(capsys, *argv):
    code = main(["bag", *map(str, argv), "--no-progress", "-j", "1"])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------- mimic joints, missing joints


def test_mimic_joints_follow_by_default_and_independent_needs_them(tmp_path, capsys):
    urdf = panda_urdf()
    follow = Dynamics.from_urdf(urdf)
    independent = Dynamics.from_urdf(urdf, mimic="independent")
    names = list(independent.joint_names)
    assert "panda_finger_joint2" in names and "panda_finger_joint2" not in follow.joint_names
    bag, stamps, Q, V = _bag(tmp_path, "panda", names, urdf=urdf, drop="panda_finger_joint2")
    code, out, err = _run(capsys, bag, "-o", tmp_path / "f.npz")
    assert code == 0, err
    data = np.load(tmp_path / "f.npz")
    assert list(data["joint_names"]) == list(follow.joint_names)
    keep = [k for k, nm in enumerate(names) if nm != "panda_finger_joint2"]
    assert np.array_equal(data["position"], Q[:, keep])
    want = np.array([follow.coriolis_vectors(q, v)[0] for q, v in zip(Q[:, keep], V[:, keep])])
    assert np.array_equal(data["coriolis_force"], want)
    # the other side: mimic joints as degrees of freedom of their own must be in the bag
    code, out, err = _run(capsys, bag, "-o", tmp_path / "i.npz", "--mimic", "independent")
    assert code == 1 and not (tmp_path / "i.npz").exists()
    assert "no rows" in err and "panda_finger_joint2" in err and str(bag) in err
    assert "panda_joint1" not in err.split("joints of model")[1]  # only the missing one named


def test_a_bag_lacking_a_joint_exits_nonzero_naming_it(tmp_path, dyn, capsys):
    names = list(dyn.joint_names)
    bag, *_ = _bag(tmp_path, "lacks", names, drop="joint7")
    code, out, err = _run(capsys, bag, "-o", tmp_path / "a.npz")
    assert code == 1
    assert "joint7" in err and "1 of the 7 joints of model arm7" in err
    full, *_ = _bag(tmp_path, "full", names)
    assert _run(capsys, full, "-o", tmp_path / "b.npz")[0] == 0


def test_a_wrong_urdf_exits_nonzero_naming_the_joints(tmp_path, dyn, capsys):
    bag, *_ = _bag(tmp_path, "arm", list(dyn.joint_names))
    panda = tmp_path / "panda.urdf"
    panda.write_text(panda_urdf())
    code, out, err = _run(capsys, bag, "-o", tmp_path / "a.npz", "--urdf", panda)
    assert code == 1
    assert "panda_joint1" in err and "joint1, joint2" in err and "--urdf" in err
    assert _run(capsys, bag, "-o", tmp_path / "b.npz", "--urdf", ARM)[0] == 0


# ---------------------------------------------------------------- damaged storage


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
@pytest.mark.parametrize("cut", [100, 1])
def test_storage_cut_short_is_named_never_a_row(tmp_path, dyn, capsys, storage, cut):
    bag, *_ = _bag(tmp_path, "cut", list(dyn.joint_names), T=200, storage=storage)
    file = storage_file(bag)
    intact = tmp_path / "intact"
    shutil.copytree(bag, intact)
    file.write_bytes(file.read_bytes()[:-cut])
    code, out, err = _run(capsys, bag, "-o", tmp_path / "a.npz")
    assert code == 1 and not (tmp_path / "a.npz").exists()
    assert str(bag) in err
    assert ("truncated" in err) if storage == "sqlite3" else ("magic" in err)
    assert _run(capsys, intact, "-o", tmp_path / "b.npz")[0] == 0


def test_fewer_messages_than_the_metadata_records_is_named(tmp_path, dyn):
    bag, *_ = _bag(tmp_path, "count", list(dyn.joint_names), T=30, storage="sqlite3")
    meta = bag / "metadata.yaml"
    text = meta.read_text()
    assert "message_count: 30" in text
    meta.write_text(text.replace("message_count: 30", "message_count: 31"))
    with pytest.raises(offline.BagError, match=r"/joint_states has 30 of the 31 messages"):
        offline.read_recording(bag)
    meta.write_text(text)
    assert len(offline.read_recording(bag)[1].stamp) == 30


def test_sqlite_header_check_both_sides(tmp_path, dyn):
    from coriolis_ros.offline.bag_storage import BagError, check_sqlite

    bag, *_ = _bag(tmp_path, "db", list(dyn.joint_names), T=50, storage="sqlite3")
    file = storage_file(bag)
    check_sqlite(file)  # intact: passes
    data = file.read_bytes()
    file.write_bytes(data + b"\0")  # one byte too many is damage too
    with pytest.raises(BagError, match="header says"):
        check_sqlite(file)
    file.write_bytes(b"not sqlite" + data[10:])
    with pytest.raises(BagError, match="not an SQLite database"):
        check_sqlite(file)


# ---------------------------------------------------------------- bad messages


def _bag_with_garbage(tmp_path, dyn, storage="sqlite3"):
    stamps, Q, V = trajectory(dyn.nv, 10)
    with offline_writer(tmp_path / "garbage", storage) as (writer, conn):
        for t in range(10):
            if t == 4:
                writer.write(conn, int(stamps[t]), b"\x00\x01\x00\x00garbage")
                continue
            msg = joint_state(stamps[t], dyn.joint_names, Q[t], V[t])
            writer.write(conn, int(stamps[t]), TYPESTORE.serialize_cdr(msg, JS))
    return tmp_path / "garbage", stamps


class offline_writer:  # noqa: N801 - a context manager
    def __init__(self, path, storage):
        from rosbags.rosbag2 import Writer

        self.writer = Writer(path, version=9, storage_plugin=STORAGES[storage])

    def __enter__(self):
        w = self.writer.__enter__()
        String = TYPESTORE.types["std_msgs/msg/String"]
        desc = w.add_connection("/robot_description", String.__msgtype__, typestore=TYPESTORE)
        w.write(desc, 1, TYPESTORE.serialize_cdr(String(data=URDF), String.__msgtype__))
        return w, w.add_connection("/joint_states", JS, typestore=TYPESTORE)

    def __exit__(self, *exc):
        return self.writer.__exit__(*exc)


def test_a_bad_message_is_counted_and_skipped_or_fatal_with_strict(tmp_path, dyn, capsys):
    bag, stamps = _bag_with_garbage(tmp_path, dyn)
    code, out, err = _run(capsys, bag, "-o", tmp_path / "a.npz")
    assert code == 0, err
    assert "skipped 1 messages: undecodable JointState message" in out
    assert np.array_equal(np.load(tmp_path / "a.npz")["header.stamp"], np.delete(stamps, 4))
    code, out, err = _run(capsys, bag, "-o", tmp_path / "b.npz", "--strict")
    assert code == 1 and "message 5 of the bag is bad: undecodable" in err and "--strict" in err
    assert not (tmp_path / "b.npz").exists()


def test_rejected_messages_counted_as_the_node_rejects_them(tmp_path, dyn, capsys):
    n, names = dyn.nv, list(dyn.joint_names)
    stamps, Q, V = trajectory(n, 8)
    E = np.ones((8, n))
    msgs = [joint_state(stamps[t], names, Q[t], V[t], E[t]) for t in range(8)]
    msgs[2] = joint_state(stamps[2], [*names, names[0]], [*Q[2], 0.0], [])  # duplicate name
    msgs[3] = joint_state(stamps[3], names, Q[3], V[3], E[3][:-1])  # effort of another length
    v = V[4].copy()
    v[1] = math.nan
    msgs[4] = joint_state(stamps[4], names, Q[4], v)  # NaN velocity
    bag = write_bag(tmp_path / "rej", "mcap", ((int(s) + 1, m) for s, m in zip(stamps, msgs)),
                    URDF)  # fmt: skip
    code, out, err = _run(capsys, bag, "-o", tmp_path / "a.npz")
    assert code == 0, err
    assert "skipped 1 messages: rejected: duplicate joint names: joint1" in out
    assert "skipped 1 messages: rejected: 7 joint names but 6 efforts" in out
    assert "skipped 1 messages: rejected: non-finite velocity (NaN/inf) for joint2" in out
    data = np.load(tmp_path / "a.npz")
    assert np.array_equal(data["header.stamp"], stamps[[0, 1, 5, 6, 7]])
    assert np.array_equal(data["velocity"], V[[0, 1, 5, 6, 7]])  # no NaN let through
    assert _run(capsys, bag, "-o", tmp_path / "b.npz", "--strict")[0] == 1


def test_repeated_stamps_with_effort_are_integrated_once(tmp_path, dyn):
    n, names = dyn.nv, list(dyn.joint_names)
    stamps, Q, V = trajectory(n, 6, seed=3)
    E = np.random.default_rng(1).normal(size=(6, n))
    stamps = stamps.copy()
    stamps[3] = stamps[2]  # the same stamp again, other values
    msgs = [(int(stamps[t]) + 10 * t + 1, joint_state(stamps[t], names, Q[t], V[t], E[t]))
            for t in range(6)]  # fmt: skip
    bag = write_bag(tmp_path / "rep", "sqlite3", msgs, URDF)
    result = offline.process_bag(bag, tmp_path / "a.npz", observer_gain=20.0)
    assert result.ok, result.error
    r = np.load(tmp_path / "a.npz")["external_effort"]
    observer = MomentumObserver(dyn, 20.0)
    for t in (0, 1, 2, 4, 5):
        want = observer.update((stamps[t] - stamps[0]) * 1e-9, Q[t], V[t], E[t])
        assert np.array_equal(r[t], want), t
        if t == 2:
            assert np.array_equal(r[3], want)  # not integrated again: no time has passed


# ---------------------------------------------------------------- stamps


def test_future_and_zero_stamps_are_noted_on_both_sides_of_the_bound(tmp_path, dyn):
    names = list(dyn.joint_names)
    stamps, Q, V = trajectory(dyn.nv, 4)
    log = 1_800_000_000 * 10**9
    tolerance = 500_000_000
    # at the bound, just past it, zero, before the log time (each message logged at log + k)
    cases = [log + tolerance, log + 1 + tolerance + 1, 0, log + 3 - 5]
    msgs = [(log + k, joint_state(s, names, Q[k], V[k])) for k, s in enumerate(cases)]
    bag = write_bag(tmp_path / "stamps", "mcap", msgs, URDF)
    _, rec = offline.read_recording(bag)
    assert rec.stamp.tolist() == cases  # used as is, as the node uses them
    assert "joint states stamped more than 0.5 s after the bag recorded them, used as is: 1" in (
        rec.notes
    )
    assert "joint states with a zero header.stamp, used as is: 1" in rec.notes


# ---------------------------------------------------------------- several bags, finite rows


def test_a_directory_of_bags_is_read_in_natural_order(tmp_path, dyn, capsys):
    names = list(dyn.joint_names)
    runs = tmp_path / "runs"
    runs.mkdir()
    for k in (10, 2, 1):
        _bag(runs, f"run_{k}", names, T=5 + k, seed=k)
    (runs / "notes.txt").write_text("not a bag")
    assert offline.expand_bags([runs]) == [str(runs / f"run_{k}") for k in (1, 2, 10)]
    assert offline.expand_bags([runs / "run_2"]) == [str(runs / "run_2")]  # a bag itself
    code, out, err = _run(capsys, runs, "--output-dir", tmp_path / "out")
    assert code == 0, err
    lines = [line for line in out.splitlines() if "joint states" in line]
    assert [line.split(":")[0] for line in lines] == [str(runs / f"run_{k}") for k in (1, 2, 10)]
    assert [int(line.split(": ")[1].split()[0]) for line in lines] == [6, 7, 15]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert offline.expand_bags([empty]) == [str(empty)]
    assert _run(capsys, empty, "-o", tmp_path / "e.npz")[0] == 1


def test_rows_that_are_not_finite_are_refused():
    T, n = 4, 2
    arrays = {
        "header.stamp": np.arange(T),
        "joint_names": np.array(["a", "b"]),
        "coriolis_force": np.zeros((T, n)),
        "mass_matrix": np.zeros((T, n, n)),
        "effort": np.zeros((T, n)),
        "external_effort": np.zeros((T, n)),
    }
    assert offline.finite_rows(arrays).all()
    arrays["coriolis_force"][1, 0] = math.inf
    arrays["mass_matrix"][2, 1, 1] = math.nan
    arrays["external_effort"][3] = math.nan  # no estimate: allowed
    arrays["effort"][3, 0] = math.nan  # no effort for a joint: allowed
    assert offline.finite_rows(arrays).tolist() == [True, False, False, True]
    arrays["external_effort"][0, 1] = -math.inf  # an infinite estimate is refused
    keep = offline.finite_rows(arrays)
    assert keep.tolist() == [False, False, False, True]
    kept = offline.take_rows(arrays, keep)
    assert kept["header.stamp"].tolist() == [3] and kept["joint_names"].tolist() == ["a", "b"]


def test_joints_that_never_had_a_velocity_are_noted(tmp_path, dyn):
    names = list(dyn.joint_names)
    stamps, Q, V = trajectory(dyn.nv, 5)
    msgs = [(int(s) + 1, joint_state(s, names, Q[k])) for k, s in enumerate(stamps)]
    msgs[3] = (int(stamps[3]) + 1, joint_state(stamps[3], names, Q[3], V[3]))
    _, rec = offline.read_recording(write_bag(tmp_path / "nov", "mcap", msgs, URDF))
    assert "rows with joints that never had a velocity (0 used): 3, joints: joint1" in (
        " ".join(rec.notes)
    )
    assert not rec.velocity[:3].any() and np.array_equal(rec.velocity[3:], V[[3, 3]])


def test_a_leader_that_puts_its_rotor_beyond_the_bound_is_rejected_as_the_node_rejects_it(
    tmp_path,
):
    """arm7_rotors: joint1 at 1e50 is within the range, but its rotor (100 q) is beyond it, so
    the model refuses that state: the message is rejected with the reason naming the rotor, as
    the node rejects it (nothing published); the bag counts it, the other rows are written."""
    urdf = (ARM.parent / "arm7_rotors.urdf").read_text()
    dyn = Dynamics.from_urdf(urdf)
    names = list(dyn.joint_names)
    stamps, Q, V = trajectory(dyn.nv, 6)
    Q[2, 0] = 1e50
    E = np.ones_like(Q)
    msgs = [(int(s) + 1, joint_state(s, names, Q[k], V[k], E[k])) for k, s in enumerate(stamps)]
    result = offline.process_bag(write_bag(tmp_path / "r", "mcap", msgs, urdf), tmp_path / "r.npz")
    assert result.ok, result.error
    reason = (
        "rejected: position 1e+50 of joint1 puts its follower joint1_rotor at 100.0 × 1e+50 + "
        f"0.0 = {100.0 * 1e50!r}, beyond ±1e+50"
    )
    assert result.skipped == {reason: 1}
    assert "refused by the model" not in " ".join(result.notes)  # nothing reaches it
    data = np.load(tmp_path / "r.npz")
    assert np.array_equal(data["header.stamp"], np.delete(stamps, 2))
    assert np.isfinite(data["coriolis_force"]).all() and np.isfinite(data["external_effort"]).all()
    Q[2, 0] = 0.5  # the other side: a state the model takes
    msgs = [(int(s) + 1, joint_state(s, names, Q[k], V[k], E[k])) for k, s in enumerate(stamps)]
    result = offline.process_bag(write_bag(tmp_path / "s", "mcap", msgs, urdf), tmp_path / "s.npz")
    assert result.ok and result.skipped == {} and result.rows == 6
