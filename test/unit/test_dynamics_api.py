"""Behaviour of the Dynamics API: description attributes, input validation, out= buffers,
ownership of results.  Expected values are computed by hand or by Pinocchio, never by the code
under test (except where the test is *about* equality between two calls of the library).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.oracle import assert_close, erd_urdf, library_and_oracle, random_state

from coriolis_ros.dynamics import Dynamics, URDFError
from support.api_inputs import HAND_URDF, _bad_inputs, _joint, _link, _wrong_buffers


# Hand-written tree.  DoF joints and their DoF parents (fixed joints are transparent):
#   j_a (revolute)   base -> a                      parent: none
#   j_b (prismatic)  a -> b                         parent: j_a
#   j_c (continuous) a -fixed-> a_sensor -> c       parent: j_a
#   j_d (revolute)   c -> d                         parent: j_c
#   j_e (revolute)   base -> e                      parent: none
#   j_g (revolute)   base -fixed-> g_mount -> g     parent: none
# nv = 6; tree_depth = 3 (j_a, j_c, j_d); the elements are deliberately out of order.
HAND_PARENTS = {"j_a": None, "j_b": "j_a", "j_c": "j_a", "j_d": "j_c", "j_e": None, "j_g": None}


@pytest.fixture(scope="module")
def hand():
    return Dynamics.from_urdf(HAND_URDF)


@pytest.fixture(scope="module")
def panda():
    return library_and_oracle(str(erd_urdf("panda")))[0]


# ----------------------------------------------------------------------------- description


def test_hand_tree_description(hand):
    assert hand.name == "hand_tree"
    assert hand.nv == 6
    assert isinstance(hand.joint_names, tuple)
    assert sorted(hand.joint_names) == sorted(HAND_PARENTS)
    assert hand.tree_depth == 3


def test_hand_tree_joint_order_is_topological(hand):
    """Every DoF comes after its DoF parent (fixed joints are not DoF)."""
    index = {name: k for k, name in enumerate(hand.joint_names)}
    for child, parent in HAND_PARENTS.items():
        if parent is not None:
            assert index[parent] < index[child], (parent, child, hand.joint_names)


def test_hand_tree_structure_in_mass_matrix(hand):
    """M_ij = 0 exactly when neither of joints i, j is an ancestor of the other (hand table)."""

    def ancestors(j):
        out = set()
        while HAND_PARENTS[j] is not None:
            j = HAND_PARENTS[j]
            out.add(j)
        return out

    rng = np.random.default_rng(0)
    M = hand.mass_matrix(rng.uniform(-1, 1, size=6))
    names = hand.joint_names
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            related = a == b or a in ancestors(b) or b in ancestors(a)
            if related:
                assert M[i, j] != 0.0, (a, b)
            else:
                assert M[i, j] == 0.0, (a, b)


def test_hand_tree_matches_pinocchio(hand):
    from support.oracle import PinOracle, compare_all

    oracle = PinOracle(HAND_URDF, order=hand.joint_names)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, qd, qdd = random_state(6, rng)
        compare_all(hand, oracle, q, qd, qdd, label="hand tree")


def test_joint_names_deterministic():
    a = Dynamics.from_urdf(HAND_URDF)
    b = Dynamics.from_urdf(HAND_URDF)
    assert a.joint_names == b.joint_names


def test_tree_depth_simple_cases():
    chain = (
        '<robot name="chain3">'
        + _link("l0", 1.0)
        + _link("l1", 1.0)
        + _link("l2", 1.0)
        + _link("l3", 1.0)
        + _joint("j1", "revolute", "l0", "l1")
        + _joint("fix", "fixed", "l1", "l2")
        + _joint("j3", "prismatic", "l2", "l3")
        + "</robot>"
    )
    dyn = Dynamics.from_urdf(chain)
    assert (dyn.nv, dyn.tree_depth, dyn.name) == (2, 2, "chain3")
    star = (
        '<robot name="star">'
        + _link("hub", 1.0)
        + "".join(_link(f"s{k}", 1.0) for k in range(4))
        + "".join(_joint(f"j{k}", "revolute", "hub", f"s{k}") for k in range(4))
        + "</robot>"
    )
    dyn = Dynamics.from_urdf(star)
    assert (dyn.nv, dyn.tree_depth) == (4, 1)


def test_robot_without_dof_is_rejected_or_empty():
    """Only fixed joints: either a clear URDFError or a valid 0-DoF model with empty results."""
    urdf = (
        '<robot name="statue">'
        + _link("a", 1.0)
        + _link("b", 1.0)
        + _joint("fix", "fixed", "a", "b")
        + "</robot>"
    )
    try:
        dyn = Dynamics.from_urdf(urdf)
    except URDFError as exc:
        assert re.search(r"(?i)dof|degree|joint|movable", str(exc)), str(exc)
        return
    assert dyn.nv == 0 and dyn.joint_names == () and dyn.tree_depth == 0
    z = np.zeros(0)
    M, Mdot, C = dyn.coriolis(z, z)
    assert M.shape == Mdot.shape == C.shape == (0, 0)
    assert dyn.christoffel(z).shape == (0, 0, 0)
    assert dyn.gravity(z).shape == (0,)


# ----------------------------------------------------------------------------- validation


def _calls(dyn, q, qd, qdd):
    """(label, callable, {argname: position}) for every method taking joint vectors."""
    return [
        ("coriolis", lambda a: dyn.coriolis(*a), ("q", "qd")),
        ("christoffel", lambda a: dyn.christoffel(*a), ("q",)),
        ("gravity", lambda a: dyn.gravity(*a), ("q",)),
        ("mass_matrix", lambda a: dyn.mass_matrix(*a), ("q",)),
        ("inverse_dynamics", lambda a: dyn.inverse_dynamics(*a), ("q", "qd", "qdd")),
        ("coriolis_vectors", lambda a: dyn.coriolis_vectors(*a), ("q", "qd")),
    ]


@pytest.mark.parametrize("method", [c[0] for c in _calls(None, None, None, None)])
def test_input_validation(hand, method):
    n = hand.nv
    good = {"q": np.linspace(-1, 1, n), "qd": np.linspace(0.5, -0.5, n), "qdd": np.ones(n)}
    _, call, argnames = next(c for c in _calls(hand, None, None, None) if c[0] == method)
    for arg in argnames:
        for label, bad, pattern in _bad_inputs(n):
            args = [good[a] for a in argnames]
            args[argnames.index(arg)] = bad
            with pytest.raises(ValueError) as info:
                call(args)
            msg = str(info.value)
            assert re.search(rf"\b{arg}\b", msg), f"{method}: {label} {arg}: {msg!r}"
            assert re.search(pattern, msg, re.IGNORECASE), f"{method}: {label} {arg}: {msg!r}"


def test_validation_failure_leaves_instance_usable(hand):
    q = np.linspace(-1, 1, hand.nv)
    qd = np.linspace(1, 2, hand.nv)
    before = [x.copy() for x in hand.coriolis(q, qd)]
    bad = qd.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError):
        hand.coriolis(q, bad)
    for x, y in zip(hand.coriolis(q, qd), before):
        np.testing.assert_array_equal(x, y)


def test_array_likes_and_strided_inputs(panda):
    """Lists and non-contiguous views give the same numbers as contiguous float64 arrays."""
    rng = np.random.default_rng(2)
    q, qd, qdd = random_state(panda.nv, rng)
    ref = panda.inverse_dynamics(q, qd, qdd)
    np.testing.assert_array_equal(panda.inverse_dynamics(list(q), list(qd), list(qdd)), ref)
    big = np.zeros((3, 2 * panda.nv))
    big[0, ::2], big[1, ::2], big[2, ::2] = q, qd, qdd
    np.testing.assert_array_equal(
        panda.inverse_dynamics(big[0, ::2], big[1, ::2], big[2, ::2]), ref
    )
    ro = q.copy()
    ro.setflags(write=False)
    np.testing.assert_array_equal(panda.mass_matrix(ro), panda.mass_matrix(q))


def test_inputs_are_not_modified(panda):
    rng = np.random.default_rng(3)
    q, qd, qdd = random_state(panda.nv, rng)
    copies = q.copy(), qd.copy(), qdd.copy()
    panda.coriolis(q, qd)
    panda.christoffel(q)
    panda.gravity(q)
    panda.mass_matrix(q)
    panda.inverse_dynamics(q, qd, qdd)
    panda.coriolis_vectors(q, qd)
    for a, b in zip((q, qd, qdd), copies):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- out= buffers


def _nan(shape):
    return np.full(shape, np.nan)


def test_out_buffers_are_filled_and_returned(hand):
    """Buffers pre-filled with NaN are completely overwritten (structural zeros included)."""
    n = hand.nv
    rng = np.random.default_rng(4)
    q, qd, qdd = random_state(n, rng)
    bufs = (_nan((n, n)), _nan((n, n)), _nan((n, n)))
    res = hand.coriolis(q, qd, out=bufs)
    assert all(r is b for r, b in zip(res, bufs))
    for r, e in zip(res, hand.coriolis(q, qd)):
        np.testing.assert_array_equal(r, e)

    G = _nan((n, n, n))
    assert hand.christoffel(q, out=G) is G
    np.testing.assert_array_equal(G, hand.christoffel(q))

    g = _nan(n)
    assert hand.gravity(q, out=g) is g
    np.testing.assert_array_equal(g, hand.gravity(q))

    M = _nan((n, n))
    assert hand.mass_matrix(q, out=M) is M
    np.testing.assert_array_equal(M, hand.mass_matrix(q))

    tau = _nan(n)
    assert hand.inverse_dynamics(q, qd, qdd, out=tau) is tau
    np.testing.assert_array_equal(tau, hand.inverse_dynamics(q, qd, qdd))

    vecs = (_nan(n), _nan(n), _nan(n))
    res = hand.coriolis_vectors(q, qd, out=vecs)
    assert all(r is b for r, b in zip(res, vecs))
    for r, e in zip(res, hand.coriolis_vectors(q, qd)):
        np.testing.assert_array_equal(r, e)


def test_out_buffers_reused_across_states(hand):
    """Re-using the same buffers at a second state gives that state's values (no accumulation)."""
    n = hand.nv
    rng = np.random.default_rng(5)
    bufs = (np.empty((n, n)), np.empty((n, n)), np.empty((n, n)))
    G = np.empty((n, n, n))
    for _ in range(3):
        q, qd, _ = random_state(n, rng)
        hand.coriolis(q, qd, out=bufs)
        hand.christoffel(q, out=G)
        for r, e in zip(bufs, hand.coriolis(q, qd)):
            np.testing.assert_array_equal(r, e)
        np.testing.assert_array_equal(G, hand.christoffel(q))


@pytest.mark.parametrize(
    "method", ["coriolis", "christoffel", "gravity", "mass_matrix", "inverse_dynamics", "vectors"]
)
def test_wrong_out_is_rejected(hand, method):
    n = hand.nv
    q = np.linspace(-1, 1, n)
    spec = {
        "coriolis": (lambda out: hand.coriolis(q, q, out=out), (n, n), 3),
        "christoffel": (lambda out: hand.christoffel(q, out=out), (n, n, n), 1),
        "gravity": (lambda out: hand.gravity(q, out=out), (n,), 1),
        "mass_matrix": (lambda out: hand.mass_matrix(q, out=out), (n, n), 1),
        "inverse_dynamics": (lambda out: hand.inverse_dynamics(q, q, q, out=out), (n,), 1),
        "vectors": (lambda out: hand.coriolis_vectors(q, q, out=out), (n,), 3),
    }
    call, shape, count = spec[method]
    for label, bad, pattern in _wrong_buffers(shape):
        for slot in range(count):
            out = [np.zeros(shape) for _ in range(count)]
            out[slot] = bad
            arg = tuple(out) if count > 1 else out[0]
            with pytest.raises(ValueError) as info:
                call(arg)
            msg = str(info.value)
            assert re.search(r"\bout\b", msg), (label, msg)
            assert re.search(pattern, msg, re.IGNORECASE), (label, msg)
    if count > 1:
        with pytest.raises((ValueError, TypeError)):
            call(tuple(np.zeros(shape) for _ in range(count - 1)))


def test_unusual_out_buffers_are_rejected_or_correct(hand):
    """Fortran-ordered, strided, read-only or overlapping buffers: ValueError or right numbers."""
    n = hand.nv
    rng = np.random.default_rng(6)
    q, qd, qdd = random_state(n, rng)
    M_ref, Mdot_ref, C_ref = (x.copy() for x in hand.coriolis(q, qd))

    def attempt(make, check):
        try:
            res = make()
        except ValueError:
            return
        check(res)

    fortran = np.asfortranarray(np.full((n, n), np.nan))
    attempt(
        lambda: hand.mass_matrix(q, out=fortran),
        lambda r: np.testing.assert_array_equal(np.asarray(fortran), M_ref),
    )
    strided = np.full((n, 2 * n), np.nan)[:, ::2]
    attempt(
        lambda: hand.mass_matrix(q, out=strided),
        lambda r: np.testing.assert_array_equal(strided, M_ref),
    )
    ro = np.zeros((n, n))
    ro.setflags(write=False)
    with pytest.raises(ValueError):
        hand.mass_matrix(q, out=ro)
    same = np.zeros((n, n))
    attempt(
        lambda: hand.coriolis(q, qd, out=(same, same, np.zeros((n, n)))),
        lambda r: pytest.fail("coriolis accepted the same buffer for M and Mdot"),
    )
    # Distinct but overlapping views as outputs (results cannot all be right: must be rejected).
    big = np.zeros((n + 1, n))
    overlapping = (big[:n], big[1:], np.zeros((n, n)))
    attempt(
        lambda: hand.coriolis(q, qd, out=overlapping),
        lambda r: [
            np.testing.assert_array_equal(a, b) for a, b in zip(r, (M_ref, Mdot_ref, C_ref))
        ],
    )
    # An output aliasing an input.
    q_alias = q.copy()
    g_ref = hand.gravity(q)
    attempt(
        lambda: hand.gravity(q_alias, out=q_alias),
        lambda r: np.testing.assert_array_equal(r, g_ref),
    )
    tau_ref = hand.inverse_dynamics(q, qd, qdd)
    qdd_alias = qdd.copy()
    attempt(
        lambda: hand.inverse_dynamics(q, qd, qdd_alias, out=qdd_alias),
        lambda r: np.testing.assert_array_equal(r, tau_ref),
    )
    v_ref = [x.copy() for x in hand.coriolis_vectors(q, qd)]
    q2, qd2 = q.copy(), qd.copy()
    attempt(
        lambda: hand.coriolis_vectors(q2, qd2, out=(qd2, q2, np.zeros(n))),
        lambda r: [np.testing.assert_array_equal(a, b) for a, b in zip(r, v_ref)],
    )


# ----------------------------------------------------------------------------- ownership


def test_results_belong_to_the_caller(panda):
    n = panda.nv
    rng = np.random.default_rng(7)
    s1 = random_state(n, rng)
    s2 = random_state(n, rng)

    def everything(q, qd, qdd):
        return [
            *panda.coriolis(q, qd),
            panda.christoffel(q),
            panda.gravity(q),
            panda.mass_matrix(q),
            panda.inverse_dynamics(q, qd, qdd),
            *panda.coriolis_vectors(q, qd),
        ]

    first = everything(*s1)
    snapshot = [x.copy() for x in first]
    second = everything(*s2)
    for a, b in zip(first, snapshot):
        np.testing.assert_array_equal(a, b)  # not overwritten by the second call
    for a, b in zip(first, second):
        assert not np.shares_memory(a, b)
    for i, a in enumerate(first):
        for b in first[i + 1 :]:
            assert not np.shares_memory(a, b)
    # Scribbling over returned arrays does not affect later results.
    for a in first:
        a[...] = 1e300
    again = everything(*s1)
    for a, b in zip(again, snapshot):
        np.testing.assert_array_equal(a, b)


def test_results_are_float64_and_right_shape(panda):
    n = panda.nv
    q, qd, qdd = random_state(n, np.random.default_rng(8))
    shapes = [
        (panda.coriolis(q, qd), [(n, n)] * 3),
        ((panda.christoffel(q),), [(n, n, n)]),
        ((panda.gravity(q),), [(n,)]),
        ((panda.mass_matrix(q),), [(n, n)]),
        ((panda.inverse_dynamics(q, qd, qdd),), [(n,)]),
        (panda.coriolis_vectors(q, qd), [(n,)] * 3),
    ]
    for arrays, expected in shapes:
        assert len(arrays) == len(expected)
        for a, s in zip(arrays, expected):
            assert isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == s


def test_repeated_calls_are_bitwise_deterministic(panda):
    q, qd, _ = random_state(panda.nv, np.random.default_rng(9))
    a = [x.copy() for x in panda.coriolis(q, qd)] + [panda.christoffel(q).copy()]
    b = list(panda.coriolis(q, qd)) + [panda.christoffel(q)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_two_robots_interleaved_do_not_interfere():
    """Two models (different sizes) called alternately: each matches its own Pinocchio oracle."""
    d1, o1 = library_and_oracle(str(erd_urdf("ur5")))
    d2, o2 = library_and_oracle(str(erd_urdf("talos")))
    rng = np.random.default_rng(10)
    for _ in range(3):
        q1, qd1, _ = random_state(d1.nv, rng)
        q2, qd2, _ = random_state(d2.nv, rng)
        C1 = d1.coriolis(q1, qd1)[2]
        C2 = d2.coriolis(q2, qd2)[2]
        G1 = d1.christoffel(q1)
        assert_close(C1, o1.C(q1, qd1), 1e-10, "ur5 C")
        assert_close(C2, o2.C(q2, qd2), 1e-10, "talos C")
        assert_close(np.einsum("ijk,k->ij", G1, qd1), C1, 1e-10, "ur5 Gamma qd")


def test_warmup_then_correct(hand):
    hand.warmup()
    from support.oracle import PinOracle

    oracle = PinOracle(HAND_URDF, order=hand.joint_names)
    q, qd, _ = random_state(hand.nv, np.random.default_rng(11))
    assert_close(hand.coriolis(q, qd)[2], oracle.C(q, qd), 1e-10, "C after warmup")


def test_urdf_error_is_value_error():
    assert issubclass(URDFError, ValueError)


def test_clone_is_independent_and_thread_safe(panda):
    """clone() (documented for per-thread use): same numbers, own workspace; clones used from
    several threads at once give exactly the serial results."""
    import threading

    clones = [panda.clone() for _ in range(3)]
    assert all(c.joint_names == panda.joint_names and c.nv == panda.nv for c in clones)
    rng = np.random.default_rng(12)
    states = [random_state(panda.nv, rng)[:2] for _ in range(20)]
    expected = [[x.copy() for x in panda.coriolis(q, qd)] for q, qd in states]
    expected_gamma = [panda.christoffel(q).copy() for q, _ in states]
    errors: list[str] = []

    def worker(dyn, offset):
        for rep in range(10):
            for k in range(len(states)):
                idx = (k + offset + rep) % len(states)
                q, qd = states[idx]
                for got, want in zip(dyn.coriolis(q, qd), expected[idx]):
                    if not np.array_equal(got, want):
                        errors.append(f"coriolis state {idx}")
                if not np.array_equal(dyn.christoffel(q), expected_gamma[idx]):
                    errors.append(f"christoffel state {idx}")

    threads = [threading.Thread(target=worker, args=(c, 7 * k)) for k, c in enumerate(clones)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
