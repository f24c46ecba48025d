"""`coriolis-ros bag` with a floating or planar base: the base state comes from recorded
nav_msgs/Odometry, paired with the joint states as the node pairs them (newest odometry,
stamps within base_state_timeout). Bags are written here with rosbags, in both formats.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from support.bag_helpers import joint_state, odometry, trajectory, write_mixed_bag

import coriolis_ros.dynamics
from coriolis_ros.cli import main
from coriolis_ros.dynamics import Dynamics
from coriolis_ros.offline import bag as offline

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

QUADRUPED = Path(coriolis_ros.__file__).parent / "robots" / "quadruped12.urdf"
URDF = QUADRUPED.read_text()
DT = 1_000_000  # 1 kHz


@pytest.fixture(scope="module")
def floating():
    return Dynamics.from_urdf(URDF, root_joint="floating")


@pytest.fixture(scope="module")
def planar():
    return Dynamics.from_urdf(URDF, root_joint="planar")


def _base_motion(T: int, seed: int = 5):
    """Poses (x, y, z, qx, qy, qz, qw; quaternions not quite unit, as estimators send them)
    and twists (linear, angular in the base frame) of a wandering base."""
    rng = np.random.default_rng(seed)
    t = np.arange(T) * DT * 1e-9
    pose = np.empty((T, 7))
    pose[:, 0] = 0.3 * np.sin(2.1 * t)
    pose[:, 1] = 0.2 * np.cos(1.3 * t)
    pose[:, 2] = 0.45 + 0.02 * np.sin(5.0 * t)
    quat = np.stack([0.1 * np.sin(t), 0.2 * np.cos(2 * t), np.sin(0.5 * t), np.ones(T)], axis=1)
    pose[:, 3:] = quat / np.linalg.norm(quat, axis=1)[:, None] * (1 + 1e-9)
    twist = rng.normal(0, 0.5, (T, 6))
    return pose, twist


def _unit(pose):
    """The quaternion as the node uses it: divided by its norm."""
    x, y, z, w = pose[3:]
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    return [x / norm, y / norm, z / norm, w / norm]


def _recording(dyn, T, first_odometry=0, child=None, skip_odometry=()):
    """Messages of a run: odometry (log time just before) and the joint state, every ms;
    the odometry starts at row ``first_odometry`` and is missing at ``skip_odometry``."""
    n = dyn.nv - 6 if dyn.root_joint == "floating" else dyn.nv - 3
    stamps, Q, V = trajectory(n, T, seed=3)
    pose, twist = _base_motion(T)
    names = dyn.joint_names[dyn.nv - n :]
    child = dyn.root_link if child is None else child
    messages = []
    for t in range(T):
        if t >= first_odometry and t not in skip_odometry:
            odom = odometry(stamps[t], child, pose[t], twist[t])
            messages.append(("/odom", stamps[t] + 100_000, odom))
        js = joint_state(stamps[t], names, Q[t], V[t])
        messages.append(("/joint_states", stamps[t] + 250_000, js))
    return messages, stamps, Q, V, pose, twist


def _assert_rows_equal_library(dyn, arrays):
    """Every term of every row is the library's single-state call on the row's q, v, bitwise."""
    for t in range(len(arrays["header.stamp"])):
        q, v = arrays["position"][t], arrays["velocity"][t]
        M, Mdot, C = dyn.coriolis(q, v)
        Cqd, CTqd, p = dyn.coriolis_vectors(q, v)
        want = {
            "mass_matrix": M, "mass_matrix_derivative": Mdot, "coriolis_matrix": C,
            "coriolis_force": Cqd, "coriolis_transpose_force": CTqd, "momentum": p,
            "gravity_force": dyn.gravity(q),
        }  # fmt: skip
        for key, value in want.items():
            assert np.array_equal(arrays[key][t], value), (key, t)


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_floating_base_state_from_odometry(tmp_path, floating, storage):
    T = 120
    messages, stamps, Q, V, pose, twist = _recording(floating, T, first_odometry=3)
    bag = write_mixed_bag(tmp_path / "walk", storage, messages, URDF)
    out = tmp_path / "walk.npz"
    argv = ["bag", str(bag), "-o", str(out), "--root-joint", "floating", "--no-progress"]
    assert main(argv) == 0
    arrays = dict(np.load(out))
    # the first three joint states came before any odometry: skipped, the rest paired
    assert np.array_equal(arrays["header.stamp"], stamps[3:])
    assert list(arrays["joint_names"]) == list(floating.joint_names)
    assert list(arrays["position_names"]) == list(floating.position_names)
    assert arrays["position"].shape == (T - 3, floating.nq)
    for k, t in enumerate(range(3, T)):
        assert arrays["position"][k][:3].tolist() == pose[t, :3].tolist()
        assert arrays["position"][k][3:7].tolist() == _unit(pose[t])
        assert arrays["position"][k][7:].tolist() == Q[t].tolist()
        assert arrays["velocity"][k].tolist() == twist[t].tolist() + V[t].tolist()
    _assert_rows_equal_library(floating, arrays)
    result = offline.process_bag(bag, tmp_path / "again.npz", root_joint="floating")
    assert result.ok, result.error
    assert result.skipped == {"before the first accepted odometry": 3}
    # quaternions 1e-9 off unit norm: used normalized, below the warning's tolerance
    assert not any("unit norm" in note for note in result.notes)


def test_planar_base_takes_yaw_from_the_orientation(tmp_path, planar):
    T = 40
    messages, stamps, Q, V, pose, twist = _recording(planar, T)
    bag = write_mixed_bag(tmp_path / "planar", "sqlite3", messages, URDF)
    result = offline.process_bag(bag, tmp_path / "planar.npz", root_joint="planar")
    assert result.ok, result.error
    arrays = dict(np.load(tmp_path / "planar.npz"))
    assert list(arrays["position_names"]) == list(planar.position_names)
    for t in range(T):
        x, y, z, w = _unit(pose[t])
        yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        assert arrays["position"][t][:2].tolist() == pose[t, :2].tolist()
        assert abs(arrays["position"][t][2] - yaw) < 1e-12
        assert arrays["velocity"][t][:3].tolist() == [twist[t, 0], twist[t, 1], twist[t, 5]]
        assert arrays["velocity"][t][3:].tolist() == V[t].tolist()
    _assert_rows_equal_library(planar, arrays)


def test_stale_and_foreign_odometry_skip_rows(tmp_path, floating):
    T = 60
    # odometry missing for rows 20..49: from row 20 + 100 ms on (timeout 0.1 s at 1 kHz) the
    # newest odometry, row 19's, is too old; another frame's odometry is rejected
    messages, stamps, *_ = _recording(floating, T, skip_odometry=range(20, 50))
    foreign = odometry(stamps[30], "not_the_root", [0, 0, 0, 0, 0, 0, 1], [0] * 6)
    messages.insert(0, ("/odom", stamps[0], foreign))
    bag = write_mixed_bag(tmp_path / "gap", "mcap", messages, URDF)
    result = offline.process_bag(
        bag, tmp_path / "gap.npz", root_joint="floating", base_state_timeout=0.01
    )
    assert result.ok, result.error
    arrays = dict(np.load(tmp_path / "gap.npz"))
    age = (stamps - stamps[19]) * 1e-9
    kept = [t for t in range(T) if t < 20 or t >= 50 or age[t] <= 0.01]
    assert arrays["header.stamp"].tolist() == stamps[kept].tolist()
    assert result.skipped == {
        "odometry more than base_state_timeout 0.01 s apart": T - len(kept),
        "odometry rejected: odometry child_frame_id 'not_the_root' is not the URDF's root link "
        f"'{floating.root_link}' (the twist must be of, and in, the root link's frame)": 1,
    }
    _assert_rows_equal_library(floating, arrays)


def test_floating_base_without_odometry_is_a_clear_error(tmp_path, floating, capsys):
    messages, *_ = _recording(floating, 10, first_odometry=10)  # no odometry at all
    bag = write_mixed_bag(tmp_path / "blind", "sqlite3", messages, URDF)
    argv = ["bag", str(bag), "--output-dir", str(tmp_path), "--root-joint", "floating"]
    assert main([*argv, "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert str(bag) in err and "no nav_msgs/msg/Odometry messages" in err
    assert main([*argv, "--no-progress", "--odometry-topic", "/state_estimator/odom"]) == 1
    assert "no nav_msgs/msg/Odometry on /state_estimator/odom" in capsys.readouterr().err


def test_odometry_topic_choice(tmp_path, floating):
    messages, stamps, *_ = _recording(floating, 30)
    # a second estimator on another topic, with a pose of its own
    other = [
        ("/other_odom", s + 50_000, odometry(s, floating.root_link, [5, 5, 5, 0, 0, 0, 1], [0] * 6))
        for s in stamps
    ]
    bag = write_mixed_bag(tmp_path / "two", "sqlite3", other + messages, URDF)
    chosen = offline.process_bag(bag, tmp_path / "odom.npz", root_joint="floating")
    assert chosen.ok, chosen.error  # /odom is the default among several
    assert np.load(tmp_path / "odom.npz")["position"][:, 0].max() < 1.0
    other_result = offline.process_bag(
        bag, tmp_path / "other.npz", root_joint="floating", odometry_topic="/other_odom"
    )
    assert other_result.ok, other_result.error
    assert np.all(np.load(tmp_path / "other.npz")["position"][:, :3] == 5.0)


def test_usage_errors_for_base_options(tmp_path, capsys):
    assert main(["bag", "x", "--odometry-topic", "/odom"]) == 2
    assert "needs --root-joint floating or planar" in capsys.readouterr().err
    missing = str(tmp_path / "missing")
    for bad in ("0", "-0.1"):
        argv = ["bag", missing, "--root-joint", "floating", "--base-state-timeout", bad]
        assert main(argv) == 2
        assert "--base-state-timeout must be positive" in capsys.readouterr().err
    # just above the bound: accepted (the bag itself then fails: exit 1, no usage error)
    argv = ["bag", missing, "--root-joint", "floating", "--base-state-timeout", "1e-9"]
    assert main([*argv, "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "must be positive" not in err and "no such file" in err
    with pytest.raises(ValueError, match="root_joint must be fixed, floating or planar"):
        offline.read_recording(missing, root_joint="free")


def test_bad_odometry_is_rejected_or_normalized_and_counted(tmp_path, floating):
    T = 12
    messages, stamps, Q, V, pose, twist = _recording(floating, T, skip_odometry=(4, 8))
    root = floating.root_link
    nan_pose = [float("nan"), 0, 0, 0, 0, 0, 1]
    # row 4: odometry with a NaN (rejected, row 3's is used); row 8: a quaternion of norm 2
    messages.append(("/odom", stamps[4] + 100_000, odometry(stamps[4], root, nan_pose, [0] * 6)))
    long_quat = [*pose[8, :3], *(2.0 * pose[8, 3:])]
    messages.append(("/odom", stamps[8] + 100_000, odometry(stamps[8], root, long_quat, twist[8])))
    messages.sort(key=lambda m: (m[1], m[0]))
    bag = write_mixed_bag(tmp_path / "bad", "sqlite3", messages, URDF)
    result = offline.process_bag(bag, tmp_path / "bad.npz", root_joint="floating")
    assert result.ok, result.error
    assert result.skipped == {
        "odometry rejected: odometry has a NaN, infinite or huge (beyond ±1e50) value": 1
    }
    assert "odometry orientations off unit norm by more than 0.001, used normalized: 1" in (
        result.notes
    )
    arrays = dict(np.load(tmp_path / "bad.npz"))
    assert arrays["position"][4][:3].tolist() == pose[3, :3].tolist()  # the previous odometry
    assert arrays["position"][8][3:7].tolist() == _unit(long_quat)
    _assert_rows_equal_library(floating, arrays)


def test_floating_outputs_keep_position_names(tmp_path, floating):
    pytest.importorskip("pyarrow")  # the parquet extra: pinned in requirements/dev.txt
    from coriolis_ros.offline import parquet

    messages, *_ = _recording(floating, 20)
    bag = write_mixed_bag(tmp_path / "rec", "sqlite3", messages, URDF)
    result = offline.process_bag(
        bag, tmp_path / "rec.parquet", root_joint="floating", write_bag_storage="sqlite3"
    )
    assert result.ok, result.error
    back = parquet.read_parquet(tmp_path / "rec.parquet")
    assert list(back["position_names"]) == list(floating.position_names)
    assert back["position"].shape == (20, floating.nq)
    # the CoriolisState bag carries position_names and the nq-long position
    from rosbags.rosbag2 import Reader

    typestore = offline.coriolis_typestore()
    with Reader(tmp_path / "rec_bag") as reader:
        msgs = [typestore.deserialize_cdr(raw, conn.msgtype) for conn, _, raw in reader.messages()]
    assert len(msgs) == 20
    assert list(msgs[0].position_names) == list(floating.position_names)
    assert list(msgs[0].joint_names) == list(floating.joint_names)
    assert np.array_equal(msgs[5].position, back["position"][5])


def test_observer_runs_on_a_floating_base_as_in_the_node(tmp_path, floating):
    """With efforts recorded, the observer runs on the whole model (the base from odometry,
    zero applied effort on its rows), as the node's ObserverFeed does."""
    messages, stamps, Q, V, pose, twist = _recording(floating, 30)
    n = floating.nv - 6
    effort = np.random.default_rng(2).normal(size=(30, n))
    for k, (topic, _, msg) in enumerate(messages):
        if topic == "/joint_states":
            msg.effort = effort[k // 2]
    bag = write_mixed_bag(tmp_path / "eff", "mcap", messages, URDF)
    result = offline.process_bag(bag, tmp_path / "eff.npz", root_joint="floating")
    assert result.ok, result.error
    data = dict(np.load(tmp_path / "eff.npz"))
    assert data["external_effort"].shape == (30, floating.nv)
    assert np.isfinite(data["external_effort"]).all()
    assert np.isnan(data["effort"][:, :6]).all() and np.array_equal(data["effort"][:, 6:], effort)
    assert "external_effort on 30 of 30 rows" in result.notes


def test_odometry_decoding_either_byte_order(floating):
    from support.bag_helpers import TYPESTORE

    msg = odometry(1_700_000_000_123_456_789, "base", [1, 2, 3, 0.1, 0.2, 0.3, 0.9], range(6))
    little = bytes(TYPESTORE.serialize_cdr(msg, offline.ODOMETRY))
    big = bytes(TYPESTORE.serialize_cdr(msg, offline.ODOMETRY, little_endian=False))
    pose = (1, 2, 3, 0.1, 0.2, 0.3, 0.9)
    want = (1_700_000_000_123_456_789, "odom", "base", pose, tuple(range(6)))
    for raw in (little, big):  # read directly, and by rosbags
        stamp, frame, child, pose, twist = offline.decode_odometry(raw, TYPESTORE)
        assert (stamp, frame, child, tuple(pose), tuple(twist)) == want
    from coriolis_ros.stream.odometry_wire import parse_little_endian

    assert parse_little_endian(big) is None and parse_little_endian(little[:40]) is None
