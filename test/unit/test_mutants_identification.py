"""identify against independent computations, on a small arm (fast: the mutation tests' first).

References, none of them the code under test:
  * the regressor W of Pinocchio (``computeJointTorqueRegressor``) and its torques (``rnea``);
  * the pseudo-inertia J = [[1/2 tr(I) 1 - I, h], [h^T, m]] built here from its definition
    (Wensing, Kim and Slotine, RA-L 2017) and the cost of the module docstring written out:
    ||W pi - y||^2 + rho sum_k ||D_k (J(pi_k) - J(prior_k)) D_k||_F^2, D_k = diag(1/l, 1/l,
    1/l, 1), l = sqrt(tr(I) / 2m) of the prior, rho = w |y|^2 / sum_k ||D_k J(prior_k) D_k||^2;
  * where the optimum is inside the consistent set: the normal equations of that cost;
    where it is on the boundary: the Karush-Kuhn-Tucker conditions (a positive semidefinite
    multiplier per body, complementary to D J D - floor 1);
  * the covariance sigma^2 (W^T W + rho G)^-1, the rank and row space of W by numpy's SVD;
  * moving averages and central differences by loops over the samples.
Every bound of the arguments is tested on both sides.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from support.trajectories import identification_trajectory, rel
from support.urdf_text import THREE_JOINTS, joint, link, robot

from coriolis_ros.dynamics import Dynamics, identify
from coriolis_ros.dynamics import identification as ident

URDF = THREE_JOINTS
FLOOR = 1e-9  # MIN_MASS_FRACTION of the docstring: D J D >= 1e-9 x the heaviest prior mass


@pytest.fixture(scope="module")
def arm():
    return pin.buildModelFromXML(URDF), Dynamics.from_urdf(URDF)


trajectory = identification_trajectory


def pin_W(model, Q, V, A):
    data = model.createData()
    return np.vstack(
        [pin.computeJointTorqueRegressor(model, data, Q[k], V[k], A[k]) for k in range(len(Q))]
    )


def scaled(dyn, factors):
    wrong = dyn.clone()
    pi = dyn.inertial_parameters()
    for b, f in enumerate(factors):
        pi[10 * b : 10 * b + 10] *= f
    wrong.set_inertial_parameters(pi)
    return wrong


def pseudo(pk):
    m, h = pk[0], np.asarray(pk[1:4])
    xx, xy, yy, xz, yz, zz = pk[4:10]
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def length(pk):
    return np.sqrt((pk[4] + pk[6] + pk[9]) / (2 * pk[0]))


def djd(pk, scale):
    d = np.array([1 / scale] * 3 + [1.0])
    return d[:, None] * pseudo(pk) * d[None, :]


def metric(prior):
    """G (block diagonal): pi^T G pi = sum_k ||D_k J(pi_k) D_k||_F^2, with the prior's l_k."""
    nb = prior.size // 10
    G = np.zeros((10 * nb, 10 * nb))
    for b in range(nb):
        s = length(prior[10 * b : 10 * b + 10])
        P = np.column_stack([djd(e, s).reshape(-1) for e in np.eye(10)])
        G[10 * b : 10 * b + 10, 10 * b : 10 * b + 10] = P.T @ P
    return G


def rho_of(y, prior, weight):
    nb = prior.size // 10
    total = sum(
        np.sum(djd(prior[10 * b : 10 * b + 10], length(prior[10 * b : 10 * b + 10])) ** 2)
        for b in range(nb)
    )
    return weight * (y @ y) / total


# ----------------------------------------------------------------- the optimum inside the set


@pytest.fixture(scope="module")
def inside(arm):
    """Noisy torques, a prior 30-60 % off, a weight that matters: the cost's minimum is a
    consistent set of bodies, so it solves the normal equations."""
    model, dyn = arm
    t, Q, V, A, TAU = trajectory(model, 120, 0)
    noisy = TAU + np.random.default_rng(1).normal(0.0, 0.02 * np.abs(TAU).max(), TAU.shape)
    start = scaled(dyn, (1.3, 0.7, 1.6))
    weight = 1e-2
    result = identify(start, t, Q, V, noisy, QDD=A, prior_weight=weight, tolerance=1e-13)
    return model, dyn, start, (t, Q, V, A, noisy), weight, result


def test_inside_the_set_the_answer_solves_the_normal_equations(inside):
    model, _, start, (t, Q, V, A, TAU), weight, result = inside
    W, y = pin_W(model, Q, V, A), TAU.reshape(-1)
    prior = start.inertial_parameters()
    G, rho = metric(prior), rho_of(y, prior, weight)
    expected = np.linalg.solve(W.T @ W + rho * G, W.T @ y + rho * G @ prior)
    for b in range(3):  # the premise: every body well inside the consistent set
        pk = expected[10 * b : 10 * b + 10]
        assert np.linalg.eigvalsh(djd(pk, length(prior[10 * b : 10 * b + 10])))[0] > 1e-2
    assert rel(result.parameters, expected) < 1e-7
    # the prior's pull is visible: with a tenth of the weight the answer is another
    other = np.linalg.solve(W.T @ W + 0.1 * rho * G, W.T @ y + 0.1 * rho * G @ prior)
    assert rel(other, expected) > 1e-4


def test_statistics_are_those_of_the_regressor(inside):
    model, dyn, start, (t, Q, V, A, TAU), weight, result = inside
    W, y = pin_W(model, Q, V, A), TAU.reshape(-1)
    prior = start.inertial_parameters()
    G, rho = metric(prior), rho_of(y, prior, weight)
    s = np.linalg.svd(W, compute_uv=False)
    rank = int(np.sum(s > 1e-9 * s[0]))
    assert 0 < rank < 30 and result.rank == rank
    _, _, Vt = np.linalg.svd(W)
    seen = np.linalg.norm(Vt[:rank], axis=0)  # |projection of e_i on the row space of W|
    assert np.abs(result.identifiability - seen).max() < 1e-9
    assert seen.min() < 1e-6 and seen.max() > 1 - 1e-9  # both kinds of parameter
    r = W @ result.parameters - y
    sigma2 = (r @ r) / (r.size - rank)
    spread = np.sqrt(np.diag(sigma2 * np.linalg.inv(W.T @ W + rho * G)))
    assert rel(result.spread, spread) < 1e-6
    per_joint = r.reshape(-1, 3)
    assert rel(result.residual_rms, np.sqrt((per_joint**2).mean(axis=0))) < 1e-9
    assert rel(result.torque_rms, np.sqrt((TAU**2).mean(axis=0))) < 1e-12
    assert abs(result.relative_residual - np.linalg.norm(r) / np.linalg.norm(y)) < 1e-9
    assert result.samples == 120
    # the penalty starts at tr(H) / tr(L^T L): a well-conditioned problem takes a handful
    assert 1 < result.iterations <= 15
    assert result.joint_names == ("j1", "j2", "j3") and result.links == ("a", "b", "c")
    assert np.array_equal(start.inertial_parameters(), prior)  # dyn is not changed


def test_the_result_is_frozen(inside):
    *_, result = inside
    with pytest.raises(AttributeError):
        result.rank = 0


def test_summary_reports_every_body(inside):
    *_, result = inside
    lines = result.summary().splitlines()
    assert lines[0] == (
        f"samples: 120, iterations: {result.iterations}, rank of the regressor: "
        f"{result.rank} of 30 parameters"
    )
    assert lines[1] == f"relative residual |W pi - tau| / |tau|: {result.relative_residual:.3g}"
    r, t = result.residual_rms, result.torque_rms
    assert lines[2] == "residual rms per joint (N m or N): " + ", ".join(
        f"j{k + 1} {r[k]:.3g} (of {t[k]:.3g})" for k in range(3)
    )
    assert len(lines) == 6
    for b, name in enumerate("abc"):
        m, s, seen = (x[10 * b] for x in (result.parameters, result.spread,
                                          result.identifiability))  # fmt: skip
        assert lines[3 + b] == f"  {name}: mass {m:.6g} kg ± {s:.2g} (identifiability {seen:.2f})"


# ----------------------------------------------------------------- the optimum on the boundary


def _multipliers(g, pk, scale):
    """The symmetric Lambda with P^T vec(Lambda) = g (P pi = vec(D J(pi) D))."""
    P = np.column_stack([djd(e, scale).reshape(-1) for e in np.eye(10)])
    basis = []
    for i in range(4):
        for j in range(i, 4):
            E = np.zeros((4, 4))
            E[i, j] = E[j, i] = 1.0
            basis.append(E)
    S = np.column_stack([E.reshape(-1) for E in basis])
    lam = np.linalg.solve(P.T @ S, g)
    return sum(c * E for c, E in zip(lam, basis, strict=True))


def test_on_the_boundary_the_answer_meets_the_kkt_conditions(arm):
    """Torques 40 % noise, a prior of a hundred times less weight: plain least squares gives
    an inconsistent body, identify the optimum over consistent ones, with D J D >= floor."""
    model, dyn = arm
    t, Q, V, A, TAU = trajectory(model, 60, 2)
    noisy = TAU + np.random.default_rng(4).normal(0.0, 0.4 * np.abs(TAU).max(), TAU.shape)
    start = scaled(dyn, (0.8, 1.2, 0.9))
    weight = 1e-5
    result = identify(start, t, Q, V, noisy, QDD=A, prior_weight=weight, tolerance=1e-13)
    W, y = pin_W(model, Q, V, A), noisy.reshape(-1)
    prior = start.inertial_parameters()
    G, rho = metric(prior), rho_of(y, prior, weight)
    free = np.linalg.solve(W.T @ W + rho * G, W.T @ y + rho * G @ prior)
    floor = FLOOR * prior[0::10].max()
    lows = []
    for b in range(3):
        scale = length(prior[10 * b : 10 * b + 10])
        lows.append(np.linalg.eigvalsh(djd(free[10 * b : 10 * b + 10], scale))[0])
    assert min(lows) < 0  # the premise: the unconstrained optimum is not a set of bodies
    pi = result.parameters
    grad = 2 * (W.T @ (W @ pi - y) + rho * G @ (pi - prior))
    active = 0
    for b in range(3):
        pk, scale = pi[10 * b : 10 * b + 10], length(prior[10 * b : 10 * b + 10])
        Z = djd(pk, scale) - floor * np.eye(4)
        w = np.linalg.eigvalsh(Z)
        assert w[0] > -1e-12 * w[-1]  # feasible: D J D >= floor, to round-off
        active += w[0] < 1e-12 * w[-1]
        lam = _multipliers(grad[10 * b : 10 * b + 10], pk, scale)
        size = np.abs(grad).max()
        assert np.linalg.eigvalsh(lam)[0] > -1e-6 * size  # a positive semidefinite multiplier
        assert np.abs(lam @ Z).max() < 1e-6 * size * max(np.abs(Z).max(), 1.0)  # complementary
    assert active >= 1  # a body sits on the floor: 1e-9 x the heaviest prior mass
    lowest = min(np.linalg.eigvalsh(djd(pi[10 * b : 10 * b + 10],
                                        length(prior[10 * b : 10 * b + 10])))[0]
                 for b in range(3))  # fmt: skip
    assert lowest == pytest.approx(floor, rel=1e-4)


# ----------------------------------------------------------------- accelerations and windows


def test_central_differences_over_uneven_stamps(arm):
    model, dyn = arm
    t, Q, V, A, TAU = trajectory(model, 40, 3)
    t = t + np.random.default_rng(5).uniform(0.0, 0.01, t.size)  # uneven, still increasing
    qdd = np.array([(V[k + 1] - V[k - 1]) / (t[k + 1] - t[k - 1]) for k in range(1, 39)])
    a = identify(dyn, t, Q, V, TAU, prior_weight=1e-4)
    b = identify(dyn, t[1:-1], Q[1:-1], V[1:-1], TAU[1:-1], QDD=qdd, prior_weight=1e-4)
    assert a.samples == b.samples == 38
    assert rel(a.parameters, b.parameters) < 1e-9
    assert rel(a.residual_rms, b.residual_rms) < 1e-9


def moving_average(X, window):
    """Centred: sample k averages k - window // 2 ... k - window // 2 + window - 1, in range."""
    out = np.empty_like(X)
    for k in range(len(X)):
        lo, hi = max(k - window // 2, 0), min(k - window // 2 + window, len(X))
        out[k] = X[lo:hi].mean(axis=0)
    return out


@pytest.mark.parametrize("window", [1, 2, 3, 4, 5])
def test_moving_average_is_centred_and_shrinks_at_the_ends(window):
    X = np.random.default_rng(window).normal(size=(9, 2))
    assert np.abs(ident._moving_average(X, window) - moving_average(X, window)).max() < 1e-14


@pytest.mark.parametrize("window", [2, 4])
def test_window_smooths_velocities_and_torques_not_positions(arm, window):
    model, dyn = arm
    t, Q, V, A, TAU = trajectory(model, 30, 6)
    a = identify(dyn, t, Q, V, TAU, QDD=A, window=window, prior_weight=1e-4)
    b = identify(dyn, t, Q, moving_average(V, window), moving_average(TAU, window), QDD=A,
                 prior_weight=1e-4)  # fmt: skip
    assert a.samples == 30
    assert rel(a.parameters, b.parameters) < 1e-9


# ----------------------------------------------------------------- the solver's pieces


def test_radius_of_gyration_and_its_fallbacks():
    body = np.array([2.0, 0, 0, 0, 1.0, 0, 2.0, 0, 0, 3.0])
    assert ident._radius(body) == pytest.approx(np.sqrt(6.0 / 4.0), rel=1e-15)
    tiny = body.copy()
    tiny[0] = 1e-300  # both sides of m > 0
    assert ident._radius(tiny) == pytest.approx(np.sqrt(6.0 / 2e-300), rel=1e-15)
    for m, diag in ((0.0, (1.0, 2.0, 3.0)), (-1.0, (1.0, 2.0, 3.0)), (2.0, (0.0, 0.0, 0.0)),
                    (2.0, (1.0, -1.0, -0.5))):  # fmt: skip
        b = body.copy()
        b[0], (b[4], b[6], b[9]) = m, diag
        assert ident._radius(b) == 1.0
    flat = body.copy()
    flat[4], flat[6], flat[9] = 1e-300, 0.0, 0.0  # both sides of tr > 0
    assert ident._radius(flat) == pytest.approx(np.sqrt(1e-300 / 4.0), rel=1e-15, abs=0.0)


def test_pseudo_inertia_back_to_parameters():
    rng = np.random.default_rng(7)
    for _ in range(3):
        pk = rng.normal(size=10)
        assert np.abs(ident._pseudo_to_pi(pseudo(pk)) - pk).max() < 1e-14


def test_metric_root_is_the_scaled_pseudo_inertia():
    rng = np.random.default_rng(8)
    P = ident._metric_root(0.3)
    assert P.shape == (16, 10)
    for _ in range(3):
        pk = rng.normal(size=10)
        assert np.abs(P @ pk - djd(pk, 0.3).reshape(-1)).max() < 1e-12


def test_block_diagonal():
    B = [np.full((16, 10), 1.0 + b) for b in range(3)]
    out = ident._block_diag(B, 16)
    expected = np.zeros((48, 30))
    for b in range(3):
        expected[16 * b : 16 * b + 16, 10 * b : 10 * b + 10] = 1.0 + b
    assert np.array_equal(out, expected)


def test_clip_raises_eigenvalues_to_the_floor_and_symmetrizes():
    rng = np.random.default_rng(9)
    V1 = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    V2 = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    A = rng.normal(size=(4, 4))
    blocks = [V1 @ np.diag([-1.0, 0.2, 2.0, 3.0]) @ V1.T + (A - A.T),  # skew part dropped
              V2 @ np.diag([0.8, 1.0, 2.0, 3.0]) @ V2.T]  # fmt: skip
    out = ident._clip(np.concatenate([b.reshape(-1) for b in blocks]), 0.5).reshape(2, 4, 4)
    assert np.abs(out[0] - V1 @ np.diag([0.5, 0.5, 2.0, 3.0]) @ V1.T).max() < 1e-12
    assert np.abs(out[1] - V2 @ np.diag([0.8, 1.0, 2.0, 3.0]) @ V2.T).max() < 1e-12


def test_project_leaves_consistent_bodies_and_clips_the_others():
    heavy = np.array([4.0, 0.1, 0, 0, 1.0, 0, 1.0, 0, 0, 1.0])  # consistent
    bad = np.array([1.0, 3.0, 0, 0, 0.1, 0, 0.1, 0, 0, 0.1])  # |h| too large for m and I
    pi = np.concatenate([heavy, bad])
    scales = np.array([0.7, 1.3])
    out = ident._project(pi, scales)
    assert np.array_equal(out[:10], heavy)
    w = np.linalg.eigvalsh(djd(out[10:], 1.3))
    assert w[0] == pytest.approx(FLOOR * 4.0, rel=1e-6)  # the heaviest mass sets the floor
    # the nearest body in |D J D|_F: the clipped eigen-decomposition of the scaled J
    wb, Vb = np.linalg.eigh(djd(bad, 1.3))
    nearest = Vb @ np.diag(np.maximum(wb, FLOOR * 4.0)) @ Vb.T
    assert np.abs(djd(out[10:], 1.3) - nearest).max() < 1e-12


def test_project_floor_is_from_masses_only_and_never_zero():
    # first moments larger than every mass do not raise the floor
    body = np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0, 0.0, 0, 0, 0.0])
    big_h = np.array([1.0, 2.0, 0.0, 0.0, 5.0, 0, 5.0, 0, 0, 5.0])
    out = ident._project(np.concatenate([body, big_h]), np.ones(2))
    assert np.linalg.eigvalsh(djd(out[:10], 1.0))[0] == pytest.approx(FLOOR * 1.0, rel=1e-6)
    # massless bodies: a floor of 1e-9 x 1e-12 all the same (each of three projected)
    zeros = np.zeros(30)
    out = ident._project(zeros, np.ones(3))
    for b in range(3):
        assert np.linalg.eigvalsh(djd(out[10 * b : 10 * b + 10], 1.0)) == pytest.approx(
            np.full(4, 1e-21), rel=1e-9, abs=0.0
        )


def test_solver_floor_for_a_massless_prior():
    """_admm's floor, 1e-9 x max(heaviest prior mass, 1e-12), on a prior of massless bodies:
    min |pi|^2 over D J D >= floor has every body at the floor."""
    L = ident._block_diag([ident._metric_root(1.0)] * 2, 16)
    pi, iterations = ident._admm(np.eye(20), np.zeros(20), L, 0.0, np.zeros(20), np.ones(2),
                                 5000, 1e-12)  # fmt: skip
    for b in range(2):
        w = np.linalg.eigvalsh(djd(pi[10 * b : 10 * b + 10], 1.0))
        assert w[0] == pytest.approx(1e-21, rel=1e-6, abs=0.0)


# ----------------------------------------------------------------- iterations and tolerance


def test_iteration_budget_and_tolerance_both_sides(arm):
    model, dyn = arm
    t, Q, V, A, TAU = trajectory(model, 20, 7)
    assert identify(dyn, t, Q, V, TAU, QDD=A, max_iterations=1).iterations == 1
    assert identify(dyn, t, Q, V, TAU, QDD=A, max_iterations=2, tolerance=0.0).iterations == 2
    assert identify(dyn, t, Q, V, TAU, QDD=A, max_iterations=40, tolerance=0.0).iterations == 40
    loose = identify(dyn, t, Q, V, TAU, QDD=A, tolerance=1e3)
    assert loose.iterations == 1  # met at once
    tight = identify(scaled(dyn, (0.5, 2.0, 1.5)), t, Q, V, TAU, QDD=A, tolerance=1e-12)
    assert 1 < tight.iterations < 20000


# ----------------------------------------------------------------- arguments


def test_integer_arguments_both_sides(arm):
    model, dyn = arm
    t, Q, V, A, TAU = trajectory(model, 5, 8)
    for name in ("window", "max_iterations"):
        for bad in (0, -1, True, 2.0, "3", None):
            with pytest.raises(ValueError, match=f"{name} must be an integer >= 1, got "):
                identify(dyn, t, Q, V, TAU, QDD=A, **{name: bad})
        assert identify(dyn, t, Q, V, TAU, QDD=A, **{name: np.int64(1)}).samples == 5
        assert identify(dyn, t, Q, V, TAU, QDD=A, **{name: 2}).samples == 5


def test_nonnegative_arguments_both_sides(arm):
    model, dyn = arm
    t, Q, V, A, TAU = trajectory(model, 5, 8)
    for name in ("prior_weight", "tolerance"):
        for bad in (-1e-300, -np.inf, np.inf, np.nan):
            with pytest.raises(ValueError, match=f"{name} must be a finite number >= 0, got "):
                identify(dyn, t, Q, V, TAU, QDD=A, **{name: bad})
        for bad in ("x", None, [1.0, 2.0]):
            with pytest.raises(ValueError, match=f"{name} must be a number >= 0, got "):
                identify(dyn, t, Q, V, TAU, QDD=A, **{name: bad})
        for good in (0.0, 5e-324, np.float32(1e-3)):
            assert identify(dyn, t, Q, V, TAU, QDD=A, **{name: good}).samples == 5


def test_arrays_are_checked_by_name_shape_and_entry(arm):
    model, dyn = arm
    t, Q, V, A, TAU = trajectory(model, 5, 8)
    with pytest.raises(ValueError, match="Q must be an array of numbers"):
        identify(dyn, t, [["a"] * 3] * 5, V, TAU, QDD=A)
    with pytest.raises(ValueError, match=r"t must have shape 1-D, got \(5, 1\)"):
        identify(dyn, t[:, None], Q, V, TAU, QDD=A)
    with pytest.raises(ValueError, match=r"QDD must have shape \(5, 3\), got \(5, 2\)"):
        identify(dyn, t, Q, V, TAU, QDD=A[:, :2])
    with pytest.raises(ValueError, match=r"Q must have shape \(5, 3\), got \(3, 5\)"):
        identify(dyn, t, Q.T[:, :5][:3], V, TAU, QDD=A)
    for name, k in (("Q", 0), ("V", 1), ("TAU", 2), ("QDD", 3)):
        for value in (np.inf, -np.inf, np.nan):
            arrays = [Q.copy(), V.copy(), TAU.copy(), A.copy()]
            arrays[k][4, 1] = value
            message = rf"{name} has a NaN or infinite entry at \(4, 1\)"
            with pytest.raises(ValueError, match=message):
                identify(dyn, t, *arrays[:3], QDD=arrays[3])
    with pytest.raises(ValueError, match=r"prior must have 30 entries \(10 per body\), got 31"):
        identify(dyn, t, Q, V, TAU, QDD=A, prior=np.ones(31))
    with pytest.raises(ValueError, match=r"prior must have shape 1-D"):
        identify(dyn, t, Q, V, TAU, QDD=A, prior=np.ones((3, 10)))
    prior = dyn.inertial_parameters()
    assert identify(dyn, t, Q, V, TAU, QDD=A, prior=list(prior)).samples == 5


def test_stamps_and_sample_counts_both_sides(arm):
    model, dyn = arm
    t, Q, V, A, TAU = trajectory(model, 6, 9)
    for k in (1, 3, 5):
        bad = t.copy()
        bad[k] = bad[k - 1] - (0.0 if k == 3 else 1e-3)
        bad[5] = bad[4] - 1.0  # a later decrease too: the first is named
        with pytest.raises(ValueError, match=rf"t must increase strictly: t\[{k}\] = "):
            identify(dyn, bad, Q, V, TAU, QDD=A)
    # with accelerations given one sample is enough, none is not
    assert identify(dyn, t[:1], Q[:1], V[:1], TAU[:1], QDD=A[:1]).samples == 1
    with pytest.raises(ValueError, match=r"identify needs at least 1 samples, got 0$"):
        identify(dyn, t[:0], Q[:0], V[:0], TAU[:0], QDD=A[:0])
    # by central differences three are needed
    assert identify(dyn, t[:3], Q[:3], V[:3], TAU[:3]).samples == 1
    with pytest.raises(ValueError, match=r"at least 3 samples \(accelerations by central "
                                         r"differences need 3\), got 2"):  # fmt: skip
        identify(dyn, t[:2], Q[:2], V[:2], TAU[:2])


# ----------------------------------------------------------------- rank


ONE = robot(
    link("base", None), link("a"),
    joint("j1", "base", "a", axis="1 0 0", xyz="0 0 0", rpy="0 0 0"), name="one",
)  # fmt: skip


@pytest.mark.parametrize("eps,rank", [(3.0e-9, 2), (1.6e-9, 1)])
def test_rank_threshold_is_1e_9_of_the_largest_singular_value(eps, rank):
    """One joint about a horizontal axis, two samples at rest, q = 0 and eps: Pinocchio's W
    has two singular values in the ratio 0.5 eps, 1.5e-9 (rank 2) or 0.8e-9 (rank 1)."""
    model, dyn = pin.buildModelFromXML(ONE), Dynamics.from_urdf(ONE)
    Q, V, A = np.array([[0.0], [eps]]), np.zeros((2, 1)), np.ones((2, 1))
    s = np.linalg.svd(pin_W(model, Q, V, A), compute_uv=False)
    assert (s[1] / s[0] > 1e-9) == (rank == 2) and 0.5e-9 < s[1] / s[0] < 2e-9
    assert identify(dyn, [0.0, 1.0], Q, V, np.ones((2, 1)), QDD=A).rank == rank


def test_a_regressor_of_zeros_has_rank_zero():
    """A joint about the vertical, at rest: gravity exerts no torque, W = 0."""
    vertical = ONE.replace('axis xyz="1 0 0"', 'axis xyz="0 0 1"')
    dyn = Dynamics.from_urdf(vertical)
    z = np.zeros((3, 1))
    result = identify(dyn, [0.0, 1.0, 2.0], z, z, z, QDD=z)
    assert result.rank == 0
    assert np.array_equal(result.identifiability, np.zeros(10))
    assert result.relative_residual == 0.0
    # a small acceleration: W = 0.1 in the I_zz column only, rank 1 however small
    small = identify(dyn, [0.0, 1.0, 2.0], z, z, z + 0.01, QDD=z + 0.1 / np.sqrt(3))
    assert small.rank == 1
    assert small.identifiability[9] == pytest.approx(1.0, abs=1e-12)
    assert np.abs(np.delete(small.identifiability, 9)).max() < 1e-12


def test_defaults_are_the_documented_ones(inside):
    """prior_weight 1e-6, tolerance 1e-9, window 1, the model's own parameters as prior."""
    _, _, start, (t, Q, V, A, TAU), _, _ = inside
    default = identify(start, t, Q, V, TAU, QDD=A)
    explicit = identify(start, t, Q, V, TAU, QDD=A, prior=start.inertial_parameters(),
                        prior_weight=1e-6, window=1, tolerance=1e-9,
                        max_iterations=20000)  # fmt: skip
    assert np.array_equal(default.parameters, explicit.parameters)
    assert default.iterations == explicit.iterations
    for changed in (dict(prior_weight=2e-6), dict(tolerance=2e-9)):
        other = identify(start, t, Q, V, TAU, QDD=A, **changed)
        assert not np.array_equal(default.parameters, other.parameters), changed


def test_window_one_leaves_the_samples_untouched():
    """A joint about the vertical: tau = I_zz qdd.  Samples at rest carry torques of 1e20
    that no parameter explains; the two that accelerate say I_zz = 1.  A running sum over
    the samples (what window > 1 uses) would lose the 1 next to the 1e20."""
    vertical = ONE.replace('axis xyz="1 0 0"', 'axis xyz="0 0 1"')
    dyn = Dynamics.from_urdf(vertical)
    z = np.zeros((4, 1))
    qdd = np.array([[0.0], [1.0], [0.0], [1.0]])
    tau = np.array([[1e20], [1.0], [-1e20], [1.0]])
    result = identify(dyn, np.arange(4.0), z, z, tau, QDD=qdd, prior_weight=0.0,
                      tolerance=1e-12)  # fmt: skip
    assert result.parameters[9] == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("samples", [1, 2, 3])
def test_residual_variance_has_at_least_one_degree_of_freedom(samples):
    """W has rank 1 (the I_zz column, qdd): T - 1 degrees of freedom, but at least one:
    sigma^2 = |r|^2 / max(T - 1, 1) in the spread of I_zz."""
    vertical = ONE.replace('axis xyz="1 0 0"', 'axis xyz="0 0 1"')
    dyn = Dynamics.from_urdf(vertical)
    z = np.zeros((samples, 1))
    qdd = np.array([[1.0], [2.0], [-1.0]])[:samples]
    tau = np.array([[0.5], [0.3], [0.1]])[:samples]
    weight = 1e-3
    result = identify(dyn, np.arange(float(samples)), z, z, tau, QDD=qdd, prior_weight=weight)
    W = np.zeros((samples, 10))
    W[:, 9] = qdd[:, 0]
    prior, y = dyn.inertial_parameters(), tau[:, 0]
    r = W @ result.parameters - y
    sigma2 = (r @ r) / max(samples - 1, 1)
    G, rho = metric(prior), rho_of(y, prior, weight)
    spread = np.sqrt(sigma2 * np.diag(np.linalg.inv(W.T @ W + rho * G)))
    assert result.rank == 1
    assert rel(result.spread, spread) < 1e-6


@pytest.mark.parametrize("scale", [2.0**-14, 2.0**20])
def test_the_fit_is_homogeneous_in_the_torques_and_the_prior(inside, scale):
    """Torques and prior times s (a power of two, exact): the cost is s^2 times the same in
    s pi, rho is unchanged, so the answer is s times the same, in as many iterations (the
    stopping test and the penalty's balancing compare residuals relative to each other)."""
    _, _, start, (t, Q, V, A, TAU), weight, result = inside
    for w, tol in ((weight, 1e-13), (1e-6, 1e-9)):
        base = identify(start, t, Q, V, TAU, QDD=A, prior_weight=w, tolerance=tol)
        moved = identify(start, t, Q, V, TAU * scale, QDD=A, prior_weight=w, tolerance=tol,
                         prior=start.inertial_parameters() * scale)  # fmt: skip
        assert moved.iterations == base.iterations
        assert rel(moved.parameters, scale * base.parameters) < 1e-12
        assert moved.rank == base.rank
        assert rel(moved.spread, scale * base.spread) < 1e-9
