"""Smoke test of bench/bench_loop.py: it runs and prints its table (never speed).

Runs ``bench_loop.py --quick --markdown --robots ur5`` and checks the UR5 table has one row per
compared operation with positive finite times, and that the script's own check found our
results and the Pinocchio routes equal on the benchmark state.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_loop.py"
ROW_STARTS = ("C x: coriolis_times", "M q̈_r + C q̇_r + g: slotine_li",
              "C q̇, Cᵀq̇, M q̇: coriolis_vectors", "observer update (Cᵀq̇, M q̇, g, step) vs rnea",
              "observer update vs Pinocchio")  # fmt: skip


def test_quick_markdown_run_on_ur5_prints_the_table():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--markdown", "--robots", "ur5"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    title = re.search(r"^### UR5: nv=6, tree depth=6 .*rel\. max err: (.*)\)$", out, re.M)
    assert title, out
    errors = dict(item.rsplit(" ", 1) for item in title.group(1).split(", "))
    assert set(errors) == {"C x", "Slotine-Li", "C q̇", "Cᵀq̇", "M q̇", "g"}, errors
    assert all(float(v) < 1e-9 for v in errors.values()), errors
    assert "WARNING" not in out
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for start in ROW_STARTS:
            if line.startswith("| ") and cells[0].startswith(start):
                rows[start] = cells
    assert sorted(rows) == sorted(ROW_STARTS), out
    for start, cells in rows.items():
        numbers = [float(c) for c in cells[1:7]]
        assert all(0.0 < x < 1e7 for x in numbers), (start, cells)
    assert len([ln for ln in out.splitlines() if ln.startswith("| UR5 | 6 |")]) == 1, out
