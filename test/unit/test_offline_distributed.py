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
