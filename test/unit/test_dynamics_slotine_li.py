"""``Dynamics.coriolis_times`` (C x) and ``Dynamics.slotine_li`` (M qdd_r + C qd_r + g), both
O(N) without forming C, against

* the library's own matrices: C @ x and M @ qdd_r + C @ qd_r + g from ``coriolis`` (Algorithm 1)
  and ``gravity``, which the other test modules check against Pinocchio;
* Pinocchio directly (computeCoriolisMatrix, crba, computeGeneralizedGravity, rnea), on every
  example-robot-data robot of the suite and on random trees (test/random_trees.py);
* the Christoffel symbols (``christoffel``, Algorithm 2): (C x)_i = sum_jk Gamma_ijk qd_k x_j,
  and the symmetry Gamma_ijk = Gamma_ikj gives C(q, qd) x = C(q, x) qd, which holds only for the
  Christoffel-consistent C (not, e.g., for the factorisation B = v x* I);

plus input validation (lengths, NaN/inf/huge, names in the messages, out= buffers).
Tolerance: ||A - B|| <= 1e-10 * max(1, ||B||).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.api_inputs import HAND_URDF, _bad_inputs, _wrong_buffers
from support.oracle import (
    ERD_ROBOTS,
    assert_close,
    erd_urdf,
    library_and_oracle,
    random_state,
)

from coriolis_ros.dynamics import Dynamics
from support.random_trees import TOPOLOGIES, TreeOptions, random_tree

TOL = 1e-10


def _check_state(dyn, oracle, q, qd, x, qdd_r, label):
    M, _, C = dyn.coriolis(q, qd)
    g = dyn.gravity(q)
    Cx = dyn.coriolis_times(q, qd, x)
    tau = dyn.slotine_li(q, qd, x, qdd_r)
    # The library's own matrices.
    assert_close(Cx, C @ x, TOL, f"{label} coriolis_times vs C @ x")
    assert_close(tau, M @ qdd_r + C @ x + g, TOL, f"{label} slotine_li vs M qdd_r + C qd_r + g")
    # Pinocchio.
    Cp = oracle.C(q, qd)
    assert_close(Cx, Cp @ x, TOL, f"{label} coriolis_times vs Pinocchio C @ x")
    assert_close(
        tau, oracle.M(q) @ qdd_r + Cp @ x + oracle.g(q), TOL, f"{label} slotine_li vs Pinocchio"
    )
    # With the true velocity as reference, Slotine-Li is the inverse dynamics (Pinocchio's rnea).
    assert_close(
        dyn.slotine_li(q, qd, qd, qdd_r), oracle.rnea(q, qd, qdd_r), TOL, f"{label} qd_r = qd"
    )
    assert_close(dyn.coriolis_times(q, qd, qd), oracle.nle_no_gravity(q, qd), TOL, f"{label} C qd")


@pytest.mark.parametrize("robot", sorted(ERD_ROBOTS))
def test_robot_against_matrices_and_pinocchio(robot):
    dyn, oracle = library_and_oracle(str(erd_urdf(robot)))
    rng = np.random.default_rng(sum(map(ord, robot)) + 10)
    for s in range(3):
        q, qd, qdd = random_state(dyn.nv, rng)
        x = rng.normal(0.0, 2.0, dyn.nv)
        _check_state(dyn, oracle, q, qd, x, qdd, f"{robot} state {s}")


CASES = [(topo, n) for topo in TOPOLOGIES for n in (1, 2, 7, 30, 60)] + [("biped_arms", 24)]


@pytest.mark.parametrize("topo,n", CASES, ids=[f"{t}-{n}" for t, n in CASES])
def test_random_tree_against_matrices_and_pinocchio(topo, n):
    base = topo.replace("_arms", "")
    urdf = random_tree(base, n, seed=31 * n + TOPOLOGIES.index(base), arms=topo.endswith("_arms"))
    dyn, oracle = library_and_oracle(urdf)
    rng = np.random.default_rng(n)
    for s in range(2):
        q, qd, qdd = random_state(n, rng)
        x = rng.normal(0.0, 2.0, n)
        _check_state(dyn, oracle, q, qd, x, qdd, f"{topo}-{n} state {s}")


@pytest.mark.parametrize("jtype", ["revolute", "continuous", "prismatic"])
def test_single_joint_type_trees(jtype):
    opts = TreeOptions(joint_types=(jtype,))
    for k, topo in enumerate(TOPOLOGIES):
        dyn, oracle = library_and_oracle(random_tree(topo, 9, seed=800 + k, options=opts))
        rng = np.random.default_rng(k)
        q, qd, qdd = random_state(9, rng)
        _check_state(dyn, oracle, q, qd, rng.normal(size=9), qdd, f"{jtype} {topo}")


@pytest.mark.parametrize("robot", ["panda", "talos", "hyq"])
def test_christoffel_form(robot):
    """C x from Gamma (Algorithm 2), and C(q, qd) x = C(q, x) qd (Gamma_ijk = Gamma_ikj)."""
    dyn, _ = library_and_oracle(str(erd_urdf(robot)))
    rng = np.random.default_rng(3)
    q, qd, _ = random_state(dyn.nv, rng)
    x = rng.normal(0.0, 2.0, dyn.nv)
    gamma = dyn.christoffel(q)
    Cx = dyn.coriolis_times(q, qd, x)
    assert_close(Cx, np.einsum("ijk,j,k->i", gamma, x, qd), TOL, f"{robot} Gamma")
    assert_close(Cx, dyn.coriolis_times(q, x, qd), TOL, f"{robot} C(q, qd) x = C(q, x) qd")
    # Not vacuous: C x is large and differs from C^T x.
    assert np.linalg.norm(Cx) > 1.0
    assert np.linalg.norm(Cx - dyn.coriolis(q, qd)[2].T @ x) > 1e-3 * np.linalg.norm(Cx)


def test_linear_in_x_and_in_the_reference():
    dyn, _ = library_and_oracle(str(erd_urdf("ur5")))
    rng = np.random.default_rng(4)
    q, qd, _ = random_state(dyn.nv, rng)
    x1, x2, a1, a2 = (rng.normal(size=dyn.nv) for _ in range(4))
    assert_close(
        dyn.coriolis_times(q, qd, 2.0 * x1 - 0.5 * x2),
        2.0 * dyn.coriolis_times(q, qd, x1) - 0.5 * dyn.coriolis_times(q, qd, x2),
        TOL,
        "C x linear",
    )
    g = dyn.gravity(q)
    lhs = dyn.slotine_li(q, qd, 2.0 * x1 - 0.5 * x2, 2.0 * a1 - 0.5 * a2) - g
    rhs = 2.0 * (dyn.slotine_li(q, qd, x1, a1) - g) - 0.5 * (dyn.slotine_li(q, qd, x2, a2) - g)
    assert_close(lhs, rhs, TOL, "slotine_li - g linear in (qd_r, qdd_r)")
    z = np.zeros(dyn.nv)
    np.testing.assert_array_equal(dyn.coriolis_times(q, z, x1), z)  # C(q, 0) = 0
    assert_close(dyn.slotine_li(q, rng.normal(size=dyn.nv), z, z), g, TOL, "only gravity")


def test_gravity_setting_is_used():
    urdf = str(erd_urdf("panda"))
    a = Dynamics.from_urdf(urdf, gravity=(0.0, 0.0, -9.81))
    b = Dynamics.from_urdf(urdf, gravity=(1.0, 2.0, 3.0))
    rng = np.random.default_rng(5)
    q, qd, qdd = random_state(a.nv, rng)
    x = rng.normal(size=a.nv)
    tau_b = b.slotine_li(q, qd, x, qdd)
    assert_close(tau_b - b.gravity(q), a.slotine_li(q, qd, x, qdd) - a.gravity(q), TOL, "g")
    assert np.linalg.norm(b.gravity(q) - a.gravity(q)) > 1.0


# ----------------------------------------------------------------------------- API


@pytest.fixture(scope="module")
def hand():
    return Dynamics.from_urdf(HAND_URDF)


def _methods(dyn):
    return {
        "coriolis_times": (lambda a, **k: dyn.coriolis_times(*a, **k), ("q", "qd", "x")),
        "slotine_li": (
            lambda a, **k: dyn.slotine_li(*a, **k),
            ("q", "qd", "qd_ref", "qdd_ref"),
        ),
    }


@pytest.mark.parametrize("method", ["coriolis_times", "slotine_li"])
def test_input_validation_names_the_argument(hand, method):
    n = hand.nv
    call, argnames = _methods(hand)[method]
    good = [np.linspace(-1, 1, n) * (k + 1) for k in range(len(argnames))]
    reference = call(good).copy()
    for arg in argnames:
        for label, bad, pattern in _bad_inputs(n):
            args = list(good)
            args[argnames.index(arg)] = bad
            with pytest.raises(ValueError) as info:
                call(args)
            msg = str(info.value)
            assert re.search(rf"(?<![\w_]){arg}(?![\w_])", msg), f"{method} {label} {arg}: {msg}"
            assert re.search(pattern, msg, re.IGNORECASE), f"{method} {label} {arg}: {msg}"
        for value in (1e51, -1e300):  # beyond the accepted range, like NaN
            args = [a.copy() for a in good]
            args[argnames.index(arg)][n // 2] = value
            with pytest.raises(ValueError, match=rf"(?<![\w_]){arg}(?![\w_]).*1e\+50"):
                call(args)
    # Failures leave the instance usable; the largest accepted rates give finite numbers.
    np.testing.assert_array_equal(call(good), reference)
    assert np.all(np.isfinite(call([good[0]] + [np.full(n, 1e50)] * (len(argnames) - 1))))


@pytest.mark.parametrize("method", ["coriolis_times", "slotine_li"])
def test_out_buffers(hand, method):
    n = hand.nv
    call, argnames = _methods(hand)[method]
    rng = np.random.default_rng(6)
    args = [rng.normal(size=n) for _ in argnames]
    copies = [a.copy() for a in args]
    expected = call(args).copy()
    for a, c in zip(args, copies):  # inputs are not modified
        np.testing.assert_array_equal(a, c)
    buf = np.full(n, np.nan)
    assert call(args, out=buf) is buf
    np.testing.assert_array_equal(buf, expected)
    # Array-likes and strided views are converted.
    big = np.zeros((len(args), 2 * n))
    for k, a in enumerate(args):
        big[k, ::2] = a
    np.testing.assert_array_equal(call([list(args[0])] + [b[::2] for b in big[1:]]), expected)
    # An output aliasing an input: the inputs are read before anything is written.
    for k in range(len(args)):
        alias = [a.copy() for a in args]
        np.testing.assert_array_equal(call(alias, out=alias[k]), expected)
    for label, bad, pattern in _wrong_buffers((n,)):
        with pytest.raises(ValueError) as info:
            call(args, out=bad)
        msg = str(info.value)
        assert re.search(r"\bout\b", msg) and re.search(pattern, msg, re.I), (label, msg)
    ro = np.zeros(n)
    ro.setflags(write=False)
    with pytest.raises(ValueError):
        call(args, out=ro)


def test_results_belong_to_the_caller_and_warmup(hand):
    hand.warmup()
    rng = np.random.default_rng(7)
    n = hand.nv
    a = [rng.normal(size=n) for _ in range(4)]
    first = hand.coriolis_times(*a[:3])
    second = hand.coriolis_times(*a[1:])
    assert not np.shares_memory(first, second)
    tau1 = hand.slotine_li(*a)
    tau2 = hand.slotine_li(*a)
    assert not np.shares_memory(tau1, tau2)
    np.testing.assert_array_equal(tau1, tau2)
    assert first.dtype == np.float64 and first.shape == (n,) and tau1.shape == (n,)
