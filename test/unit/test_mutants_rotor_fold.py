"""dynamics.rotor_fold, piece by piece: what "balanced" means, as docs/rotors.md states it
(products of inertia and the transverse moments' difference within 1e-12 of the largest
moment, the centre within 1e-12 m of the spin axis z), on both sides of each bound. The
literal values are the documented ones, not the module's constants, so a changed constant
fails here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from coriolis_ros.dynamics.model import MF_C, MF_I, MF_M, MF_WIDTH
from coriolis_ros.dynamics.rotor_fold import balanced

DOCUMENTED = 1e-12  # docs/rotors.md: relative to the largest moment, and metres for the centre


def body(mass=0.5, moments=(0.5, 0.5, 1.0), centre=(0.0, 0.0, 0.0)) -> np.ndarray:
    row = np.zeros(MF_WIDTH)
    row[MF_M] = mass
    row[MF_C : MF_C + 3] = centre
    row[MF_I : MF_I + 9] = np.diag(moments).reshape(-1)
    return row


def last_within(start: float, limit: float, measure) -> float:
    """The largest double x >= start with measure(x) <= limit (the boundary of the spec)."""
    x = start + limit
    while measure(x) > limit:
        x = math.nextafter(x, -math.inf)
    while measure(math.nextafter(x, math.inf)) <= limit:
        x = math.nextafter(x, math.inf)
    return x


def test_a_round_rotor_gives_its_axial_moment():
    assert balanced(body()) == 1.0
    assert balanced(body(moments=(2.0, 2.0, 0.25))) == 0.25  # the largest moment is transverse


def test_each_product_of_inertia_alone_at_and_beyond_the_documented_tolerance():
    """Every one of the six off-diagonal entries is checked, each alone (largest moment 1:
    the tolerance is 1e-12 itself); sign does not matter."""
    for i in range(3):
        for j in range(3):
            if i == j:
                continue
            for sign in (1.0, -1.0):
                at = body()
                at[MF_I + 3 * i + j] = sign * DOCUMENTED
                assert balanced(at) == 1.0, (i, j, sign)
                beyond = body()
                beyond[MF_I + 3 * i + j] = sign * math.nextafter(DOCUMENTED, math.inf)
                assert balanced(beyond) is None, (i, j, sign)


def test_the_tolerance_scales_with_the_largest_moment():
    """Largest moment 4: a product of 4e-12 is within, the next double is not; 1.5e-12, beyond
    1e-12 but within 4e-12, is within."""
    moments = (2.0, 2.0, 4.0)
    at = body(moments=moments)
    at[MF_I + 1] = 4 * DOCUMENTED
    assert balanced(at) == 4.0
    at[MF_I + 1] = 1.5 * DOCUMENTED
    assert balanced(at) == 4.0
    at[MF_I + 1] = math.nextafter(4 * DOCUMENTED, math.inf)
    assert balanced(at) is None


def test_transverse_moments_differing_at_and_beyond_the_tolerance_either_way():
    """I_xx - I_yy and I_yy - I_xx: within 1e-12 (largest moment 1) balanced, the next double
    beyond it not."""
    for index in (MF_I + 0, MF_I + 4):  # I_xx, then I_yy, raised above the other
        at = body()
        at[index] = last_within(0.5, DOCUMENTED, lambda x: abs(x - 0.5))
        assert balanced(at) == 1.0, index
        beyond = body()
        beyond[index] = math.nextafter(at[index], math.inf)
        assert balanced(beyond) is None, index
        lower = body()
        lower[index] = 0.5 - 3 * DOCUMENTED  # lowered well beyond the tolerance
        assert balanced(lower) is None, index
    # a difference of exactly 1e-12 (the double) against a largest moment of 1: within
    exact = body(moments=(DOCUMENTED, 0.0, 1.0))
    assert balanced(exact) == 1.0
    exact[MF_I + 0] = math.nextafter(DOCUMENTED, math.inf)
    assert balanced(exact) is None


def test_the_centre_off_the_axis_in_x_or_y_at_and_beyond_a_picometre():
    for axis in (0, 1):
        for sign in (1.0, -1.0):
            centre = [0.0, 0.0, 0.0]
            centre[axis] = sign * DOCUMENTED
            assert balanced(body(centre=centre)) == 1.0, (axis, sign)
            centre[axis] = sign * math.nextafter(DOCUMENTED, math.inf)
            assert balanced(body(centre=centre)) is None, (axis, sign)
    # the distance from the axis, not each coordinate: 0.8e-12 and 0.8e-12 is 1.13e-12
    assert balanced(body(centre=(0.8 * DOCUMENTED, 0.8 * DOCUMENTED, 0.0))) is None
    assert balanced(body(centre=(0.0, 0.0, 5.0))) == 1.0  # along the axis: fine


def test_a_massless_body_has_no_centre_to_check():
    """Without mass the centre means nothing: balanced wherever it is; with any mass (light
    or heavy, or negative: parameters stored with check_physical=False) the same centre is
    refused."""
    assert balanced(body(mass=0.0, centre=(0.3, -0.2, 0.0))) == 1.0
    for mass in (1e-9, 0.5, 1.0, 3.0, -0.5):  # a negative mass (check_physical=False) too
        assert balanced(body(mass=mass, centre=(0.3, -0.2, 0.0))) is None, mass


# ------------------------------------------------------------------ fold and compact, by hand
# A four-row tree built here: a (revolute, on the world), r (a's rotor, ratio 9, on the world),
# b (revolute, on a), s (b's rotor, ratio 5, hanging from a, b's parent). Reduced coordinates
# (a, b); A per row (column, multiplier), phi per coordinate (source, multiplier, offset).

from coriolis_ros.dynamics.model import (  # noqa: E402
    MF_PARENT, MF_Q, MF_R, MF_T, MF_TYPE, PRISMATIC, REVOLUTE,
)  # fmt: skip
from coriolis_ros.dynamics.rotor_fold import compact, fold  # noqa: E402


def _row(parent, q, mass, centre, moments, rotation=np.eye(3), origin=(0.0, 0.0, 0.0),
         kind=REVOLUTE):  # fmt: skip
    row = body(mass, moments, centre)
    row[MF_R : MF_R + 9] = np.asarray(rotation, dtype=float).reshape(-1)
    row[MF_T : MF_T + 3] = origin
    row[MF_PARENT], row[MF_TYPE], row[MF_Q] = parent, kind, q
    return row


RX90 = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # its z column: (0, -1, 0)


def _tree(s_products=0.0, a_mass=1.0):
    s_moments = np.diag([2e-5, 2e-5, 5e-5])
    s_moments[0, 1] = s_moments[1, 0] = s_products
    mf = np.array([
        _row(-1, 0, a_mass, (0.2, 0.0, 0.0), (0.01, 0.02, 0.03)),
        _row(-1, 1, 0.2, (0.0, 0.0, 0.04), (1e-5, 1e-5, 3e-5), rotation=RX90),
        _row(0, 2, 0.7, (0.0, 0.1, 0.0), (0.004, 0.005, 0.006), origin=(0.3, 0.0, 0.0)),
        _row(0, 3, 0.3, (0.0, 0.0, 0.05), (2e-5, 2e-5, 5e-5), origin=(0.1, 0.0, 0.0)),
    ])  # fmt: skip
    mf[3, MF_I : MF_I + 9] = s_moments.reshape(-1)
    leaders = np.array([-1, 0, -1, 2])  # r joins a's walk, s joins b's
    followers = np.array([False, True, False, True])
    A = np.array([[0, 1.0], [0, 9.0], [1, 1.0], [1, 5.0]])
    phi = np.array([[0, 1.0, 0.0], [0, 9.0, 0.0], [1, 1.0, 0.0], [1, 5.0, 0.0]])
    return mf, leaders, followers, A, phi, [0, 2]


def test_fold_welds_a_rotor_to_its_parent_and_flags_it():
    """s's body goes onto a (mass 1 + 0.3, centre and inertia by the parallel-axis theorem,
    worked out here); r hangs from the world: nothing to weld it to. Both are flagged 1 with
    their spin moments."""
    mf, leaders, followers, *_ = _tree()
    folded, flags, spin = fold(mf, leaders, followers)
    np.testing.assert_array_equal(flags, [0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(spin, [0.0, 3e-5, 0.0, 5e-5])
    assert folded[0, MF_M] == pytest.approx(1.3, rel=1e-15)
    centre = np.array([1.0 * 0.2 + 0.3 * 0.1, 0.0, 0.3 * 0.05]) / 1.3
    np.testing.assert_allclose(folded[0, MF_C : MF_C + 3], centre, rtol=0, atol=1e-16)
    da, ds = np.array([0.2, 0, 0]) - centre, np.array([0.1, 0, 0.05]) - centre
    want = (np.diag([0.01, 0.02, 0.03]) + 1.0 * (da @ da * np.eye(3) - np.outer(da, da))
            + np.diag([2e-5, 2e-5, 5e-5]) + 0.3 * (ds @ ds * np.eye(3) - np.outer(ds, ds)))
    np.testing.assert_allclose(folded[0, MF_I : MF_I + 9].reshape(3, 3), want, atol=1e-17)
    np.testing.assert_array_equal(folded[2], mf[2])  # b untouched
    for r in (1, 3):  # the rotors' own rows keep no mass (their geometry stays)
        np.testing.assert_array_equal(folded[r, MF_M : MF_I + 9], np.zeros(13), err_msg=str(r))
        np.testing.assert_array_equal(folded[r, MF_PARENT:], mf[r, MF_PARENT:])
        np.testing.assert_array_equal(folded[r, : MF_M], mf[r, : MF_M])
    np.testing.assert_array_equal(mf[0], _tree()[0][0])  # the input is not changed


def test_rotors_that_do_not_qualify_are_not_folded():
    """Not a follower; a follower hanging from a row that is not its leader's parent; a
    prismatic one; one with a child row; an unbalanced one: each stays a body."""
    mf, leaders, followers, *_ = _tree()
    cases = []
    not_following = followers.copy()
    not_following[3] = False
    cases.append((mf, leaders, not_following))
    no_leader = leaders.copy()
    no_leader[3] = -1  # s hangs from a (row 0), not beside its leader
    cases.append((mf, no_leader, followers))
    prismatic = mf.copy()
    prismatic[3, MF_TYPE] = PRISMATIC
    cases.append((prismatic, leaders, followers))
    unbalanced = _tree(s_products=1e-6)[0]
    cases.append((unbalanced, leaders, followers))
    for k, (m, lead, follow) in enumerate(cases):
        flags = fold(m, lead, follow)[1]
        np.testing.assert_array_equal(flags, [0.0, 1.0, 0.0, 0.0], err_msg=str(k))
    # a child row under s, or under r (row 1 as a parent, and row 0 as a parent below)
    for rotor in (1, 3):
        with_child = np.vstack([mf, _row(rotor, 4, 0.1, (0, 0, 0), (1e-3, 1e-3, 1e-3))])
        flags = fold(with_child, np.r_[leaders, -1], np.r_[followers, False])[1]
        want = [0.0, 1.0, 0.0, 1.0, 0.0]
        want[rotor] = 0.0
        np.testing.assert_array_equal(flags, want, err_msg=str(rotor))
    first = np.vstack([_row(-1, 0, 0.2, (0, 0, 0), (1e-5, 1e-5, 3e-5)),
                       _row(-1, 1, 1.0, (0, 0, 0), (1e-2, 1e-2, 1e-2)),
                       _row(0, 2, 0.1, (0, 0, 0), (1e-3, 1e-3, 1e-3))])  # fmt: skip
    # row 0 a follower on the world (its leader is row 1) with a child: not folded
    flags = fold(first, np.array([-1, -1, -1]), np.array([True, False, False]))[1]
    np.testing.assert_array_equal(flags, [0.0, 0.0, 0.0])


def test_compact_of_a_tree_whose_rotors_all_fold_is_direct():
    """Kept rows a, b (b's parent renumbered), the identity map and perm, positions read
    straight from qbar; spin lines in tree order: r (on the world, leader a, J 3e-5, axis
    (0, -1, 0), column 0, ratio 9, q = 9 qbar[0]) then s (on a, leader b, J 5e-5, axis z,
    column 1, ratio 5, q = 5 qbar[1])."""
    mf, leaders, followers, A, phi, independent = _tree()
    folded, flags, spin = fold(mf, leaders, followers)
    rows, A2, perm, direct, table = compact(folded, flags, spin, A, phi, independent)
    assert direct is True
    assert rows.shape == (2, mf.shape[1])
    np.testing.assert_array_equal(rows[:, MF_PARENT], [-1.0, 0.0])
    np.testing.assert_array_equal(rows[:, MF_Q], [0.0, 1.0])
    np.testing.assert_array_equal(rows[1, MF_T : MF_T + 3], [0.3, 0.0, 0.0])  # b's row
    np.testing.assert_array_equal(A2, [[0, 1.0], [1, 1.0]])
    np.testing.assert_array_equal(perm, [0.0, 1.0])
    np.testing.assert_allclose(table, [
        [-1, 0, 3e-5, 0.0, -1.0, 0.0, 0, 9.0, 0, 9.0, 0.0],
        [0, 1, 5e-5, 0.0, 0.0, 1.0, 1, 5.0, 1, 5.0, 0.0],
    ], rtol=0, atol=0)  # fmt: skip


def test_compact_with_an_unfolded_rotor_reads_the_full_tree():
    """s unbalanced: kept a, b, s (s's parent a), not direct (s is not a reduced coordinate),
    perm lists a and b's rows first, the rows keep the full tree's q indices; one spin line."""
    mf, leaders, followers, A, phi, independent = _tree(s_products=1e-6)
    folded, flags, spin = fold(mf, leaders, followers)
    rows, A2, perm, direct, table = compact(folded, flags, spin, A, phi, independent)
    assert direct is False
    np.testing.assert_array_equal(rows[:, MF_PARENT], [-1.0, 0.0, 0.0])
    np.testing.assert_array_equal(rows[:, MF_Q], [0.0, 2.0, 3.0])
    np.testing.assert_array_equal(A2, [[0, 1.0], [1, 1.0], [1, 5.0]])
    np.testing.assert_array_equal(perm, [0.0, 1.0, 2.0])
    assert table.shape == (1, 11) and table[0, 0] == -1 and table[0, 2] == 3e-5
    # an unfolded rotor kept between the reduced rows: perm puts b's row before it
    swapped = mf[[0, 3, 2, 1]].copy()
    swapped[:, MF_Q] = [0, 1, 2, 3]
    lead, follow = np.array([-1, -1, -1, 0]), np.array([False, True, False, True])
    A_s = np.array([[0, 1.0], [1, 5.0], [1, 1.0], [0, 9.0]])
    phi_s = np.array([[0, 1.0, 0.0], [1, 5.0, 0.0], [1, 1.0, 0.0], [0, 9.0, 0.0]])
    folded, flags, spin = fold(swapped, lead, follow)  # row 1 has no leader beside it: kept
    np.testing.assert_array_equal(flags, [0.0, 0.0, 0.0, 1.0])
    rows, A2, perm, direct, table = compact(folded, flags, spin, A_s, phi_s, [0, 2])
    assert direct is False
    np.testing.assert_array_equal(perm, [0.0, 2.0, 1.0])
    np.testing.assert_array_equal(rows[:, MF_Q], [0.0, 1.0, 2.0])


def test_compact_is_not_direct_when_a_kept_row_is_scaled_or_offset():
    """Rows kept one to one but a column's multiplier is not 1, or its column is another row's,
    or a position has a multiplier or an offset: the kernels must change coordinates."""
    mf, leaders, followers, A, phi, independent = _tree()
    folded, flags, spin = fold(mf, leaders, followers)
    for k, (A_x, phi_x) in enumerate([
        (np.array([[0, 1.0], [0, 9.0], [1, 2.0], [1, 5.0]]), phi),
        (np.array([[1, 1.0], [0, 9.0], [0, 1.0], [1, 5.0]]), phi),
        (A, np.array([[0, 1.0, 0.0], [0, 9.0, 0.0], [1, 1.0, 0.5], [1, 5.0, 0.0]])),
        (A, np.array([[0, 1.0, 0.0], [0, 9.0, 0.0], [1, 3.0, 0.0], [1, 5.0, 0.0]])),
    ]):  # fmt: skip
        rows, _, _, direct, _ = compact(folded, flags, spin, A_x, phi_x, independent)
        assert direct is False, k
        np.testing.assert_array_equal(rows[:, MF_Q], [0.0, 2.0], err_msg=str(k))


def test_a_rotor_with_a_negative_mass_off_its_axis_is_not_folded():
    """Parameters stored with check_physical=False may have a negative mass. A rotor whose
    centre is 1 cm off its spin axis is not balanced whatever the sign of its mass: its world
    inertia turns with it (m (|c|^2 E - c c^T) is not symmetric about the axis). It must stay
    a body, and C + C^T must be dM/dt, from central differences of M (CRBA, never folded)."""
    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.robots import robot_urdf

    dyn = Dynamics.from_urdf(robot_urdf("arm7_rotors"))
    k = dyn.parameter_links.index("joint3_rotor")
    base = dyn.inertial_parameters()
    rng = np.random.default_rng(2)
    q, qd = rng.uniform(-2, 2, 7), rng.normal(0, 1, 7)
    c = np.array([0.01, 0.0, 0.0])  # the rotor spins about z of its link frame
    for mass in (0.2, -0.2):
        pi = base.copy()
        # URDF centre at the origin, inertia diag(2.5e-5, 2.5e-5, 4e-5) about the centre:
        # about the origin it is that plus m (|c|^2 E - c c^T) (xx, xy, yy, xz, yz, zz)
        about_origin = np.diag([2.5e-5, 2.5e-5, 4e-5]) + mass * (c @ c * np.eye(3) - np.outer(c, c))
        pi[10 * k : 10 * k + 10] = [mass, *(mass * c), *about_origin[[0, 0, 1, 0, 1, 2],
                                                                    [0, 1, 1, 2, 2, 2]]]
        dyn.set_inertial_parameters(pi, check_physical=False)
        folded = {dyn.tree_joint_names[r] for r in dyn.engine.folded_rows}
        assert "joint3_rotor" not in folded and len(folded) == 6, mass
        h = 1e-6
        Mdot = (dyn.mass_matrix(q + h * qd) - dyn.mass_matrix(q - h * qd)) / (2 * h)
        C = dyn.coriolis(q, qd)[2]
        scale = np.abs(Mdot).max()
        assert np.abs(C + C.T - Mdot).max() <= 1e-6 * scale, mass


def test_the_spin_table_lists_three_rotors_in_tree_order():
    """A third rotor t on a (ratio -3, on the world) after s: lines r, s, t, as the rows."""
    mf, leaders, followers, A, phi, independent = _tree()
    third = _row(-1, 4, 0.1, (0.0, 0.0, 0.02), (1e-5, 1e-5, 7e-5))
    mf = np.vstack([mf, third])
    leaders, followers = np.r_[leaders, 0], np.r_[followers, True]
    A, phi = np.vstack([A, [0, -3.0]]), np.vstack([phi, [0, -3.0, 0.0]])
    folded, flags, spin = fold(mf, leaders, followers)
    np.testing.assert_array_equal(flags, [0.0, 1.0, 0.0, 1.0, 1.0])
    table = compact(folded, flags, spin, A, phi, independent)[4]
    np.testing.assert_array_equal(table[:, 2], [3e-5, 5e-5, 7e-5])  # J of r, s, t
    np.testing.assert_array_equal(table[:, 7], [9.0, 5.0, -3.0])


def test_compact_is_direct_above_a_free_joint_and_checks_its_seven_coordinates():
    """A free base (six rows, coordinates 0..6: each row's MF_Q is the joint's first), joint a
    (coordinate 7) and a's rotor r on the base body: direct, every kept row reads qbar at its
    own coordinates. A free joint whose fourth coordinate comes from elsewhere: not direct."""
    from coriolis_ros.dynamics.model import FREE

    rows = [_row(k - 1, 0, 0.0 if k < 5 else 2.0, (0, 0, 0), (0.1, 0.2, 0.3) if k == 5
                 else (0.0, 0.0, 0.0), kind=FREE) for k in range(6)]  # fmt: skip
    rows.append(_row(5, 7, 1.0, (0.1, 0, 0), (0.01, 0.02, 0.03)))
    rows.append(_row(5, 8, 0.2, (0.0, 0.0, 0.01), (1e-5, 1e-5, 3e-5)))
    mf = np.array(rows)
    leaders = np.array([-1] * 7 + [6])
    followers = np.array([False] * 7 + [True])
    A = np.array([[k, 1.0] for k in range(7)] + [[6, 9.0]])
    phi = np.array([[k, 1.0, 0.0] for k in range(8)] + [[7, 9.0, 0.0]])
    folded, flags, spin = fold(mf, leaders, followers)
    np.testing.assert_array_equal(flags, [0.0] * 7 + [1.0])
    out_rows, A2, perm, direct, table = compact(folded, flags, spin, A, phi, list(range(7)))
    assert direct is True
    np.testing.assert_array_equal(out_rows[:, MF_Q], [0.0] * 6 + [7.0])
    np.testing.assert_array_equal(table[0, 8:], [7.0, 9.0, 0.0])
    for c in range(1, 7):
        moved = phi.copy()
        moved[c, 0] = 7.0 + c  # coordinate c of the free joint read from elsewhere
        assert compact(folded, flags, spin, A, moved, list(range(7)))[3] is False, c
        for column, value in ((1, 2.0), (2, 0.5)):  # its multiplier, its offset
            scaled = phi.copy()
            scaled[c, column] = value
            assert compact(folded, flags, spin, A, scaled, list(range(7)))[3] is False, c
