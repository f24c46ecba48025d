"""Smoke test of bench/bench_dynamics.py: it runs and prints the expected table (never speed).

Runs ``bench_dynamics.py --quick --markdown --robots ur5`` in a subprocess and checks the
UR5 table has one row per compared operation with numeric times, that the built-in check
against Pinocchio found the same C and Γ, and that the summary row is present.  Pinocchio and
example-robot-data are benchmark dependencies, installed in the project venv by ``make setup``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pinocchio", reason="benchmarks need Pinocchio (installed by make setup)")

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_dynamics.py"
EXPECTED_ROWS = (
    "C: coriolis (M, Ṁ, C) vs computeCoriolisMatrix",
    "C q̇: coriolis_vectors (Cq̇, Cᵀq̇, Mq̇) vs rnea",
    "g: gravity vs computeGeneralizedGravity",
    "τ: inverse_dynamics vs rnea",
    "M: mass_matrix vs crba",
    "Γ: christoffel vs nv × computeCoriolisMatrix",
)


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_quick_markdown_run_on_ur5_prints_the_table():
    proc = _run("--quick", "--markdown", "--robots", "ur5", "--no-overhead")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout

    title = re.search(
        r"^### UR5: nv=6, tree depth=6 .*err C ([0-9.e+-]+), Γ ([0-9.e+-]+)\)$", out, re.M
    )
    assert title, out
    assert float(title.group(1)) < 1e-9 and float(title.group(2)) < 1e-9

    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] in EXPECTED_ROWS:
            rows[cells[0]] = cells
    assert sorted(rows) == sorted(EXPECTED_ROWS)
    for label, cells in rows.items():
        # ours med/min, pin med/min, ratio min/med: positive finite numbers.
        numbers = [float(c) for c in cells[1:7]]
        assert all(0.0 < x < 1e7 for x in numbers), (label, cells)

    summary = [line for line in out.splitlines() if line.startswith("| UR5 | 6 | 6 |")]
    assert len(summary) == 1, out
    assert "Call overhead" not in out


def test_unknown_robot_is_rejected():
    proc = _run("--robots", "nosuchrobot", timeout=60)
    assert proc.returncode == 2
    assert "unknown robot" in proc.stderr


FLOATING = Path(__file__).resolve().parents[2] / "bench" / "bench_floating.py"


def test_floating_bench_prints_its_table_with_the_oracle_check():
    proc = subprocess.run(
        [sys.executable, str(FLOATING), "--quick", "--systems", "solo12,biped20"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {
        line.split()[0]: line.split()
        for line in proc.stdout.splitlines()
        if line.startswith(("Solo12 ", "paper biped"))
    }
    solo = rows["Solo12"]
    assert solo[1:3] == ["18", "9"]  # nv with the free flyer, tree depth
    assert 0.0 < float(solo[3]) < 1e5 and float(solo[-1]) < 1e-9  # a time; oracle agreement
    assert "paper biped, 20 DoF, floating torso" in proc.stdout  # the Table 2 comparison
    bad = subprocess.run(
        [sys.executable, str(FLOATING), "--systems", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "unknown system" in bad.stderr


REDUCTION = Path(__file__).resolve().parents[2] / "bench" / "bench_reduction.py"


def test_reduction_bench_prints_both_tables():
    proc = subprocess.run(
        [sys.executable, str(REDUCTION), "--quick", "--dofs", "6"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    rows = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if line.split() and line.split()[0] in ("5", "6", "coriolis", "christoffel")
    }
    assert float(rows["6"][-1]) < 1e-9  # Safeea and Algorithm 2 agree with Pinocchio
    assert 0.0 < float(rows["6"][1]) < 1e5  # a time in µs
    assert "slope (6-30)" in out and "5 (seed, MATLAB)" in out
    assert 0.0 < float(rows["coriolis"][-1]) < 100.0  # the reduced / unreduced ratio
    bad = subprocess.run(
        [sys.executable, str(REDUCTION), "--dofs", "0"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "--dofs" in bad.stderr


ROTORS = Path(__file__).resolve().parents[2] / "bench" / "bench_rotors.py"


def test_rotors_bench_prints_its_three_tables_and_the_agreement():
    proc = subprocess.run(
        [sys.executable, str(ROTORS), "--quick"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for title in (
        "arm7 vs arm7_rotors",
        "ours vs Pinocchio on the 14-joint tree",
        "quadruped12, floating base",
    ):
        assert title in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("C̄", "Γ̄"))]
    assert len(rows) == 2
    for row in rows:
        assert float(row[-1]) < 1e-9  # ours and the Pinocchio route agree
