"""`coriolis-ros bag`: bags written here with rosbags (sqlite3 and MCAP) from a known trajectory;
the tool's output must equal the library's single-state calls on the recorded states.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.bag_helpers import joint_state, storage_file, trajectory, trajectory_bag, write_bag

import coriolis_ros
from coriolis_ros.cli import main
from coriolis_ros.dynamics import Dynamics, MomentumObserver
from coriolis_ros.offline import bag as offline

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

ARM = Path(coriolis_ros.__file__).parent / "robots" / "arm7.urdf"
URDF = ARM.read_text()


@pytest.fixture(scope="module")
def dyn():
    return Dynamics.from_urdf(URDF)


def _expected(dyn, Q, V) -> dict:
    """Every CoriolisState term from the library's single-state calls."""
    rows = []
    for q, v in zip(Q, V, strict=True):
        M, Mdot, C = dyn.coriolis(q, v)
        Cqd, CTqd, p = dyn.coriolis_vectors(q, v)
        rows.append(
            {
                "mass_matrix": M,
                "mass_matrix_derivative": Mdot,
                "coriolis_matrix": C,
                "coriolis_force": Cqd,
                "coriolis_transpose_force": CTqd,
                "momentum": p,
                "gravity_force": dyn.gravity(q),
            }
        )
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def _assert_same(got, want, what):
    assert got.shape == want.shape, what
    assert np.array_equal(got.view(np.uint64), np.ascontiguousarray(want).view(np.uint64)), what


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_tool_output_equals_library(tmp_path, dyn, storage):
    stamps, Q, V = trajectory(dyn.nv, 300, seed=1)
    # the recording lists the joints in another order than the model
    order = np.random.default_rng(2).permutation(dyn.nv)
    names = [dyn.joint_names[k] for k in order]
    bag = trajectory_bag(tmp_path / "rec", storage, names, stamps, Q[:, order], V[:, order], URDF)
    out = tmp_path / "out.npz"
    argv = ["bag", str(bag), "-o", str(out), "--write-bag", storage, "--no-progress"]
    assert main(argv) == 0
    data = np.load(out)
    assert list(data["joint_names"]) == list(dyn.joint_names)
    assert np.array_equal(data["header.stamp"], stamps)
    assert np.array_equal(data["log_time"], stamps + 250_000)
    _assert_same(data["position"], Q, "position")
    _assert_same(data["velocity"], V, "velocity")
    want = _expected(dyn, Q, V)
    for key, value in want.items():
        _assert_same(data[key], value, key)
    assert "effort" not in data and "external_effort" not in data

    # The CoriolisState bag: every field of the generated message type, read back by rclpy.
    from rclpy.serialization import deserialize_message
    from rosbags.rosbag2 import Reader

    from coriolis_ros.msg import CoriolisState

    with Reader(tmp_path / "out_bag") as reader:
        (conn,) = reader.connections
        assert conn.topic == "/coriolis_state"
        assert conn.msgtype == "coriolis_ros/msg/CoriolisState"
        msgs = [(ts, raw) for _, ts, raw in reader.messages()]
    assert len(msgs) == 300
    suffix = {"sqlite3": ".db3", "mcap": ".mcap"}[storage]
    assert storage_file(tmp_path / "out_bag").suffix == suffix
    n = dyn.nv
    for t in (0, 151, 299):
        log_time, raw = msgs[t]
        assert log_time == stamps[t] + 250_000
        msg = deserialize_message(bytes(raw), CoriolisState)
        assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == stamps[t]
        assert list(msg.joint_names) == list(dyn.joint_names)
        assert np.array_equal(msg.position, Q[t]) and np.array_equal(msg.velocity, V[t])
        for key, value in want.items():
            assert np.array_equal(np.asarray(getattr(msg, key)), value[t].reshape(-1)), key
        assert len(msg.coriolis_matrix) == n * n


def test_npz_keys_are_message_fields():
    from coriolis_ros.msg import CoriolisState

    fields = set(CoriolisState.get_fields_and_field_types())
    assert set(offline.TERM_FIELDS) <= fields
    assert {"position", "velocity", "joint_names", "header"} <= fields
    typestore = offline.coriolis_typestore()
    registered = typestore.types[offline.CORIOLIS_STATE].__dataclass_fields__
    assert set(registered) - {"__msgtype__"} == fields


def test_urdf_option_and_missing_description(tmp_path, dyn, capsys):
    stamps, Q, V = trajectory(dyn.nv, 20)
    bag = trajectory_bag(tmp_path / "nodesc", "mcap", dyn.joint_names, stamps, Q, V, urdf=None)
    assert main(["bag", str(bag), "-o", str(tmp_path / "a.npz"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert str(bag) in err and "no robot description" in err and "--urdf" in err
    assert not (tmp_path / "a.npz").exists()
    argv = ["bag", str(bag), "-o", str(tmp_path / "b.npz"), "--urdf", str(ARM), "--no-progress"]
    assert main(argv) == 0
    got = np.load(tmp_path / "b.npz")["coriolis_force"]
    _assert_same(got, _expected(dyn, Q, V)["coriolis_force"], "Cqd")


def _truncate(file: Path) -> None:
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def test_corrupt_and_truncated_bags_are_named_others_processed(tmp_path, dyn, capsys):
    stamps, Q, V = trajectory(dyn.nv, 200)
    good = trajectory_bag(tmp_path / "good", "sqlite3", dyn.joint_names, stamps, Q, V, URDF)
    cut_mcap = trajectory_bag(tmp_path / "cut_mcap", "mcap", dyn.joint_names, stamps, Q, V, URDF)
    _truncate(storage_file(cut_mcap))
    cut_db = trajectory_bag(tmp_path / "cut_db", "sqlite3", dyn.joint_names, stamps, Q, V, URDF)
    _truncate(storage_file(cut_db))
    garbage = trajectory_bag(tmp_path / "garbage", "mcap", dyn.joint_names, stamps, Q, V, URDF)
    storage_file(garbage).write_bytes(b"\x89MCAP0\r\n" + bytes(range(256)) * 8)
    bad_meta = trajectory_bag(tmp_path / "meta", "mcap", dyn.joint_names, stamps, Q, V, URDF)
    (bad_meta / "metadata.yaml").write_text("rosbag2_bagfile_information: [unclosed\n")
    missing = tmp_path / "missing"
    bags = [cut_mcap, good, cut_db, garbage, bad_meta, missing]
    outdir = tmp_path / "out"
    argv = ["bag", *map(str, bags), "--output-dir", str(outdir), "--no-progress", "-j", "1"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("coriolis-ros bag: error:")]
    assert len(lines) == 5, err
    for bag in (cut_mcap, cut_db, garbage, bad_meta, missing):
        assert any(str(bag) in line for line in lines), (bag, err)
    assert sorted(p.name for p in outdir.iterdir()) == ["good.coriolis.npz"]
    _assert_same(np.load(outdir / "good.coriolis.npz")["coriolis_matrix"],
                 _expected(dyn, Q, V)["coriolis_matrix"], "C")  # fmt: skip


def test_bags_in_worker_processes_equal_in_process(tmp_path, dyn):
    stamps, Q, V = trajectory(dyn.nv, 120, seed=4)
    bags = [
        trajectory_bag(tmp_path / "a", "sqlite3", dyn.joint_names, stamps, Q, V, URDF),
        trajectory_bag(tmp_path / "b", "mcap", dyn.joint_names, stamps[:60], Q[:60], V[:60], URDF),
    ]
    cut = trajectory_bag(tmp_path / "c", "mcap", dyn.joint_names, stamps, Q, V, URDF)
    _truncate(storage_file(cut))
    options = dict(fields=offline.TERM_FIELDS)
    outs = [str(tmp_path / f"{k}.npz") for k in range(3)]
    results = offline.process_bags([*map(str, bags), str(cut)], outs, options, jobs=2)
    assert [r.ok for r in results] == [True, True, False]
    assert str(cut) in results[2].error
    want = _expected(dyn, Q, V)
    for k, rows in ((0, 120), (1, 60)):
        data = np.load(outs[k])
        for key, value in want.items():
            _assert_same(data[key], value[:rows], f"bag {k} {key}")


def test_merging_partial_and_bad_messages(tmp_path, dyn):
    """Two publishers with half the joints each, messages without velocity, bad messages."""
    n = dyn.nv
    names = list(dyn.joint_names)
    first, second = names[: n // 2], names[n // 2 :]
    rng = np.random.default_rng(5)
    q = rng.uniform(-1, 1, (6, n))
    v = rng.normal(size=(6, n))
    lo, hi = slice(0, n // 2), slice(n // 2, n)
    msgs = [
        joint_state(1, first, q[0, lo], v[0, lo]),  # incomplete: no row yet
        joint_state(2, second + ["gripper"], np.r_[q[1, hi], 0.5], np.r_[v[1, hi], 0.0]),  # row
        joint_state(3, first, q[2, lo]),  # no velocity: keeps v[0, lo]
        joint_state(4, first, [np.nan] * len(first), v[3, lo]),  # rejected
        joint_state(5, second, q[4, hi], v[4, hi][:-1]),  # velocity length differs: rejected
        joint_state(6, second, np.full(len(second), 2e50)),  # beyond the bound: rejected
        joint_state(7, second, q[5, hi], v[5, hi]),  # row
        joint_state(8, ["gripper"], [0.1]),  # no model joint
    ]
    bag = write_bag(tmp_path / "merge", "mcap", ((k, m) for k, m in enumerate(msgs)), URDF)
    _, rec = offline.read_recording(bag)
    expect_q = np.array([np.r_[q[a, lo], q[b, hi]] for a, b in ((0, 1), (2, 1), (2, 5))])
    expect_v = np.array([np.r_[v[a, lo], v[b, hi]] for a, b in ((0, 1), (0, 1), (0, 5))])
    assert np.array_equal(rec.stamp, [2, 3, 7])
    assert np.array_equal(rec.position, expect_q)
    assert np.array_equal(rec.velocity, expect_v)
    assert rec.effort is None
    assert rec.unknown_joints == ("gripper",)
    assert rec.skipped == {  # the node's reasons (the same JointStateBuffer)
        "before every joint had a position": 1,
        "rejected: non-finite position (NaN/inf) for joint1, joint2, joint3": 1,
        "rejected: position beyond ±1e+50 for joint4, joint5, joint6, joint7": 1,
        "rejected: 4 joint names but 3 velocities": 1,
        "no joint of the model": 1,
    }


def test_several_joint_state_topics_need_a_choice(tmp_path, dyn):
    stamps, Q, V = trajectory(dyn.nv, 5)
    from support.bag_helpers import STORAGES, TYPESTORE
    from rosbags.rosbag2 import Writer

    JS = "sensor_msgs/msg/JointState"
    with Writer(tmp_path / "two", version=9, storage_plugin=STORAGES["mcap"]) as writer:
        for topic in ("/left/joint_states", "/right/joint_states"):
            conn = writer.add_connection(topic, JS, typestore=TYPESTORE)
            for t in range(5):
                msg = joint_state(stamps[t], dyn.joint_names, Q[t], V[t])
                writer.write(conn, int(stamps[t]), TYPESTORE.serialize_cdr(msg, JS))
    with pytest.raises(offline.BagError, match="several JointState topics"):
        offline.read_recording(tmp_path / "two", URDF)
    _, rec = offline.read_recording(
        tmp_path / "two", URDF, joint_states_topic="/right/joint_states"
    )
    assert np.array_equal(rec.position, Q)
    with pytest.raises(offline.BagError, match=r"no sensor_msgs/msg/JointState on /nope"):
        offline.read_recording(tmp_path / "two", URDF, joint_states_topic="/nope")


def test_observer_runs_on_rows_with_efforts_and_never_on_a_stale_one(tmp_path, dyn):
    """external_effort is the library's MomentumObserver over the rows whose message had
    efforts, in order (t from the stamps); a message without effort pauses it (that row's
    effort and estimate are NaN: the previous message's effort is not carried over), the next
    row bridges the pause."""
    stamps, Q, V = trajectory(dyn.nv, 30, seed=6)
    effort = np.random.default_rng(7).normal(size=Q.shape)
    msgs = []
    for t in range(30):
        e = () if t == 10 else effort[t]
        msgs.append((int(stamps[t]) + 1000, joint_state(stamps[t], dyn.joint_names, Q[t], V[t], e)))
    bag = write_bag(tmp_path / "eff", "sqlite3", msgs, URDF)
    result = offline.process_bag(bag, tmp_path / "o.npz", observer_gain=3.0)
    assert result.ok, result.error
    data = np.load(tmp_path / "o.npz")
    assert np.isnan(data["effort"][10]).all() and np.isnan(data["external_effort"][10]).all()
    keep = [t for t in range(30) if t != 10]
    assert np.array_equal(data["effort"][keep], effort[keep])
    observer = MomentumObserver(dyn, 3.0)
    for t in keep:
        r = observer.update((stamps[t] - stamps[0]) * 1e-9, Q[t], V[t], effort[t])
        assert np.array_equal(data["external_effort"][t], r), t
    assert "external_effort on 29 of 30 rows" in result.notes

@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_offline_observer_recovers_an_injected_external_torque(tmp_path, dyn, storage):
    """A simulated arm (the library's forward dynamics, semi-implicit Euler at 1 kHz) under
    gravity compensation and damping, pushed by 2 N m on one joint from 0.1 s: the recorded
    efforts (the applied torque, not the push) give external_effort -> the push (K_O = 50)."""
    h, T, push_joint = 1e-3, 500, 2
    q, v = np.linspace(-0.5, 0.5, dyn.nv), np.zeros(dyn.nv)
    stamps = 1_700_000_000 * 10**9 + np.arange(T, dtype=np.int64) * 1_000_000
    Q, V, E = np.empty((T, dyn.nv)), np.empty((T, dyn.nv)), np.empty((T, dyn.nv))
    for k in range(T):
        tau = dyn.gravity(q) - 2.0 * v
        Q[k], V[k], E[k] = q, v, tau
        ext = np.zeros(dyn.nv)
        ext[push_joint] = 2.0 if k * h >= 0.1 else 0.0
        M, _, C = dyn.coriolis(q, v)
        v = v + h * np.linalg.solve(M, tau + ext - C @ v - dyn.gravity(q))
        q = q + h * v
    bag = trajectory_bag(tmp_path / "push", storage, dyn.joint_names, stamps, Q, V, URDF, E)
    result = offline.process_bag(bag, tmp_path / "o.npz", observer_gain=50.0)
    assert result.ok, result.error
    r = np.load(tmp_path / "o.npz")["external_effort"]
    assert np.abs(r[:99]).max() < 0.02  # before the push
    expected = np.zeros(dyn.nv)
    expected[push_joint] = 2.0
    assert np.abs(r[-1] - expected).max() < 0.05, r[-1]  # 0.4 s = 20 time constants later


def test_plots_and_fields(tmp_path, dyn):
    stamps, Q, V = trajectory(dyn.nv, 50)
    bag = trajectory_bag(tmp_path / "p", "mcap", dyn.joint_names, stamps, Q, V, URDF)
    out = tmp_path / "p.npz"
    argv = ["bag", str(bag), "-o", str(out), "--plot", "--fields", "gravity_force,momentum"]
    assert main([*argv, "--no-progress"]) == 0
    data = np.load(out)
    assert {"gravity_force", "momentum"} <= set(data) and "coriolis_matrix" not in data
    want = _expected(dyn, Q, V)
    _assert_same(data["momentum"], want["momentum"], "p")
    pngs = sorted(p.name for p in tmp_path.glob("p_*.png"))
    assert pngs == ["p_gravity_force.png"]  # C qd was not requested
    assert (tmp_path / pngs[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "argv, match",
    [
        (["a", "b", "-o", "x.npz"], "-o/--output takes one bag"),
        (["a", "--fields", "coriolis_matrix,christoffel"], "unknown --fields"),
        (["a", "--jobs", "0"], "--jobs must be at least 1"),
        (["a", "--urdf", "/nonexistent.urdf"], "cannot read --urdf"),
        (["d1/x", "d2/x", "--output-dir", "o"], "same output file"),
    ],
)
def test_usage_errors(argv, match, capsys):
    assert main(["bag", *argv]) == 2
    assert match in capsys.readouterr().err


def test_joint_state_decoder_equals_rosbags():
    from support.bag_helpers import TYPESTORE

    decode = offline.JointStateDecoder(TYPESTORE)
    rng = np.random.default_rng(11)
    JS = "sensor_msgs/msg/JointState"
    cases = []
    for frame in ("", "a", "ab", "abc", "base_link"):
        for names in (["j1"], ["joint_a", "jöint_b", "c"], ["j1", "j2", "j3", "j4"]):
            m = len(names)
            for vel, eff in ((m, m), (0, 0), (m, 0), (0, m)):
                msg = joint_state(
                    123_456_789_012,
                    names,
                    rng.normal(size=m),
                    rng.normal(size=vel),
                    rng.normal(size=eff),
                )
                msg.header.frame_id = frame
                cases.append(msg)
    for little in (True, False):
        for msg in cases:
            raw = TYPESTORE.serialize_cdr(msg, JS, little_endian=little)
            sec, nanosec, names, pos, vel, eff = decode(raw)
            ref = TYPESTORE.deserialize_cdr(raw, JS)
            assert (sec, nanosec) == (ref.header.stamp.sec, ref.header.stamp.nanosec)
            assert names == tuple(ref.name)
            for got, want in ((pos, ref.position), (vel, ref.velocity), (eff, ref.effort)):
                assert np.array_equal(got, want)
    raw = bytes(TYPESTORE.serialize_cdr(cases[5], JS))
    with pytest.raises(Exception):  # noqa: B017 - whatever rosbags raises on short data
        decode(raw[: len(raw) - 9])
    with pytest.raises(Exception):  # noqa: B017
        decode(raw[:20])


def test_progress_line():
    import io

    stream = io.StringIO()
    progress = offline.Progress(2, stream=stream, enabled=True)
    progress.update(0, "read", 500, 1000)
    progress.finish(0)
    progress.update(1, "compute", 1000, 1000)
    progress.draw(force=True)
    progress.close()
    text = stream.getvalue()
    assert "[1] read [##########          ] 500/1000" in text
    assert "bags 1/2  [2] compute [####################] 1000/1000" in text
    assert text.endswith("\n")
    quiet = io.StringIO()
    silent = offline.Progress(1, stream=quiet, enabled=False)
    silent.update(0, "read", 1, 2)
    silent.close()
    assert quiet.getvalue() == ""
