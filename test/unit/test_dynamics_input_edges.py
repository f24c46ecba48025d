"""URDF text as robot_state_publisher may serve it, and absurd joint values."""

import numpy as np
import pytest
from support.oracle import PinOracle

from coriolis_ros.dynamics import Dynamics

URDF = (
    '<?xml version="1.0"?><robot name="r"{ns}><link name="base"/>'
    '<link name="a"><inertial><origin xyz="0.1 0 0"/><mass value="1.5"/>'
    '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.25"/></inertial></link>'
    '<link name="b"><inertial><origin xyz="0 0.2 0"/><mass value="0.7"/>'
    '<inertia ixx="0.05" ixy="0" ixz="0" iyy="0.04" iyz="0" izz="0.03"/></inertial></link>'
    '<joint name="j1" type="continuous"><parent link="base"/><child link="a"/>'
    '<axis xyz="0 0 1"/></joint>'
    '<joint name="j2" type="prismatic"><parent link="a"/><child link="b"/>'
    '<origin xyz="0.3 0 0"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" '
    'velocity="1"/></joint></robot>'
)
PLAIN = URDF.format(ns="")


def _same_model(urdf_text):
    q, qd = np.array([0.3, 0.2]), np.array([1.0, -0.5])
    expected = Dynamics.from_urdf(PLAIN).coriolis(q, qd)
    got = Dynamics.from_urdf(urdf_text).coriolis(q, qd)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    # and the reference agrees with Pinocchio, so "same" means "right"
    oracle = PinOracle(PLAIN)
    np.testing.assert_allclose(expected[2], oracle.C(q, qd), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("prefix", ["\n", "\n\n  \t", "\ufeff", "\ufeff\n"])
def test_text_before_the_xml_declaration_is_accepted(prefix, tmp_path):
    _same_model(prefix + PLAIN)
    path = tmp_path / "robot.urdf"
    path.write_text(prefix + PLAIN, encoding="utf-8")
    _same_model(str(path))


def test_default_namespace_on_robot_is_accepted():
    _same_model(URDF.format(ns=' xmlns="http://www.ros.org"'))


@pytest.mark.parametrize("value", [1e51, -1e300, np.finfo(float).max])
def test_huge_joint_values_are_rejected_not_overflowed(value):
    dyn = Dynamics.from_urdf(PLAIN)
    ok = np.array([0.1, 0.2])
    bad = np.array([0.1, value])
    for call in (
        lambda: dyn.coriolis(bad, ok),
        lambda: dyn.coriolis(ok, bad),
        lambda: dyn.coriolis_vectors(ok, bad),
        lambda: dyn.christoffel(bad),
        lambda: dyn.gravity(bad),
        lambda: dyn.inverse_dynamics(ok, ok, bad),
    ):
        with pytest.raises(ValueError, match="1e\\+50"):
            call()


def test_largest_accepted_values_give_finite_results():
    dyn = Dynamics.from_urdf(PLAIN)
    big = np.array([1e50, -1e50])
    for result in (*dyn.coriolis(big, big), *dyn.coriolis_vectors(big, big), dyn.christoffel(big)):
        assert np.all(np.isfinite(result))


@pytest.mark.parametrize("q", [[0.1 + 0.2j, 0.0], np.array([0.1, 0.2], dtype=complex)])
def test_complex_values_are_refused_not_cut_to_their_real_part(q):
    dyn = Dynamics.from_urdf(PLAIN)
    with pytest.raises(ValueError, match="q must be real numbers, got complex"):
        dyn.mass_matrix(q)
    with pytest.raises(ValueError, match="qd must be real numbers, got complex"):
        dyn.coriolis([0.1, 0.2], q)
    with pytest.raises(ValueError, match="Q must be real numbers, got complex"):
        dyn.gravity_batch(np.asarray([q, q]))
    assert np.all(np.isfinite(dyn.mass_matrix(np.real(np.asarray(q)))))
