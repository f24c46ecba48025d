"""The ``coriolis-ros`` command line (run as ``python -m coriolis_ros.cli``, same interpreter).

compute: numbers are compared with Pinocchio (independent), in every output format.
check:   exit 0 on valid robots; exit 1 when the library is deliberately broken (the faulty
         method is patched in a child process), which shows the table detects errors.
Errors:  wrong value counts, bad numbers, bad URDFs -> exit 2 with a message on stderr.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from support.oracle import PinOracle, assert_close, erd_urdf

from support.random_trees import random_tree
from support.cli import run_cli

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)


# Fields of CoriolisState that are not terms of the model at a state: the stamp, and (in the
# momentum-observer version of the message) the measured effort and the observer's estimate.
NOT_TERMS = {"header", "effort", "external_effort"}


def message_keys() -> list[str]:
    """Field names of the generated CoriolisState (less NOT_TERMS) + GetChristoffelSymbols'
    symbols, in the message's order."""
    from coriolis_ros.msg import CoriolisState
    from coriolis_ros.srv import GetChristoffelSymbols

    fields = [f for f in CoriolisState.get_fields_and_field_types() if f not in NOT_TERMS]
    assert "symbols" in GetChristoffelSymbols.Response.get_fields_and_field_types()
    return [*fields, "symbols"]


@pytest.fixture(scope="module")
def ur5():
    path = str(erd_urdf("ur5"))
    oracle = PinOracle(path)
    return path, oracle


@pytest.fixture(scope="module")
def tree_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "tree.urdf"
    path.write_text(random_tree("biped", 6, seed=77))
    return str(path)


def _state(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 2.0, n), rng.uniform(-1.5, 1.5, n)


def _fmt(values) -> list[str]:
    return [repr(float(v)) for v in values]


def _check_result(result: dict, urdf: str, q, qd) -> None:
    names = list(result["joint_names"])
    oracle = PinOracle(urdf, order=names)
    n = len(names)
    M = np.asarray(result["mass_matrix"], dtype=float).reshape(n, n)
    C = np.asarray(result["coriolis_matrix"], dtype=float).reshape(n, n)
    Mdot = np.asarray(result["mass_matrix_derivative"], dtype=float).reshape(n, n)
    g = np.asarray(result["gravity_force"], dtype=float).reshape(n)
    Gamma = np.asarray(result["symbols"], dtype=float).reshape(n, n, n)
    assert np.asarray(result["coriolis_matrix"]).shape == (n, n)  # shaped as state_to_numpy
    assert np.asarray(result["symbols"]).shape == (n, n, n)
    for key in ("position", "velocity", "coriolis_force", "coriolis_transpose_force"):
        assert np.asarray(result[key]).shape == (n,), key
    assert_close(np.asarray(result["position"], dtype=float), q, 0.0, "cli q")
    assert_close(np.asarray(result["velocity"], dtype=float), qd, 0.0, "cli qd")
    assert_close(M, oracle.M(q), 1e-10, "cli M")
    assert_close(C, oracle.C(q, qd), 1e-10, "cli C")
    assert_close(Mdot, oracle.Mdot(q, qd), 1e-10, "cli Mdot")
    assert_close(g, oracle.g(q), 1e-10, "cli g")
    Cqd = np.asarray(result["coriolis_force"], dtype=float)
    CTqd = np.asarray(result["coriolis_transpose_force"], dtype=float)
    p = np.asarray(result["momentum"], dtype=float)
    assert_close(Cqd, oracle.C(q, qd) @ qd, 1e-10, "cli C qd")
    assert_close(CTqd, oracle.C(q, qd).T @ qd, 1e-10, "cli C^T qd")
    assert_close(p, oracle.M(q) @ qd, 1e-10, "cli p = M qd")
    assert_close(Gamma, oracle.christoffel_fd(q), 1e-6, "cli Gamma vs FD")
    assert_close(np.einsum("ijk,k->ij", Gamma, qd), C, 1e-10, "cli Gamma qd = C")


# ----------------------------------------------------------------------------- compute


def test_compute_json_stdout_matches_pinocchio(ur5):
    path, oracle = ur5
    q, qd = _state(oracle.n, 1)
    r = run_cli("compute", path, "--q", *_fmt(q), "--qd", *_fmt(qd), "--format", "json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert list(result) == message_keys()  # exactly the message field names, in their order
    assert sorted(result["joint_names"]) == sorted(oracle.pin_names)
    # q/qd were given in the library's joint order: map the state to those names.
    _check_result(result, path, q, qd)


def test_compute_json_output_file_random_tree(tree_file, tmp_path):
    n = PinOracle(tree_file).n
    q, qd = _state(n, 2)
    out = tmp_path / "result.json"
    r = run_cli(
        "compute", tree_file, "--q", *_fmt(q), "--qd", *_fmt(qd), "--format", "json", "--output",
        str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    _check_result(json.loads(out.read_text()), tree_file, q, qd)


def test_compute_npz(ur5, tmp_path):
    path, oracle = ur5
    q, qd = _state(oracle.n, 3)
    out = tmp_path / "result.npz"
    r = run_cli(
        "compute", path, "--q", *_fmt(q), "--qd", *_fmt(qd), "--format", "npz", "--output",
        str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    with np.load(out) as data:
        result = {k: data[k] for k in data.files}
    assert sorted(result) == sorted(message_keys())
    result["joint_names"] = [str(x) for x in result["joint_names"]]
    _check_result(result, path, q, qd)


def test_compute_text_lists_joints_and_quantities(ur5):
    path, oracle = ur5
    r = run_cli("compute", path, "--q", *["0.5"] * oracle.n)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()
    for name in oracle.pin_names:
        assert name in r.stdout, name
    for word in ("Mdot", "Gamma", "C qd", "C^T qd", "p = M qd"):
        assert word in r.stdout
    for key in message_keys():  # every term of the message, under its field name
        assert re.search(rf"^{key}:", r.stdout, re.MULTILINE), key


def test_compute_without_christoffel_leaves_out_symbols_only(ur5):
    path, _ = ur5
    r = run_cli("compute", path, "--format", "json", "--no-christoffel")
    assert r.returncode == 0, r.stderr
    assert list(json.loads(r.stdout)) == [k for k in message_keys() if k != "symbols"]


def test_compute_text_output_file(ur5, tmp_path):
    path, oracle = ur5
    out = tmp_path / "out.txt"
    r = run_cli("compute", path, "--output", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert all(name in text for name in oracle.pin_names)


def test_compute_missing_state_means_zeros(ur5):
    path, oracle = ur5
    r = run_cli("compute", path, "--format", "json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    n = oracle.n
    z = np.zeros(n)
    _check_result(result, path, z, z)
    assert np.all(np.asarray(result["coriolis_matrix"], dtype=float) == 0.0)
    # --q only: qd defaults to zeros, so C = 0 but g depends on q.
    q = np.linspace(-1, 1, n)
    r = run_cli("compute", path, "--q", *_fmt(q), "--format", "json")
    assert r.returncode == 0, r.stderr
    _check_result(json.loads(r.stdout), path, q, z)


@pytest.mark.parametrize(
    "args,needle",
    [
        (("--q", "0.1", "0.2"), "q"),
        (("--qd", *["1"] * 7), "qd"),
        (("--q", *["0"] * 6, "--qd", "1"), "qd"),
        (("--q", "nan", "0", "0", "0", "0", "0"), "q"),
        (("--q", "abc"), "q"),
    ],
    ids=["q-too-few", "qd-too-many", "qd-too-few", "q-nan", "q-not-a-number"],
)
def test_compute_bad_state_exits_2(ur5, args, needle):
    path, _ = ur5
    r = run_cli("compute", path, *args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert needle in r.stderr and r.stderr.strip()
    assert "Traceback" not in r.stderr


def test_compute_bad_urdf_exits_2(tmp_path):
    bad = tmp_path / "spherical.urdf"
    bad.write_text(
        '<robot name="r"><link name="a"/><link name="b"/>'
        '<joint name="ball" type="spherical"><parent link="a"/><child link="b"/></joint></robot>'
    )
    r = run_cli("compute", str(bad))
    assert r.returncode == 2
    assert "spherical" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("compute", str(tmp_path / "missing.urdf"))
    assert r.returncode == 2 and "missing.urdf" in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------- check


@pytest.mark.parametrize("robot", ["panda", "go2"])
def test_check_passes_on_real_robots(robot):
    r = run_cli("check", str(erd_urdf(robot)), "--samples", "3", "--seed", "5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout
    assert len(r.stdout.strip().splitlines()) >= 5  # a table, not just a verdict


def test_check_passes_on_robot_with_massless_dofs():
    """Romeo's finger bodies are massless (M is only positive semi-definite, also in Pinocchio);
    the identities still hold exactly, so check must pass."""
    path = str(erd_urdf("romeo"))
    oracle = PinOracle(path)
    q = np.zeros(oracle.n)
    assert np.linalg.eigvalsh(oracle.M(q))[0] < 1e-12  # the premise: singular M
    r = run_cli("check", path, "--samples", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    # ... and says that M is singular, naming joints that move no mass
    assert "warning: M is singular at the neutral configuration" in r.stdout
    m = re.search(r"largest [^)]*\): (.+) move no mass", r.stdout)
    assert m, r.stdout
    named = m.group(1).split(", ")
    assert named and set(named) <= set(oracle.pin_names)


def test_check_gives_no_singular_warning_on_a_robot_whose_links_all_have_mass(ur5):
    path, oracle = ur5
    assert np.linalg.eigvalsh(oracle.M(np.zeros(oracle.n)))[0] > 1e-6  # the premise
    r = run_cli("check", path, "--samples", "1")
    assert r.returncode == 0 and "all identities hold" in r.stdout
    assert "singular" not in r.stdout


def test_check_random_tree_and_seed_reproducible(tree_file):
    a = run_cli("check", tree_file, "--samples", "2", "--seed", "3")
    b = run_cli("check", tree_file, "--samples", "2", "--seed", "3")
    assert a.returncode == b.returncode == 0, a.stdout + a.stderr
    assert a.stdout == b.stdout


BROKEN = {
    # name: code patching one library method in the child process
    "C-transposed": """
from coriolis_ros.dynamics import Dynamics
_orig = Dynamics.coriolis
def coriolis(self, q, qd, out=None):
    M, Mdot, C = _orig(self, q, qd)
    return M, Mdot, C.T.copy()
Dynamics.coriolis = coriolis
""",
    "Gamma-perturbed": """
from coriolis_ros.dynamics import Dynamics
_orig = Dynamics.christoffel
def christoffel(self, q, out=None):
    G = _orig(self, q).copy()
    G[0, 0, -1] += 1e-3
    return G
Dynamics.christoffel = christoffel
""",
    "gravity-sign": """
from coriolis_ros.dynamics import Dynamics
_orig = Dynamics.gravity
def gravity(self, q, out=None):
    return -_orig(self, q)
Dynamics.gravity = gravity
""",
}


@pytest.mark.parametrize("fault", sorted(BROKEN))
def test_check_detects_a_broken_library(fault, tree_file):
    code = textwrap.dedent(BROKEN[fault])
    r = run_cli("check", tree_file, "--samples", "2", code=code)
    assert r.returncode == 1, (fault, r.returncode, r.stdout, r.stderr)
    assert "FAIL" in r.stdout


def test_check_bad_urdf_exits_2(tmp_path):
    bad = tmp_path / "neg.urdf"
    bad.write_text(
        '<robot name="r"><link name="a"/><link name="heavy"><inertial><mass value="-1"/>'
        '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
        '<joint name="j" type="continuous"><parent link="a"/><child link="heavy"/>'
        '<axis xyz="0 0 1"/></joint></robot>'
    )
    r = run_cli("check", str(bad))
    assert r.returncode == 2
    assert "heavy" in r.stderr and "mass" in r.stderr and "Traceback" not in r.stderr
    malformed = tmp_path / "broken.urdf"
    malformed.write_text(Path(erd_urdf("ur5")).read_text()[:500])
    r = run_cli("check", str(malformed))
    assert r.returncode == 2 and r.stderr.strip() and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- floating bases


def test_compute_floating_base_matches_pinocchio(tmp_path):
    """--root-joint floating: q has nq = nv + 1 values (quaternion), output against Pinocchio."""
    from support.floating import MultiDofOracle

    from coriolis_ros.dynamics import Dynamics

    path = str(erd_urdf("solo12"))
    dyn = Dynamics.from_urdf(path, root_joint="floating")
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, dyn.nq)
    q[3:7] /= np.linalg.norm(q[3:7])
    qd = rng.normal(size=dyn.nv)
    args = ["--root-joint", "floating", "--format", "json", "--q", *map(repr, q.tolist())]
    r = run_cli("compute", path, *args, "--qd", *map(repr, qd.tolist()))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["joint_names"] == list(dyn.joint_names)
    assert out["position_names"] == list(dyn.position_names)
    oracle = MultiDofOracle(path, dyn, "floating")
    assert_close(np.array(out["coriolis_matrix"]), oracle.C(q, qd), 1e-10, "C")
    assert_close(np.array(out["mass_matrix"]), oracle.M(q), 1e-10, "M")
    gamma = np.array(out["symbols"])
    assert_close(gamma[:, :, 3], oracle.C(q, np.eye(dyn.nv)[3]), 1e-10, "Gamma[:, :, 3]")


@pytest.mark.parametrize("count", [18, 20])  # nv and nq + 1: both one off the 19 needed
def test_compute_floating_base_wrong_q_count_exits_2(count):
    r = run_cli("compute", str(erd_urdf("solo12")), "--root-joint", "floating",
                "--q", *["0.1"] * count)  # fmt: skip
    assert r.returncode == 2 and "--q needs 19 values" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_compute_floating_base_zero_quaternion_exits_2():
    q = ["0"] * 19
    r = run_cli("compute", str(erd_urdf("solo12")), "--root-joint", "floating", "--q", *q)
    assert r.returncode == 2 and "zero quaternion" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("root_joint", ["floating", "planar"])
def test_check_floating_and_planar_bases(root_joint):
    r = run_cli("check", str(erd_urdf("solo12")), "--root-joint", root_joint, "--samples", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"(root joint {root_joint})" in r.stdout and "all identities hold" in r.stdout
    assert "dM_ij along e_k" in r.stdout
    assert "Gamma_ijk = Gamma_ikj" not in r.stdout  # generalized speeds: not symmetric


def test_root_joint_choice_is_validated():
    r = run_cli("check", str(erd_urdf("solo12")), "--root-joint", "ball")
    assert r.returncode == 2 and "--root-joint" in r.stderr
