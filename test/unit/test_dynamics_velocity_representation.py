"""The floating base's velocity representation: body (default), mixed, inertial.

References, none of them the code under test:

* Pinocchio with a free-flyer root (``MultiDofOracle``): M, C, g, RNEA and the frame Jacobians
  in the body representation, changed by the transformation law (Wensing & Slotine, eq. 17)
  M' = T^T M T, C' = T^T C T + T^T M Tdot, with T built here from Pinocchio's SE3
  (``XYZQUATToSE3``; the inertial T_b is ``SE3.inverse().action``) and Tdot by a fourth-order
  central difference of T along the base's exponential curve ``g exp6(t nu_B)``;
* finite differences of M' along a trajectory, for Mdot' = C' + C'^T;
* the representations against each other through changes of variables written here
  (mixed -> body: diag(R^T, R^T); inertial -> mixed: [[1, -[p]], [0, 1]], whose derivative is
  [[0, -[pdot]], [0, 0]]);
* far from the origin (|p| = 1e6 m): exact rational arithmetic (``fractions``).
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pinocchio as pin  # test-only dependency
import pytest

from support.floating import MultiDofOracle, random_configuration
from support.oracle import assert_close, erd_urdf, rel_err

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics import velocity_representation as velrep

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

TOL = 1e-10
REPS = ("body", "mixed", "inertial")
REFS = {"world": pin.WORLD, "local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
ROBOTS = ["solo12", "talos_full"]  # a quadruped and a humanoid


def load(robot: str, rep: str = "body", root: str = "floating") -> Dynamics:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # URDF inertia warnings of some robots
        return Dynamics.from_urdf(
            str(erd_urdf(robot)), root_joint=root, mimic="independent",
            velocity_representation=rep,
        )  # fmt: skip


def hat(w) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def T_base(rep: str, pose: pin.SE3) -> np.ndarray:
    """nu_B = T_b nu'_b, from Pinocchio's SE3 of the base."""
    R = pose.rotation
    if rep == "body":
        return np.eye(6)
    if rep == "mixed":
        return np.block([[R.T, np.zeros((3, 3))], [np.zeros((3, 3)), R.T]])
    return np.array(pose.inverse().action)  # spatial twist at the world origin -> body twist


def embed(Tb: np.ndarray, n: int) -> np.ndarray:
    T = np.eye(n)
    T[:6, :6] = Tb
    return T


class Law:
    """The body representation (Pinocchio) changed into ``rep`` at one state (q, nu')."""

    def __init__(self, oracle: MultiDofOracle, rep: str, q, v):
        self.o, self.n = oracle, len(v)
        pose = pin.XYZQUATToSE3(q[:7] / np.r_[1, 1, 1, [np.linalg.norm(q[3:7])] * 4])
        self.T = embed(T_base(rep, pose), self.n)
        self.nu = self.T @ v
        h = 2e-4  # fourth-order central difference of T along g exp6(t nu_B)
        Tt = [T_base(rep, pose * pin.exp6(pin.Motion(t * h * self.nu[:6]))) for t in (-2, -1, 1, 2)]
        self.Tdot = embed((Tt[0] - 8 * Tt[1] + 8 * Tt[2] - Tt[3]) / (12 * h), self.n)
        self.Tdot[6:, 6:] = 0.0
        self.q = q

    def M(self):
        return self.T.T @ self.o.M(self.q) @ self.T

    def C(self):
        """C'(q, nu') = T^T C T + T^T M Tdot."""
        return (
            self.T.T @ self.o.C(self.q, self.nu) @ self.T + self.T.T @ self.o.M(self.q) @ self.Tdot
        )

    def g(self):
        return self.T.T @ self.o.g(self.q)


def random_state(dyn: Dynamics, rng, far: float = 0.0):
    q = random_configuration(dyn, rng)
    q[:3] = rng.normal(0.0, 1.0, 3) + far
    return q, rng.normal(0.0, 1.5, dyn.nv), rng.normal(0.0, 2.0, dyn.nv)


# ----------------------------------------------------------------------------- Pinocchio


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("rep", REPS)
def test_every_term_matches_pinocchio_changed_by_the_law(robot, rep):
    dyn = load(robot, rep)
    assert dyn.velocity_representation == rep
    oracle = MultiDofOracle(str(erd_urdf(robot)), dyn, "floating")
    rng = np.random.default_rng(sum(map(ord, robot + rep)))
    q, v, a = random_state(dyn, rng)
    law = Law(oracle, rep, q, v)
    M_ref, C_ref, g_ref = law.M(), law.C(), law.g()
    M, Mdot, C = dyn.coriolis(q, v)
    label = f"{robot} {rep}"
    assert_close(M, M_ref, TOL, f"{label} M'")
    assert_close(C, C_ref, TOL, f"{label} C'")
    assert_close(Mdot, C_ref + C_ref.T, TOL, f"{label} Mdot'")
    assert_close(dyn.mass_matrix(q), M_ref, TOL, f"{label} M' (crba)")
    assert_close(dyn.gravity(q), g_ref, TOL, f"{label} g'")
    # tau' = T^T tau(q, nu, nudot) with nudot = T a + Tdot nu'
    tau_ref = law.T.T @ oracle.rnea(q, law.nu, law.T @ a + law.Tdot @ v)
    assert_close(dyn.inverse_dynamics(q, v, a), tau_ref, TOL, f"{label} RNEA'")
    cv, ctv, p = dyn.coriolis_vectors(q, v)
    assert_close(cv, C_ref @ v, TOL, f"{label} C' nu'")
    assert_close(ctv, C_ref.T @ v, TOL, f"{label} C'^T nu'")
    assert_close(p, M_ref @ v, TOL, f"{label} M' nu'")
    # C' nu' = RNEA'(q, nu', 0) - g'
    assert_close(cv, dyn.inverse_dynamics(q, v, 0 * v) - g_ref, TOL, f"{label} C' nu' (RNEA)")
    x = np.cos(np.arange(dyn.nv))
    assert_close(dyn.coriolis_times(q, v, x), C_ref @ x, TOL, f"{label} C' x")
    sl_ref = M_ref @ a + C_ref @ x + g_ref
    assert_close(dyn.slotine_li(q, v, x, a), sl_ref, TOL, f"{label} Slotine-Li")
    if rep != "body":
        assert rel_err(M, oracle.M(q)) > 1e-3  # a different representation indeed


@pytest.mark.parametrize("rep", REPS)
def test_christoffel_matches_the_law_column_by_column(rep):
    dyn = load("solo12", rep)
    oracle = MultiDofOracle(str(erd_urdf("solo12")), dyn, "floating")
    rng = np.random.default_rng(7)
    q, v, _ = random_state(dyn, rng)
    G = dyn.christoffel(q)
    for k in range(dyn.nv):  # Gamma'[:, :, k] = C'(q, e_k)
        e = np.zeros(dyn.nv)
        e[k] = 1.0
        assert_close(G[:, :, k], Law(oracle, rep, q, e).C(), TOL, f"{rep} Gamma'[:, :, {k}]")
    assert_close(np.einsum("ijk,k->ij", G, v), dyn.coriolis(q, v)[2], TOL, f"{rep} Gamma' nu'")


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("rep", ["mixed", "inertial"])
def test_mdot_is_the_derivative_of_m_along_a_trajectory(robot, rep):
    """Mdot' = C' + C'^T against a finite difference of M'(q(t)), q(t) moving with nu'."""
    dyn, body = load(robot, rep), load(robot)
    rng = np.random.default_rng(11)
    q, v, _ = random_state(dyn, rng)
    nu = dyn.velocity_to_body(q, v)
    h = 1e-3
    Ms = [dyn.mass_matrix(body.integrate(q, nu, t * h)) for t in (-2, -1, 1, 2)]
    fd = (Ms[0] - 8 * Ms[1] + 8 * Ms[2] - Ms[3]) / (12 * h)
    _, Mdot, C = dyn.coriolis(q, v)
    assert_close(Mdot, fd, 1e-8, f"{robot} {rep} Mdot' vs finite differences")
    assert_close(C + C.T, fd, 1e-8, f"{robot} {rep} C' + C'^T vs finite differences")


# ----------------------------------------------------------------------------- each other


def test_the_three_representations_by_their_change_of_variables():
    dyns = {rep: load("solo12", rep) for rep in REPS}
    n = dyns["body"].nv
    rng = np.random.default_rng(5)
    q, v_inertial, _ = random_state(dyns["body"], rng)
    R = pin.XYZQUATToSE3(q[:7] / np.r_[1, 1, 1, [np.linalg.norm(q[3:7])] * 4]).rotation
    p = q[:3]
    # inertial -> mixed: pdot = v + w x p, w unchanged; mixed -> body: (R^T pdot, R^T w)
    S = np.eye(n)
    S[:3, 3:6] = -hat(p)
    v_mixed = S @ v_inertial
    pdot = v_mixed[:3]
    Sdot = np.zeros((n, n))
    Sdot[:3, 3:6] = -hat(pdot)
    B = np.eye(n)
    B[:3, :3] = B[3:6, 3:6] = R.T
    w_B = R.T @ v_mixed[3:6]
    Bdot = np.zeros((n, n))
    Bdot[:3, :3] = Bdot[3:6, 3:6] = -hat(w_B) @ R.T
    v_body = B @ v_mixed
    for rep, v in (("body", v_body), ("mixed", v_mixed), ("inertial", v_inertial)):
        assert_close(dyns[rep].velocity_to_body(q, v), v_body, 1e-13, f"{rep} -> body")
        assert_close(dyns[rep].velocity_from_body(q, v_body), v, 1e-13, f"body -> {rep}")
    out = {rep: dyns[rep].coriolis(q, v) for rep, v in
           (("body", v_body), ("mixed", v_mixed), ("inertial", v_inertial))}  # fmt: skip
    G = {rep: dyns[rep].christoffel(q) for rep in REPS}
    for src, dst, A, Adot in (("body", "mixed", B, Bdot), ("mixed", "inertial", S, Sdot)):
        M, _, C = out[src]
        assert_close(out[dst][0], A.T @ M @ A, TOL, f"{src} -> {dst} M")
        assert_close(out[dst][2], A.T @ C @ A + A.T @ M @ Adot, TOL, f"{src} -> {dst} C")
        Cd = out[dst][2]
        assert_close(out[dst][1], Cd + Cd.T, TOL, f"{dst} Mdot")
        g = dyns[src].gravity(q)
        assert_close(dyns[dst].gravity(q), A.T @ g, TOL, f"{src} -> {dst} g")
        # Gamma: the tensor law; the dA/dnu term is d(Adot)/dnu'_k (Adot is linear in nu')
        X = np.einsum("ai,abc,bj,ck->ijk", A, G[src], A, A)
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1.0
            pd = (A @ e)[:3] if dst == "inertial" else None
            D = np.zeros((n, n))
            if dst == "inertial":  # Sdot at velocity e: -[pdot(e)] with pdot(e) = (S e)_lin
                D[:3, 3:6] = -hat(pd)
            else:  # Bdot at e: -[w_B(e)] R^T with w_B(e) = R^T e_ang
                D[:3, :3] = D[3:6, 3:6] = -hat(R.T @ e[3:6]) @ R.T
            X[:, :, k] += A.T @ M @ D
        assert_close(G[dst], X, TOL, f"{src} -> {dst} Gamma")


# ----------------------------------------------------------------------------- Jacobians


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("rep", ["mixed", "inertial"])
def test_frame_jacobians_are_j_t(robot, rep):
    dyn = load(robot, rep)
    oracle = MultiDofOracle(str(erd_urdf(robot)), dyn, "floating")
    rng = np.random.default_rng(13)
    q, v, _ = random_state(dyn, rng)
    law = Law(oracle, rep, q, v)
    m, d = oracle.model, oracle.data
    qp, vp = oracle.q_pin(q), oracle.v_pin(law.nu)
    pin.forwardKinematics(m, d, qp, vp, np.zeros(m.nv))
    pin.updateFramePlacements(m, d)
    pin.computeJointJacobians(m, d, qp)
    pin.computeJointJacobiansTimeVariation(m, d, qp, vp)
    frames = [dyn.frame_names[0], dyn.frame_names[len(dyn.frame_names) // 2], dyn.frame_names[-1]]
    for name in frames:
        fid = m.getFrameId(name, pin.BODY)
        for ref, pref in REFS.items():
            label = f"{robot} {rep} {name} {ref}"
            J = pin.getFrameJacobian(m, d, fid, pref)[:, oracle.v_index]
            Jd = pin.getFrameJacobianTimeVariation(m, d, fid, pref)[:, oracle.v_index]
            J_ref, Jd_ref = J @ law.T, Jd @ law.T + J @ law.Tdot
            assert_close(dyn.frame_jacobian(q, name, ref), J_ref, TOL, f"{label} J'")
            assert_close(dyn.frame_jacobian_dot(q, v, name, ref), Jd_ref, TOL, f"{label} Jdot'")
            both = dyn.frame_jacobians(q, v, name, ref)
            assert_close(both[0], J_ref, TOL, f"{label} frame_jacobians J'")
            assert_close(both[1], Jd_ref, TOL, f"{label} frame_jacobians Jdot'")
            bias = dyn.frame_acceleration_bias(q, v, name, ref)
            assert_close(bias, Jd_ref @ v, TOL, f"{label} Jdot' nu'")
            if rep == "inertial" and ref == "world":  # every body moves with the base's twist
                assert_close(J_ref[:, :6], np.eye(6), 1e-12, f"{label} base columns")
    if rep == "mixed":  # the base frame's own velocity is nu'_b in local_world_aligned
        J = dyn.frame_jacobian(q, dyn.root_link, "local_world_aligned")
        assert_close(J[:, :6], np.eye(6), 1e-12, f"{robot} mixed base columns")
        assert not np.any(J[:, 6:])
    # task space: Lambda and mu do not depend on the representation, J' and Jdot' do
    body = load(robot)
    foot = dyn.frame_names[-1]
    Lam, mu, Jt, Jdt = dyn.task_space(q, v, foot, rows=(0, 1, 2))
    Lam_b, mu_b, _, _ = body.task_space(q, law.nu, foot, rows=(0, 1, 2))
    assert_close(Lam, Lam_b, TOL, f"{robot} {rep} Lambda")
    assert_close(mu, mu_b, TOL, f"{robot} {rep} mu")
    assert_close(Jt, dyn.frame_jacobian(q, foot)[:3], TOL, f"{robot} {rep} task J'")
    # a wrench at the foot: its generalized force in nu' is J'^T w
    w = np.array([3.0, -1.0, 20.0, 0.0, 0.0, 0.0])
    wrench, _ = dyn.external_wrench(q, dyn.frame_jacobian(q, foot).T @ w, foot, rows=(0, 1, 2))
    assert_close(wrench, w[:3], 1e-9, f"{robot} {rep} external wrench")


# ----------------------------------------------------------------------------- far away


def _exact(x) -> np.ndarray:
    return np.array([[Fraction(float(e)) for e in row] for row in np.atleast_2d(x)], dtype=object)


def hat_exact(w) -> np.ndarray:
    z = Fraction(0)
    w = [Fraction(x) for x in w]
    return np.array([[z, -w[2], w[1]], [w[2], z, -w[0]], [-w[1], w[0], z]], dtype=object)


def test_inertial_far_from_the_origin_against_exact_arithmetic():
    """At |p| = 1e6 m, M' grows as m |p|^2, the inputs' v' and w x p cancel to pdot, and so
    do the terms of C' (in the body frame, C's linear block m [w_B] against M Tdot's).  The
    reference: Pinocchio's body-representation M and C (which do not depend on p) changed in
    exact rational arithmetic, with T = Ad_g^-1 = [[R^T, -R^T [p]], [0, R^T]] and its
    derivative Tdot = [[-[w_B] R^T, [w_B] R^T [p] - R^T [pdot]], [0, -[w_B] R^T]]
    (d(R^T)/dt = -[w_B] R^T), from the same float64 inputs."""
    dyn = load("solo12", "inertial")
    oracle = MultiDofOracle(str(erd_urdf("solo12")), dyn, "floating")
    n = dyn.nv
    rng = np.random.default_rng(17)
    q, _, _ = random_state(dyn, rng)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[:3] = [1e6, -7e5, 3e5]
    pdot, w = rng.normal(0, 1.0, 3), rng.normal(0, 1.0, 3)
    v = rng.normal(0, 1.0, n)
    v[3:6] = w
    v[:3] = pdot - np.cross(w, q[:3])  # the inertial input (rounded)
    R = _exact(pin.XYZQUATToSE3(q[:7]).rotation)
    P, W, V = _exact(q[:3])[0], _exact(w)[0], _exact(v[:3])[0]
    pd = V + np.cross(W, P)  # exact pdot of this float input
    zero = Fraction(0)
    T = np.array([[Fraction(int(i == j)) for j in range(n)] for i in range(n)], dtype=object)
    T[:3, :3] = T[3:6, 3:6] = R.T
    T[:3, 3:6] = -R.T @ hat_exact(P)
    nu = (T @ _exact(v)[0]).astype(float)  # the body twist, rounded once
    wB = R.T @ W
    Tdot = np.full((n, n), zero, dtype=object)
    Tdot[:3, :3] = Tdot[3:6, 3:6] = -hat_exact(wB) @ R.T
    Tdot[:3, 3:6] = hat_exact(wB) @ R.T @ hat_exact(P) - R.T @ hat_exact(pd)
    q0 = q.copy()
    q0[:3] = 0.0  # the body representation does not depend on p: Pinocchio at the origin
    M_B, C_B = _exact(oracle.M(q0)), _exact(oracle.C(q0, nu))
    M_ref = (T.T @ M_B @ T).astype(float)
    C_ref = (T.T @ C_B @ T + T.T @ M_B @ Tdot).astype(float)
    M, Mdot, C = dyn.coriolis(q, v)
    assert np.abs(M).max() > 1e11  # m |p|^2 indeed
    assert_close(M, M_ref, 1e-12, "far M'")
    # The limit: C' = T^T (C - M K) T carries the body terms' rounding (~eps ||C_B||) times
    # |T|^2 ~ |p|^2, here ~1e-9 of ||C'|| (the reference carries Pinocchio's likewise).
    bound = 64 * np.finfo(float).eps * np.linalg.norm(q[:3]) ** 2 * np.linalg.norm(oracle.C(q0, nu))
    for got, ref, what in ((C, C_ref, "C'"), (Mdot, C_ref + C_ref.T, "Mdot'")):
        err = np.linalg.norm(got - ref)
        assert err <= bound, f"far {what}: error {err:.3e} > {bound:.3e}"
        assert err <= 1e-8 * np.linalg.norm(ref), f"far {what}: relative error {err:.3e}"
    # the joints' block does not grow with p: to its own scale
    assert_close(C[6:, 6:], C_ref[6:, 6:], 1e-12, "far C' joint block")
    assert np.linalg.norm(Mdot - C - C.T) <= 2 * bound, "far Mdot' - C' - C'^T"
    # pdot = v' + w x p, summed with error-free products: the body twist to float64 accuracy,
    # where a float64 sum loses ~eps |w| |p| (the other side of that bound)
    nu_ours = dyn.velocity_to_body(q, v)
    assert_close(nu_ours, nu, 1e-15, "far nu_B")
    R_f = R.astype(float)
    plain = R_f.T @ (v[:3] + np.cross(w, q[:3]))
    assert rel_err(plain, nu[:3]) > 1e-11 > 1e-15 > rel_err(nu_ours[:3], nu[:3])


def test_inertial_base_velocity_is_correctly_rounded_however_far():
    """With R = 1, nu_B's linear part is pdot = v' + w x p itself: the compiled sum (error-free
    products and sums) against exact rational arithmetic, up to |p| = 1e8 m."""
    dyn = load("solo12", "inertial")
    rng = np.random.default_rng(31)
    q = dyn.neutral()  # identity quaternion
    worst = 0.0
    for trial in range(200):
        q[:3] = rng.normal(0.0, 1.0, 3) * 10.0 ** rng.uniform(0, 8)
        w = rng.normal(0.0, 3.0, 3)
        v = rng.normal(0.0, 1.0, dyn.nv)
        v[3:6] = w
        v[:3] = rng.normal(0.0, 1.0, 3) - np.cross(w, q[:3])  # pdot ~ 1 after cancellation
        P, W, V = _exact(q[:3])[0], _exact(w)[0], _exact(v[:3])[0]
        exact = V + np.cross(W, P)
        got = dyn.velocity_to_body(q, v)[:3]
        for g, e in zip(got, exact, strict=True):
            worst = max(worst, abs(Fraction(g) - e) / max(abs(e), Fraction(1, 10**300)))
    assert worst <= 2.3e-16, f"{float(worst):.3e}"  # correctly rounded, within an ulp


@pytest.mark.parametrize("rep", ["body", "mixed"])
def test_body_and_mixed_do_not_depend_on_the_base_position(rep):
    dyn = load("solo12", rep)
    rng = np.random.default_rng(19)
    q, v, _ = random_state(dyn, rng)
    far = q.copy()
    far[:3] += [1e6, -1e7, 3e5]
    for a, b in zip(dyn.coriolis(q, v), dyn.coriolis(far, v), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(dyn.christoffel(q), dyn.christoffel(far))


# ----------------------------------------------------------------------------- the rest


@pytest.mark.parametrize("rep", ["mixed", "inertial"])
def test_integrate_batches_and_clone_keep_the_representation(rep):
    dyn, body = load("solo12", rep), load("solo12")
    rng = np.random.default_rng(23)
    Q = np.array([random_state(dyn, rng)[0] for _ in range(3)])
    V = rng.normal(size=(3, dyn.nv))
    A = rng.normal(size=(3, dyn.nv))
    q, v = Q[0], V[0]
    assert np.array_equal(
        dyn.integrate(q, v, 0.1), body.integrate(q, dyn.velocity_to_body(q, v), 0.1)
    )
    clone = dyn.clone()
    assert clone.velocity_representation == rep
    for a, b in zip(clone.coriolis(q, v), dyn.coriolis(q, v), strict=True):
        assert np.array_equal(a, b)
    Ms, Mds, Cs = dyn.coriolis_batch(Q, V)
    G = dyn.christoffel_batch(Q)
    cv = dyn.coriolis_vectors_batch(Q, V)
    tau = dyn.inverse_dynamics_batch(Q, V, A)
    sl = dyn.slotine_li_batch(Q, V, A, V)
    g = dyn.gravity_batch(Q)
    for t in range(3):
        for a, b in zip((Ms[t], Mds[t], Cs[t]), dyn.coriolis(Q[t], V[t]), strict=True):
            assert np.array_equal(a, b)
        assert np.array_equal(G[t], dyn.christoffel(Q[t]))
        for a, b in zip((x[t] for x in cv), dyn.coriolis_vectors(Q[t], V[t]), strict=True):
            assert np.array_equal(a, b)
        assert np.array_equal(tau[t], dyn.inverse_dynamics(Q[t], V[t], A[t]))
        assert np.array_equal(sl[t], dyn.slotine_li(Q[t], V[t], A[t], V[t]))
        assert np.array_equal(g[t], dyn.gravity(Q[t]))
    # the regressors: Y' pi = slotine_li', and the kinetic energy does not change
    pi = dyn.inertial_parameters()
    assert_close(dyn.regressor(q, v, A[0], V[1]) @ pi, dyn.slotine_li(q, v, A[0], V[1]), TOL,
                 f"{rep} regressor")  # fmt: skip
    M = dyn.mass_matrix(q)
    assert_close(dyn.energy_regressor(q, v)[0] @ pi, 0.5 * v @ M @ v, TOL, f"{rep} energy")


def test_bad_values_are_refused_with_a_message():
    path = str(erd_urdf("solo12"))
    for bad in ("world", "Body", "", None, 3):
        with pytest.raises(ValueError, match="velocity_representation must be one of"):
            Dynamics.from_urdf(path, root_joint="floating", velocity_representation=bad)
    for root in ("fixed", "planar"):  # only the default on a base that does not float
        with pytest.raises(ValueError, match=f"is for a floating base.*'{root}'"):
            Dynamics.from_urdf(path, root_joint=root, velocity_representation="mixed")
        dyn = Dynamics.from_urdf(path, root_joint=root, velocity_representation="body")
        assert dyn.velocity_representation == "body"
        v = np.arange(dyn.nv, dtype=float)
        assert np.array_equal(dyn.velocity_from_body(dyn.neutral(), v), v)
    dyn = load("solo12", "inertial")
    q = dyn.neutral()
    with pytest.raises(ValueError, match="qd has a NaN"):
        dyn.coriolis(q, np.full(dyn.nv, np.nan))
    bad_q = q.copy()
    bad_q[3:7] = 0.0
    with pytest.raises(ValueError, match="quaternion"):
        dyn.mass_matrix(bad_q)
    with pytest.raises(ValueError, match="shape"):
        dyn.gravity(q[:-1])
    assert velrep.check("mixed", "floating") == "mixed"


def test_the_momentum_observer_refuses_another_representation():
    from coriolis_ros.dynamics import MomentumObserver

    with pytest.raises(ValueError, match="velocity_representation"):
        MomentumObserver(load("solo12", "mixed"), 10.0)
    MomentumObserver(load("solo12"), 10.0)


# ----------------------------------------------------------------------------- the node


def test_node_parameter_is_validated_and_reaches_the_model():
    from coriolis_ros.node.params import SPECS, validate
    from coriolis_ros.node.robot_model import ModelError, load_dynamics

    assert SPECS["velocity_representation"].default == "body"
    assert SPECS["velocity_representation"].read_only
    for good in REPS:
        assert validate("velocity_representation", good) is None
    for bad in ("world", "Mixed", "", 1):
        assert "body, mixed, inertial" in validate("velocity_representation", bad)
    urdf = erd_urdf("solo12").read_text()
    params = dict(root_joint="floating", mimic="follow", locked_joints=[], locked_positions=[])
    params.update(rotors_file="", velocity_representation="inertial")
    assert load_dynamics(urdf, params, [0.0, 0.0, -9.81]).velocity_representation == "inertial"
    params.update(root_joint="fixed", velocity_representation="mixed")
    with pytest.raises(ModelError, match="is for a floating base"):
        load_dynamics(urdf, params, [0.0, 0.0, -9.81])
    params.update(velocity_representation="body")
    assert load_dynamics(urdf, params, [0.0, 0.0, -9.81]).velocity_representation == "body"


@pytest.mark.parametrize("rep", ["mixed", "inertial"])
def test_a_floating_closed_chain_changes_the_same_way(rep):
    """The variant wraps whatever Dynamics the model has: here a leg with a knee linkage."""
    from coriolis_ros.robots import robot_path

    path = str(robot_path("leg_knee_linkage"))
    dyn = Dynamics.from_urdf(path, root_joint="floating", velocity_representation=rep)
    body = Dynamics.from_urdf(path, root_joint="floating")
    assert dyn.loops
    rng = np.random.default_rng(29)
    q = body.neutral()
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[:3] = [0.4, -1.0, 2.0]
    v = rng.normal(size=dyn.nv)
    T = embed(T_base(rep, pin.XYZQUATToSE3(q[:7])), dyn.nv)
    M, Mdot, C = dyn.coriolis(q, v)
    assert_close(M, T.T @ body.mass_matrix(q) @ T, TOL, f"closed chain {rep} M'")
    assert_close(Mdot, C + C.T, TOL, f"closed chain {rep} Mdot'")
    h, nu = 1e-3, T @ v
    Ms = [dyn.mass_matrix(body.integrate(q, nu, t * h)) for t in (-2, -1, 1, 2)]
    fd = (Ms[0] - 8 * Ms[1] + 8 * Ms[2] - Ms[3]) / (12 * h)
    assert_close(Mdot, fd, 1e-8, f"closed chain {rep} Mdot' vs finite differences")
    G = dyn.christoffel(q)
    assert_close(np.einsum("ijk,k->ij", G, v), C, TOL, f"closed chain {rep} Gamma' nu'")


def test_the_node_converts_the_odometry_twist_and_publishes_in_the_representation():
    from types import SimpleNamespace

    from support.node_core_helpers import Core

    from coriolis_ros.robots import robot_path

    urdf = robot_path("quadruped12").read_text()
    core = Core(urdf, root_joint="floating", velocity_representation="inertial")
    dyn = Dynamics.from_urdf(urdf, root_joint="floating", velocity_representation="inertial")
    joints = list(core.model.measured_names)
    rng = np.random.default_rng(37)
    t = 1_700_000_000_000_000_000
    pose = np.array([3.0, -2.0, 0.4, 0.1, -0.2, 0.3, 0.9])
    pose[3:] /= np.linalg.norm(pose[3:])
    twist = rng.uniform(-0.5, 0.5, 6)  # odometry: the body twist (REP 105)
    qj, vj = rng.uniform(-1, 1, len(joints)), rng.uniform(-1, 1, len(joints))
    core.intake.odometry((t, "odom", dyn.root_link, pose, twist), 0.0)
    core.joint_state(joints, qj, vj, stamp_ns=t)
    _, fields = core.published[-1]
    # the inertial twist, from Pinocchio's SE3: (R v_B - w x p, w) with w = R w_B
    g = pin.XYZQUATToSE3(pose)
    v_rep = np.concatenate((g.action @ twist, vj))
    q = np.concatenate((pose, qj))
    assert_close(fields["velocity"], v_rep, 1e-14, "published velocity")
    M, Mdot, C = dyn.coriolis(q, v_rep)
    assert_close(fields["coriolis_matrix"].reshape(C.shape), C, 1e-14, "published C'")
    assert_close(fields["mass_matrix"].reshape(M.shape), M, 1e-14, "published M'")
    assert_close(fields["coriolis_force"], C @ v_rep, 1e-12, "published C' nu'")
    body_C = Dynamics.from_urdf(urdf, root_joint="floating").coriolis(q, v_rep)[2]
    assert rel_err(C, body_C) > 1e-3
    # a service request gives the base twist in the base frame too
    request = SimpleNamespace(joint_names=joints, position=qj, velocity=vj, base_position=pose,
                              base_velocity=twist, reference_velocity=[],
                              reference_acceleration=[])  # fmt: skip
    response = core.services.dynamics(request, SimpleNamespace())
    assert response.success, response.message
    assert_close(np.asarray(response.velocity), v_rep, 1e-14, "service velocity")
    assert_close(np.asarray(response.coriolis_matrix).reshape(C.shape), C, 1e-14, "service C'")
    # the momentum observer stays off, saying why
    core = Core(urdf, root_joint="floating", velocity_representation="mixed", observer_enabled=True)
    assert core.model.feed is None and "velocity_representation='body'" in core.log.text()
