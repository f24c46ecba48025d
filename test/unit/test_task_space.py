"""Task-space inertia Lambda and Coriolis matrix mu (Remark 8), and the external wrench.

References, none taken from the code under test:
* Pinocchio's route: M^-1 from ``computeMinverse``, J from ``computeFrameJacobian``, Jdot
  from ``getFrameJacobianTimeVariation``, C from ``computeCoriolisMatrix``; Lambda =
  inv(J M^-1 J^T) and mu = Lambda (J M^-1 C - Jdot) M^-1 J^T Lambda with numpy.
* The defining formula mu = J#^T C J# + J#^T M Jdot#, J# = M^-1 J^T Lambda, with Jdot# by
  central differences of Pinocchio's J# along q(t) = q (+) t qd.
* d/dt Lambda (central differences of our Lambda along q(t)) = mu + mu^T.
* A wrench w applied at a frame in Pinocchio's RNEA (``fext`` on the frame's joint): the
  joint-torque difference is J^T w, and ``external_wrench`` must recover w.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pinocchio as pin
import pytest

from support.floating import MultiDofOracle, random_configuration
from support.mimic import Reference
from support.oracle import assert_close, erd_urdf

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.kernels.kinematics import MAX_ABS

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

TOL = 1e-10
FD_TOL = 1e-6
LWA = pin.LOCAL_WORLD_ALIGNED
CASES = [  # robot, root joint, frame, rows
    ("panda", "fixed", "panda_hand", None),
    ("ur5", "fixed", "tool0", (0, 1, 2)),
    ("talos_full", "floating", "gripper_left_base_link", None),
    ("talos_full", "floating", "right_sole_link", (2, 3, 4)),
    ("solo12", "floating", "FL_FOOT", (0, 1, 2)),
    ("anymal_b", "planar", "LF_FOOT", (0, 2)),
]


def load(path: str, **kwargs) -> Dynamics:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Dynamics.from_urdf(path, **kwargs)


class PinTask:
    """Pinocchio's route to J, Jdot, M^-1, C at one state, in the library's v order."""

    def __init__(self, oracle: MultiDofOracle, q, v, frame: str, ref=LWA, A=None):
        m, d = oracle.model, oracle.data
        qp, vp = oracle.q_pin(q), oracle.v_pin(v)
        fid = m.getFrameId(frame, pin.BODY)
        idx = oracle.v_index
        Minv = np.array(pin.computeMinverse(m, d, qp))
        Minv = np.triu(Minv) + np.triu(Minv, 1).T  # the upper triangle is filled
        self.Minv = Minv[np.ix_(idx, idx)]
        self.M = np.linalg.inv(self.Minv)
        self.J = np.array(pin.computeFrameJacobian(m, d, qp, fid, ref))[:, idx]
        pin.computeJointJacobiansTimeVariation(m, d, qp, vp)
        self.Jdot = np.array(pin.getFrameJacobianTimeVariation(m, d, fid, ref))[:, idx]
        self.C = np.array(pin.computeCoriolisMatrix(m, d, qp, vp))[np.ix_(idx, idx)]
        if A is not None:  # independent coordinates of mimic joints
            self.M = A.T @ self.M @ A
            self.Minv = np.linalg.inv(self.M)
            self.J, self.Jdot, self.C = self.J @ A, self.Jdot @ A, A.T @ self.C @ A

    def terms(self, rows=None, damping=0.0):
        rows = list(range(6)) if rows is None else list(rows)
        J, Jd = self.J[rows], self.Jdot[rows]
        Lam = np.linalg.inv(J @ self.Minv @ J.T + damping * np.eye(len(rows)))
        mu = Lam @ (J @ self.Minv @ self.C - Jd) @ self.Minv @ J.T @ Lam
        return Lam, mu, J, Jd

    def dyn_consistent_inverse(self, rows=None):
        Lam, _, J, _ = self.terms(rows)
        return self.Minv @ J.T @ Lam


@pytest.mark.parametrize(("robot", "root", "frame", "rows"), CASES)
def test_lambda_and_mu_match_the_pinocchio_route(robot, root, frame, rows):
    path = str(erd_urdf(robot))
    dyn = load(path, root_joint=root, mimic="independent")
    oracle = MultiDofOracle(path, dyn, root)
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, v = random_configuration(dyn, rng, unit=True), rng.normal(0.0, 1.5, dyn.nv)
        q[: 3 if root != "fixed" else 0] *= 0.3
        Lam, mu, J, Jd = dyn.task_space(q, v, frame, rows=rows)
        Lr, mur, Jr, Jdr = PinTask(oracle, q, v, frame).terms(rows)
        label = f"{robot} ({root}) {frame} rows {rows}"
        assert_close(J, Jr, TOL, f"{label} J")
        assert_close(Jd, Jdr, TOL, f"{label} Jdot")
        assert_close(Lam, Lr, TOL, f"{label} Lambda")
        assert_close(Lam, Lam.T, 0.0, f"{label} Lambda symmetric")
        assert_close(mu, mur, 1e-9, f"{label} mu")


@pytest.mark.parametrize("reference", ["local", "world"])
def test_other_references(reference):
    path = str(erd_urdf("panda"))
    dyn = load(path, mimic="independent")
    oracle = MultiDofOracle(path, dyn)
    rng = np.random.default_rng(12)
    q, v = rng.uniform(-2.0, 2.0, dyn.nv), rng.normal(0.0, 1.0, dyn.nv)
    ref = {"local": pin.LOCAL, "world": pin.WORLD}[reference]
    Lr, mur, _, _ = PinTask(oracle, q, v, "panda_link7", ref).terms()
    Lam, mu, _, _ = dyn.task_space(q, v, "panda_link7", reference)
    assert_close(Lam, Lr, TOL, f"Lambda {reference}")
    assert_close(mu, mur, 1e-9, f"mu {reference}")


@pytest.mark.parametrize("robot", ["panda", "talos_full"])
def test_mimic_joints_task_in_independent_coordinates(robot):
    path = str(erd_urdf(robot))
    ref = Reference(path)
    dyn = load(path)
    oracle = MultiDofOracle(path, ref.full)
    frame = "panda_hand" if robot == "panda" else "gripper_left_base_link"
    rng = np.random.default_rng(13)
    qbar, vbar = rng.uniform(-1.0, 1.0, dyn.nq), rng.normal(0.0, 1.0, dyn.nv)
    Lr, mur, Jr, _ = PinTask(oracle, ref.q_full(qbar), ref.A @ vbar, frame, A=ref.A).terms()
    Lam, mu, J, _ = dyn.task_space(qbar, vbar, frame)
    assert_close(J, Jr, TOL, f"{robot} Jbar")
    assert_close(Lam, Lr, TOL, f"{robot} Lambda (mimic)")
    assert_close(mu, mur, 1e-9, f"{robot} mu (mimic)")


def trajectory(dyn, q0, v, times):
    return [dyn.integrate(q0, v, t) for t in times]


@pytest.mark.parametrize(
    ("robot", "root", "frame", "rows", "damping"),
    [
        ("panda", "fixed", "panda_hand", None, 0.0),
        ("panda", "fixed", "panda_hand", (0, 1, 2), 0.05),
        ("talos_full", "floating", "gripper_left_base_link", None, 0.0),
        ("solo12", "floating", "FL_FOOT", (0, 1, 2), 0.0),
        ("arm7_rotors", "fixed", "tcp", None, 0.0),  # geared rotors (coupled table)
        ("talos_full/mimic", "floating", "arm_left_7_link", None, 0.0),
    ],
)
def test_lambda_dot_equals_mu_plus_mu_transpose(robot, root, frame, rows, damping):
    """d/dt Lambda = mu + mu^T (Lambdadot - 2 mu skew) at points of a trajectory q(t) =
    q0 (+) t qd, by central differences of Lambda."""
    from coriolis_ros.robots import robot_path

    if robot == "arm7_rotors":
        dyn = load(robot_path(robot))
    elif robot.endswith("/mimic"):
        dyn = load(str(erd_urdf(robot.split("/")[0])), root_joint=root)
    else:
        dyn = load(str(erd_urdf(robot)), root_joint=root, mimic="independent")
    rng = np.random.default_rng(14)
    q0, v = random_configuration(dyn, rng, unit=True), rng.normal(0.0, 1.0, dyn.nv)
    h = 1e-6
    for q in trajectory(dyn, q0, v, (0.0, 0.05, 0.1)):
        Lam, mu, _, _ = dyn.task_space(q, v, frame, rows=rows, damping=damping)
        Lp = dyn.task_space(dyn.integrate(q, v, h), v, frame, rows=rows, damping=damping)[0]
        Lm = dyn.task_space(dyn.integrate(q, v, -h), v, frame, rows=rows, damping=damping)[0]
        Ldot = (Lp - Lm) / (2 * h)
        assert_close(mu + mu.T, Ldot, FD_TOL, f"{robot} {frame} Lambdadot = mu + mu^T")
        S = Ldot - 2 * mu
        assert_close(S + S.T, np.zeros_like(S), FD_TOL * max(1.0, np.linalg.norm(Ldot)), "skew")


@pytest.mark.parametrize(("robot", "root", "frame"), [
    ("panda", "fixed", "panda_hand"),
    ("talos_full", "floating", "gripper_left_base_link"),
])  # fmt: skip
def test_mu_against_the_transformation_law_with_differenced_dyn_inverse(robot, root, frame):
    """mu = J#^T C J# + J#^T M Jdot# (Remark 8, the form of eq. 17), Jdot# by differences
    of Pinocchio's J# along q (+) t qd."""
    path = str(erd_urdf(robot))
    dyn = load(path, root_joint=root, mimic="independent")
    oracle = MultiDofOracle(path, dyn, root)
    rng = np.random.default_rng(15)
    q, v = random_configuration(dyn, rng, unit=True), rng.normal(0.0, 1.0, dyn.nv)
    h = 1e-6
    ref = PinTask(oracle, q, v, frame)
    Jsharp = ref.dyn_consistent_inverse()
    Jp = PinTask(oracle, dyn.integrate(q, v, h), v, frame).dyn_consistent_inverse()
    Jm = PinTask(oracle, dyn.integrate(q, v, -h), v, frame).dyn_consistent_inverse()
    law = Jsharp.T @ ref.C @ Jsharp + Jsharp.T @ ref.M @ ((Jp - Jm) / (2 * h))
    mu = dyn.task_space(q, v, frame)[1]
    assert_close(mu, law, FD_TOL, f"{robot} mu vs J#^T C J# + J#^T M Jdot#")


# ----------------------------------------------------------------------------- singular tasks


@pytest.fixture(scope="module")
def ur5_5dof():
    """UR5 with its last wrist joint welded: 5 DoF to the tool."""
    return load(str(erd_urdf("ur5")), locked_joints={"wrist_3_joint": 0.2})


def test_six_d_task_on_five_dof_chain_is_refused_naming_the_frame(ur5_5dof):
    dyn = ur5_5dof
    q, v = np.array([0.3, -1.1, 1.4, -0.8, 0.9]), np.ones(5)  # away from the elbow singularity
    with pytest.raises(ValueError, match="frame 'tool0' is singular.*damping > 0"):
        dyn.task_space(q, v, "tool0")
    with pytest.raises(ValueError, match="frame 'base_link' is singular"):
        dyn.task_space(q, v, "base_link", rows=(0,))  # welded to the world: J = 0
    # five directions are fine, and so is a damped 6-D task
    dyn.task_space(q, v, "tool0", rows=(0, 1, 2, 3, 4))
    Lam, mu, J, _ = dyn.task_space(q, v, "tool0", damping=1e-3)
    assert np.all(np.isfinite(Lam)) and np.all(np.isfinite(mu))
    M = dyn.mass_matrix(q)
    assert_close(Lam, np.linalg.inv(J @ np.linalg.solve(M, J.T) + 1e-3 * np.eye(6)), 1e-9, "damped")


def test_damping_bounds(ur5_5dof):
    dyn = ur5_5dof
    q, v = np.array([0.3, -1.1, 1.4, -0.8, 0.9]), np.ones(5)  # away from the elbow singularity
    for bad in (-1e-9, np.nan, np.inf, "x", None):
        with pytest.raises(ValueError, match="damping"):
            dyn.task_space(q, v, "tool0", rows=(0, 1, 2), damping=bad)
    dyn.task_space(q, v, "tool0", rows=(0, 1, 2), damping=0.0)  # the bound itself
    with pytest.raises(ValueError, match="singular"):  # a damping too small to matter
        dyn.task_space(q, v, "tool0", damping=1e-30)


@pytest.mark.parametrize("rows", [(), (6,), (-1,), (0, 0), (0.5,), "ab", 3, (0, 1, 2, 3, 4, 5, 0)])
def test_bad_rows_are_refused(ur5_5dof, rows):
    with pytest.raises(ValueError, match="rows"):
        ur5_5dof.task_space(np.zeros(5), np.zeros(5), "tool0", rows=rows)


def test_rows_pick_and_order_the_task_directions():
    dyn = load(str(erd_urdf("panda")))
    q, v = np.linspace(-1.0, 1.0, dyn.nv), np.linspace(1.0, -1.0, dyn.nv)
    Lam6, _, J6, Jd6 = dyn.task_space(q, v, "panda_hand")
    for rows in ((5, 0, 2), [1], np.array([4, 3])):
        Lam, mu, J, Jd = dyn.task_space(q, v, "panda_hand", rows=rows)
        r = list(rows)
        assert_close(J, J6[r], 0.0, f"rows {r} J")
        assert_close(Jd, Jd6[r], 0.0, f"rows {r} Jdot")
        M = dyn.mass_matrix(q)
        assert_close(Lam, np.linalg.inv(J @ np.linalg.solve(M, J.T)), 1e-10, f"rows {r}")


def test_task_space_bad_inputs_and_outputs():
    dyn = load(str(erd_urdf("panda")))
    q, v, n = dyn.neutral(), np.zeros(dyn.nv), dyn.nv
    with pytest.raises(ValueError, match="unknown frame 'hand'"):
        dyn.task_space(q, v, "hand")
    with pytest.raises(ValueError, match="reference"):
        dyn.task_space(q, v, "panda_hand", reference="body")
    with pytest.raises(ValueError, match="qd"):
        dyn.task_space(q, np.full(n, np.nan), "panda_hand")
    with pytest.raises(ValueError, match="q must have shape"):
        dyn.task_space(q[:-1], v, "panda_hand")
    with pytest.raises(ValueError, match="tuple of 4"):
        dyn.task_space(q, v, "panda_hand", out=np.empty((6, 6)))
    good = (np.empty((3, 3)), np.empty((3, 3)), np.empty((3, n)), np.empty((3, n)))
    dyn.task_space(q, v, "panda_hand", rows=(0, 1, 2), out=good)
    with pytest.raises(ValueError, match="shape"):
        dyn.task_space(q, v, "panda_hand", out=good)  # 6 rows into 3-row outputs
    shared = np.empty((3, 3))
    with pytest.raises(ValueError, match="share memory"):
        dyn.task_space(q, v, "panda_hand", rows=(0, 1, 2), out=(shared, shared, *good[2:]))


def test_task_space_with_out_allocates_nothing():
    calls = []
    for dyn, frame in (
        (load(str(erd_urdf("talos_full")), root_joint="floating"), "gripper_left_base_link"),
        (load(str(erd_urdf("panda")), mimic="independent"), "panda_hand"),
    ):
        q, v, n = dyn.neutral(), np.full(dyn.nv, 0.1), dyn.nv
        q[-dyn.nv + 6 if dyn.nq > dyn.nv else 0 :] += 0.3  # joints away from a singularity
        out = (np.empty((6, 6)), np.empty((6, 6)), np.empty((6, n)), np.empty((6, n)))
        calls.append(lambda d=dyn, q=q, v=v, o=out, f=frame: d.task_space(q, v, f, out=o))
    for call in calls:
        call()
    numpy_domain = tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)
    tracemalloc.start()
    try:
        for _ in range(20):
            for call in calls:
                call()
        snapshot = tracemalloc.take_snapshot().filter_traces([numpy_domain])
    finally:
        tracemalloc.stop()
    assert sum(s.size for s in snapshot.statistics("lineno")) == 0


# ----------------------------------------------------------------------------- external wrench


def pin_residual(oracle: MultiDofOracle, q, v, a, frame: str, wrench_lwa):
    """rnea(q, v, a) - rnea(q, v, a, fext): the joint torques J^T w of a wrench w (force,
    moment about the frame origin, world axes) applied at the frame, by Pinocchio."""
    m, d = oracle.model, oracle.data
    qp, vp, ap = oracle.q_pin(q), oracle.v_pin(v), oracle.v_pin(a)
    fid = m.getFrameId(frame, pin.BODY)
    pin.framesForwardKinematics(m, d, qp)
    R = d.oMf[fid].rotation
    f_frame = pin.Force(R.T @ wrench_lwa[:3], R.T @ wrench_lwa[3:])  # in the frame's axes
    fext = [pin.Force.Zero() for _ in range(m.njoints)]
    fext[m.frames[fid].parentJoint] = m.frames[fid].placement.act(f_frame)
    tau0 = np.array(pin.rnea(m, d, qp, vp, ap))
    tau1 = np.array(pin.rnea(m, d, qp, vp, ap, fext))
    return oracle.vec(tau0 - tau1)


@pytest.mark.parametrize(("robot", "root", "frame"), [
    ("panda", "fixed", "panda_hand"),
    ("ur5", "fixed", "wrist_3_link"),
    ("talos_full", "floating", "gripper_left_base_link"),
    ("solo12", "floating", "FL_FOOT"),
])  # fmt: skip
def test_external_wrench_recovers_a_wrench_applied_in_pinocchio(robot, root, frame):
    path = str(erd_urdf(robot))
    dyn = load(path, root_joint=root, mimic="independent")
    oracle = MultiDofOracle(path, dyn, root)
    rng = np.random.default_rng(16)
    q = random_configuration(dyn, rng, unit=True)
    v, a = rng.normal(0.0, 1.0, dyn.nv), rng.normal(0.0, 1.0, dyn.nv)
    w = np.array([12.0, -5.0, 30.0, 1.5, -0.7, 2.0])
    residual = pin_residual(oracle, q, v, a, frame, w)
    got, cond = dyn.external_wrench(q, residual, frame)
    assert_close(got, w, 1e-9, f"{robot} recovered wrench")
    assert np.isfinite(cond) and cond >= 1.0
    sv = np.linalg.svd(dyn.frame_jacobian(q, frame), compute_uv=False)
    assert cond == pytest.approx(sv[0] / sv[-1], rel=1e-12)
    force, _ = dyn.external_wrench(
        q, pin_residual(oracle, q, v, a, frame, np.r_[w[:3], 0, 0, 0]), frame, rows=(0, 1, 2)
    )
    assert_close(force, w[:3], 1e-9, f"{robot} recovered force")


def test_external_wrench_rows_in_any_order_equal_numpy_least_squares():
    """Rows given out of order (all six, permuted; and a subset): w equals numpy's lstsq of
    J[rows]^T w = r, an independent solver, in the order asked for."""
    dyn = load(str(erd_urdf("panda")), mimic="independent")
    rng = np.random.default_rng(5)
    q = rng.uniform(-1.0, 1.0, dyn.nq)
    r = rng.normal(0.0, 3.0, dyn.nv)
    J = dyn.frame_jacobian(q, "panda_hand")
    for rows in ((0, 1, 2, 3, 4, 5), (5, 0, 1, 2, 3, 4), (4, 2), (3,)):
        got, cond = dyn.external_wrench(q, r, "panda_hand", rows=rows)
        Jr = J[list(rows)]
        want = np.linalg.lstsq(Jr.T, r, rcond=None)[0]
        assert_close(got, want, 1e-10, f"rows {rows}")
        sv = np.linalg.svd(Jr, compute_uv=False)
        assert cond == pytest.approx(sv[0] / sv[-1], rel=1e-12)


def test_external_wrench_residual_bound_both_sides(ur5_5dof):
    """A residual entry at exactly the bound (1e50) is used; the next double is refused."""
    dyn = ur5_5dof
    q = np.array([0.3, -1.1, 1.4, -0.8, 0.9])
    for sign in (1.0, -1.0):
        at = np.zeros(5)
        at[2] = sign * MAX_ABS
        w, _ = dyn.external_wrench(q, at, "tool0", rows=(0, 1, 2))
        assert np.all(np.isfinite(w)) and np.any(w != 0.0)
        beyond = at.copy()
        beyond[2] = np.nextafter(sign * MAX_ABS, sign * np.inf)
        with pytest.raises(ValueError, match="residual has a NaN, infinite or huge"):
            dyn.external_wrench(q, beyond, "tool0", rows=(0, 1, 2))


def test_external_wrench_refuses_unobservable_wrenches_and_bad_residuals(ur5_5dof):
    dyn = ur5_5dof
    q = np.array([0.3, -1.1, 1.4, -0.8, 0.9])
    J = dyn.frame_jacobian(q, "tool0")
    f = np.array([3.0, -2.0, 5.0])
    force, cond = dyn.external_wrench(q, J[:3].T @ f, "tool0", rows=(0, 1, 2))
    assert_close(force, f, 1e-9, "force on a 5-DoF chain")
    with pytest.raises(ValueError, match="frame 'tool0' is not observable.*rows=\\(0, 1, 2\\)"):
        dyn.external_wrench(q, np.ones(5), "tool0")  # 6 unknowns, 5 joints
    with pytest.raises(ValueError, match="frame 'base_link' is not observable"):
        dyn.external_wrench(q, np.ones(5), "base_link", rows=(0,))
    for bad in (np.ones(4), [np.nan] * 5, [np.inf] * 5, "abc"):
        with pytest.raises(ValueError, match="residual"):
            dyn.external_wrench(q, bad, "tool0", rows=(0, 1, 2))
    with pytest.raises(ValueError, match="unknown frame"):
        dyn.external_wrench(q, np.ones(5), "tool1")


def _kernel_wrench(J, r):
    from coriolis_ros.dynamics.kernels import wrench as kw

    m, n = J.shape
    scratch = np.full((n + m + 2, 6), np.nan)
    w = np.zeros(m)
    code = kw.wrench_from_residual(np.ascontiguousarray(J), r, w, scratch)
    return code, w, int(scratch[n + m + 1, 0])


def test_wrench_kernel_rank_decisions_equal_numpy_and_converge_in_a_few_sweeps():
    """Random J (m x n) of every rank from 1 to m: observable exactly when numpy's
    matrix_rank (same tolerance) says full rank, with the lstsq solution then; and Jacobi's
    sweeps stay few either way (a numerically zero column is not rotated: before that, a
    rank-deficient J ran all MAX_SWEEPS)."""
    from coriolis_ros.dynamics.kernels import wrench as kw

    rng = np.random.default_rng(11)
    for m, n in ((6, 9), (6, 6), (3, 7), (2, 2)):
        for rank in range(1, m + 1):
            for _ in range(5):
                J = rng.normal(size=(m, rank)) @ rng.normal(size=(rank, n))
                r = rng.normal(size=n)
                code, w, sweeps = _kernel_wrench(J, r)
                assert 1 <= sweeps <= 12, (m, n, rank, sweeps)
                if rank < m:
                    assert code == kw.NOT_OBSERVABLE, (m, n, rank, code)
                else:
                    assert np.linalg.matrix_rank(J) == m
                    assert_close(w, np.linalg.lstsq(J.T, r, rcond=None)[0], 1e-9, f"{m}x{n}")
                    sv = np.linalg.svd(J, compute_uv=False)
                    assert code == pytest.approx(sv[0] / sv[-1], rel=1e-9)


def test_wrench_kernel_panda_link4_is_refused_in_a_few_sweeps():
    """The frame of the node's two-frame benchmark with only four joints above it: its six
    Jacobian rows have rank 4, refused after a few sweeps (was every one of the 60)."""
    from coriolis_ros.dynamics.kernels import wrench as kw

    dyn = load(str(erd_urdf("panda")), mimic="independent")
    q = dyn.neutral() + 0.3
    J = dyn.frame_jacobian(q, "panda_link4")
    code, _, sweeps = _kernel_wrench(J, np.linspace(-1.0, 1.0, dyn.nv))
    assert code == kw.NOT_OBSERVABLE
    assert sweeps <= 12
    # its force rows have rank 2 there (numpy agrees): refused too; its moment rows have 3
    assert np.linalg.matrix_rank(J[:3]) == 2 and np.linalg.matrix_rank(J[3:]) == 3
    code, _, sweeps = _kernel_wrench(J[:3], J[:3].T @ np.array([1.0, -2.0, 0.5]))
    assert code == kw.NOT_OBSERVABLE and sweeps <= 12
    code, w, sweeps = _kernel_wrench(J[3:], J[3:].T @ np.array([1.0, -2.0, 0.5]))
    assert code > 0 and sweeps <= 12
    assert_close(w, np.array([1.0, -2.0, 0.5]), 1e-9, "moment at panda_link4")


def test_wrench_kernel_scratch_bound_both_sides():
    """n + m + 2 scratch rows are enough; one fewer is SIZE_SCRATCH."""
    from coriolis_ros.dynamics.kernels import wrench as kw

    J = np.random.default_rng(2).normal(size=(3, 5))
    r = np.ones(5)
    w = np.zeros(3)
    assert kw.wrench_from_residual(J, r, w, np.zeros((10, 6))) > 0
    assert kw.wrench_from_residual(J, r, w, np.zeros((9, 6))) == kw.SIZE_SCRATCH


def test_wrench_kernel_overflow_both_sides():
    """A residual at the bound over tiny (but well-conditioned) rows: a w of about 1e300 is
    returned; at 1e-300 rows w would be infinite, and the kernel says OVERFLOW instead."""
    from coriolis_ros.dynamics.kernels import wrench as kw

    base = np.random.default_rng(4).normal(size=(3, 5))
    r = np.full(5, MAX_ABS)
    code, w, _ = _kernel_wrench(base * 1e-250, r)
    assert code > 0 and np.all(np.isfinite(w)) and np.max(np.abs(w)) > 1e299
    code, w, _ = _kernel_wrench(base * 1e-300, r)
    assert code == kw.OVERFLOW


def test_external_wrench_overflow_is_a_value_error_naming_the_frame(ur5_5dof, monkeypatch):
    """The API's message for the kernel's OVERFLOW (a huge residual on a frame whose rows are
    tiny cannot happen with a real Jacobian, so the kernel's answer is substituted)."""
    from coriolis_ros.dynamics import frames
    from coriolis_ros.dynamics.kernels import wrench as kw

    monkeypatch.setattr(frames, "_wrench_kernel", lambda: (lambda J, r, w, s: kw.OVERFLOW))
    message = "wrench at frame 'tool0' overflows.*largest \\|entry\\| 7"
    with pytest.raises(ValueError, match=message):
        ur5_5dof.external_wrench(np.zeros(5), np.array([1.0, -7.0, 0, 0, 0]), "tool0", rows=(0,))
