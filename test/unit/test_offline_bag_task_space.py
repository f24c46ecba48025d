"""`coriolis-ros bag --task-frame`: task-space terms per row.

* Wiring: each row's Lambda, mu, J, Jdot and placement equal, bitwise, the library's
  ``task_space`` and ``frame_placement`` at the row's (q, qd), in .npz and Parquet.
* Against Pinocchio (an independent reference): M^-1 from ``computeMinverse``, J from
  ``computeFrameJacobian``, Jdot from ``getFrameJacobianTimeVariation``, C from
  ``computeCoriolisMatrix``, the placement from ``updateFramePlacements``; Lambda =
  inv(J M^-1 J^T), mu = Lambda (J M^-1 C - Jdot) M^-1 J^T Lambda with numpy (docs/task_space.md),
  on the Panda with its mimic finger (independent coordinates: J A, A^T M A) and the UR5.
* Bad options (both sides of each), and a task singular at some rows: counted and left out,
  fatal with --strict, never a non-finite number written.
"""

from __future__ import annotations

import pickle

import numpy as np
import pinocchio as pin
import pytest
from support.bag_helpers import (
    joint_state,
    odometry,
    trajectory,
    trajectory_bag,
    write_bag,
    write_mixed_bag,
)
from support.floating import MultiDofOracle
from support.mimic import Reference
from support.oracle import assert_close, erd_urdf

from coriolis_ros.cli import main
from coriolis_ros.dynamics import Dynamics
from coriolis_ros.offline import bag as offline
from coriolis_ros.offline import bag_task_space as task_space

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

TOL = 1e-10
PANDA = str(erd_urdf("panda"))
PANDA_TEXT = open(PANDA).read()  # noqa: SIM115 - read once
FOLLOWER = "panda_finger_joint2"  # mimics panda_finger_joint1 (multiplier 1, offset 0)
PIN_REFERENCES = {"local_world_aligned": pin.LOCAL_WORLD_ALIGNED, "local": pin.LOCAL,
                  "world": pin.WORLD}  # fmt: skip

# A planar 2R arm in the x-y plane: the tip's (x, y) task is singular with the elbow straight.
TWO_LINK = """<robot name="two_link">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0.25 0 0"/><mass value="1.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial></link>
  <link name="fore"><inertial><origin xyz="0.2 0 0"/><mass value="1.0"/>
    <inertia ixx="0.005" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <link name="tip"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="0.5 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="5"/>
  </joint>
  <joint name="tip_joint" type="fixed"><parent link="fore"/><child link="tip"/>
    <origin xyz="0.4 0 0"/></joint>
</robot>"""


@pytest.fixture(scope="module")
def panda():
    return Dynamics.from_urdf(PANDA_TEXT)  # mimic joints follow, as the bag reader's default


@pytest.fixture(scope="module")
def panda_bag(tmp_path_factory, panda):
    """40 joint states of the Panda, the follower recorded on its leader (as a robot does)."""
    stamps, Q, V = trajectory(panda.nv, 40, seed=3)
    Q[:, -1] = 0.02 + 0.015 * np.tanh(Q[:, -1])  # the finger within its travel
    names = [*panda.joint_names, FOLLOWER]
    Qr, Vr = np.column_stack([Q, Q[:, -1]]), np.column_stack([V, V[:, -1]])
    path = tmp_path_factory.mktemp("panda") / "rec"
    trajectory_bag(path, "mcap", names, stamps, Qr, Vr, PANDA_TEXT)
    return path, stamps, Q, V


def _run(bag, out, *options) -> int:
    return main(["bag", str(bag), "-o", str(out), "--no-progress", *options])


def _same(got, want, what):
    """Bitwise equal (float64)."""
    want = np.ascontiguousarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype == np.float64, what
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), what


# ----------------------------------------------------------------------------- wiring


def test_rows_equal_the_library_task_space(tmp_path, panda, panda_bag):
    bag, stamps, Q, V = panda_bag
    out = tmp_path / "out.npz"
    frames, rows = ("panda_hand", "panda_link5"), (5, 0, 1)
    options = ["--task-frame", frames[0], "--task-frame", frames[1], "--task-rows", "5,0,1",
               "--task-reference", "local", "--write-bag", "sqlite3"]  # fmt: skip
    assert _run(bag, out, *options) == 0
    data = dict(np.load(out))
    assert list(data["joint_names"]) == list(panda.joint_names)  # the follower left out
    _same(data["position"], Q, "position")
    _same(data["velocity"], V, "velocity")
    assert list(data["task_space.frames"]) == list(frames)
    assert data["task_space.rows"].dtype == np.int32
    assert data["task_space.rows"].tolist() == list(rows)
    assert str(data["task_space.reference"]) == "local"
    assert float(data["task_space.damping"]) == 0.0
    for frame in frames:
        for t in range(len(stamps)):
            want = panda.task_space(Q[t], V[t], frame, "local", rows)
            for term, value in zip(task_space.TERMS, want, strict=True):
                _same(data[f"task_space.{frame}.{term}"][t], value, f"{frame} {term} row {t}")
            pose = panda.frame_placement(Q[t], frame)
            _same(data[f"task_space.{frame}.placement"][t], pose, f"{frame} placement row {t}")
        assert data[f"task_space.{frame}.jacobian"].shape == (len(stamps), 3, panda.nv)
        assert data[f"task_space.{frame}.task_inertia"].shape == (len(stamps), 3, 3)
    # the CoriolisState terms are still the library's; the message bag is written (it has no
    # task-space fields)
    M, _, C = panda.coriolis(Q[7], V[7])
    _same(data["mass_matrix"][7], M, "M")
    _same(data["coriolis_matrix"][7], C, "C")
    assert (tmp_path / "out_bag").is_dir()


def test_parquet_holds_the_npz_task_arrays(tmp_path, panda_bag):
    pytest.importorskip("pyarrow")  # the parquet extra: pinned in requirements/dev.txt
    from coriolis_ros.offline import parquet

    bag = panda_bag[0]
    options = ["--task-frame", "panda_hand", "--task-rows", "0,1,2", "--task-damping", "0.001"]
    assert _run(bag, tmp_path / "a.npz", *options) == 0
    assert _run(bag, tmp_path / "a.parquet", *options) == 0
    want = dict(np.load(tmp_path / "a.npz"))
    got = parquet.read_parquet(tmp_path / "a.parquet")
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key].dtype == value.dtype, key
        assert got[key].shape == value.shape, key
        assert np.array_equal(got[key], value), key
    assert float(got["task_space.damping"]) == 0.001
    import pyarrow.parquet as pq

    schema = pq.read_schema(tmp_path / "a.parquet")
    assert (
        schema.field("task_space.panda_hand.jacobian").type.list_size
        == 3 * want["velocity"].shape[1]
    )
    assert "task_space.rows" not in schema.names  # once per file: in the metadata


def test_floating_base_rows_equal_the_library_task_space(tmp_path):
    """The base state from the recorded odometry: each row's terms are the library's at the
    row's (q, qd), the base twist in the base frame as in every bag row."""
    from coriolis_ros.robots import robot_path

    urdf = robot_path("quadruped12").read_text()
    dyn = Dynamics.from_urdf(urdf, root_joint="floating")
    names = dyn.joint_names[6:]
    stamps, Q, V = trajectory(len(names), 15, seed=8)
    rng = np.random.default_rng(8)
    messages = []
    for t in range(15):
        quat = rng.normal(size=4)
        pose = [*rng.uniform(-0.5, 0.5, 3), *(quat / np.linalg.norm(quat))]
        odom = odometry(stamps[t], dyn.root_link, pose, rng.normal(0.0, 0.5, 6))
        messages.append(("/odom", stamps[t] + 100_000, odom))
        messages.append(
            ("/joint_states", stamps[t] + 250_000, joint_state(stamps[t], names, Q[t], V[t]))
        )
    bag = write_mixed_bag(tmp_path / "rec", "mcap", messages, urdf)
    out = tmp_path / "out.npz"
    options = ["--root-joint", "floating", "--task-frame", "FL_foot", "--task-rows", "0,1,2",
               "--task-reference", "world"]  # fmt: skip
    assert _run(bag, out, *options) == 0
    data = dict(np.load(out))
    assert len(data["header.stamp"]) == 15
    for t in range(15):
        q, v = data["position"][t], data["velocity"][t]
        want = dyn.task_space(q, v, "FL_foot", "world", (0, 1, 2))
        for term, value in zip(task_space.TERMS, want, strict=True):
            _same(data[f"task_space.FL_foot.{term}"][t], value, f"{term} row {t}")
        _same(data["task_space.FL_foot.placement"][t], dyn.frame_placement(q, "FL_foot"), "pose")
    assert data["task_space.FL_foot.jacobian"].shape == (15, 3, dyn.nv)


def test_task_spec_pickles_for_worker_processes():
    spec = task_space.TaskSpec(("a", "b"), "world", (2, 0), 0.5)
    assert pickle.loads(pickle.dumps(spec)) == spec


# ----------------------------------------------------------------------------- Pinocchio


class PinTask:
    """Lambda, mu, J, Jdot and the placement of a frame from Pinocchio at (q, v) (library
    order), in independent coordinates q = A qbar + offset when A is given (mimic)."""

    def __init__(self, oracle: MultiDofOracle, q, v, frame, reference, A=None):
        m, d = oracle.model, oracle.data
        qp, vp = oracle.q_pin(q), oracle.v_pin(v)
        fid = m.getFrameId(frame, pin.BODY)
        idx = oracle.v_index
        Minv = np.array(pin.computeMinverse(m, d, qp))
        Minv = (np.triu(Minv) + np.triu(Minv, 1).T)[np.ix_(idx, idx)]
        ref = PIN_REFERENCES[reference]
        J = np.array(pin.computeFrameJacobian(m, d, qp, fid, ref))[:, idx]
        pin.computeJointJacobiansTimeVariation(m, d, qp, vp)
        Jdot = np.array(pin.getFrameJacobianTimeVariation(m, d, fid, ref))[:, idx]
        C = np.array(pin.computeCoriolisMatrix(m, d, qp, vp))[np.ix_(idx, idx)]
        if A is not None:
            Minv = np.linalg.inv(A.T @ np.linalg.inv(Minv) @ A)
            J, Jdot, C = J @ A, Jdot @ A, A.T @ C @ A
        self.Minv, self.J, self.Jdot, self.C = Minv, J, Jdot, C
        pin.forwardKinematics(m, d, qp)
        pin.updateFramePlacements(m, d)
        self.placement = np.array(d.oMf[fid].homogeneous)

    def terms(self, rows):
        J, Jd = self.J[list(rows)], self.Jdot[list(rows)]
        Lam = np.linalg.inv(J @ self.Minv @ J.T)
        mu = Lam @ (J @ self.Minv @ self.C - Jd) @ self.Minv @ J.T @ Lam
        return Lam, mu, J, Jd


def _against_pinocchio(data, frame, reference, rows, pin_task, label):
    for t, ref in pin_task.items():
        Lr, mur, Jr, Jdr = ref.terms(rows)
        at = f"{label} {frame} {reference} row {t}"
        assert_close(data[f"task_space.{frame}.jacobian"][t], Jr, TOL, f"{at} J")
        assert_close(data[f"task_space.{frame}.task_inertia"][t], Lr, TOL, f"{at} Lambda")
        assert_close(data[f"task_space.{frame}.jacobian_dot"][t], Jdr, TOL, f"{at} Jdot")
        assert_close(data[f"task_space.{frame}.task_coriolis"][t], mur, 1e-9, f"{at} mu")
        assert_close(data[f"task_space.{frame}.placement"][t], ref.placement, TOL, f"{at} pose")


@pytest.mark.parametrize(
    ("reference", "rows"), [("local_world_aligned", None), ("world", (0, 1, 2, 5))]
)
def test_panda_with_mimic_finger_against_pinocchio(tmp_path, panda_bag, reference, rows):
    bag, _stamps, Q, V = panda_bag
    ref = Reference(PANDA)  # the full model (finger 2 a DoF of its own) and A
    assert FOLLOWER not in ref.indep
    oracle = MultiDofOracle(PANDA, ref.full)
    out = tmp_path / "out.npz"
    options = ["--task-frame", "panda_hand", "--task-reference", reference]
    if rows is not None:
        options += ["--task-rows", ",".join(map(str, rows))]
    assert _run(bag, out, *options) == 0
    data = dict(np.load(out))
    pin_task = {
        t: PinTask(oracle, ref.q_full(Q[t]), ref.A @ V[t], "panda_hand", reference, ref.A)
        for t in (0, 13, 39)
    }
    _against_pinocchio(data, "panda_hand", reference, rows or range(6), pin_task, "panda")


def test_ur5_against_pinocchio(tmp_path):
    path = str(erd_urdf("ur5"))
    dyn = Dynamics.from_urdf(path)
    stamps, Q, V = trajectory(dyn.nv, 12, seed=4)
    bag = trajectory_bag(tmp_path / "rec", "sqlite3", dyn.joint_names, stamps, Q, V)
    out = tmp_path / "out.npz"
    options = ["--urdf", path, "--task-frame", "tool0", "--task-frame", "wrist_1_link"]
    assert _run(bag, out, *options, "--task-rows", "0,1,2") == 0
    data = dict(np.load(out))
    assert len(data["header.stamp"]) == 12
    oracle = MultiDofOracle(path, dyn)
    for frame in ("tool0", "wrist_1_link"):
        pin_task = {t: PinTask(oracle, Q[t], V[t], frame, "local_world_aligned") for t in (0, 11)}
        _against_pinocchio(data, frame, "local_world_aligned", (0, 1, 2), pin_task, "ur5")


# ----------------------------------------------------------------------------- bad options


@pytest.mark.parametrize(
    ("options", "cause"),
    [
        (["--task-rows", "0,6"], "task rows are 0..5"),
        (["--task-rows", "-1"], "task rows are 0..5"),
        (["--task-rows", "0,2,0"], "task rows given twice: 0"),
        (["--task-rows", "x,y"], "comma-separated integers 0..5"),
        (["--task-rows", ""], "comma-separated integers 0..5"),
        (["--task-rows", "0,,1"], "comma-separated integers 0..5"),
        (["--task-damping", "-0.1"], "--task-damping must be finite and >= 0"),
        (["--task-damping", "nan"], "--task-damping must be finite and >= 0"),
        (["--task-damping", "inf"], "--task-damping must be finite and >= 0"),
        (["--task-frame", "panda_hand"], "--task-frame given twice: panda_hand"),
    ],
)
def test_bad_task_options_are_usage_errors(tmp_path, panda_bag, capsys, options, cause):
    out = tmp_path / "out.npz"
    assert _run(panda_bag[0], out, "--task-frame", "panda_hand", *options) == 2
    err = capsys.readouterr().err
    assert cause in err and "coriolis-ros bag: error" in err
    assert not out.exists()


@pytest.mark.parametrize(
    "options", [["--task-rows", "0,5,2"], ["--task-damping", "0"], ["--task-damping", "2.5"]]
)
def test_good_task_options_at_the_bounds_are_accepted(tmp_path, panda_bag, options):
    out = tmp_path / "out.npz"
    assert _run(panda_bag[0], out, "--task-frame", "panda_hand", *options) == 0
    data = np.load(out)
    assert np.isfinite(data["task_space.panda_hand.task_inertia"]).all()


def test_bad_reference_is_a_usage_error(tmp_path, panda_bag, capsys):
    out = tmp_path / "out.npz"
    with pytest.raises(SystemExit) as exc:
        _run(panda_bag[0], out, "--task-frame", "panda_hand", "--task-reference", "global")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--task-reference" in err and "'global'" in err and "local_world_aligned" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--task-rows", "0,1"], "--task-rows"),
        (["--task-reference", "world"], "--task-reference"),
        (["--task-damping", "0.1"], "--task-damping"),
    ],
)
def test_task_options_without_a_frame_are_usage_errors(tmp_path, panda_bag, capsys, options,
                                                       named):  # fmt: skip
    out = tmp_path / "out.npz"
    assert _run(panda_bag[0], out, *options) == 2
    err = capsys.readouterr().err
    assert f"{named} needs --task-frame" in err
    assert not out.exists()
    # without task options: no task keys
    assert _run(panda_bag[0], out) == 0
    assert not [k for k in np.load(out) if k.startswith("task_space")]


def test_unknown_frame_fails_the_bag_naming_it(tmp_path, panda_bag, capsys):
    out = tmp_path / "out.npz"
    assert _run(panda_bag[0], out, "--task-frame", "panda_hnd") == 1
    err = capsys.readouterr().err
    assert "--task-frame panda_hnd" in err and "unknown frame 'panda_hnd'" in err
    assert "'panda_hand'" in err  # the near names
    assert not out.exists()


def test_model_refusal_is_checked_before_the_messages(tmp_path, panda_bag, monkeypatch):
    """check_model fails the bag before a single message is read, with the library's
    refusal."""
    seen = []
    original = offline.read_recording

    def spy(*args, **kwargs):
        seen.append(kwargs.get("model_check"))
        return original(*args, **kwargs)

    monkeypatch.setattr(offline, "read_recording", spy)
    fed = []
    monkeypatch.setattr(offline.RowStream, "joint_state", lambda *a: fed.append(a))
    result = offline.process_bag(
        panda_bag[0], tmp_path / "o.npz", task=task_space.TaskSpec(("no_such_link",))
    )
    assert not result.ok and "unknown frame 'no_such_link'" in result.error
    assert seen[0] is not None and fed == []


# ----------------------------------------------------------------------------- singular rows


@pytest.fixture(scope="module")
def two_link_bag(tmp_path_factory):
    """20 joint states of the 2R arm; rows 5 and 12 with the arm straight along x."""
    dyn = Dynamics.from_urdf(TWO_LINK)
    stamps, Q, V = trajectory(2, 20, seed=5)
    Q[:, 1] = 0.3 + 0.5 * np.abs(Q[:, 1])  # bent elbow elsewhere
    Q[[5, 12]] = 0.0
    path = tmp_path_factory.mktemp("two_link") / "rec"
    trajectory_bag(path, "sqlite3", dyn.joint_names, stamps, Q, V, TWO_LINK)
    return path, stamps, Q, V, dyn


def test_singular_rows_are_counted_and_left_out(tmp_path, two_link_bag, capsys):
    bag, stamps, Q, V, dyn = two_link_bag
    out = tmp_path / "out.npz"
    assert _run(bag, out, "--task-frame", "tip", "--task-rows", "0,1") == 0
    printed = capsys.readouterr().out
    assert "skipped 2 messages: the task at frame 'tip' is singular: not published" in printed
    assert f"stamped {stamps[5]} ns (row 5)" in printed
    data = dict(np.load(out))
    keep = np.ones(20, dtype=bool)
    keep[[5, 12]] = False
    assert np.array_equal(data["header.stamp"], stamps[keep])  # every key loses the rows
    _same(data["position"], Q[keep], "position")
    assert len(data["gravity_force"]) == 18
    for key, value in data.items():
        if value.dtype.kind == "f":
            assert np.isfinite(value).all(), key
    for k, t in enumerate(np.flatnonzero(keep)):
        want = dyn.task_space(Q[t], V[t], "tip", rows=(0, 1))[0]
        _same(data["task_space.tip.task_inertia"][k], want, f"Lambda row {t}")


def test_singular_row_is_fatal_with_strict(tmp_path, two_link_bag, capsys):
    bag, stamps, *_ = two_link_bag
    out = tmp_path / "out.npz"
    assert _run(bag, out, "--task-frame", "tip", "--task-rows", "0,1", "--strict") == 1
    err = capsys.readouterr().err
    assert f"stamped {stamps[5]} ns (row 5)" in err and "--task-frame tip" in err
    assert "is singular" in err and "(--strict)" in err
    assert not out.exists()


def test_damping_keeps_the_singular_rows(tmp_path, two_link_bag):
    bag, stamps, Q, V, dyn = two_link_bag
    out = tmp_path / "out.npz"
    options = ["--task-frame", "tip", "--task-rows", "0,1", "--task-damping", "1e-3", "--strict"]
    assert _run(bag, out, *options) == 0
    data = dict(np.load(out))
    assert np.array_equal(data["header.stamp"], stamps)
    lam = data["task_space.tip.task_inertia"]
    assert np.isfinite(lam).all()
    _same(lam[5], dyn.task_space(Q[5], V[5], "tip", rows=(0, 1), damping=1e-3)[0], "row 5")
    # straight arm: the x direction has no mobility, so Lambda_xx = 1 / damping
    assert abs(lam[5][0, 0] - 1e3) <= 1e-9 * 1e3


def test_a_frame_welded_to_the_world_refuses_every_row(tmp_path, two_link_bag, capsys):
    bag = two_link_bag[0]
    out = tmp_path / "out.npz"
    assert _run(bag, out, "--task-frame", "base") == 1
    err = capsys.readouterr().err
    assert "no rows: the task space refuses every row" in err and "'base'" in err
    assert not out.exists()
    assert _run(bag, out, "--task-frame", "base", "--task-damping", "0.5") == 0
    data = np.load(out)
    assert_close(data["task_space.base.jacobian"], np.zeros((20, 6, 2)), 0.0, "J = 0")
    lam = data["task_space.base.task_inertia"]
    assert_close(lam, np.broadcast_to(2.0 * np.eye(6), lam.shape), 1e-15, "Lambda = 1/d")


def test_mimic_follower_message_does_not_make_a_task_row(tmp_path, panda):
    """A message of the follower alone adds no row (the node's semantics), so no task row."""
    stamps, Q, V = trajectory(panda.nv, 6, seed=6)
    names = list(panda.joint_names)
    msgs = [(int(s) + 1000, joint_state(s, names, q, v)) for s, q, v in zip(stamps, Q, V)]
    msgs.insert(3, (int(stamps[2]) + 2000, joint_state(stamps[2], [FOLLOWER], [Q[2, -1]])))
    bag = write_bag(tmp_path / "rec", "mcap", msgs, urdf=PANDA_TEXT)
    out = tmp_path / "out.npz"
    assert _run(bag, out, "--task-frame", "panda_leftfinger") == 0
    data = dict(np.load(out))
    assert len(data["header.stamp"]) == 6
    assert data["task_space.panda_leftfinger.jacobian"].shape == (6, 6, panda.nv)
    for t in range(6):
        want = panda.task_space(Q[t], V[t], "panda_leftfinger")[2]
        _same(data["task_space.panda_leftfinger.jacobian"][t], want, f"J row {t}")


def test_a_model_with_closed_loops_fails_the_bag_naming_the_cause(tmp_path, capsys):
    """The library has no task space for closed loops: the bag fails before its messages are
    read (the tree models above are the other side)."""
    from coriolis_ros.robots import robot_path

    dyn = Dynamics.from_urdf(robot_path("four_bar"))
    stamps, Q, V = trajectory(dyn.nv, 5, seed=7)
    bag = trajectory_bag(tmp_path / "rec", "mcap", dyn.joint_names, stamps, 0.1 * Q, V)
    out = tmp_path / "out.npz"
    urdf = str(robot_path("four_bar"))
    assert _run(bag, out, "--urdf", urdf, "--task-frame", "rocker_link") == 1
    err = capsys.readouterr().err
    assert "--task-frame rocker_link" in err and "closed loops" in err
    assert not out.exists()


def test_task_spec_checks_its_rows_as_the_cli():
    assert task_space.TaskSpec(("a",), rows=(0, 5)).rows == (0, 5)
    assert task_space.TaskSpec(("a",), rows=np.array([3, 4])).used_rows == (3, 4)
    for rows in ((), (6,), (True,), (0.5,), (1, 1)):
        with pytest.raises(ValueError, match="task rows"):
            task_space.TaskSpec(("a",), rows=rows)
    with pytest.raises(ValueError, match="--task-reference must be one of"):
        task_space.TaskSpec(("a",), reference="LOCAL")
    with pytest.raises(ValueError, match="no frame given"):
        task_space.TaskSpec(())
