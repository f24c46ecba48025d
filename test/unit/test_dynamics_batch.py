"""Batched calls: every row equals the single-state call bitwise (with and without out=, on one
and two threads), bad rows are named, shapes and out= are validated like the single-state calls,
and the batch results agree with Pinocchio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numba
import numpy as np
import pytest
from support.oracle import (
    assert_close,
    dynamics_for,
    erd_urdf,
    library_and_oracle,
    random_state,
    small_random_trees,
)

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

ROBOTS = ["ur5", "panda", "talos_full"]
TREES = small_random_trees()
T = 37  # not a multiple of the thread count: uneven chunks


def _urdf(name):
    return str(erd_urdf(name)) if name in ROBOTS else TREES[name]


def _states(n, rng, T=T):
    rows = [random_state(n, rng) for _ in range(T)]
    return tuple(np.array([r[k] for r in rows]) for k in range(3))


def _bits(x):
    return np.ascontiguousarray(x).view(np.uint64)


def _loops(dyn, Q, V, A):
    """The single-state calls row by row: name -> tuple of stacked results."""
    rows = range(Q.shape[0])
    coriolis = [dyn.coriolis(Q[t], V[t]) for t in rows]
    vectors = [dyn.coriolis_vectors(Q[t], V[t]) for t in rows]
    return {
        "coriolis": tuple(np.array([r[k] for r in coriolis]) for k in range(3)),
        "christoffel": (np.array([dyn.christoffel(Q[t]) for t in rows]),),
        "coriolis_vectors": tuple(np.array([r[k] for r in vectors]) for k in range(3)),
        "inverse_dynamics": (np.array([dyn.inverse_dynamics(Q[t], V[t], A[t]) for t in rows]),),
        "gravity": (np.array([dyn.gravity(Q[t]) for t in rows]),),
    }


def _batches(dyn, Q, V, A, out=None):
    out = out or {}
    as_tuple = lambda x: x if isinstance(x, tuple) else (x,)  # noqa: E731
    return {
        "coriolis": as_tuple(dyn.coriolis_batch(Q, V, out=out.get("coriolis"))),
        "christoffel": as_tuple(dyn.christoffel_batch(Q, out=out.get("christoffel"))),
        "coriolis_vectors": as_tuple(
            dyn.coriolis_vectors_batch(Q, V, out=out.get("coriolis_vectors"))
        ),
        "inverse_dynamics": as_tuple(
            dyn.inverse_dynamics_batch(Q, V, A, out=out.get("inverse_dynamics"))
        ),
        "gravity": as_tuple(dyn.gravity_batch(Q, out=out.get("gravity"))),
    }


def _nan_like(results):
    return {k: tuple(np.full_like(x, np.nan) for x in v) for k, v in results.items()}


@pytest.mark.parametrize("T", [5, T])  # 5: below MIN_PARALLEL, run on the calling thread
@pytest.mark.parametrize("name", ROBOTS + ["serial_chain_7", "binary_tree_7", "biped_arms_9"])
def test_batch_equals_loop_bitwise(name, T):
    if name not in ROBOTS and name not in TREES:
        pytest.fail(f"unknown random tree {name}: {sorted(TREES)}")
    dyn = dynamics_for(_urdf(name))
    Q, V, A = _states(dyn.nv, np.random.default_rng(12), T=T)
    expected = _loops(dyn, Q, V, A)
    got = _batches(dyn, Q, V, A)
    out = _nan_like(expected)
    got_out = _batches(dyn, Q, V, A, out=out)
    for key, arrays in expected.items():
        for k, want in enumerate(arrays):
            assert got[key][k].shape == want.shape, key
            assert np.array_equal(_bits(got[key][k]), _bits(want)), f"{name} {key}[{k}]"
            assert got_out[key][k] is out[key][k], f"{key}: out= not returned"
            assert np.array_equal(_bits(out[key][k]), _bits(want)), f"{name} {key}[{k}] out="


def test_batch_equals_loop_on_one_and_two_threads():
    dyn = dynamics_for(_urdf("panda"))
    Q, V, A = _states(dyn.nv, np.random.default_rng(3), T=101)
    expected = _loops(dyn, Q, V, A)
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            got = _batches(dyn, Q, V, A)
            for key, arrays in expected.items():
                for k, want in enumerate(arrays):
                    assert np.array_equal(_bits(got[key][k]), _bits(want)), (threads, key, k)
    finally:
        numba.set_num_threads(before)


def test_batch_rows_are_independent_of_the_cut():
    """Pure function of the rows: any split of the batch gives the same rows."""
    dyn = dynamics_for(_urdf("ur5"))
    Q, V, _ = _states(dyn.nv, np.random.default_rng(4), T=50)
    whole = dyn.coriolis_batch(Q, V)
    parts = [dyn.coriolis_batch(Q[a:b], V[a:b]) for a, b in ((0, 1), (1, 17), (17, 50))]
    for k in range(3):
        assert np.array_equal(_bits(np.concatenate([p[k] for p in parts])), _bits(whole[k]))


@pytest.mark.parametrize("name", ["ur5", "talos_full"])
def test_batch_matches_pinocchio(name):
    dyn, oracle = library_and_oracle(_urdf(name))
    Q, V, A = _states(dyn.nv, np.random.default_rng(5), T=6)
    M, Mdot, C = dyn.coriolis_batch(Q, V)
    tau = dyn.inverse_dynamics_batch(Q, V, A)
    g = dyn.gravity_batch(Q)
    Cqd, CTqd, p = dyn.coriolis_vectors_batch(Q, V)
    for t in range(Q.shape[0]):
        C_ref, M_ref = oracle.C(Q[t], V[t]), oracle.M(Q[t])
        assert_close(C[t], C_ref, 1e-10, f"{name} C row {t}")
        assert_close(M[t], M_ref, 1e-10, f"{name} M row {t}")
        assert_close(Mdot[t], C_ref + C_ref.T, 1e-10, f"{name} Mdot row {t}")
        assert_close(g[t], oracle.g(Q[t]), 1e-10, f"{name} g row {t}")
        assert_close(tau[t], oracle.rnea(Q[t], V[t], A[t]), 1e-10, f"{name} tau row {t}")
        assert_close(Cqd[t], C_ref @ V[t], 1e-10, f"{name} Cqd row {t}")
        assert_close(CTqd[t], C_ref.T @ V[t], 1e-10, f"{name} CTqd row {t}")
        assert_close(p[t], M_ref @ V[t], 1e-10, f"{name} p row {t}")
    Gamma = dyn.christoffel_batch(Q[:2])
    for t in range(2):
        assert_close(Gamma[t], oracle.christoffel_fd(Q[t]), 1e-6, f"{name} Gamma row {t}")


# ----------------------------------------------------------------------------- validation


@pytest.fixture(scope="module")
def dyn():
    return dynamics_for(_urdf("panda"))


@pytest.fixture()
def data(dyn):
    return _states(dyn.nv, np.random.default_rng(6), T=20)


@pytest.mark.parametrize(
    "which, row, value",
    [("Q", 5, np.nan), ("V", 0, np.inf), ("A", 19, -np.inf), ("V", 7, 1.0000001e50)],
)
def test_bad_row_is_named_and_outputs_untouched(dyn, data, which, row, value):
    Q, V, A = (x.copy() for x in data)
    {"Q": Q, "V": V, "A": A}[which][row, 3] = value
    tau = np.full((20, dyn.nv), 7.0)
    with pytest.raises(ValueError, match=rf"^{which} row {row} has a NaN, infinite or huge"):
        dyn.inverse_dynamics_batch(Q, V, A, out=tau)
    assert np.all(tau == 7.0), "nothing may be written before the rows are validated"
    if which != "A":
        with pytest.raises(ValueError, match=rf"^{which} row {row} "):
            dyn.coriolis_vectors_batch(Q, V)
        with pytest.raises(ValueError, match=rf"^{which} row {row} "):
            dyn.coriolis_batch(Q, V)
    if which == "Q":
        for call in (dyn.christoffel_batch, dyn.gravity_batch):
            with pytest.raises(ValueError, match=rf"^Q row {row} "):
                call(Q)


def test_first_bad_row_wins_like_the_loop(dyn, data):
    Q, V, _ = (x.copy() for x in data)
    Q[9, 0] = np.nan
    V[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"^V row 4 "):
        dyn.coriolis_batch(Q, V)
    with pytest.raises(ValueError, match=r"^qd "):  # the loop fails at the same row
        for t in range(Q.shape[0]):
            dyn.coriolis(Q[t], V[t])
            assert t < 4


def test_bound_itself_is_accepted(dyn, data):
    Q, V, _ = (x.copy() for x in data)
    V[3, :] = 1e50
    V[4, :] = -1e50
    M, Mdot, C = dyn.coriolis_batch(Q, V)
    M1, Mdot1, C1 = dyn.coriolis(Q[3], V[3])
    assert np.array_equal(C[3], C1) and np.isfinite(C).all()


@pytest.mark.parametrize(
    "Q_shape, V_shape, match",
    [
        ((20, 8), (20, 9), r"^Q must have shape \(T, 9\), got \(20, 8\)"),
        ((20, 9), (20, 10), r"^V must have shape \(T, 9\), got \(20, 10\)"),
        ((9,), (9,), r"^Q must have shape \(T, 9\), got \(9,\)"),
        ((20, 9), (19, 9), r"^Q, V must have the same number of rows, got Q: 20, V: 19"),
    ],
)
def test_shapes(dyn, Q_shape, V_shape, match):
    with pytest.raises(ValueError, match=match):
        dyn.coriolis_batch(np.zeros(Q_shape), np.zeros(V_shape))


def test_shape_of_accelerations_and_single_input_calls(dyn):
    with pytest.raises(ValueError, match=r"^Q, V, A must have the same number of rows"):
        dyn.inverse_dynamics_batch(np.zeros((3, 9)), np.zeros((3, 9)), np.zeros((2, 9)))
    with pytest.raises(ValueError, match=r"^A must have shape \(T, 9\)"):
        dyn.inverse_dynamics_batch(np.zeros((3, 9)), np.zeros((3, 9)), np.zeros((3, 8)))
    with pytest.raises(ValueError, match=r"^Q must have shape \(T, 9\)"):
        dyn.christoffel_batch(np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match=r"^Q must be a \(T, 9\) array of numbers"):
        dyn.gravity_batch([["a"] * 9])


def test_inputs_are_converted(dyn, data):
    """Lists, ints, Fortran order, read-only and strided views give the same rows."""
    Q, V, _ = data
    want = dyn.coriolis_batch(Q, V)
    ro = Q.copy()
    ro.flags.writeable = False
    wide = np.zeros((20, 18))
    wide[:, ::2] = V
    for q_in, v_in in (
        (Q.tolist(), V.tolist()),
        (np.asfortranarray(Q), V),
        (ro, wide[:, ::2]),
    ):
        got = dyn.coriolis_batch(q_in, v_in)
        for k in range(3):
            assert np.array_equal(_bits(got[k]), _bits(want[k]))
    ints = np.arange(18).reshape(2, 9)
    assert np.array_equal(dyn.gravity_batch(ints), dyn.gravity_batch(ints.astype(float)))


def test_out_validation(dyn, data):
    Q, V, _ = data
    n = dyn.nv
    good = lambda: np.empty((20, n, n))  # noqa: E731
    with pytest.raises(ValueError, match=r"^out must be a tuple of 3 arrays"):
        dyn.coriolis_batch(Q, V, out=(good(), good()))
    with pytest.raises(ValueError, match=r"^out array has shape \(19, 9, 9\), expected"):
        dyn.coriolis_batch(Q, V, out=(good(), good(), np.empty((19, n, n))))
    with pytest.raises(ValueError, match=r"^out arrays must be writeable C-contiguous float64"):
        dyn.coriolis_batch(Q, V, out=(good(), good(), np.empty((20, n, n), np.float32)))
    with pytest.raises(ValueError, match=r"^out arrays must be writeable C-contiguous float64"):
        dyn.christoffel_batch(Q, out=np.empty((20, n, n, n), order="F"))
    ro = good()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"^out arrays must be writeable"):
        dyn.coriolis_batch(Q, V, out=(good(), ro, good()))
    shared = good()
    with pytest.raises(ValueError, match=r"^out arrays must not share memory"):
        dyn.coriolis_batch(Q, V, out=(good(), shared, shared))
    vec = np.empty((20, n))
    with pytest.raises(ValueError, match=r"^out arrays must not share memory"):
        dyn.coriolis_vectors_batch(Q, V, out=(vec, np.empty((20, n)), vec))
    with pytest.raises(ValueError, match=r"^out array has shape \(20, 8\)"):
        dyn.gravity_batch(Q, out=np.empty((20, 8)))


def test_empty_batch(dyn):
    M, Mdot, C = dyn.coriolis_batch(np.zeros((0, 9)), np.zeros((0, 9)))
    assert M.shape == Mdot.shape == C.shape == (0, 9, 9)
    assert dyn.christoffel_batch(np.zeros((0, 9))).shape == (0, 9, 9, 9)
    assert dyn.gravity_batch(np.zeros((0, 9))).shape == (0, 9)


def test_concurrent_batches_on_clones():
    """Two threads, each with its own instance: no crash, every result right."""
    base = dynamics_for(_urdf("panda"))
    Q, V, _ = _states(base.nv, np.random.default_rng(8), T=200)
    want = base.coriolis_batch(Q, V)
    errors = []

    def work(dyn):
        try:
            for _ in range(20):
                got = dyn.coriolis_batch(Q, V)
                for k in range(3):
                    if not np.array_equal(_bits(got[k]), _bits(want[k])):
                        errors.append("mismatch")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(base.clone(),)) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


@pytest.mark.parametrize("root_joint", ["floating", "planar"])
def test_batch_on_a_floating_base_equals_loop_bitwise(root_joint):
    """Q rows have nq entries (a quaternion for a free flyer), V and A rows nv."""
    from support.floating import random_configuration

    from coriolis_ros.dynamics import Dynamics

    dyn = Dynamics.from_urdf(str(erd_urdf("solo12")), root_joint=root_joint)
    rng = np.random.default_rng(4)
    Q = np.array([random_configuration(dyn, rng) for _ in range(40)])
    V, A = rng.normal(size=(40, dyn.nv)), rng.normal(size=(40, dyn.nv))
    expected, got = _loops(dyn, Q, V, A), _batches(dyn, Q, V, A)
    for key, arrays in expected.items():
        for k, want in enumerate(arrays):
            assert np.array_equal(_bits(got[key][k]), _bits(want)), f"{root_joint} {key}[{k}]"
    with pytest.raises(ValueError, match=rf"Q must have shape \(T, {dyn.nq}\)|{dyn.nq}"):
        dyn.coriolis_batch(Q[:, :-1], V)


def test_batch_names_the_row_with_a_zero_quaternion():
    from coriolis_ros.dynamics import Dynamics

    dyn = Dynamics.from_urdf(str(erd_urdf("solo12")), root_joint="floating")
    Q = np.tile(dyn.neutral(), (30, 1))
    Q[17, 3:7] = 0.0
    V = np.zeros((30, dyn.nv))
    with pytest.raises(ValueError, match="Q row 17 has a zero quaternion"):
        dyn.coriolis_batch(Q, V)
    with pytest.raises(ValueError, match="Q row 17 has a zero quaternion"):
        dyn.christoffel_batch(Q)


@pytest.mark.parametrize("T", [5, 60])
def test_slotine_li_batch_equals_loop_bitwise_and_names_bad_rows(T):
    dyn = dynamics_for(_urdf("ur5"))
    rng = np.random.default_rng(9)
    Q, V, A = _states(dyn.nv, rng, T=T)
    R = rng.normal(size=V.shape)
    want = np.array([dyn.slotine_li(Q[t], V[t], R[t], A[t]) for t in range(T)])
    got = dyn.slotine_li_batch(Q, V, R, A)
    assert np.array_equal(_bits(got), _bits(want))
    out = np.full_like(want, np.nan)
    assert dyn.slotine_li_batch(Q, V, R, A, out=out) is out
    assert np.array_equal(_bits(out), _bits(want))
    bad = A.copy()
    bad[T - 2, 1] = np.nan
    with pytest.raises(ValueError, match=f"QddR row {T - 2} has a NaN"):
        dyn.slotine_li_batch(Q, V, R, bad)
    bad = R.copy()
    bad[T - 3, 0] = np.inf
    with pytest.raises(ValueError, match=f"QdR row {T - 3} has a NaN"):
        dyn.slotine_li_batch(Q, V, bad, A)


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, {"GOMP_SPINCOUNT": "3000", "OMP_WAIT_POLICY": None}),
        ({"OMP_WAIT_POLICY": "PASSIVE"}, {"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": "PASSIVE"}),
        ({"GOMP_SPINCOUNT": "50"}, {"GOMP_SPINCOUNT": "50", "OMP_WAIT_POLICY": None}),
    ],
)
def test_openmp_spin_default_yields_to_the_users_choice(env, expected):
    """A bounded spin unless the user chose a wait policy or spin count, set by the first
    batch (before OpenMP loads), not on import (in a fresh process)."""
    child_env = {
        k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")
    }
    child_env.update(env)
    code = (
        "import json, os; from coriolis_ros.dynamics import Dynamics; "
        "from coriolis_ros.robots import robot_path; "
        "names = ('GOMP_SPINCOUNT', 'OMP_WAIT_POLICY'); "
        "before = {k: os.environ.get(k) for k in names}; "
        "dyn = Dynamics.from_urdf(robot_path('arm7')); "
        "dyn.gravity_batch(dyn.neutral()[None, :]); "
        "print(json.dumps([before, {k: os.environ.get(k) for k in names}]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    before, after = json.loads(out.strip().splitlines()[-1])
    assert before == {k: env.get(k) for k in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    assert after == expected
