"""identities.singular_mass_matrix: the bound on M's smallest eigenvalue on both sides, absolute
(M's largest below 1) and relative (above 1), and the joints it names.

Reference: one-DoF links on the world about z with mass 0 and only izz, so M is exactly
diag(izz) (a body's inertia about its own joint axis through its centre)."""

from __future__ import annotations

import pytest

from coriolis_ros.dynamics import Dynamics
import numpy as np

from coriolis_ros.dynamics.identities import check_identities, singular_mass_matrix


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


class _Wrong:
    """A Dynamics whose coriolis and christoffel answers are replaced by ``change`` on the
    given calls (counted from 1); everything else is the library's."""

    def __init__(self, dyn, change, calls):
        self._dyn, self._change, self._calls, self._count = dyn, change, set(calls), 0

    def __getattr__(self, name):
        return getattr(self._dyn, name)

    def coriolis(self, q, qd):
        self._count += 1
        M, Mdot, C = self._dyn.coriolis(q, qd)
        if self._count in self._calls:
            C = self._change(C)
        return M, Mdot, C

    def christoffel(self, q):
        G = self._dyn.christoffel(q)
        return self._change(G) if self._count in self._calls else G


def _verdict(rows):
    return {name: value <= tolerance for name, value, tolerance in rows}


def _nan_in_first_entry(x):
    x = x.copy()
    x.flat[0] = np.nan
    return x


@pytest.fixture(scope="module")
def arm7():
    from coriolis_ros.robots import robot_path

    return Dynamics.from_urdf(robot_path("arm7"))


def test_the_library_passes_and_a_nan_on_a_late_sample_fails(arm7):
    assert all(_verdict(check_identities(arm7, samples=4)).values())
    rows = check_identities(_Wrong(arm7, _nan_in_first_entry, {3}), samples=4)
    verdict = _verdict(rows)
    assert not verdict["Mdot = C + C^T"] and not verdict["C_ij = sum_k Gamma_ijk qd_k"]
    assert np.isnan(dict((n, v) for n, v, _ in rows)["Mdot = C + C^T"])


@pytest.mark.parametrize("factor", [1e-12, 1.0, 1e6])
def test_the_verdict_does_not_depend_on_how_heavy_the_robot_is(arm7, factor):
    """Every term is linear in the inertial parameters: scaled by 1e-12 or 1e6 the library
    still passes, and a C and Gamma of zero still fail."""
    dyn = arm7.clone()
    dyn.set_inertial_parameters(factor * arm7.inertial_parameters())
    assert all(_verdict(check_identities(dyn, samples=2)).values())
    zero = _verdict(check_identities(_Wrong(dyn, np.zeros_like, {1, 2}), samples=2))
    assert not zero["Mdot = C + C^T"] and not zero["C qd = RNEA(q, qd, 0) - g"]
