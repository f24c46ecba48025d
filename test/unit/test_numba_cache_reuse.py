"""A second process loads every kernel the first compiled: it compiles and saves nothing.

On a closed chain the loops' compiled entry points call the tree's kernels, and the library
also freezes those tree kernels for the spanning tree's own methods. Numba's on-disk cache
keys a kernel compiled as another's callee apart from one compiled for an explicit signature:
each process then compiled (13 s on the four-bar, with a full cache) and saved what the last
had saved under the other key, so a node restarted on a looped robot took 17 s to warm up.

The reference is the cache directory itself: the files the second process finds are the files
it leaves (same names, same sizes and times).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a cold compile of the four-bar's kernels: about a minute

CODE = (
    "from coriolis_ros.dynamics import Dynamics\n"
    "from coriolis_ros.robots import robot_path\n"
    "dyn = Dynamics.from_urdf(robot_path('four_bar'))\n"
    "dyn.warmup()\n"
    "dyn.closed.tree_dynamics.warmup()\n"
    "print('ok')\n"
)


def _run(cache: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["NUMBA_CACHE_DIR"] = str(cache)
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         timeout=900, check=True)  # fmt: skip
    assert out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def _files(cache: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(cache)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in cache.rglob("*")
        if p.suffix in (".nbi", ".nbc")
    }


def test_a_closed_chain_is_compiled_once_then_loaded(tmp_path):
    cache = tmp_path / "numba"
    _run(cache)
    first = _files(cache)
    names = {Path(name).name.split("-")[0] for name in first}
    # the first process saved the loops' entry points and the tree kernels they call
    for kernel in ("closed_entry.closed_coriolis", "closed_entry.closed_christoffel",
                   "coriolis_matrix.coriolis_matrix", "christoffel.christoffel",
                   "crba.mass_matrix"):  # fmt: skip
        assert kernel in names, f"{kernel} was not saved: {sorted(names)}"
    _run(cache)
    second = _files(cache)
    added = sorted(set(second) - set(first))
    rewritten = sorted(n for n in first if second.get(n) != first[n])
    assert not added and not rewritten, f"compiled again: new {added}, rewritten {rewritten}"
