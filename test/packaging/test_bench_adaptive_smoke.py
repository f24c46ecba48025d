"""Smoke test of bench/bench_adaptive.py: it runs, checks one tick against the formulas and
prints its table (never a speed)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_adaptive.py"


def test_adaptive_bench_prints_its_table():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--markdown", "--robots", "ur5,solo12"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    errs = re.search(r"max rel\. err: ur5 ([0-9.e+-]+), solo12 ([0-9.e+-]+)", out)
    assert errs and float(errs[1]) <= 1e-12 and float(errs[2]) <= 1e-12
    rows = [line for line in out.splitlines() if line.startswith(("| ur5", "| solo"))]
    assert len(rows) == 3  # ur5 track and step, solo12 step
    for row in rows:
        cells = [c.strip() for c in row.split("|")[3:5]]
        assert all(float(c) > 0.0 for c in cells), row
