"""Closed kinematic loops (<loop>): closure, A(q), and the reduced M, C, Gamma, g, RNEA.

References, none of them the code under test:
* closure: Pinocchio's forward kinematics of the spanning tree puts the loop's two frames on
  top of each other with their axes aligned;
* A = dq/dy and dA/dy: central differences of the closure and of A;
* Mbar = A^T M A with Pinocchio's CRBA on the spanning tree;
* Gammabar: the Christoffel symbols of the first kind from central differences of Mbar(y)
  (y are true coordinates on a fixed base), and along trajectories Mbardot by differences;
* accelerations: Pinocchio's constraintDynamics with a point constraint between the loop's
  frames, against Mbar^-1 (A^T tau - Cbar ydot - gbar) mapped by qdd = A yddot + Adot ydot.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from support.floating import MultiDofOracle
from support.oracle import assert_close
from support.urdf_text import welded_four_bar

from coriolis_ros.dynamics import Dynamics, URDFError
from coriolis_ros.robots import robot_path

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

FOUR_BAR = robot_path("four_bar")
LEG = robot_path("leg_knee_linkage")
H = 1e-6  # central-difference step
FIXED_BASE = ["four_bar", "leg", "welded", "slider", "geared"]
ALL = [*FIXED_BASE, "leg_floating"]


_ROD = (
    '<inertial><origin xyz="{c} 0 0"/><mass value="{m}"/>'
    '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>'
)
# The four-bar with its coupler cut in two halves welded by a fixed loop (support.urdf_text).
WELDED = welded_four_bar(FOUR_BAR.read_text())
# A knee driven by a linear actuator: the cylinder turns on the thigh, the piston on the
# shank, and a prismatic loop lets the piston slide in the cylinder along its x axis.
SLIDER = (
    '<robot name="actuated_knee"><link name="thigh"/>'
    '<link name="shank">'
    + _ROD.format(c=0.0, m=0.5, i=4e-3).replace('xyz="0.0 0 0"', 'xyz="0 0 -0.2"')
    + "</link>"
    '<link name="cylinder">' + _ROD.format(c=0.1, m=0.2, i=8e-4) + "</link>"
    '<link name="piston">' + _ROD.format(c=-0.1, m=0.1, i=4e-4) + "</link>"
    '<joint name="knee" type="revolute"><parent link="thigh"/><child link="shank"/>'
    '<axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>'
    '<joint name="cylinder_pivot" type="continuous"><parent link="thigh"/>'
    '<child link="cylinder"/><origin xyz="0.05 0 0.2" rpy="0 1.5707963267948966 0"/>'
    '<axis xyz="0 1 0"/></joint>'
    '<joint name="piston_pivot" type="continuous"><parent link="shank"/>'
    '<child link="piston"/><origin xyz="0.05 0 -0.15" rpy="0 1.5707963267948966 0"/>'
    '<axis xyz="0 1 0"/></joint>'
    '<loop name="actuator" type="prismatic"><predecessor link="cylinder"/>'
    '<successor link="piston"/><axis xyz="1 0 0"/></loop></robot>'
)
# The four-bar with joints that follow others: a geared rotor on the crank (the coordinate)
# and one on the rocker (a dependent joint of the loop), each an unbalanced body on the base,
# and a flag on the coupler that mimics the rocker with an offset.
_ROTOR = (
    '<link name="{name}"><inertial><origin xyz="0.001 0.002 -0.001"/><mass value="0.05"/>'
    '<inertia ixx="2e-5" ixy="1e-6" ixz="0" iyy="3e-5" iyz="0" izz="2.5e-5"/></inertial></link>'
    '<joint name="{name}" type="continuous"><parent link="base"/><child link="{name}"/>'
    '<origin xyz="{x} 0 0" rpy="0 0.3 0"/><axis xyz="0 1 0"/></joint>'
    '<coupling name="{name}_gear"><predecessor link="{lead}"/><successor link="{name}"/>'
    '<ratio value="{ratio}"/></coupling>'
)
GEARED = FOUR_BAR.read_text().replace(
    '<loop name="closure" type="revolute">',
    _ROTOR.format(name="crank_rotor", x=0.0, lead="crank_link", ratio=9.0)
    + _ROTOR.format(name="rocker_rotor", x=0.5, lead="rocker_link", ratio=-6.0)
    + '<link name="flag">' + _ROD.format(c=0.05, m=0.1, i=2e-4) + "</link>"
    '<joint name="flag" type="revolute"><parent link="coupler_link"/><child link="flag"/>'
    '<origin xyz="0.3 0 0"/><axis xyz="0 1 0"/><mimic joint="rocker" multiplier="0.5" '
    'offset="0.2"/><limit lower="-9" upper="9" effort="1" velocity="1"/></joint>'
    '<loop name="closure" type="revolute">',
)
FOLLOWERS = {"crank_rotor": ("crank", 9.0, 0.0), "rocker_rotor": ("rocker", -6.0, 0.0),
             "flag": ("rocker", 0.5, 0.2)}  # fmt: skip
URDFS = {"four_bar": FOUR_BAR, "leg": LEG, "leg_floating": LEG, "welded": WELDED, "slider": SLIDER,
         "geared": GEARED}  # fmt: skip


def _four_bar():
    return Dynamics.from_urdf(FOUR_BAR)


def _leg(root="fixed", rotors=None):
    return Dynamics.from_urdf(
        LEG, root_joint=root, independent_joints=["hip", "knee_crank"], rotors=rotors
    )


# Datasheet rotors (unbalanced) on the floating leg's hip and on its linkage's crank
LEG_ROTORS = {
    "hip": {"gear_ratio": 9.0, "inertia": [3e-5, 5e-5, 3e-5, 2e-6, 0.0, 1e-6], "mass": 0.2},
    "knee_crank": {"gear_ratio": -7.0, "inertia": [2e-5, 4e-5, 2e-5, 0.0, 1e-6, 0.0]},
}


def _leg_state(dyn, rng):
    y = dyn.neutral()
    y[-2:] = [0.3 + 0.2 * rng.uniform(-1, 1), 0.6 + 0.2 * rng.uniform(-1, 1)]
    if dyn.root_joint == "floating":
        y[:3] = rng.uniform(-1, 1, 3)
        quat = rng.normal(size=4)
        y[3:7] = quat / np.linalg.norm(quat)
    return y, rng.uniform(-1, 1, dyn.nv)


def _states(name, rng, count=3):
    if name == "four_bar":
        dyn = _four_bar()
        return dyn, [
            (np.array([rng.uniform(-np.pi, np.pi)]), rng.uniform(-2, 2, 1)) for _ in range(count)
        ]
    if name in ("welded", "slider", "geared"):
        dyn = Dynamics.from_urdf(URDFS[name])
        span = 0.5 if name == "slider" else np.pi
        return dyn, [
            (np.array([rng.uniform(-span, span)]), rng.uniform(-2, 2, 1)) for _ in range(count)
        ]
    if name == "leg_geared_floating":
        dyn = _leg("floating", LEG_ROTORS)
        return dyn, [_leg_state(dyn, rng) for _ in range(count)]
    dyn = _leg("floating" if name == "leg_floating" else "fixed")
    return dyn, [_leg_state(dyn, rng) for _ in range(count)]


# ----------------------------------------------------------------------------- structure


def test_four_bar_has_one_degree_of_freedom_and_names_its_coordinates():
    dyn = _four_bar()
    assert dyn.tree_joint_names == ("crank", "coupler", "rocker")
    assert dyn.joint_names == ("crank",)  # the loop's joint nearest the root leads
    assert dyn.position_names == ("crank",)
    assert dyn.nv == 1 and dyn.nq == 1
    assert [loop.name for loop in dyn.loops] == ["closure"]
    assert dyn.loops[0].type == "revolute"


def test_independent_joints_choose_the_coordinates():
    dyn = Dynamics.from_urdf(FOUR_BAR, independent_joints=["rocker"])
    assert dyn.joint_names == ("rocker",)
    leg = _leg()
    assert leg.joint_names == ("hip", "knee_crank")
    assert Dynamics.from_urdf(LEG).joint_names == ("hip", "knee")  # default: nearest the root


def test_urdf_independent_attribute_chooses_the_coordinates():
    text = (
        FOUR_BAR.read_text()
        .replace(
            '<joint name="rocker" type="revolute">',
            '<joint name="rocker" type="revolute" independent="true">',
        )
        .replace(
            '<joint name="crank" type="continuous">',
            '<joint name="crank" type="continuous" independent="false">',
        )
    )
    text = text.replace(
        '<joint name="coupler" type="continuous">',
        '<joint name="coupler" type="continuous" independent="false">',
    )
    assert Dynamics.from_urdf(text).joint_names == ("rocker",)


# ----------------------------------------------------------------------------- closure


def _pin_tree(dyn, urdf):
    return MultiDofOracle(
        str(urdf) if not isinstance(urdf, str) else urdf, dyn.closed.tree_dynamics, dyn.root_joint
    )


def _loop_frames(oracle, dyn, q_tree):
    """World placements (pin.SE3) of each loop's frames P and S by Pinocchio's kinematics."""
    m, d = oracle.model, oracle.data
    pin.framesForwardKinematics(m, d, oracle.q_pin(q_tree))
    out = []
    for loop in dyn.loops:
        ends = []
        for link, (rot, xyz) in (
            (loop.predecessor, loop.pred_pose),
            (loop.successor, loop.succ_pose),
        ):
            frame = d.oMf[m.getFrameId(link)]
            ends.append(frame * pin.SE3(rot, np.asarray(xyz)))
        out.append(ends)
    return out


@pytest.mark.parametrize("name", ALL)
def test_closed_configuration_joins_the_loop_frames_by_pinocchio_kinematics(name):
    rng = np.random.default_rng(1)
    dyn, states = _states(name, rng)
    oracle = _pin_tree(dyn, URDFS[name])
    for y, _ in states:
        q_tree = dyn.full_position(y)
        assert np.array_equal(
            q_tree[[dyn.tree.position_names.index(n) for n in dyn.position_names]], y
        )
        for loop, (P, S) in zip(dyn.loops, _loop_frames(oracle, dyn, q_tree), strict=True):
            axis = np.asarray(loop.axis)
            rel = P.actInv(S)  # S in P's frame
            if loop.type == "prismatic":  # same orientation, S's origin on P's axis line
                assert np.abs(rel.rotation - np.eye(3)).max() < 1e-11
                off = rel.translation - axis * (axis @ rel.translation)
                assert np.linalg.norm(off) < 1e-11
            else:
                assert np.linalg.norm(rel.translation) < 1e-11
                assert np.dot(P.rotation @ axis, S.rotation @ axis) > 1 - 1e-12
                if loop.type == "fixed":
                    assert np.abs(rel.rotation - np.eye(3)).max() < 1e-11
    # and an open configuration is not closed: the check above can fail
    q_open = dyn.full_position(states[0][0]).copy()
    moved = dyn.tree.joint_names[dyn.closed.closure.dependent[0]]  # a joint of the loop
    q_open[dyn.tree.position_names.index(moved)] += 0.1
    ((P, S),) = _loop_frames(oracle, dyn, q_open)
    rel = P.actInv(S)
    assert np.linalg.norm(rel.translation) + np.abs(rel.rotation - np.eye(3)).max() > 1e-3


def test_parallelogram_knee_follows_the_crank_one_to_one():
    """The example leg's linkage is a parallelogram: knee = crank, rod = -crank (geometry)."""
    dyn = _leg()
    for crank in (-0.8, -0.2, 0.0, 0.5, 0.9):
        q = dyn.close_loops([0.3, crank], guess=np.zeros(4))
        assert_close(q, [0.3, crank, crank, -crank], 1e-12, f"crank {crank}")


def test_continuity_newton_starts_from_the_last_solution():
    dyn = _leg()
    q = np.zeros(4)
    for crank in np.linspace(0.0, 1.45, 30):  # up to near the dead point at pi/2
        q = dyn.close_loops([0.0, crank])
        assert abs(q[1] - crank) < 1e-10  # stayed on the parallelogram branch
    # far from the last solution the same call may land on the other branch or fail; from
    # the right guess it is back on the parallelogram
    assert abs(dyn.close_loops([0.0, 0.2], guess=np.zeros(4))[1] - 0.2) < 1e-12


@pytest.mark.parametrize("name", [*ALL, "leg_geared_floating"])
def test_velocity_map_and_its_derivative_match_differences_of_the_closure(name):
    rng = np.random.default_rng(2)
    dyn, states = _states(name, rng)
    for y, _ in states:
        A, dA = dyn.velocity_map(y)
        assert A.shape == (dyn.tree.nv, dyn.nv) and dA.shape == (dyn.tree.nv, dyn.nv, dyn.nv)
        for k in range(dyn.nv):
            if dyn.joint_names[k].startswith("root_joint"):
                continue  # base coordinates are not in the loops: A's rows are the identity
            kq = dyn.position_names.index(dyn.joint_names[k])
            e = np.zeros(dyn.nq)
            e[kq] = H
            plus, minus = dyn.close_loops(y + e), dyn.close_loops(y - e)
            dq = (plus - minus) / (2 * H)
            rows = [
                dyn.tree.position_names.index(n)
                for n in dyn.tree_joint_names
                if not n.startswith("root_joint")
            ]
            cols = [
                dyn.tree_joint_names.index(n)
                for n in dyn.tree_joint_names
                if not n.startswith("root_joint")
            ]
            assert_close(A[cols, k], dq[rows], 1e-8, f"{name} A[:, {k}]")
            dA_fd = (dyn.velocity_map(y + e)[0] - dyn.velocity_map(y - e)[0]) / (2 * H)
            assert_close(dA[:, :, k], dA_fd, 1e-7, f"{name} dA/dy_{k}")
        # root rows: identity; dependent rows: K A = 0 makes them follow
        if dyn.root_joint == "floating":
            assert np.array_equal(A[:6, :6], np.eye(6)) and not A[:6, 6:].any()


# ----------------------------------------------------------------------------- dynamics


@pytest.mark.parametrize("name", ALL)
def test_reduced_mass_matrix_is_pinocchio_tree_reduced_by_a(name):
    rng = np.random.default_rng(3)
    dyn, states = _states(name, rng)
    oracle = _pin_tree(dyn, URDFS[name])
    for y, _ in states:
        q_tree = dyn.full_position(y)
        A, _ = dyn.velocity_map(y)
        M_pin = oracle.M(q_tree)
        assert_close(dyn.mass_matrix(y), A.T @ M_pin @ A, 1e-10, f"{name} Mbar")
        assert_close(dyn.gravity(y), A.T @ oracle.g(q_tree), 1e-10, f"{name} gbar")


@pytest.mark.parametrize("name", FIXED_BASE)
def test_christoffel_symbols_are_those_of_the_reduced_metric(name):
    """Gammabar_ijk = 1/2 (dMbar_ij/dy_k + dMbar_ik/dy_j - dMbar_jk/dy_i): y are coordinates."""
    rng = np.random.default_rng(4)
    dyn, states = _states(name, rng)
    n = dyn.nv
    for y, _ in states:
        dM = np.empty((n, n, n))
        for k in range(n):
            e = np.zeros(n)
            e[k] = H
            dM[:, :, k] = (dyn.mass_matrix(y + e) - dyn.mass_matrix(y - e)) / (2 * H)
        ref = 0.5 * (dM + np.einsum("ikj->ijk", dM) - np.einsum("jki->ijk", dM))
        G = dyn.christoffel(y)
        assert_close(G, ref, 1e-7, f"{name} Gammabar")
        assert_close(G, G.transpose(0, 2, 1), 1e-12, f"{name} Gammabar symmetric in j, k")


@pytest.mark.parametrize("name", [*ALL, "leg_geared_floating"])
def test_identities_of_the_reduced_system(name):
    rng = np.random.default_rng(5)
    dyn, states = _states(name, rng)
    for y, yd in states:
        M, Mdot, C = dyn.coriolis(y, yd)
        G = dyn.christoffel(y)
        assert_close(C, G @ yd, 1e-12, f"{name} C = Gamma yd")
        assert_close(Mdot, C + C.T, 1e-11, f"{name} Mdot = C + C^T")
        # Mdot by differences along y(t) = y (+) yd t
        plus = dyn.mass_matrix(dyn.integrate(y, yd, H))
        minus = dyn.mass_matrix(dyn.integrate(y, yd, -H))
        assert_close(Mdot, (plus - minus) / (2 * H), 1e-7, f"{name} Mdot by differences")
        g = dyn.gravity(y)
        zero = np.zeros(dyn.nv)
        assert_close(dyn.inverse_dynamics(y, yd, zero) - g, C @ yd, 1e-11, f"{name} RNEA")
        c, ct, p = dyn.coriolis_vectors(y, yd)
        assert_close(c, C @ yd, 1e-11, f"{name} C yd")
        assert_close(ct, C.T @ yd, 1e-11, f"{name} C^T yd")
        assert_close(p, M @ yd, 1e-12, f"{name} M yd")
        x = rng.uniform(-1, 1, dyn.nv)
        assert_close(dyn.coriolis_times(y, yd, x), C @ x, 1e-11, f"{name} C x")
        a = rng.uniform(-1, 1, dyn.nv)
        assert_close(dyn.slotine_li(y, yd, x, a), M @ a + C @ x + g, 1e-11, f"{name} SL")
        assert_close(dyn.inverse_dynamics(y, yd, a), M @ a + C @ yd + g, 1e-11, f"{name} tau")


def _pin_constraint(oracle, loop):
    m = oracle.model
    placements = []
    for link, (rot, xyz) in ((loop.predecessor, loop.pred_pose), (loop.successor, loop.succ_pose)):
        frame = m.frames[m.getFrameId(link)]
        placements.append((frame.parentJoint, frame.placement * pin.SE3(rot, np.asarray(xyz))))
    (j1, p1), (j2, p2) = placements
    return pin.RigidConstraintModel(
        pin.ContactType.CONTACT_6D if loop.type == "fixed" else pin.ContactType.CONTACT_3D,
        m,
        j1,
        p1,
        j2,
        p2,
        pin.ReferenceFrame.LOCAL,
    )


# Pinocchio has point (3-D) and weld (6-D) constraints, not a prismatic one
@pytest.mark.parametrize("name", ["four_bar", "leg", "leg_floating", "welded"])
def test_accelerations_match_pinocchio_constraint_dynamics(name):
    rng = np.random.default_rng(6)
    dyn, states = _states(name, rng)
    oracle = _pin_tree(dyn, URDFS[name])
    m, d = oracle.model, oracle.data
    models = [_pin_constraint(oracle, loop) for loop in dyn.loops]
    datas = [cm.createData() for cm in models]
    models_vec = pin.StdVec_RigidConstraintModel()
    datas_vec = pin.StdVec_RigidConstraintData()
    for cm, cd in zip(models, datas, strict=True):
        models_vec.append(cm)
        datas_vec.append(cd)
    pin.initConstraintDynamics(m, d, models_vec, datas_vec)
    settings = pin.ProximalSettings(1e-14, 1e-10, 200)
    for y, yd in states:
        q_tree = dyn.full_position(y)
        A, dA = dyn.velocity_map(y)
        v_tree = A @ yd
        tau = rng.uniform(-1, 1, dyn.tree.nv)
        M, _, C = dyn.coriolis(y, yd)
        ydd = np.linalg.solve(M, A.T @ tau - C @ yd - dyn.gravity(y))
        qdd = A @ ydd + (dA @ yd) @ yd
        a_pin = pin.constraintDynamics(
            m,
            d,
            oracle.q_pin(q_tree),
            oracle.v_pin(v_tree),
            oracle.v_pin(tau),
            models,
            datas,
            settings,
        )
        assert_close(qdd, np.asarray(a_pin)[oracle.v_index], 1e-8, f"{name} qdd")


def test_batches_equal_single_calls():
    """Row t of a batch is the single call at row t (to rounding: each call's Newton starts
    from the previous solution, which differs between the two orders of evaluation)."""
    dyn = _leg()
    rng = np.random.default_rng(7)
    Y = np.array([[0.1 * t, 0.5 + 0.02 * t] for t in range(6)])
    V = rng.uniform(-1, 1, (6, 2))
    Mb, Mdb, Cb = dyn.coriolis_batch(Y, V)
    Gb = dyn.christoffel_batch(Y)
    tb = dyn.inverse_dynamics_batch(Y, V, V)
    single = dyn.clone()
    for t in range(6):
        M, Md, C = single.coriolis(Y[t], V[t])
        assert_close(Mb[t], M, 1e-13, f"M row {t}")
        assert_close(Cb[t], C, 1e-13, f"C row {t}")
        assert_close(Gb[t], single.christoffel(Y[t]), 1e-13, f"Gamma row {t}")
        assert_close(tb[t], single.inverse_dynamics(Y[t], V[t], V[t]), 1e-13, f"tau row {t}")
    with pytest.raises(ValueError, match=r"V must have shape \(T, 2\)"):
        dyn.coriolis_batch(Y, V[:, :1])


def test_out_arrays_are_filled_in_place():
    dyn = _four_bar()
    y, yd = np.array([0.4]), np.array([1.5])
    out = (np.empty((1, 1)), np.empty((1, 1)), np.empty((1, 1)))
    assert dyn.coriolis(y, yd, out=out) is out
    assert_close(out[2], dyn.coriolis(y, yd)[2], 0.0, "C in place")
    with pytest.raises(ValueError, match=r"out array has shape \(2, 2\), expected \(1, 1\)"):
        dyn.coriolis(y, yd, out=(np.empty((2, 2)),) * 3)


# ----------------------------------------------------------------------------- bad input


def _with_loop(loop_xml: str) -> str:
    text = FOUR_BAR.read_text()
    start = text.index("  <loop ")
    end = text.index("</loop>") + len("</loop>")
    return text[:start] + loop_xml + text[end:]


GOOD_ENDS = (
    '<predecessor link="coupler_link"><origin xyz="0.6 0 0"/></predecessor>'
    '<successor link="rocker_link"><origin xyz="0.4 0 0"/></successor>'
)


@pytest.mark.parametrize(
    "loop, message",
    [
        (f'<loop type="revolute">{GOOD_ENDS}</loop>', r"/robot/loop\[1\]: a <loop> has no name"),
        (f'<loop name="c" type="spherical">{GOOD_ENDS}</loop>', "type 'spherical' is not one of"),
        ('<loop name="c"><successor link="rocker_link"/></loop>', "needs <predecessor"),
        ('<loop name="c"><predecessor link="coupler_link"/></loop>', "needs <successor"),
        (
            '<loop name="c"><predecessor link="nowhere"/><successor link="rocker_link"/></loop>',
            r"/robot/loop\[@name='c'\]: unknown link 'nowhere'",
        ),
        (
            '<loop name="c"><predecessor link="rocker_link"/><successor link="rocker_link"/>'
            "</loop>",
            "predecessor and successor are the same link",
        ),
        (
            '<loop name="c"><predecessor link="coupler_link"><origin xyz="nan 0 0"/>'
            '</predecessor><successor link="rocker_link"/></loop>',
            "origin",
        ),
        (
            '<loop name="c"><predecessor link="coupler_link"><origin xyz="1e7 0 0"/>'
            '</predecessor><successor link="rocker_link"/></loop>',
            "beyond",
        ),
        (f'<loop name="c">{GOOD_ENDS}<axis xyz="0 0 0"/></loop>', "has no direction"),
        (f'<loop name="c">{GOOD_ENDS}<axis xyz="0 1"/></loop>', "axis"),
        (
            f'<loop name="c">{GOOD_ENDS}</loop><loop name="c">{GOOD_ENDS}</loop>',
            "duplicate loop name 'c'",
        ),
    ],
)
def test_bad_loop_elements_are_refused_by_name(loop, message):
    with pytest.raises(URDFError, match=message):
        Dynamics.from_urdf(_with_loop(loop))


def test_offset_bound_accepts_the_bound_itself():
    near = (
        '<loop name="c"><predecessor link="coupler_link"><origin xyz="1e6 0 0"/></predecessor>'
        '<successor link="rocker_link"/></loop>'
    )
    with pytest.raises(ValueError, match="does not close"):  # parsed; no assembly that far
        Dynamics.from_urdf(_with_loop(near)).neutral()


def test_a_loop_between_welded_links_constrains_nothing():
    text = FOUR_BAR.read_text().replace(
        "</robot>",
        '<link name="tag"/><joint name="tag_fixed" type="fixed"><parent link="rocker_link"/>'
        '<child link="tag"/></joint></robot>',
    )
    bad = _with_loop(
        '<loop name="c"><predecessor link="tag"/><successor link="rocker_link"/></loop>'
    )
    bad = bad.replace("</robot>", text[text.index('<link name="tag"/>') :])
    with pytest.raises(URDFError, match="welded together"):
        Dynamics.from_urdf(bad)


def test_wrong_number_of_independent_joints_is_refused():
    with pytest.raises(ValueError, match="too many independent joints"):
        Dynamics.from_urdf(FOUR_BAR, independent_joints=["crank", "rocker"])
    with pytest.raises(ValueError, match="too few independent joints"):
        Dynamics.from_urdf(FOUR_BAR, independent_joints=[])
    with pytest.raises(ValueError, match="unknown joint"):
        Dynamics.from_urdf(FOUR_BAR, independent_joints=["elbow"])
    with pytest.raises(ValueError, match="models with closed loops"):
        Dynamics.from_urdf(robot_path("arm7"), independent_joints=["joint1"])


def test_a_loop_that_cannot_close_names_the_loop_and_residual():
    # ground 0.5 m, rocker 0.4 m, coupler and crank stretched: the rocker's reach is too short
    text = FOUR_BAR.read_text().replace(
        '<origin xyz="0.5 0 0" rpy="0 -1.9 0"/>', '<origin xyz="2.5 0 0" rpy="0 -1.9 0"/>'
    )
    dyn = Dynamics.from_urdf(text)
    with pytest.raises(ValueError, match=r"loop 'closure' does not close .* residual \d"):
        dyn.neutral()


def test_dead_point_is_a_singular_configuration():
    """The parallelogram's crank and thigh line up at crank = pi/2: K_z loses rank there."""
    dyn = _leg()
    near = np.pi / 2 - 1e-3  # sigma_min / sigma_max ~ 1.6e-4: still a mechanism
    dyn.close_loops([0.0, near], guess=[0.0, near, near, -near])
    A, _ = dyn.velocity_map([0.0, near])
    assert np.all(np.isfinite(A))
    at = np.pi / 2
    with pytest.raises(ValueError, match=r"singular configuration: .* \(knee, knee_rod; "):
        dyn.close_loops([0.0, at], guess=[0.0, at, at, -at])
    with pytest.raises(ValueError, match=r"singular configuration: .* \(knee, knee_rod; "):
        dyn.mass_matrix([0.0, at])


def test_followers_take_their_leaders_positions_and_velocities():
    """Geared rotors and a mimic joint on a closed chain: q_f = ratio q_lead + offset, and
    A's and dA's rows are ratio times the leader's, the rocker (a dependent joint) included."""
    dyn = Dynamics.from_urdf(GEARED)
    assert dyn.joint_names == ("crank",)
    assert set(dyn.dependent_joints) == {"coupler", "rocker", *FOLLOWERS}
    names = dyn.tree_joint_names
    rocker_rates = []
    for y in (-2.5, 0.4, 1.9):
        q = dyn.full_position([y])
        A, dA = dyn.velocity_map([y])
        for follower, (lead, ratio, offset) in FOLLOWERS.items():
            f, lo = names.index(follower), names.index(lead)
            assert abs(q[f] - (ratio * q[lo] + offset)) < 1e-12
            assert_close(A[f], ratio * A[lo], 1e-14, f"A row of {follower}")
            assert_close(dA[f], ratio * dA[lo], 1e-14, f"dA row of {follower}")
        rocker_rates.append(abs(A[names.index("rocker"), 0]))
    assert max(rocker_rates) > 0.1  # the rotor follows a leader that moves with y


def test_a_follower_that_moves_a_loop_is_refused():
    text = FOUR_BAR.read_text().replace(
        '<axis xyz="0 1 0"/>\n    <limit',
        '<axis xyz="0 1 0"/>\n    <mimic joint="crank"/>\n    <limit',
    )  # the rocker, a joint of the loop, made to mimic the crank
    with pytest.raises(URDFError, match="'rocker' follows 'crank' and moves the closed loop"):
        Dynamics.from_urdf(text)
    Dynamics.from_urdf(text, mimic="independent")  # the same joint, not following: fine
    with pytest.raises(ValueError, match="crank_rotor follow.* cannot be independent"):
        Dynamics.from_urdf(GEARED, independent_joints=["crank", "crank_rotor"])


def test_a_crank_turning_for_hours_keeps_closing():
    """The four-bar's coupler (continuous, dependent) turns once per turn of the crank; kept in
    [-pi, pi), Newton can still place it after 8000 turns (it failed at 32768 rad, where the
    spacing of doubles near the coupler's value reached Newton's tolerance), and the state
    there is the state a turn count earlier."""
    dyn = _four_bar()
    coupler = dyn.tree_joint_names.index("coupler")
    y, yd = np.zeros(1), np.array([1.0])
    out = tuple(np.empty((1, 1)) for _ in range(3))
    while y[0] < 5e4:
        y[0] += 0.19
        dyn.coriolis(y, yd, out=out)
    q = dyn.full_position(y)
    assert -np.pi <= q[coupler] < np.pi
    fresh = _four_bar()
    again = fresh.coriolis(np.remainder(y, 2 * np.pi), yd)
    for got, want in zip(out, again, strict=True):
        assert_close(got, want, 1e-10, "8000 turns later")
    q0 = fresh.full_position(np.remainder(y, 2 * np.pi))
    assert_close(q[1:], q0[1:], 1e-10, "the dependent joints")


def test_a_follower_beyond_the_bound_is_refused_naming_its_leader():
    """The hip's rotor turns 9 times the hip: the hip may go to 1e50 / 9, no further (both
    sides of the bound), and a refused call leaves the next one unharmed."""
    dyn = _leg(rotors={"hip": LEG_ROTORS["hip"]})
    assert "hip_rotor" in dyn.dependent_joints
    limit = 1e50 / 9
    assert abs(limit * 9 - 1e50) <= 1e34  # the largest hip whose rotor is within 1e50
    at = np.array([limit, 0.3])
    assert np.all(np.isfinite(dyn.coriolis(at, [1.0, 0.5])[2]))
    assert dyn.full_position(at)[dyn.tree_joint_names.index("hip_rotor")] <= 1e50
    beyond = np.array([np.nextafter(limit, np.inf), 0.3])
    message = r"joint 'hip_rotor' follows 'hip' \(ratio 9, offset 0\).*within ±1.11111e\+49"
    for method, args in (("coriolis", (beyond, [1.0, 0.5])), ("christoffel", (beyond,)),
                         ("mass_matrix", (beyond,)), ("gravity", (beyond,))):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            getattr(dyn, method)(*args)
    y = np.array([0.1, 0.3])
    assert_close(dyn.mass_matrix(y), _leg(rotors={"hip": LEG_ROTORS["hip"]}).mass_matrix(y),
                 1e-12, "after a refusal")  # fmt: skip


def test_datasheet_rotors_on_a_closed_chain_equal_rotor_links():
    """rotors={...} on the four-bar gives what the same rotor written as a link gives."""
    spec = {"gear_ratio": 9.0, "inertia": [2e-5, 3e-5, 2.5e-5, 1e-6, 0.0, 0.0], "mass": 0.05}
    sheet = Dynamics.from_urdf(FOUR_BAR, rotors={"crank": spec})
    links = Dynamics.from_urdf(
        FOUR_BAR.read_text().replace(
            '<loop name="closure" type="revolute">',
            _ROTOR.format(name="crank_rotor", x=0.0, lead="crank_link", ratio=9.0).replace(
                '<origin xyz="0.001 0.002 -0.001"/>', '<origin xyz="0 0 0"/>'
            ).replace('rpy="0 0.3 0"', 'rpy="0 -1.5707963267948966 0"')
            + '<loop name="closure" type="revolute">',
        )
    )
    for y, yd in ((0.3, 1.2), (-2.0, -0.7)):
        for a, b in zip(sheet.coriolis([y], [yd]), links.coriolis([y], [yd]), strict=True):
            assert_close(a, b, 1e-12, "datasheet rotor vs rotor link")
    plain = _four_bar().mass_matrix([0.3])
    assert sheet.mass_matrix([0.3])[0, 0] > plain[0, 0] + 81 * 2.9e-5  # N^2 I_yy at least


def test_non_finite_inputs_are_refused():
    dyn = _four_bar()
    with pytest.raises(ValueError, match="q has a NaN"):
        dyn.mass_matrix([np.nan])
    with pytest.raises(ValueError, match="qd has a NaN"):
        dyn.coriolis([0.1], [np.inf])
    with pytest.raises(ValueError, match=r"q must have shape \(1,\)"):
        dyn.christoffel([0.1, 0.2])


def test_tree_model_has_no_loops():
    dyn = Dynamics.from_urdf(robot_path("arm7"))
    assert dyn.loops == ()
    with pytest.raises(ValueError, match="no closed loops"):
        dyn.close_loops(dyn.neutral())
    A, dA = dyn.velocity_map(dyn.neutral())
    assert np.array_equal(A, np.eye(dyn.nv)) and not dA.any()


# ----------------------------------------------------------------------------- front ends


def test_momentum_observer_finds_an_external_torque_on_a_closed_chain():
    """Simulate the four-bar (RK4 on Mbar yddot = tau + tau_ext - Cbar ydot - gbar) with a
    constant external torque from t = 0.5 s; the residual converges to it, and is zero before."""
    from coriolis_ros.dynamics import MomentumObserver

    dyn = _four_bar()
    sim = dyn.clone()
    observer = MomentumObserver(dyn, gain=50.0)

    def accel(y, yd, tau):
        M, _, C = sim.coriolis(y, yd)
        return np.linalg.solve(M, tau - C @ yd - sim.gravity(y))

    y, yd, dt = sim.neutral(), np.array([2.0]), 1e-3
    tau = np.array([0.05])  # applied, known to the observer
    residuals = {}
    for step in range(1500):
        t = step * dt
        ext = np.array([0.2]) if t >= 0.5 else np.zeros(1)
        residuals[step] = observer.update(t, y, yd, tau).copy()
        k1 = (yd, accel(y, yd, tau + ext))
        k2 = (yd + 0.5 * dt * k1[1], accel(y + 0.5 * dt * k1[0], yd + 0.5 * dt * k1[1], tau + ext))
        k3 = (yd + 0.5 * dt * k2[1], accel(y + 0.5 * dt * k2[0], yd + 0.5 * dt * k2[1], tau + ext))
        k4 = (yd + dt * k3[1], accel(y + dt * k3[0], yd + dt * k3[1], tau + ext))
        y = y + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        yd = yd + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    assert abs(residuals[499][0]) < 1e-3  # before the push: nothing
    assert abs(residuals[1499][0] - 0.2) < 2e-3  # a second after it: the push
    with pytest.raises(ValueError, match=r"tau must have shape \(1,\)"):
        observer.update(2.0, y, yd, np.zeros(3))


def test_cli_check_and_compute_on_closed_chains():
    from coriolis_ros.cli import main

    assert main(["check", str(FOUR_BAR), "--samples", "3"]) == 0
    assert (
        main(
            [
                "check",
                str(LEG),
                "--samples",
                "2",
                "--root-joint",
                "floating",
                "--independent-joints",
                "hip",
                "knee_crank",
            ]
        )
        == 0
    )


def test_cli_refuses_bad_independent_joints(capsys):
    from coriolis_ros.cli import main

    assert main(["compute", str(FOUR_BAR), "--independent-joints", "crank", "rocker"]) == 2
    assert "too many independent joints" in capsys.readouterr().err
    assert main(["compute", str(FOUR_BAR), "--independent-joints", "rocker", "--qd", "1"]) == 0
    assert "joint_names: rocker" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["four_bar", "leg_floating"])
def test_frames_on_closed_chains_by_differences(name):
    """J ydot is the frame's velocity (differences of its placement along y(t)), Jdot the
    difference of J along y(t), Jdot ydot the bias; task space refuses by name."""
    rng = np.random.default_rng(9)
    dyn, states = _states(name, rng, count=2)
    frame = "coupler_link" if name == "four_bar" else "foot"
    for y, yd in states:
        T = lambda t: dyn.frame_placement(dyn.integrate(y, yd, t), frame)  # noqa: E731
        Tp, Tm = T(H), T(-H)
        v = (Tp[:3, 3] - Tm[:3, 3]) / (2 * H)
        Rdot = (Tp[:3, :3] - Tm[:3, :3]) / (2 * H)
        W = Rdot @ T(0.0)[:3, :3].T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        J, Jd = dyn.frame_jacobians(y, yd, frame)
        assert_close(J @ yd, np.concatenate([v, w]), 1e-7, f"{name} J yd")
        Jp = dyn.frame_jacobian(dyn.integrate(y, yd, H), frame)
        Jm = dyn.frame_jacobian(dyn.integrate(y, yd, -H), frame)
        assert_close(Jd, (Jp - Jm) / (2 * H), 1e-6, f"{name} Jdot")
        assert_close(dyn.frame_jacobian_dot(y, yd, frame), Jd, 1e-12, f"{name} Jdot alone")
        bias = dyn.frame_acceleration_bias(y, yd, frame)
        # classical acceleration of the origin at yddot = 0: d/dt (J yd) with yd constant
        assert_close(bias, Jd @ yd, 1e-12, f"{name} bias")
    with pytest.raises(ValueError, match="task_space is not available for a model with closed"):
        dyn.task_space(states[0][0], states[0][1], frame)
