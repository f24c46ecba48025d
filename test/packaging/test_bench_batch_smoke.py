"""Smoke test of bench/bench_batch.py and bench/bench_bag.py: they run and print their tables
(never speed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pinocchio", reason="benchmarks need Pinocchio (installed by make setup)")

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run(script: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_bench_batch_quick_prints_every_operation():
    out = _run("bench_batch.py", "--quick", "--markdown", "--robots", "ur5", "--no-scaling")
    for op in ("coriolis", "christoffel", "coriolis_vectors", "gravity", "inverse_dynamics"):
        assert f"| UR5 | 6 | {op} |" in out, out
    assert "C row 3 vs Pinocchio (relative): UR5" in out


def test_bench_bag_quick_prints_the_table(tmp_path):
    out = _run("bench_bag.py", "--quick", "--markdown", "--workdir", str(tmp_path))
    rows = [
        line
        for line in out.splitlines()
        if line.startswith("| mcap") or line.startswith("| sqlite3")
    ]
    assert len(rows) == 5, out  # mcap: all, vectors, 1 thread, Parquet; sqlite3: all
    assert any("Parquet" in row for row in rows), rows
    assert all("| 2000 |" in row for row in rows), rows
