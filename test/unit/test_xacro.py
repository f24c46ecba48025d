"""xacro files wherever a URDF path is accepted: the library, the CLI (and the node, in
test_ros_tools.py), and a clear refusal when the xacro package is missing.

The expected model is a URDF written out by hand, not produced by xacro or by the code under
test: the xacro file below builds the same two-link arm from a property and a macro.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics, URDFError
from coriolis_ros.dynamics import xacro_files

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

XACRO = """<?xml version="1.0"?>
<robot name="two_links" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="length" value="0.4"/>
  <xacro:arg name="tip_mass" default="0.5"/>
  <xacro:macro name="link_with_mass" params="name mass">
    <link name="${name}">
      <inertial>
        <origin xyz="0 0 ${length / 2}" rpy="0 0 0"/>
        <mass value="${mass}"/>
        <inertia ixx="${mass * length**2 / 12}" iyy="${mass * length**2 / 12}" izz="0.001"
                 ixy="0" ixz="0" iyz="0"/>
      </inertial>
    </link>
  </xacro:macro>
  <link name="base"/>
  <xacro:link_with_mass name="upper" mass="2.0"/>
  <xacro:link_with_mass name="lower" mass="$(arg tip_mass)"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/>
  </joint>
  <joint name="elbow" type="revolute">
    <parent link="upper"/><child link="lower"/>
    <origin xyz="0 0 ${length}" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/>
  </joint>
</robot>
"""

# The same arm by hand: 2.0 * 0.4^2 / 12 = 0.026666..., 0.5 * 0.4^2 / 12 = 0.006666...
URDF = """<?xml version="1.0"?>
<robot name="two_links">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0 0 0.2" rpy="0 0 0"/><mass value="2.0"/>
    <inertia ixx="0.02666666666666667" iyy="0.02666666666666667" izz="0.001" ixy="0" ixz="0"
             iyz="0"/></inertial></link>
  <link name="lower"><inertial><origin xyz="0 0 0.2" rpy="0 0 0"/><mass value="0.5"/>
    <inertia ixx="0.006666666666666667" iyy="0.006666666666666667" izz="0.001" ixy="0" ixz="0"
             iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/>
    <origin xyz="0 0 0.4" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
</robot>
"""

needs_xacro = pytest.mark.skipif(not xacro_files.xacro_available(), reason="xacro not installed")


@pytest.fixture
def files(tmp_path):
    xacro_path = tmp_path / "two_links.urdf.xacro"
    xacro_path.write_text(XACRO)
    urdf_path = tmp_path / "two_links.urdf"
    urdf_path.write_text(URDF)
    return xacro_path, urdf_path


def test_xacro_is_in_the_venv():
    """The venv's pins include xacro, so the tests below run (never skipped there)."""
    assert xacro_files.xacro_available()


@needs_xacro
def test_the_library_expands_a_xacro_path(files):
    xacro_path, urdf_path = files
    a, b = Dynamics.from_urdf(xacro_path), Dynamics.from_urdf(str(urdf_path))
    assert a.name == b.name == "two_links" and a.joint_names == b.joint_names
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, qd = rng.uniform(-2, 2, 2), rng.uniform(-2, 2, 2)
        for x, y in zip(a.coriolis(q, qd), b.coriolis(q, qd)):
            np.testing.assert_allclose(x, y, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(a.gravity(q), b.gravity(q), rtol=1e-14, atol=1e-15)
    # an argument: xacro's $(arg) with its default replaced
    heavy = xacro_files.expand_xacro(xacro_path, {"tip_mass": "1.5"})
    assert '<mass value="1.5"/>' in heavy


@needs_xacro
def test_a_broken_xacro_file_gives_xacro_s_reason(tmp_path):
    path = tmp_path / "broken.xacro"
    path.write_text(XACRO.replace("${length}", "${lenght}"))
    with pytest.raises(URDFError, match=r"xacro .*broken\.xacro failed: .*lenght"):
        Dynamics.from_urdf(str(path))
    with pytest.raises(URDFError, match="no such file"):
        Dynamics.from_urdf(str(tmp_path / "missing.urdf.xacro"))


def test_without_xacro_a_xacro_path_is_refused_with_what_to_do(files, monkeypatch):
    xacro_path, urdf_path = files
    monkeypatch.setattr(xacro_files, "xacro_available", lambda: False)
    with pytest.raises(URDFError, match=r"is a xacro file and the xacro package is not "
                       r"installed: `pip install xacro`"):  # fmt: skip
        Dynamics.from_urdf(str(xacro_path))
    Dynamics.from_urdf(str(urdf_path))  # a plain URDF needs no xacro


def _cli(*args, hide_xacro=False):
    hide = "import sys; sys.modules['xacro'] = None\n" if hide_xacro else ""
    code = hide + "import sys\nfrom coriolis_ros.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=300, cwd="/")  # fmt: skip


@needs_xacro
def test_the_cli_takes_a_xacro_file_and_refuses_it_without_xacro(files):
    xacro_path, urdf_path = files
    args = ["compute", "--q", "0.3", "-0.7", "--qd", "1", "2", "--format", "json"]
    a = _cli(args[0], str(xacro_path), *args[1:])
    b = _cli(args[0], str(urdf_path), *args[1:])
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert json.loads(a.stdout) == json.loads(b.stdout)
    # xacro hidden from the CLI's interpreter: exit 2 and one line saying what to do
    r = _cli("check", str(xacro_path), hide_xacro=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "is a xacro file and the xacro package is not installed" in r.stderr
