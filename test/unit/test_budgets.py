"""Budgets: max_dof on model load, max_christoffel_bytes on Gamma; both sides of each bound,
the library and the coriolis-ros CLI (a 1,200-link chain loads within 1 GiB or is refused by
name, measured with getrusage in a wrapper process whose only child is the CLI)."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from support.random_trees import PLAIN, serial_chain
from support.oracle import erd_urdf

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.budgets import (
    DEFAULT_MAX_CHRISTOFFEL_BYTES,
    DEFAULT_MAX_DOF,
    christoffel_refusal,
)

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

GIB = 1 << 30


def test_max_dof_both_sides():
    urdf = serial_chain(10, seed=1, options=PLAIN)
    assert Dynamics.from_urdf(urdf, max_dof=10).nv == 10
    with pytest.raises(ValueError, match=r"has 10 degrees of freedom.*max_dof=9"):
        Dynamics.from_urdf(urdf, max_dof=9)
    # a floating root's six rows count
    assert Dynamics.from_urdf(urdf, root_joint="floating", max_dof=16).nv == 16
    with pytest.raises(ValueError, match="has 16 degrees"):
        Dynamics.from_urdf(urdf, root_joint="floating", max_dof=15)
    for bad in (0, -1, 2.5, True, "10", None):
        with pytest.raises(ValueError, match="max_dof must be a positive integer"):
            Dynamics.from_urdf(urdf, max_dof=bad)


def test_a_limit_of_one_is_positive():
    """1 is the smallest limit accepted (0 is refused above): a 1-DoF model, 8 bytes of Gamma."""
    one = serial_chain(1, seed=6, options=PLAIN)
    assert Dynamics.from_urdf(one, max_dof=1).nv == 1
    with pytest.raises(ValueError, match=r"has 2 degrees of freedom.*max_dof=1\b"):
        Dynamics.from_urdf(serial_chain(2, seed=6, options=PLAIN), max_dof=1)
    dyn = Dynamics.from_urdf(one, max_christoffel_bytes=1)
    assert dyn.max_christoffel_bytes == 1
    with pytest.raises(ValueError, match=r"\(8 bytes .*max_christoffel_bytes=1 \("):
        dyn.christoffel(np.zeros(1))
    assert Dynamics.from_urdf(one, max_christoffel_bytes=8).christoffel(np.zeros(1)).shape == (
        1,
        1,
        1,
    )


def test_max_dof_default_both_sides():
    assert DEFAULT_MAX_DOF == 2048
    at = serial_chain(DEFAULT_MAX_DOF - 6, seed=2, options=PLAIN)
    assert Dynamics.from_urdf(at, root_joint="floating").nv == DEFAULT_MAX_DOF
    beyond = serial_chain(DEFAULT_MAX_DOF - 5, seed=2, options=PLAIN)
    with pytest.raises(ValueError, match="has 2049 degrees of freedom.*max_dof=2048"):
        Dynamics.from_urdf(beyond, root_joint="floating")


def test_christoffel_budget_both_sides():
    dyn = Dynamics.from_urdf(serial_chain(4, seed=3, options=PLAIN), max_christoffel_bytes=512)
    q = np.full(4, 0.3)
    G = dyn.christoffel(q)  # 4^3 doubles = 512 bytes: exactly the budget
    assert G.shape == (4, 4, 4)
    assert dyn.clone().max_christoffel_bytes == 512
    tight = Dynamics.from_urdf(serial_chain(4, seed=3, options=PLAIN), max_christoffel_bytes=511)
    calls = (
        lambda: tight.christoffel(q),
        lambda: tight.christoffel(q, out=np.empty_like(G)),
        lambda: tight.christoffel(q, method="safeea"),
        lambda: tight.clone().christoffel(q),
    )
    for call in calls:
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "4.77e-07 GiB" in message and "max_christoffel_bytes=511" in message
        assert "max_christoffel_bytes=512" in message  # how to raise it, to what
    # the batch: T states' Gammas
    Q = np.full((2, 4), 0.3)
    assert dyn.christoffel_batch(Q[:1]).shape == (1, 4, 4, 4)
    with pytest.raises(ValueError, match="2 x Gamma needs"):
        dyn.christoffel_batch(Q)
    two = Dynamics.from_urdf(serial_chain(4, seed=3, options=PLAIN), max_christoffel_bytes=1024)
    np.testing.assert_array_equal(two.christoffel_batch(Q)[1], G)
    for bad in (0, -5, 1.5, False):
        with pytest.raises(ValueError, match="max_christoffel_bytes must be a positive integer"):
            Dynamics.from_urdf(serial_chain(4, seed=3, options=PLAIN), max_christoffel_bytes=bad)


def test_christoffel_budget_default():
    assert DEFAULT_MAX_CHRISTOFFEL_BYTES == GIB
    assert christoffel_refusal(8 * 512**3, GIB) == ""  # n = 512: exactly 1 GiB
    message = christoffel_refusal(8 * 513**3, GIB)
    assert "1.01 GiB" in message and "max_christoffel_bytes=1073741824 (1 GiB)" in message
    dyn = Dynamics.from_urdf(serial_chain(513, seed=4, options=PLAIN))
    with pytest.raises(ValueError, match=r"Gamma needs 1.01 GiB"):
        dyn.christoffel(np.zeros(513))  # refused before anything is allocated


def test_coupled_model_counts_the_tree_gamma():
    """With mimic joints following, Gamma of the independent coordinates and the full tree's
    (in the workspace) are both n^3 arrays."""
    panda = Dynamics.from_urdf(str(erd_urdf("panda")))
    n, full = panda.nv, len(panda.tree_joint_names)
    assert full == n + 1
    need = 8 * (n**3 + full**3)
    q = panda.neutral()
    ok = Dynamics.from_urdf(str(erd_urdf("panda")), max_christoffel_bytes=need)
    np.testing.assert_array_equal(ok.christoffel(q), panda.christoffel(q))
    short = Dynamics.from_urdf(str(erd_urdf("panda")), max_christoffel_bytes=need - 1)
    with pytest.raises(ValueError, match=f"max_christoffel_bytes={need}"):
        short.christoffel(q)


def test_christoffel_allocates_gamma_once():
    n = 40
    dyn = Dynamics.from_urdf(serial_chain(n, seed=5, options=PLAIN))
    q = np.full(n, 0.2)
    dyn.christoffel(q)  # compiled
    tracemalloc.start()
    try:
        G = dyn.christoffel(q)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert G.nbytes <= peak < 1.05 * G.nbytes


# --------------------------------------------------------------------------- the CLI

_MEASURE = """
import resource, subprocess, sys
r = subprocess.run([sys.executable, "-m", "coriolis_ros.cli", *sys.argv[1:]],
                   capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # kB on Linux
print(r.returncode, peak)
sys.stderr.write(r.stderr)
"""


def _cli_peak(*args) -> tuple[int, int, str]:
    """(exit code, peak resident bytes of the CLI process, its stderr)."""
    r = subprocess.run([sys.executable, "-c", _MEASURE, *map(str, args)],
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    code, peak = r.stdout.split()
    return int(code), int(peak), r.stderr


@pytest.fixture(scope="module")
def chain1200(tmp_path_factory):
    path = tmp_path_factory.mktemp("chain") / "chain1200.urdf"
    path.write_text(serial_chain(1200, seed=0, options=PLAIN))
    return path


def test_cli_1200_link_chain_within_1_gib(chain1200, tmp_path):
    out = tmp_path / "state.json"
    code, peak, err = _cli_peak("compute", chain1200, "--no-christoffel", "--format", "json",
                                "-o", out)  # fmt: skip
    assert code == 0, err
    assert peak < GIB
    result = json.loads(out.read_text())
    M = np.array(result["mass_matrix"])
    assert M.shape == (1200, 1200) and np.allclose(M, M.T)
    assert "symbols" not in result


def test_cli_refuses_gamma_and_check_of_1200_links_by_name(chain1200):
    code, peak, err = _cli_peak("compute", chain1200)
    assert code == 2 and peak < GIB
    assert "Gamma needs 12.9 GiB" in err and "--max-christoffel-bytes 13824000000" in err
    assert "--no-christoffel" in err
    code, peak, err = _cli_peak("check", chain1200)
    assert code == 2 and peak < GIB
    assert "check's 6 n^3 arrays" in err and "77.2 GiB" in err


def test_cli_max_dof_both_sides(chain1200, tmp_path):
    code, _, err = _cli_peak("compute", chain1200, "--max-dof", "1199", "--no-christoffel")
    assert code == 2
    assert "has 1200 degrees of freedom" in err and "max_dof=1199" in err
    assert "--max-dof 1200" in err
    code, _, err = _cli_peak("compute", chain1200, "--max-dof", "1200", "--no-christoffel",
                             "--format", "npz", "-o", tmp_path / "s.npz")  # fmt: skip
    assert code == 0, err


def test_cli_christoffel_budget_both_sides(tmp_path):
    urdf = tmp_path / "chain4.urdf"
    urdf.write_text(serial_chain(4, seed=6, options=PLAIN))
    r = subprocess.run([sys.executable, "-m", "coriolis_ros.cli", "compute", str(urdf),
                        "--max-christoffel-bytes", "512", "--format", "json"],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert np.array(json.loads(r.stdout)["symbols"]).shape == (4, 4, 4)
    r = subprocess.run([sys.executable, "-m", "coriolis_ros.cli", "compute", str(urdf),
                        "--max-christoffel-bytes", "511"],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 2 and "max_christoffel_bytes=511" in r.stderr
    r = subprocess.run([sys.executable, "-m", "coriolis_ros.cli", "check", str(urdf),
                        "--samples", "1", "--max-christoffel-bytes", str(6 * 512)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "coriolis_ros.cli", "check", str(urdf),
                        "--samples", "1", "--max-christoffel-bytes", str(6 * 512 - 1)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 2 and "check's 6 n^3 arrays" in r.stderr
