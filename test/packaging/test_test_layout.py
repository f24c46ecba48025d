"""The test tree's layout: three kinds of tests, shared helpers only in test/support, and
``make test-fast`` collecting exactly the unit modules not marked slow."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEST = REPO / "test"
KINDS = ("unit", "integration", "packaging")
SLOW = "pytestmark = pytest.mark.slow"


def test_every_test_module_is_in_one_of_the_three_kinds():
    loose = sorted(p.name for p in TEST.glob("test_*.py"))
    assert not loose, f"test modules outside test/unit, integration, packaging: {loose}"
    dirs = {p.parent.name for p in TEST.rglob("test_*.py")}
    assert dirs == set(KINDS)


def test_test_modules_import_helpers_from_support_only():
    modules = {p.stem for p in TEST.rglob("test_*.py")}
    offenders = []
    for path in TEST.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            offenders += [f"{path.relative_to(TEST)}: {n}" for n in names if n in modules]
    assert not offenders, offenders


def test_make_test_fast_collects_the_unit_modules_not_marked_slow():
    out = subprocess.run(["make", "-n", "test-fast"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if "pytest" in ln)
    listed = set(re.findall(r"test/(\w+/test_\w+\.py)", line))
    units = {f"unit/{p.name}": SLOW in p.read_text() for p in (TEST / "unit").glob("test_*.py")}
    fast = {name for name, slow in units.items() if not slow}
    assert listed == fast
    assert 0 < len(fast) < len(units)  # both kinds exist
    assert "unit/test_dynamics_api.py" in fast and "unit/test_cli.py" not in fast
