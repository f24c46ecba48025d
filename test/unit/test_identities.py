"""identities.singular_mass_matrix: the bound on M's smallest eigenvalue on both sides, absolute
(M's largest below 1) and relative (above 1), and the joints it names.

Reference: one-DoF links on the world about z with mass 0 and only izz, so M is exactly
diag(izz) (a body's inertia about its own joint axis through its centre)."""

from __future__ import annotations

import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.identities import singular_mass_matrix


def spinners(*izz: str) -> str:
    """Links s0, s1, ... each on a revolute joint j0, j1, ... of the world about z, with only
    the given moment izz (no mass): M = diag(izz)."""
    parts = ['<robot name="spin"><link name="base"/>']
    for k, value in enumerate(izz):
        parts.append(
            f'<link name="s{k}"><inertial><mass value="0"/><inertia ixx="{value}" iyy="{value}" '
            f'izz="{value}" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            f'<joint name="j{k}" type="continuous"><parent link="base"/><child link="s{k}"/>'
            '<axis xyz="0 0 1"/></joint>'
        )
    return "".join(parts) + "</robot>"


@pytest.mark.parametrize("izz", ["1e-12", "0.5e-12", "0"])
def test_at_or_below_the_absolute_bound_m_is_singular_and_the_joint_named(izz):
    text = singular_mass_matrix(Dynamics.from_urdf(spinners(izz, "0.5")))
    assert text.startswith("M is singular at the neutral configuration")
    assert f"smallest eigenvalue {float(izz):.3e}" in text
    assert "largest 5.000e-01" in text
    assert "): j0 move no mass" in text


@pytest.mark.parametrize("izz", ["1.0000001e-12", "1e-6"])
def test_above_the_absolute_bound_m_is_regular(izz):
    assert singular_mass_matrix(Dynamics.from_urdf(spinners(izz, "0.5"))) == ""


def test_the_bound_is_relative_to_the_largest_eigenvalue_above_one():
    # largest 1e4: the bound is 1e-8
    singular = singular_mass_matrix(Dynamics.from_urdf(spinners("1e4", "0.5e-8")))
    assert "smallest eigenvalue 5.000e-09" in singular and "): j1 move no mass" in singular
    assert singular_mass_matrix(Dynamics.from_urdf(spinners("1e4", "2e-8"))) == ""
