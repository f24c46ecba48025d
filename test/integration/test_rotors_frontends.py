"""Datasheet rotors through the front ends: the YAML file (load_rotors), the CLI's --rotors and
the node's rotors_file parameter give the library's numbers for the same rotors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from support.cli import run_cli
from support.oracle import assert_close

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.couplings import load_rotors
from coriolis_ros.node.params import validate
from coriolis_ros.robots import robot_path

ROTORS_YAML = """\
# harmonic drives on the first and last joint of arm7
rotors:
  joint1: {gear_ratio: 100.0, inertia: [3.5e-5, 3.5e-5, 6.0e-5, 0, 0, 0], mass: 0.35}
  joint7: {gear_ratio: -80.0, inertia: [1.0e-5, 1.0e-5, 1.5e-5, 0, 0, 0]}
"""
ROTORS = {
    "joint1": {"gear_ratio": 100.0, "inertia": [3.5e-5, 3.5e-5, 6.0e-5, 0, 0, 0], "mass": 0.35},
    "joint7": {"gear_ratio": -80.0, "inertia": [1.0e-5, 1.0e-5, 1.5e-5, 0, 0, 0]},
}


@pytest.fixture
def rotors_file(tmp_path):
    path = tmp_path / "rotors.yaml"
    path.write_text(ROTORS_YAML)
    return path


def test_load_rotors_reads_both_layouts(rotors_file, tmp_path):
    assert load_rotors(rotors_file) == ROTORS
    flat = tmp_path / "flat.yaml"
    flat.write_text("joint7: {gear_ratio: 9, inertia: [1, 1, 2, 0, 0, 0]}\n")
    assert load_rotors(flat) == {"joint7": {"gear_ratio": 9, "inertia": [1, 1, 2, 0, 0, 0]}}


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "expected a mapping of joint names"),
        ("[1, 2]", "expected a mapping of joint names"),
        ("rotors: {}", "expected a mapping of joint names"),
        ("joint1: [unclosed", "not valid YAML"),
        ("1: {gear_ratio: 9, inertia: [1, 1, 2, 0, 0, 0]}", "joint names must be strings"),
    ],
)
def test_load_rotors_refuses_bad_files_naming_them(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"rotors file {path}: {message}"):
        load_rotors(path)


def test_load_rotors_names_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="rotors file .*missing.yaml: No such file"):
        load_rotors(tmp_path / "missing.yaml")


def test_cli_compute_with_rotors_gives_the_library_numbers(rotors_file):
    q = [0.3, -0.2, 0.5, -1.0, 0.4, 0.7, -0.3]
    qd = [0.5, -0.4, 0.3, 0.2, -0.6, 0.1, 0.9]
    result = run_cli(
        "compute",
        str(robot_path("arm7")),
        "--rotors",
        str(rotors_file),
        "--format",
        "json",
        "--q",
        *map(str, q),
        "--qd",
        *map(str, qd),
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    dyn = Dynamics.from_urdf(robot_path("arm7"), rotors=ROTORS)
    M, Mdot, C = dyn.coriolis(q, qd)
    assert out["joint_names"] == list(dyn.joint_names)
    assert_close(np.array(out["coriolis_matrix"]), C, 1e-12, "C")
    assert_close(np.array(out["mass_matrix"]), M, 1e-12, "M")
    plain = Dynamics.from_urdf(robot_path("arm7")).mass_matrix(q)
    # joint1's rotor adds N^2 I_axial; joint7's (massless, principal moments <= 1.5e-5) rides
    # on link6 and adds at most its largest principal moment
    added = M[0, 0] - plain[0, 0] - 100.0**2 * 6.0e-5
    assert 0.0 <= added <= 1.5e-5


def test_cli_refuses_a_bad_rotors_file_with_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("joint1: {gear_ratio: 0, inertia: [1, 1, 2, 0, 0, 0]}\n")
    result = run_cli("compute", str(robot_path("arm7")), "--rotors", str(bad))
    assert result.returncode == 2
    assert "rotors: joint 'joint1': gear_ratio must be nonzero" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli("check", str(robot_path("arm7")), "--rotors", str(tmp_path / "none.yaml"))
    assert result.returncode == 2 and "rotors file" in result.stderr


def test_rotors_file_parameter_is_validated(rotors_file, tmp_path):
    assert validate("rotors_file", "") is None
    assert validate("rotors_file", str(rotors_file)) is None
    assert "no such file" in validate("rotors_file", str(tmp_path / "none.yaml"))
    assert "must be a string" in validate("rotors_file", 3)


def test_node_with_rotors_file_publishes_the_geared_dynamics(ros_domain_env, tmp_path, rotors_file):
    pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")
    from support.ros_helpers import NodeProcess, Peer, as_matrix, close, library_terms

    domain_id, env = ros_domain_env
    dyn = Dynamics.from_urdf(robot_path("arm7"), rotors=ROTORS)
    names, n = list(dyn.joint_names), dyn.nv
    q, qd = np.linspace(-0.7, 0.7, n), np.linspace(0.5, -0.5, n)
    params = {"robot_description_file": str(robot_path("arm7")), "rotors_file": str(rotors_file)}
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params=params)
        try:
            node.wait_ready("arm7")
            peer.collect_states()
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            msg = peer.send_until_state(js, peer.joint_state(names, q, qd, stamp_ns=1001))
            assert list(msg.joint_names) == names
            for key, want in library_terms(dyn, q, qd).items():
                got = np.asarray(getattr(msg, key))
                got = as_matrix(got, n) if want.ndim == 2 else got
                assert close(got, want, rtol=1e-12), key
        finally:
            node.stop()


def test_bag_with_rotors_gives_the_library_numbers(rotors_file, tmp_path):
    """A bag of arm7's joint states with --rotors: every row is the library's with the same
    datasheet rotors (bit for bit); without --rotors the rows are the bare arm's, different."""
    from support.bag_helpers import trajectory, trajectory_bag

    from coriolis_ros.cli import main

    urdf = robot_path("arm7").read_text()
    geared = Dynamics.from_urdf(urdf, rotors=ROTORS)
    bare = Dynamics.from_urdf(urdf)
    stamps, Q, V = trajectory(geared.nv, 20, seed=3)
    bag = trajectory_bag(tmp_path / "rec", "sqlite3", list(geared.joint_names), stamps, Q, V, urdf)
    for extra, dyn in ((["--rotors", str(rotors_file)], geared), ([], bare)):
        out = tmp_path / f"out{len(extra)}.npz"
        assert main(["bag", str(bag), "-o", str(out), "--no-progress", *extra]) == 0
        data = np.load(out)
        for t in (0, 19):
            M, _, C = dyn.coriolis(Q[t], V[t])
            assert np.array_equal(data["mass_matrix"][t], M) and np.array_equal(
                data["coriolis_matrix"][t], C
            )
    M_geared, M_bare = geared.mass_matrix(Q[0]), bare.mass_matrix(Q[0])
    assert M_geared[0, 0] - M_bare[0, 0] > 100.0**2 * 6.0e-5 * 0.99  # N^2 I_zz on joint1


def test_bag_refuses_rotors_for_an_unknown_joint_naming_it(tmp_path, capsys):
    from support.bag_helpers import trajectory, trajectory_bag

    from coriolis_ros.cli import main

    urdf = robot_path("arm7").read_text()
    dyn = Dynamics.from_urdf(urdf)
    stamps, Q, V = trajectory(dyn.nv, 5, seed=3)
    bag = trajectory_bag(tmp_path / "rec", "sqlite3", list(dyn.joint_names), stamps, Q, V, urdf)
    bad = tmp_path / "bad.yaml"
    bad.write_text("elbow: {gear_ratio: 50, inertia: [1e-5, 1e-5, 2e-5, 0, 0, 0]}\n")
    assert main(["bag", str(bag), "-o", str(tmp_path / "o.npz"), "--rotors", str(bad),
                 "--no-progress"]) == 1  # fmt: skip
    assert "unusable model: rotors: unknown joint 'elbow'" in capsys.readouterr().err
    missing = tmp_path / "none.yaml"
    assert main(["bag", str(bag), "--rotors", str(missing), "--no-progress"]) == 2
    assert "rotors file" in capsys.readouterr().err
