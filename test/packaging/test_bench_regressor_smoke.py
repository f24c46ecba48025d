"""Smoke test of bench/bench_regressor.py: it runs, checks itself against Pinocchio and prints
its table (never a speed)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_regressor.py"


def test_regressor_bench_prints_its_table_and_the_agreement():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--markdown", "--robots", "ur5"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    errors = re.search(r"Y ([0-9.e+-]+), energies ([0-9.e+-]+)", out)
    assert errors and float(errors[1]) <= 1e-10 and float(errors[2]) <= 1e-10
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    for call in ("inverse-dynamics regressor", "energy regressors (T and U)",
                 "set_inertial_parameters"):  # fmt: skip
        cells = [c.strip() for c in rows[call].split("|")[2:5]]
        assert all(float(c) > 0.0 for c in cells), rows[call]
    assert "Slotine-Li regressor (q̇r ≠ q̇)" in rows
