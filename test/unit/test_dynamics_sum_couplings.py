"""Couplings to a sum of joints: a rotor on the thigh that drives the foot through a belt
turns ratio * (q_knee + q_ankle) (the bundled ``leg_belt_rotors``).

Reference: Pinocchio on the spanning tree (rotors as ordinary bodies; Pinocchio ignores
<coupling>) reduced by the constant A written below by hand from the URDF's comment (not read
from the library): the ankle rotor's row has -7.5 in the knee's and the ankle's columns.
Plus Mdotbar = Cbar + Cbar^T, Cbar qd = RNEA(q, qd, 0) - g, Cbar = sum_k Gammabar qd_k,
finite differences of Mbar, and the fast coupled path (one leader per row) where locking a
joint leaves each follower one leader.
"""

from __future__ import annotations

import numpy as np
import pytest

from support.floating import random_configuration
from support.oracle import assert_close
from support.rotors import Reduced, check_by_differences, compare, strip_couplings

from coriolis_ros.dynamics import Dynamics, MomentumObserver, URDFError
from coriolis_ros.robots import robot_urdf

TOL = 1e-10
TEXT = robot_urdf("leg_belt_rotors")
# follower -> (leader, ratio) or {leader: ratio}: the URDF's couplings, by hand
FOLLOWERS = {
    "hip_rotor": ("hip", 6.0),
    "knee_rotor": ("knee", 9.0),
    "ankle_rotor": {"knee": -7.5, "ankle": -7.5},
}


def test_the_belt_leg_reads_its_sum_coupling():
    dyn = Dynamics.from_urdf(TEXT)
    assert dyn.joint_names == ("hip", "knee", "ankle")
    assert dyn.coupled_joints == {"hip_rotor": ("hip", 6.0, 0.0), "knee_rotor": ("knee", 9.0, 0.0)}
    assert dyn.summed_joints == {"ankle_rotor": ({"ankle": -7.5, "knee": -7.5}, 0.0)}
    assert set(dyn.dependent_joints) == {"hip_rotor", "knee_rotor", "ankle_rotor"}
    assert dyn.loops == ()
    q = np.array([0.3, 1.1, -0.4])
    full = dict(zip(dyn.tree_joint_names, dyn.full_position(q), strict=True))
    assert full["ankle_rotor"] == pytest.approx(-7.5 * (1.1 - 0.4), rel=1e-15)
    assert full["knee_rotor"] == pytest.approx(9.9, rel=1e-15)
    A, dA = dyn.velocity_map(q)
    rows = {n: A[i] for i, n in enumerate(dyn.tree_joint_names)}
    assert rows["ankle_rotor"].tolist() == [0.0, -7.5, -7.5]
    assert not dA.any()  # a constant A


@pytest.mark.parametrize("root_joint", ["fixed", "floating"])
def test_the_belt_leg_matches_the_reduced_spanning_tree(root_joint):
    dyn = Dynamics.from_urdf(TEXT, root_joint=root_joint)
    ref = Reduced(strip_couplings(TEXT), FOLLOWERS, dyn.joint_names, root_joint)
    rng = np.random.default_rng(5)
    for s in range(3):
        qbar = random_configuration(dyn, rng, unit=True)
        v, a = rng.normal(0, 2, dyn.nv), rng.normal(0, 3, dyn.nv)
        compare(dyn, ref, qbar, v, a, f"belt leg {root_joint} {s}", TOL)


def test_identities_and_finite_differences_on_the_belt_leg():
    dyn = Dynamics.from_urdf(TEXT)
    rng = np.random.default_rng(3)
    check_by_differences(dyn, rng.uniform(-1.5, 1.5, 3), rng.normal(0, 2, 3))


def test_the_predecessor_side_may_follow():
    """With the ankle marked independent="false" (and the rotor not), the ankle follows:
    q_ankle = q_rotor / -7.5 - q_knee, and the rotor is a coordinate."""
    text = TEXT.replace('<joint name="ankle" type="revolute">',
                        '<joint name="ankle" type="revolute" independent="false">')  # fmt: skip
    text = text.replace('<joint name="ankle_rotor" type="continuous" independent="false">',
                        '<joint name="ankle_rotor" type="continuous">')  # fmt: skip
    dyn = Dynamics.from_urdf(text)
    assert dyn.joint_names == ("hip", "knee", "ankle_rotor")
    assert dyn.summed_joints == {"ankle": ({"ankle_rotor": -1 / 7.5, "knee": -1.0}, 0.0)}
    followers = {**FOLLOWERS, "ankle": {"ankle_rotor": -1 / 7.5, "knee": -1.0}}
    del followers["ankle_rotor"]
    ref = Reduced(strip_couplings(text), followers, dyn.joint_names)
    rng = np.random.default_rng(8)
    qbar = rng.uniform(-2, 2, 3)
    compare(dyn, ref, qbar, rng.normal(0, 2, 3), rng.normal(0, 2, 3), "ankle follows", TOL)


def test_a_gear_after_the_belt_multiplies_the_sum():
    """A second gear driven by the ankle rotor (q = 2 q_ankle_rotor) follows 2 * -7.5 times
    the sum, through the chain."""
    gear = (
        '<link name="gear"><inertial><mass value="0.1"/>'
        '<inertia ixx="1e-5" iyy="2e-5" izz="1e-5" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="gear" type="continuous"><parent link="thigh"/><child link="gear"/>'
        '<origin xyz="0 -0.05 -0.1"/><axis xyz="0 1 0"/></joint>'
        '<coupling name="gear_pair"><predecessor link="ankle_rotor"/><successor link="gear"/>'
        '<ratio value="2"/></coupling>'
    )
    text = TEXT.replace("</robot>", gear + "</robot>")
    dyn = Dynamics.from_urdf(text)
    assert dyn.summed_joints["gear"] == ({"ankle": -15.0, "knee": -15.0}, 0.0)
    ref = Reduced(strip_couplings(text), {**FOLLOWERS, "gear": {"ankle": -15.0, "knee": -15.0}},
                  dyn.joint_names)  # fmt: skip
    rng = np.random.default_rng(2)
    compare(dyn, ref, rng.uniform(-2, 2, 3), rng.normal(0, 2, 3), rng.normal(0, 2, 3), "gear")
    # marked independent="false" as in GRBDA's models: the ankle rotor follows in the belt
    # (its only marked joint), so the gear follows in the pair
    marked = text.replace('<joint name="gear" type="continuous">',
                          '<joint name="gear" type="continuous" independent="false">')  # fmt: skip
    assert Dynamics.from_urdf(marked).summed_joints == dyn.summed_joints


def _with(old: str, new: str) -> str:
    assert old in TEXT
    return TEXT.replace(old, new)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            _with('<joint name="ankle" type="revolute">',
                  '<joint name="ankle" type="revolute" independent="false">'),
            "coupling[@name='ankle_belt']: the joints 'ankle', 'ankle_rotor' are all marked "
            'independent="false"; a coupling makes one joint follow',
        ),  # fmt: skip
        (
            _with('<joint name="ankle_rotor" type="continuous" independent="false">',
                  '<joint name="ankle_rotor" type="continuous" independent="false">'
                  '<mimic joint="hip"/>'),
            "joint 'ankle_rotor' has a <mimic> and is coupled by a <coupling>",
        ),  # fmt: skip
        (
            _with("</robot>",
                  '<link name="toe"/><joint name="toe" type="revolute"><parent link="foot"/>'
                  '<child link="toe"/><axis xyz="0 1 0"/><mimic joint="ankle_rotor"/></joint>'
                  "</robot>"),
            "joint 'toe' follows 'ankle_rotor', which follows a sum of joints by a <coupling>",
        ),  # fmt: skip
    ],
)
def test_bad_sum_couplings_are_refused_by_name(text, message):
    with pytest.raises(URDFError) as info:
        Dynamics.from_urdf(text)
    assert message in str(info.value)


def test_independent_joints_is_for_loops_only():
    with pytest.raises(ValueError, match="independent_joints is for models with closed loops"):
        Dynamics.from_urdf(TEXT, independent_joints=["hip", "knee", "ankle"])


def test_a_sum_beyond_the_bound_is_refused_naming_it_and_just_inside_is_finite():
    from coriolis_ros.dynamics.kernels.kinematics import MAX_ABS

    dyn = Dynamics.from_urdf(TEXT)
    inside = MAX_ABS / 7.5 / 2 * (1 - 1e-12)  # knee + ankle = 2 inside: |q_rotor| < MAX_ABS
    q = np.array([0.1, inside, inside])
    assert np.all(np.isfinite(dyn.full_position(q)))
    beyond = MAX_ABS / 7.5 / 2 * (1 + 1e-12)
    with pytest.raises(ValueError) as info:
        dyn.coriolis(np.array([0.1, beyond, beyond]), np.zeros(3))
    assert "joint 'ankle_rotor' follows the sum of 'knee', 'ankle'" in str(info.value) or (
        "joint 'ankle_rotor' follows the sum of 'ankle', 'knee'" in str(info.value)
    )
    # the instance still answers at a good state afterwards
    M, _, _ = dyn.coriolis(np.array([0.1, 0.2, 0.3]), np.ones(3))
    assert np.all(np.isfinite(M))


def test_locking_the_knee_leaves_the_belt_one_leader_on_the_fast_path():
    """Knee locked at 0.4: q_ankle_rotor = -7.5 q_ankle - 3; the model has one leader per
    follower again and runs the coupled kernels, with the same M, C and g as the summed
    model at knee = 0.4 (the other path) in the hip and ankle rows and columns."""
    locked = Dynamics.from_urdf(TEXT, locked_joints={"knee": 0.4})
    assert locked.closed is None
    assert locked.joint_names == ("hip", "ankle")
    assert locked.coupled_joints["ankle_rotor"] == ("ankle", -7.5, pytest.approx(-3.0))
    full = Dynamics.from_urdf(TEXT)
    rng = np.random.default_rng(4)
    q, qd = rng.uniform(-1, 1, 2), rng.normal(0, 2, 2)
    M, _, C = locked.coriolis(q, qd)
    Mf, _, Cf = full.coriolis(np.array([q[0], 0.4, q[1]]), np.array([qd[0], 0.0, qd[1]]))
    keep = [0, 2]
    assert_close(M, Mf[np.ix_(keep, keep)], TOL, "M, knee locked")
    assert_close(C, Cf[np.ix_(keep, keep)], TOL, "C, knee locked")
    g, gf = locked.gravity(q), full.gravity(np.array([q[0], 0.4, q[1]]))
    assert_close(g, gf[keep], TOL, "g, knee locked")


def test_locking_knee_and_ankle_welds_the_belt_rotor():
    dyn = Dynamics.from_urdf(TEXT, locked_joints={"knee": 0.4, "ankle": -0.1})
    assert dyn.joint_names == ("hip",)
    assert dict(dyn.model.locked_joints)["ankle_rotor"] == pytest.approx(-7.5 * 0.3)
    # locked where the belt puts it (to 1e-9), or not at all
    Dynamics.from_urdf(TEXT, locked_joints={"knee": 0.4, "ankle": -0.1, "ankle_rotor": -2.25})
    with pytest.raises(ValueError, match="must be locked at -2.25"):
        Dynamics.from_urdf(TEXT, locked_joints={"knee": 0.4, "ankle": -0.1, "ankle_rotor": -2.2})


def test_locking_the_belt_rotor_alone_names_its_leaders():
    with pytest.raises(ValueError) as info:
        Dynamics.from_urdf(TEXT, locked_joints={"ankle_rotor": 0.0, "knee": 0.1})
    assert "joint 'ankle_rotor' follows 'ankle', 'knee' by a <coupling>; lock 'ankle'" in str(
        info.value
    )


def test_the_observer_recovers_a_torque_on_the_belt_leg():
    """The momentum observer uses the reduced p, C^T qd and g: a constant external torque from
    rest is recovered as r = tau_ext (1 - exp(-K t)) at the stamps (the same relation as on
    any model: its p, C^T qd and g are the summed model's)."""
    dyn = Dynamics.from_urdf(TEXT)
    obs = MomentumObserver(dyn, gain=20.0)
    q, z = np.array([0.2, 0.9, -0.3]), np.zeros(3)
    tau_ext = np.array([-1.0, 0.5, 2.0])
    g = dyn.gravity(q)
    obs.update(0.0, q, z, g)
    r = obs.update(0.1, q, z, g + tau_ext)
    assert_close(-r, tau_ext * (1 - np.exp(-20.0 * 0.1)) * 0.5, TOL, "residual")


def test_the_armature_of_the_belt_rotor_spins_at_the_sum():
    """rotor_model='armature': the belt rotor becomes a disc spinning at -7.5 (qd_knee +
    qd_ankle), I_a c c^T in M (off the diagonal too). With the hip locked the rotors' parent
    (the thigh) is fixed, and the armature model is then the exact one (module docstring of
    dynamics.armature); with the hip free they differ in the hip's row only (the spin's
    coupling with the thigh's rotation)."""
    locked = {"hip": 0.3}
    exact = Dynamics.from_urdf(TEXT, locked_joints=locked)
    approx = Dynamics.from_urdf(TEXT, locked_joints=locked, rotor_model="armature")
    assert dict(approx.model.armature) == {"knee": pytest.approx(81 * 2.9e-4)}
    rng = np.random.default_rng(9)
    q, qd = rng.uniform(-1, 1, 2), rng.normal(0, 2, 2)
    for a, b, what in zip(exact.coriolis(q, qd), approx.coriolis(q, qd), ("M", "Mdot", "C")):
        assert_close(b, a, TOL, f"{what}, hip locked")
    assert_close(approx.christoffel(q), exact.christoffel(q), TOL, "Gamma, hip locked")
    assert_close(approx.gravity(q), exact.gravity(q), TOL, "g, hip locked")
    free_exact, free_approx = Dynamics.from_urdf(TEXT), Dynamics.from_urdf(
        TEXT, rotor_model="armature"
    )
    q3 = np.array([0.1, 0.5, -0.2])
    diff = free_exact.mass_matrix(q3) - free_approx.mass_matrix(q3)
    assert np.abs(diff[1:, 1:]).max() < 1e-15 and np.abs(diff[0]).max() > 1e-4


@pytest.mark.parametrize("method", ["regressor", "task_space", "external_wrench"])
def test_the_methods_closed_chains_lack_refuse_naming_the_summed_joint(method):
    dyn = Dynamics.from_urdf(TEXT)
    z = np.zeros(3)
    args = {"regressor": (z, z, z, z), "task_space": ("foot", z, z),
            "external_wrench": (z, z, "foot")}  # fmt: skip
    with pytest.raises(ValueError) as info:
        getattr(dyn, method)(*args[method])
    assert str(info.value).startswith(
        f"{method} is not available yet for a model with a joint coupled to a sum of joints "
        "(ankle_rotor"
    )


def _two_couplings(second_pred: str, second_succ: str, order: int) -> str:
    """A base with link l1 (joint j1) carrying l2 (joint j2, marked independent="false")
    and rotor r3 (joint r3), a rotor r1 (joint r1) on the base; the belt r1 = 2 (j1 + j2)
    and a second coupling between ``second_pred`` and ``second_succ``, in either order."""

    def link(n, m=0.5):
        return (f'<link name="{n}"><inertial><mass value="{m}"/><inertia ixx="1e-3" '
                'iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial></link>')  # fmt: skip

    def joint(n, p, c, extra=""):
        return (f'<joint name="{n}" type="continuous" {extra}><parent link="{p}"/><child '
                f'link="{c}"/><origin xyz="0 0.05 -0.2"/><axis xyz="0 1 0"/></joint>')  # fmt: skip

    def coupling(n, p, s, r):
        return (f'<coupling name="{n}"><predecessor link="{p}"/><successor link="{s}"/>'
                f'<ratio value="{r}"/></coupling>')  # fmt: skip

    body = (link("base", 2) + link("l1") + link("l2") + link("r1", 0.1) + link("r3", 0.1)
            + joint("j1", "base", "l1") + joint("j2", "l1", "l2", 'independent="false"')
            + joint("r1", "base", "r1") + joint("r3", "l1", "r3"))  # fmt: skip
    pair = [coupling("belt", "l2", "r1", 2), coupling("gear", second_pred, second_succ, 3)]
    return f'<robot name="t">{body}{"".join(pair[::order])}</robot>'


def test_the_followers_do_not_depend_on_the_order_of_the_couplings():
    """j2 (marked) is a candidate in both couplings; only one way has j2 follow: in the gear
    j2 = 3 r3 (its successor), so the belt's unmarked successor r1 follows there,
    r1 = 2 (j1 + 3 r3), whichever coupling the URDF lists first."""
    for order in (1, -1):
        dyn = Dynamics.from_urdf(_two_couplings("r3", "l2", order))
        assert dyn.joint_names == ("j1", "r3"), order
        assert dyn.coupled_joints == {"j2": ("r3", 3.0, 0.0)}, order
        assert dyn.summed_joints == {"r1": ({"j1": 2.0, "r3": 6.0}, 0.0)}, order


def test_followers_that_tie_are_refused_naming_both_couplings_in_either_order():
    """With the gear r3 = 3 j2, j2 may follow in the belt (r3 in the gear) or in the gear (r1
    in the belt): two ways with one marked joint each. Refused, whatever the order."""
    for order in (1, -1):
        with pytest.raises(URDFError) as info:
            Dynamics.from_urdf(_two_couplings("l2", "r3", order))
        text = str(info.value)
        assert "the joints that follow can be chosen in more than one way" in text, order
        assert "'belt'" in text and "'gear'" in text, order


def test_shares_that_cancel_drop_out_of_the_sum():
    """The ankle mimicking the knee: with multiplier 2 the belt rotor follows -7.5 (knee + 2
    knee) = -22.5 knee, one leader (the fast coupled path); with multiplier -1 the shares
    cancel and the rotor never turns (welded at 0)."""
    def mimic(m):
        tag = f'<mimic joint="knee" multiplier="{m}"/>'
        return _with('<joint name="ankle" type="revolute">',
                     '<joint name="ankle" type="revolute">' + tag)  # fmt: skip

    one = Dynamics.from_urdf(mimic(2))
    assert one.closed is None and one.summed_joints == {}
    assert one.coupled_joints["ankle_rotor"] == ("knee", -22.5, 0.0)
    none = Dynamics.from_urdf(mimic(-1))
    assert none.summed_joints == {} and dict(none.model.locked_joints) == {"ankle_rotor": 0.0}
    assert none.joint_names == ("hip", "knee")


def test_a_locked_belt_rotor_may_sit_within_the_lock_tolerance_and_no_further():
    """Knee 0.4 and ankle -0.1 put the belt rotor at -2.25; a lock of it is accepted within
    1e-9 relative (2.25e-9 here) and refused beyond, on both sides."""
    locks = {"knee": 0.4, "ankle": -0.1}
    at = -7.5 * (0.4 - 0.1)
    for delta in (-2e-9, 2e-9):
        Dynamics.from_urdf(TEXT, locked_joints={**locks, "ankle_rotor": at + delta})
    for delta in (-3e-9, 3e-9):
        with pytest.raises(ValueError, match="follows a sum of locked joints and must be locked"):
            Dynamics.from_urdf(TEXT, locked_joints={**locks, "ankle_rotor": at + delta})
