"""Smoke test of docs/figures/point_mass.py (Figures 4-7 of the point-mass example): it runs
from the library, writes the four plots and prints its numbers; torsion lifts the mass out of
the line's plane, the torsion-free factorization does not, and the Lyapunov functions agree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "figures" / "point_mass.py"


def test_point_mass_figures_script(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for k in (4, 5, 6, 7):
        png = tmp_path / f"point_mass_fig{k}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    numbers = json.loads(proc.stdout[proc.stdout.index("{") :])
    free, torsion = numbers["Christoffel (torsion-free)"], numbers["C = S(qd) (torsion)"]
    assert free["max z (m)"] == 0.0 and free["min z (m)"] == 0.0
    assert torsion["max z (m)"] > 1e-2 and torsion["z acceleration at t = 0 (m/s^2)"] > 1.0
    assert numbers["max |V_torsion - V_christoffel| / V(0)"] < 0.05
