"""armature: the balance tolerances exactly at their bounds and beyond (the centre's distance
from the axis, each product with the axis alone), a massless rotor (its centre is no
centre), a massless rotor with transverse inertia and a point-mass rotor welded to a massless
parent at row 0, a rotor on the world that adds nothing elsewhere, the spin disc.

References: the documented tolerances (1e-9 m, 1e-9 of the largest moment), written in the
URDF as decimal numbers whose doubles are exactly those bounds; the exact rotor model, which
the armature model equals when no parent turns about the rotor's axis and the transverse
inertia is symmetric about it (module docstring; the exact model has its own Pinocchio tests).
"""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from support.urdf_text import rotor_beside_link

TOL = 1e-12


def rotor_on_base(com="0 0 0", mass="0.1", ixz="0", iyz="0", ixy="0"):
    """A rotor 'jr' on the world, spin axis z, following 'ja' with ratio 9; its largest
    moment is 1 kg m^2, so the products' bound is 1e-9 kg m^2 itself."""
    inertia = dict(ixx="0.5", iyy="0.5", izz="1", ixy=ixy, ixz=ixz, iyz=iyz)
    return rotor_beside_link(com=com, mass=mass, inertia=inertia)


def armature(text):
    return Dynamics.from_urdf(text, rotor_model="armature")


@pytest.mark.parametrize("com", ["1e-9 0 0.3", "0 -1e-9 0", "0.6e-9 0.8e-9 5"])
def test_a_centre_exactly_at_the_bound_is_accepted(com):
    assert np.hypot(*[float(x) for x in com.split()[:2]]) <= 1e-9
    armature(rotor_on_base(com=com))


@pytest.mark.parametrize("com", ["1.5e-9 0 0", "0 -1.5e-9 0.3", "1.1e-9 1.1e-9 0"])
def test_a_centre_beyond_the_bound_is_refused(com):
    with pytest.raises(ValueError, match="'jr' .*centre of mass is .* m off its spin axis"):
        armature(rotor_on_base(com=com))


def test_a_massless_rotor_has_no_centre_to_check():
    dyn = armature(rotor_on_base(com="0.1 0.2 0", mass="0"))
    assert dyn.tree.armature == (("ja", 81.0),)  # N^2 I_a = 81 * 1


@pytest.mark.parametrize("which", ["ixz", "iyz"])
def test_each_product_with_the_axis_on_both_sides_of_its_bound(which):
    armature(rotor_on_base(**{which: "1e-9"}))
    armature(rotor_on_base(**{which: "-1e-9"}))
    values = {"ixz": "1.5e-09, 0", "iyz": "0, 1.5e-09"}[which]  # (ixz, iyz) in the axis frame
    with pytest.raises(ValueError, match=f"'jr' .*not a principal axis .*ixz, iyz = {values} kg"):
        armature(rotor_on_base(**{which: "1.5e-9"}))
    with pytest.raises(ValueError, match="'jr' .*not a principal axis"):
        armature(rotor_on_base(**{which: "-1.5e-9"}))
    # both at 0.8e-9: each within, together 1.13e-9 beyond
    with pytest.raises(ValueError, match="'jr' .*not a principal axis"):
        armature(rotor_on_base(ixz="0.8e-9", iyz="0.8e-9"))
    armature(rotor_on_base(ixy="0.3"))  # a transverse product is no product with the axis


MASSLESS_PARENT = """<robot name="m"><link name="base"/>
  <link name="l1"/>
  <joint name="j1" type="continuous"><parent link="base"/><child link="l1"/>
    <axis xyz="0 0 1"/></joint>
  <link name="l2"><inertial><origin xyz="0.3 0.1 -0.2"/><mass value="1.5"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0.001" ixz="0" iyz="0"/></inertial></link>
  <joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/></joint>
  <link name="rot"><inertial><origin xyz="0 {along} 0"/><mass value="{mass}"/>
    <inertia ixx="{transverse}" iyy="{spin}" izz="{transverse}" ixy="0" ixz="0" iyz="0"/>
  </inertial></link>
  <joint name="jr" type="continuous"><parent link="l1"/><child link="rot"/>
    <origin xyz="0.1 0 0.2"/><axis xyz="0 1 0"/></joint>
  <coupling name="g"><predecessor link="l2"/><successor link="rot"/><ratio value="-7"/>
  </coupling></robot>"""


@pytest.mark.parametrize(
    "mass,transverse,spin,along",
    [("0", "3e-3", "5e-3", "0"), ("0.4", "3e-3", "5e-3", "0.05"), ("0.4", "0", "0", "0")],
)
def test_a_rotor_on_a_massless_first_body_equals_the_exact_model(mass, transverse, spin, along):
    """Rotor axis y on l1, which turns about z only: w = 0, and the transverse inertia is
    symmetric about y, so the armature model is exact. l1 is massless and row 0; with a
    massless rotor only its transverse inertia is welded to it, and with no inertia (a
    point mass on its axis) only its mass, off l1's axis."""
    text = MASSLESS_PARENT.format(mass=mass, transverse=transverse, spin=spin, along=along)
    exact, arm = Dynamics.from_urdf(text), armature(text)
    assert arm.tree.armature == (("j2", 49 * float(spin)),)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v, a = rng.uniform(-2, 2, (3, 2))
        for got, want in zip(arm.coriolis(q, v), exact.coriolis(q, v), strict=True):
            np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(arm.christoffel(q), exact.christoffel(q), rtol=TOL, atol=TOL)
        np.testing.assert_allclose(arm.gravity(q), exact.gravity(q), rtol=TOL, atol=TOL)
        np.testing.assert_allclose(
            arm.inverse_dynamics(q, v, a), exact.inverse_dynamics(q, v, a), rtol=TOL, atol=TOL
        )


WORLD_ROTOR_FIRST = """<robot name="w"><link name="base"/>
  <link name="rot"><inertial><origin xyz="0 0 0.05"/><mass value="0.3"/>
    <inertia ixx="2e-3" iyy="3e-3" izz="4e-3" ixy="1e-4" ixz="0" iyz="0"/></inertial></link>
  <joint name="jr" type="continuous"><parent link="base"/><child link="rot"/>
    <origin xyz="0.2 0 0.1" rpy="0.1 0 0"/><axis xyz="0 0 1"/></joint>
  <link name="l1"><inertial><origin xyz="0 0.1 0.2"/><mass value="2"/>
    <inertia ixx="0.02" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="l1"/>
    <axis xyz="0 0 1"/></joint>
  <link name="l2"><inertial><origin xyz="0.3 0 0"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.4"/><axis xyz="0 1 0"/></joint>
  <coupling name="g"><predecessor link="l1"/><successor link="rot"/><ratio value="5"/>
  </coupling></robot>"""


def test_a_rotor_on_the_world_adds_nothing_to_any_other_body():
    """A rotor on the fixed base, declared before the joints it is not the parent of: the
    armature model is exact there (the parent does not move), and its mass and transverse
    inertia drop out instead of landing on some other row."""
    exact, arm = Dynamics.from_urdf(WORLD_ROTOR_FIRST), armature(WORLD_ROTOR_FIRST)
    assert arm.tree.armature == (("j1", 25 * 4e-3),)
    assert arm.tree.total_mass == pytest.approx(3.0, rel=1e-15)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, v, a = rng.uniform(-2, 2, (3, 2))
        for got, want in zip(arm.coriolis(q, v), exact.coriolis(q, v), strict=True):
            np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(arm.gravity(q), exact.gravity(q), rtol=TOL, atol=TOL)
        np.testing.assert_allclose(
            arm.inverse_dynamics(q, v, a), exact.inverse_dynamics(q, v, a), rtol=TOL, atol=TOL
        )


def test_the_spin_is_a_massless_thin_disc():
    """The documented spin body: inertia diag(I_a / 2, I_a / 2, I_a) about its axis, no mass
    (I_a = 1 here; the rotor's frame is its link's, spin axis z)."""
    dyn = armature(rotor_on_base())
    b = dyn.parameter_links.index("rot")
    pi = dyn.inertial_parameters()[10 * b : 10 * b + 10]
    np.testing.assert_array_equal(pi, [0, 0, 0, 0, 0.5, 0, 0.5, 0, 0, 1.0])

