"""The Dask path (distributed's LocalCluster, in-process workers) gives the local arrays."""

from __future__ import annotations

from pathlib import Path

import distributed
import numpy as np
import pytest
from support.bag_helpers import storage_file, trajectory, trajectory_bag

import coriolis_ros
from coriolis_ros.dynamics import Dynamics
from coriolis_ros.offline import bag as offline
from coriolis_ros.offline.distributed import bags_on_cluster, terms_on_cluster
from coriolis_ros.robots import robot_urdf


URDF = (Path(coriolis_ros.__file__).parent / "robots" / "quadruped12.urdf").read_text()


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _bits(x):
    return np.ascontiguousarray(x).view(np.uint64)


def test_terms_on_cluster_equal_local(client):
    dyn = Dynamics.from_urdf(URDF)
    _, Q, V = trajectory(dyn.nv, 1000, seed=9)
    local = offline.compute_terms(dyn, Q, V)
    remote = terms_on_cluster(client, URDF, Q, V, rows_per_task=137)
    assert set(remote) == set(offline.TERM_FIELDS) == set(local)
    for key in local:
        assert remote[key].shape == local[key].shape
        assert np.array_equal(_bits(remote[key]), _bits(local[key])), key
    # and both equal the single-state library call on a row
    M, Mdot, C = dyn.coriolis(Q[500], V[500])
    assert np.array_equal(remote["coriolis_matrix"][500], C)
    with pytest.raises(ValueError, match="same T"):
        terms_on_cluster(client, URDF, Q, V[:-1])


def test_bags_on_cluster_equal_local(client, tmp_path):
    dyn = Dynamics.from_urdf(URDF)
    stamps, Q, V = trajectory(dyn.nv, 150, seed=10)
    names = dyn.joint_names
    bags = [
        trajectory_bag(tmp_path / "one", "sqlite3", names, stamps, Q, V, URDF),
        trajectory_bag(tmp_path / "two", "mcap", names, stamps[:90], Q[:90], V[:90], URDF),
        trajectory_bag(tmp_path / "cut", "mcap", names, stamps, Q, V, URDF),
    ]
    cut = storage_file(bags[2])
    cut.write_bytes(cut.read_bytes()[:300])
    results = bags_on_cluster(client, bags, output_dir=tmp_path / "dask")
    assert [r.ok for r in results] == [True, True, False]
    assert str(bags[2]) in results[2].error
    for bag, result in zip(bags[:2], results[:2], strict=True):
        local = offline.process_bag(bag, tmp_path / f"{bag.name}.local.npz")
        assert local.ok
        remote_data = np.load(result.output)
        local_data = np.load(local.output)
        assert sorted(remote_data) == sorted(local_data)
        for key in local_data:
            if key == "joint_names":
                assert list(remote_data[key]) == list(local_data[key])
            else:
                assert np.array_equal(_bits(remote_data[key]), _bits(local_data[key])), key


def _tick_rows(dyn, Q, V):
    """Each row as the node's tick computes it, one after the other: C, then the vectors and g."""
    rows = {name: [] for name in offline.TERM_FIELDS}
    for q, v in zip(Q, V, strict=True):
        M, Mdot, C = dyn.coriolis(q, v)
        Cqd, CTqd, Mqd = dyn.coriolis_vectors(q, v)
        values = {"mass_matrix": M, "mass_matrix_derivative": Mdot, "coriolis_matrix": C,
                  "coriolis_force": Cqd, "coriolis_transpose_force": CTqd, "momentum": Mqd,
                  "gravity_force": dyn.gravity(q)}  # fmt: skip
        for name, value in values.items():
            rows[name].append(value.copy())
    return {name: np.array(value) for name, value in rows.items()}


def test_closed_chain_terms_are_the_ticks_rows_locally_and_on_the_cluster(client):
    """A closed chain's rows depend on the rows before them (each closure continues from the
    last): compute_terms computes them one after the other, in the tick's order, and the
    cluster in one task, so both are the node's rows bit for bit whatever rows_per_task."""
    urdf = robot_urdf("four_bar")
    t = np.arange(400) * 0.01
    Q = (0.2 + 0.6 * np.sin(3.0 * t))[:, None]
    V = (1.8 * np.cos(3.0 * t))[:, None]
    ticks = _tick_rows(Dynamics.from_urdf(urdf), Q, V)
    local = offline.compute_terms(Dynamics.from_urdf(urdf), Q, V)
    remote = terms_on_cluster(client, urdf, Q, V, rows_per_task=37)
    for key in offline.TERM_FIELDS:
        assert np.array_equal(_bits(local[key]), _bits(ticks[key])), key
        assert np.array_equal(_bits(remote[key]), _bits(ticks[key])), key
    # the rows are the closed chain's: Mdot = C + C^T, and not the tree's (1 DoF, not 3)
    assert remote["coriolis_matrix"].shape == (400, 1, 1)
    Mdot, C = remote["mass_matrix_derivative"], remote["coriolis_matrix"]
    assert np.allclose(Mdot, C + C.transpose(0, 2, 1), rtol=0, atol=1e-12 * np.abs(Mdot).max())


def test_a_refused_closed_chain_row_is_named():
    dyn = Dynamics.from_urdf(robot_urdf("four_bar"))
    Q = np.array([[0.1], [0.2], [np.nan]])
    V = np.ones((3, 1))
    with pytest.raises(ValueError, match=r"^row 2: "):
        offline.compute_terms(dyn, Q, V)
    with pytest.raises(ValueError, match=r"\(T, 1\)"):
        offline.compute_terms(dyn, Q, V[:2])


ROTORS = {
    "joint2": {"gear_ratio": 100.0, "inertia": [3e-5, 5e-5, 3e-5, 0.0, 0.0, 0.0], "mass": 0.3},
    "joint4": {"gear_ratio": 50.0, "inertia": [2e-5, 3e-5, 2e-5, 0.0, 0.0, 0.0], "mass": 0.2},
}


def test_model_options_reach_the_workers(client):
    """Datasheet rotors given as model_options: the cluster's rows are those of the model
    with the rotors (N^2 I_spin more on M's diagonal at least), equal to the local ones."""
    urdf = robot_urdf("arm7")
    geared = Dynamics.from_urdf(urdf, rotors=ROTORS)
    bare = Dynamics.from_urdf(urdf)
    _, Q, V = trajectory(geared.nv, 120, seed=4)
    remote = terms_on_cluster(client, urdf, Q, V, rows_per_task=50,
                              model_options={"rotors": ROTORS})  # fmt: skip
    local = offline.compute_terms(geared, Q, V)
    for key in offline.TERM_FIELDS:
        assert np.array_equal(_bits(remote[key]), _bits(local[key])), key
    joints = list(geared.joint_names)
    added = remote["mass_matrix"][:, range(7), range(7)] - np.array(
        [np.diag(bare.mass_matrix(q)) for q in Q]
    )
    for name, spec in ROTORS.items():
        spin = spec["inertia"][1]  # arm7's joints 2 and 4 turn about y
        reflected = spec["gear_ratio"] ** 2 * spin
        assert np.all(added[:, joints.index(name)] >= reflected * (1 - 1e-12)), name
    # without the options, the bare arm's rows
    bare_terms = terms_on_cluster(client, urdf, Q, V, rows_per_task=50)
    assert np.array_equal(_bits(bare_terms["mass_matrix"]),
                          _bits(offline.compute_terms(bare, Q, V)["mass_matrix"]))  # fmt: skip


def test_model_options_must_be_plain_data(client):
    _, Q, V = trajectory(7, 5, seed=1)
    with pytest.raises(ValueError, match="model_options"):
        terms_on_cluster(client, robot_urdf("arm7"), Q, V, model_options={"rotors": {1j}})
    with pytest.raises(ValueError, match="unknown_option"):
        terms_on_cluster(client, robot_urdf("arm7"), Q, V, model_options={"unknown_option": 1})
