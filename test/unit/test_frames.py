"""Frames: placements, Jacobians, their time derivative and Jdot qd against Pinocchio.

References: Pinocchio (test-only), whose URDF loader makes a BODY frame per link, named
after it: ``updateFramePlacements`` (placements), ``getFrameJacobian`` after
``computeJointJacobians``, ``getFrameJacobianTimeVariation`` after
``computeJointJacobiansTimeVariation``, ``getFrameClassicalAcceleration`` (local world
aligned) and ``getFrameAcceleration`` (local, world) after ``forwardKinematics(q, v, 0)``.
Mimic joints: Pinocchio with mimic joints independent (mimic=False) and J A with A built
from the URDF's <mimic> tags by test_dynamics_mimic.Reference.  Every frame of each robot,
in the three reference frames, fixed and floating (free-flyer, planar) bases.
"""

from __future__ import annotations

import tracemalloc
import xml.etree.ElementTree as ET
import warnings

import numpy as np
import pinocchio as pin
import pytest

from support.floating import MultiDofOracle, random_configuration
from support.mimic import Reference
from support.oracle import assert_close, erd_urdf

from coriolis_ros.dynamics import Dynamics

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

TOL = 1e-10
REFS = {
    "world": pin.WORLD,
    "local": pin.LOCAL,
    "local_world_aligned": pin.LOCAL_WORLD_ALIGNED,
}
CASES = [  # robot, root joint
    ("panda", "fixed"),
    ("ur5", "fixed"),
    ("talos_full", "floating"),  # humanoid
    ("solo12", "floating"),  # quadruped, feet FL_FOOT ...
    ("anymal_c", "floating"),
    ("anymal_b", "planar"),
]


def load(path: str, **kwargs) -> Dynamics:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # URDF inertia warnings of some robots
        return Dynamics.from_urdf(path, **kwargs)


def pin_state(oracle: MultiDofOracle, q, v):
    m, d = oracle.model, oracle.data
    qp, vp = oracle.q_pin(q), oracle.v_pin(v)
    pin.forwardKinematics(m, d, qp, vp, np.zeros(m.nv))
    pin.updateFramePlacements(m, d)
    pin.computeJointJacobians(m, d, qp)
    pin.computeJointJacobiansTimeVariation(m, d, qp, vp)
    return m, d


def pin_frame(m, d, name: str, ref: str):
    """(placement, J, Jdot, Jdot v) of Pinocchio's BODY frame ``name`` (its v order)."""
    fid = m.getFrameId(name, pin.BODY)
    assert fid < m.nframes, f"Pinocchio has no body frame {name}"
    r = REFS[ref]
    if ref == "local_world_aligned":
        acc = pin.getFrameClassicalAcceleration(m, d, fid, r).vector
    else:
        acc = pin.getFrameAcceleration(m, d, fid, r).vector
    J = pin.getFrameJacobian(m, d, fid, r)
    Jd = pin.getFrameJacobianTimeVariation(m, d, fid, r)
    return d.oMf[fid].homogeneous, J, Jd, acc


@pytest.mark.parametrize(("robot", "root"), CASES)
def test_every_frame_matches_pinocchio(robot, root):
    path = str(erd_urdf(robot))
    dyn = load(path, root_joint=root, mimic="independent")
    oracle = MultiDofOracle(path, dyn, root)
    links = [link.get("name") for link in ET.parse(path).getroot().findall("link")]
    assert sorted(dyn.frame_names) == sorted(links), "every URDF link is a frame"
    assert dyn.frame_names[0] == dyn.root_link
    rng = np.random.default_rng(3)
    for trial in range(2):
        q = random_configuration(dyn, rng, unit=trial == 0)  # a non-unit quaternion too
        v = rng.normal(0.0, 1.5, dyn.nv)
        m, d = pin_state(oracle, q, v)
        for name in dyn.frame_names:
            label = f"{robot} ({root}) frame {name}"
            T_ref = pin_frame(m, d, name, "world")[0]
            assert_close(dyn.frame_placement(q, name), T_ref, TOL, f"{label} placement")
            for ref in REFS:
                _, J, Jd, acc = pin_frame(m, d, name, ref)
                J, Jd = J[:, oracle.v_index], Jd[:, oracle.v_index]
                assert_close(dyn.frame_jacobian(q, name, ref), J, TOL, f"{label} J {ref}")
                assert_close(dyn.frame_jacobian_dot(q, v, name, ref), Jd, TOL, f"{label} Jdot")
                both = dyn.frame_jacobians(q, v, name, ref)
                assert_close(both[0], J, TOL, f"{label} frame_jacobians J {ref}")
                assert_close(both[1], Jd, TOL, f"{label} frame_jacobians Jdot {ref}")
                bias = dyn.frame_acceleration_bias(q, v, name, ref)
                assert_close(bias, acc, TOL, f"{label} Jdot v {ref}")
                assert_close(bias, Jd @ v, TOL, f"{label} Jdot v = Jdot @ v {ref}")


def test_fixed_joint_children_and_world_frames():
    """Fixed-joint children are frames of their parent's body; links welded to a fixed
    root do not move (J = 0, Jdot = 0)."""
    path = str(erd_urdf("panda"))
    dyn = load(path)
    assert {"panda_link8", "panda_hand", "panda_link0"} <= set(dyn.frame_names)
    assert "panda_hand" not in dyn.model.body_links  # merged into a body
    q, v = np.linspace(-1.0, 1.0, dyn.nv), np.linspace(0.5, 1.5, dyn.nv)
    T0 = dyn.frame_placement(dyn.neutral(), "panda_link0")
    assert_close(dyn.frame_placement(q, "panda_link0"), T0, 0.0, "root placement")
    for name in ("panda_link0",):
        assert not np.any(dyn.frame_jacobian(q, name))
        assert not np.any(dyn.frame_jacobian_dot(q, v, name))
        assert not np.any(dyn.frame_acceleration_bias(q, v, name))


def test_locked_joints_keep_every_frame_in_place():
    path = str(erd_urdf("ur5"))
    full = load(path)
    locked = load(path, locked_joints={"wrist_2_joint": 0.4})
    assert locked.frame_names == full.frame_names
    rng = np.random.default_rng(4)
    q = rng.uniform(-2.0, 2.0, locked.nv)
    k = full.joint_names.index("wrist_2_joint")
    qf = np.insert(q, k, 0.4)
    keep = [full.joint_names.index(n) for n in locked.joint_names]
    for name in full.frame_names:
        assert_close(locked.frame_placement(q, name), full.frame_placement(qf, name), TOL, name)
        J = full.frame_jacobian(qf, name, "local")[:, keep]
        assert_close(locked.frame_jacobian(q, name, "local"), J, TOL, f"{name} J")


@pytest.mark.parametrize("robot", ["panda", "talos_full"])
def test_mimic_joints_follow_in_the_frame_jacobians(robot):
    """Jbar = J A and Jdotbar = Jdot A (A constant), with J, Jdot from Pinocchio (mimic
    joints independent) and A from the URDF's <mimic> tags."""
    path = str(erd_urdf(robot))
    ref = Reference(path)
    dyn = load(path)
    assert ref.mimic and dyn.nv < ref.full.nv
    oracle = MultiDofOracle(path, ref.full)
    A = ref.A
    rng = np.random.default_rng(5)
    qbar, vbar = rng.uniform(-1.0, 1.0, dyn.nq), rng.normal(0.0, 1.5, dyn.nv)
    q, v = ref.q_full(qbar), A @ vbar
    m, d = pin_state(oracle, q, v)
    for name in dyn.frame_names:
        T, _, _, _ = pin_frame(m, d, name, "world")
        assert_close(dyn.frame_placement(qbar, name), T, TOL, f"{robot} {name} placement")
        for r in REFS:
            _, J, Jd, acc = pin_frame(m, d, name, r)
            J, Jd = J[:, oracle.v_index] @ A, Jd[:, oracle.v_index] @ A
            assert_close(dyn.frame_jacobian(qbar, name, r), J, TOL, f"{robot} {name} J A")
            assert_close(dyn.frame_jacobian_dot(qbar, vbar, name, r), Jd, TOL, f"{name} Jdot A")
            both = dyn.frame_jacobians(qbar, vbar, name, r)
            assert_close(both[0], J, TOL, f"{name} J A (frame_jacobians)")
            assert_close(both[1], Jd, TOL, f"{name} Jdot A (frame_jacobians)")
            bias = dyn.frame_acceleration_bias(qbar, vbar, name, r)
            assert_close(bias, acc, TOL, f"{robot} {name} Jdot v")


def test_geared_rotors_leave_the_link_jacobians_unchanged():
    """A rotor adds inertia, not kinematics: the arm's link frames have the same J with and
    without rotors (nv equal), and Jdot matches finite differences of J along q + t qd."""
    from coriolis_ros.robots import robot_path

    plain, geared = load(robot_path("arm7")), load(robot_path("arm7_rotors"))
    assert set(plain.frame_names) < set(geared.frame_names)
    rng = np.random.default_rng(6)
    q, v = rng.uniform(-2.0, 2.0, plain.nv), rng.normal(0.0, 1.0, plain.nv)
    for name in plain.frame_names:
        for r in REFS:
            J = plain.frame_jacobian(q, name, r)
            assert_close(geared.frame_jacobian(q, name, r), J, TOL, f"{name} J")
            assert_close(
                geared.frame_jacobian_dot(q, v, name, r),
                plain.frame_jacobian_dot(q, v, name, r),
                TOL,
                f"{name} Jdot",
            )
    h = 1e-6
    for name in geared.frame_names:
        for r in REFS:
            fd = (
                geared.frame_jacobian(q + h * v, name, r)
                - geared.frame_jacobian(q - h * v, name, r)
            ) / (2 * h)
            assert_close(geared.frame_jacobian_dot(q, v, name, r), fd, 1e-6, f"{name} Jdot FD")


# ----------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def ur5():
    return load(str(erd_urdf("ur5")))


def test_unknown_frame_is_named(ur5):
    q = ur5.neutral()
    with pytest.raises(ValueError, match="unknown frame 'tool9'.*similar: 'tool0'"):
        ur5.frame_jacobian(q, "tool9")
    with pytest.raises(ValueError, match="unknown frame 'nope'"):
        ur5.frame_placement(q, "nope")
    with pytest.raises(ValueError, match="frame must be a link name"):
        ur5.frame_jacobian(q, 3)
    with pytest.raises(ValueError, match="reference must be one of"):
        ur5.frame_jacobian(q, "tool0", "LOCAL")


@pytest.mark.parametrize("bad", [[0.0] * 5, [np.nan] * 6, [np.inf] * 6, [1e60] * 6, "abc"])
def test_bad_configurations_are_refused(ur5, bad):
    v = np.zeros(6)
    for call in (
        lambda: ur5.frame_placement(bad, "tool0"),
        lambda: ur5.frame_jacobian(bad, "tool0"),
        lambda: ur5.frame_jacobian_dot(bad, v, "tool0"),
        lambda: ur5.frame_jacobians(bad, v, "tool0"),
        lambda: ur5.frame_acceleration_bias(bad, v, "tool0"),
        lambda: ur5.frame_jacobian_dot(v, bad, "tool0"),
    ):
        with pytest.raises(ValueError, match="q|qd"):
            call()


def test_bad_outputs_are_refused(ur5):
    q, v = ur5.neutral(), np.zeros(6)
    with pytest.raises(ValueError, match="shape"):
        ur5.frame_jacobian(q, "tool0", out=np.empty((6, 5)))
    with pytest.raises(ValueError, match="shape"):
        ur5.frame_placement(q, "tool0", out=np.empty((3, 4)))
    with pytest.raises(ValueError, match="C-contiguous float64"):
        ur5.frame_jacobian(q, "tool0", out=np.empty((6, 6), dtype=np.float32))
    buf = np.empty((6, 6))
    with pytest.raises(ValueError, match="share memory"):
        ur5.frame_jacobians(q, v, "tool0", out=(buf, buf))
    with pytest.raises(ValueError, match="tuple of 2"):
        ur5.frame_jacobians(q, v, "tool0", out=buf)
    # the right shapes pass, on both sides of the bound
    ur5.frame_jacobian(q, "tool0", out=np.empty((6, 6)))


@pytest.fixture(scope="module")
def geared():
    """A coupled model (the rotors follow their joints): the reduced frame kernels, J A."""
    from coriolis_ros.robots import robot_path

    return load(robot_path("arm7_rotors"))


def test_bad_outputs_are_refused_by_the_reduced_kernels(geared):
    """Each size of J and Jdot one off (either dimension, either way), J and Jdot sharing
    memory, a bias of the wrong length: refused; the right shapes pass."""
    q, v, n = geared.neutral(), np.full(geared.nv, 0.1), geared.nv
    right = (6, n)
    for shape in ((6, n - 1), (6, n + 1), (5, n), (7, n)):
        calls = (
            lambda: geared.frame_jacobian(q, "tcp", out=np.empty(shape)),
            lambda: geared.frame_jacobian_dot(q, v, "tcp", out=np.empty(shape)),
            lambda: geared.frame_jacobians(q, v, "tcp", out=(np.empty(shape), np.empty(right))),
            lambda: geared.frame_jacobians(q, v, "tcp", out=(np.empty(right), np.empty(shape))),
        )
        for call in calls:
            with pytest.raises(ValueError, match="shape"):
                call()
    for size in (5, 7):
        with pytest.raises(ValueError, match="shape"):
            geared.frame_acceleration_bias(q, v, "tcp", out=np.empty(size))
    buf = np.empty(right)
    with pytest.raises(ValueError, match="share memory"):
        geared.frame_jacobians(q, v, "tcp", out=(buf, buf))
    J, Jd, a = np.empty(right), np.empty(right), np.empty(6)
    geared.frame_jacobians(q, v, "tcp", out=(J, Jd))
    assert_close(J, geared.frame_jacobian(q, "tcp"), TOL, "J, out given")
    assert_close(Jd, geared.frame_jacobian_dot(q, v, "tcp"), TOL, "Jdot, out given")
    geared.frame_acceleration_bias(q, v, "tcp", out=a)
    assert_close(a, Jd @ v, TOL, "Jdot qd, out given")


@pytest.mark.parametrize("model", ["ur5", "geared"])
def test_frame_kernels_refuse_a_frame_or_reference_out_of_range(model, request):
    """The API resolves names first; the kernels check the index themselves (called here
    directly): frame -1 or one past the last, reference -1 or 3, is BAD_FRAME; the last
    frame in the last reference is computed."""
    from coriolis_ros.dynamics.kernels.frame_jacobian import BAD_FRAME

    dyn = request.getfixturevalue(model)
    fa = dyn._frame_algorithms
    k, mf, fm, ws = fa._k, fa._mf, fa._fm, fa._ws
    q, v, n = dyn.neutral() + 0.2, np.full(dyn.nv, 0.3), dyn.nv
    last = len(dyn.frame_names) - 1

    def run(f, ref):
        T, J, Jd, a = np.empty((4, 4)), np.empty((6, n)), np.empty((6, n)), np.empty(6)
        return [
            k.frame_jacobian(mf, fm, f, ref, q, ws, J),
            k.frame_jacobian_dot(mf, fm, f, ref, q, v, ws, Jd),
            k.frame_jacobians(mf, fm, f, ref, q, v, ws, J, Jd),
            k.frame_bias(mf, fm, f, ref, q, v, ws, a),
        ] + ([k.frame_placement(mf, fm, f, q, ws, T)] if ref == 0 else [])

    for f, ref in ((-1, 0), (last + 1, 0), (last, -1), (last, 3)):
        assert run(f, ref) == [BAD_FRAME] * (5 if ref == 0 else 4), (f, ref)
    assert run(last, 2) == [0] * 4
    assert run(last, 0) == [0] * 5


def test_frame_methods_with_out_allocate_nothing():
    dyn = load(str(erd_urdf("talos_full")), root_joint="floating")  # coupled (mimic) table
    plain = load(str(erd_urdf("solo12")), root_joint="floating")
    calls = []
    for d, frame in ((dyn, "gripper_left_base_link"), (plain, "FL_FOOT")):
        q, v, n = d.neutral(), np.full(d.nv, 0.1), d.nv
        J, Jd, T, a = np.empty((6, n)), np.empty((6, n)), np.empty((4, 4)), np.empty(6)
        calls += [
            lambda d=d, q=q, T=T, f=frame: d.frame_placement(q, f, out=T),
            lambda d=d, q=q, J=J, f=frame: d.frame_jacobian(q, f, out=J),
            lambda d=d, q=q, v=v, Jd=Jd, f=frame: d.frame_jacobian_dot(q, v, f, out=Jd),
            lambda d=d, q=q, v=v, J=J, Jd=Jd, f=frame: d.frame_jacobians(q, v, f, out=(J, Jd)),
            lambda d=d, q=q, v=v, a=a, f=frame: d.frame_acceleration_bias(q, v, f, out=a),
        ]
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
