"""`coriolis-ros bag` with Parquet output: the same arrays as the .npz, in the documented layout
(read back with pyarrow directly, not only through our reader), and clear errors without pyarrow.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from support.bag_helpers import trajectory, trajectory_bag

import coriolis_ros.dynamics
from coriolis_ros.cli import main
from coriolis_ros.offline import bag as offline
from coriolis_ros.offline import parquet

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ARM = Path(coriolis_ros.__file__).parent / "robots" / "arm7.urdf"
URDF = ARM.read_text()
N = 7


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A bag with efforts (so external_effort is present too), and its .npz result."""
    tmp = tmp_path_factory.mktemp("parquet")
    stamps, Q, V = trajectory(N, 200, seed=4)
    effort = np.random.default_rng(5).normal(size=(200, N))
    names = [f"joint{k}" for k in range(1, N + 1)]
    bag = trajectory_bag(tmp / "rec", "mcap", names, stamps, Q, V, URDF, effort=effort)
    npz = tmp / "rec.npz"
    assert main(["bag", str(bag), "-o", str(npz), "--no-progress"]) == 0
    return tmp, bag, dict(np.load(npz))


def _bitwise(a, b) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.dtype.kind in "US":
        return a.shape == b.shape and list(a) == list(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_parquet_holds_the_npz_arrays_in_the_message_layout(recorded):
    tmp, bag, want = recorded
    out = tmp / "rec.parquet"
    assert main(["bag", str(bag), "-o", str(out), "--no-progress"]) == 0
    assert {"external_effort", "effort", "mass_matrix"} <= set(want)

    table = pq.read_table(out)  # pyarrow's own reading, not ours
    assert table.num_rows == len(want["header.stamp"]) == 200
    assert set(table.column_names) == set(want) - {"joint_names"}
    meta = table.schema.metadata
    assert json.loads(meta[b"coriolis_ros.joint_names"]) == list(want["joint_names"])
    assert table.schema.field("header.stamp").type == pa.int64()
    assert table.schema.field("position").type == pa.list_(pa.float64(), N)
    assert table.schema.field("coriolis_matrix").type == pa.list_(pa.float64(), N * N)
    # row 17's matrix cell is the message's row-major coriolis_matrix
    cell = np.array(table.column("coriolis_matrix")[17].as_py())
    assert _bitwise(cell, want["coriolis_matrix"][17].reshape(-1))
    assert table.column("header.stamp")[17].as_py() == int(want["header.stamp"][17])

    got = parquet.read_parquet(out)
    assert set(got) == set(want)
    for key, value in want.items():
        assert _bitwise(got[key], value), key


def test_format_option_and_default_names(recorded, tmp_path):
    _, bag, want = recorded
    argv = ["bag", str(bag), "--output-dir", str(tmp_path), "--format", "parquet", "--plot"]
    assert main([*argv, "--no-progress"]) == 0
    out = tmp_path / "rec.coriolis.parquet"
    got = parquet.read_parquet(out)
    assert _bitwise(got["mass_matrix"], want["mass_matrix"])
    # the PNGs take the output's stem, without .parquet
    assert (tmp_path / "rec.coriolis_gravity_force.png").is_file()
    assert not list(tmp_path.glob("*.npz"))


@pytest.mark.parametrize(
    "extra, match",
    [
        (["-o", "x.npz", "--format", "parquet"], "--format parquet contradicts -o x.npz"),
        (["-o", "x.parquet", "--format", "npz"], "--format npz contradicts -o x.parquet"),
    ],
)
def test_contradicting_format_is_a_usage_error(extra, match, capsys):
    assert main(["bag", "somebag", *extra]) == 2
    assert match in capsys.readouterr().err


def test_without_pyarrow_parquet_is_refused_and_npz_still_works(
    recorded, tmp_path, monkeypatch, capsys
):
    _, bag, want = recorded
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    assert not parquet.available()
    assert main(["bag", str(bag), "-o", str(tmp_path / "x.parquet"), "--no-progress"]) == 2
    assert "pip install coriolis_ros[parquet]" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()
    # the library call names the bag and reports, without raising
    result = offline.process_bag(bag, tmp_path / "y.parquet", urdf=URDF)
    assert not result.ok and str(bag) in result.error and "pyarrow" in result.error
    assert main(["bag", str(bag), "-o", str(tmp_path / "x.npz"), "--no-progress"]) == 0
    assert _bitwise(np.load(tmp_path / "x.npz")["coriolis_matrix"], want["coriolis_matrix"])


def test_reader_refuses_a_foreign_parquet_file(tmp_path):
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), path)
    with pytest.raises(ValueError, match="not a coriolis-ros bag result"):
        parquet.read_parquet(path)
