"""`colcon build` of this repository in a fresh workspace, with ROS 2 taken from the venv.

One build (slow: tens of seconds), sequential, no symlink install. It checks what a ROS 2 user
gets after `colcon build` + `source install/setup.bash`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)
IGNORE = shutil.ignore_patterns(
    ".venv",
    ".git",
    "build",
    "install",
    "log",
    "__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".ruff_cache",
)


@pytest.fixture(scope="module")
def colcon_workspace(tmp_path_factory):
    colcon = VENV / "bin" / "colcon"
    assert colcon.is_file(), "colcon missing from the venv (requirements/dev.txt)"
    ws = tmp_path_factory.mktemp("colcon_ws")
    shutil.copytree(REPO, ws / "src" / "coriolis_ros", ignore=IGNORE)
    env = dict(os.environ)
    env.pop("PYTHONSAFEPATH", None)  # build tools run scripts that import their own directory
    env.update(
        PATH=f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        AMENT_PREFIX_PATH=str(VENV),
        CMAKE_PREFIX_PATH=str(VENV),
        VIRTUAL_ENV=str(VENV),
        COLCON_HOME=str(ws / ".colcon"),
        CMAKE_BUILD_PARALLEL_LEVEL="2",
        MAKEFLAGS="-j2",
    )
    proc = subprocess.run(
        [
            str(colcon),
            "--log-base",
            str(ws / "log"),
            "build",
            "--base-paths",
            str(ws / "src"),
            "--build-base",
            str(ws / "build"),
            "--install-base",
            str(ws / "install"),
            "--executor",
            "sequential",
            "--event-handlers",
            "console_direct-",
            "--cmake-args",
            f"-DPython3_EXECUTABLE={VENV / 'bin' / 'python'}",
            "-DBUILD_TESTING=OFF",
        ],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    return ws, env, proc


def test_colcon_build_succeeds(colcon_workspace):
    ws, _, proc = colcon_workspace
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "coriolis_ros" in proc.stdout
    # Built as an ament_cmake package (package.xml build_type), not as a setup.py package.
    assert (ws / "build" / "coriolis_ros" / "CMakeCache.txt").is_file()


def test_colcon_install_layout(colcon_workspace):
    ws, _, proc = colcon_workspace
    assert proc.returncode == 0
    prefix = ws / "install" / "coriolis_ros"
    share = prefix / "share" / "coriolis_ros"
    assert (share / "msg" / "CoriolisState.msg").read_text() == (
        REPO / "msg" / "CoriolisState.msg"
    ).read_text()
    assert (share / "srv" / "ComputeDynamics.srv").is_file()
    assert (share / "srv" / "GetChristoffelSymbols.srv").is_file()
    assert ET.parse(share / "package.xml").getroot().findtext("name") == "coriolis_ros"
    index = prefix / "share" / "ament_index" / "resource_index"
    assert (index / "packages" / "coriolis_ros").is_file()
    assert (index / "rosidl_interfaces" / "coriolis_ros").is_file()
    site = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    assert (site / "coriolis_ros" / "msg" / "_coriolis_state.py").is_file()
    node = prefix / "lib" / "coriolis_ros" / "coriolis_node"
    assert node.is_file() and os.access(node, os.X_OK)


def test_sourced_workspace_imports_our_package_and_messages(colcon_workspace):
    """After `source install/setup.bash`, Python sees the workspace's coriolis_ros with msg/srv."""
    ws, env, proc = colcon_workspace
    assert proc.returncode == 0
    code = (
        "import coriolis_ros, json\n"
        "from coriolis_ros.msg import CoriolisState\n"
        "from coriolis_ros.srv import ComputeDynamics, GetChristoffelSymbols\n"
        "from ament_index_python.packages import get_package_share_directory as share\n"
        "print(json.dumps([coriolis_ros.__version__, coriolis_ros.__file__,\n"
        "    list(CoriolisState.get_fields_and_field_types()), share('coriolis_ros')]))\n"
    )
    script = (
        f"source {ws / 'install' / 'setup.bash'} && "
        f'export AMENT_PREFIX_PATH="$AMENT_PREFIX_PATH:{VENV}" && '
        f'cd {ws} && python -c "$CODE"'
    )
    run_env = dict(env, CODE=code)
    run_env.pop("AMENT_PREFIX_PATH")
    out = subprocess.run(
        ["bash", "-c", script],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    version, init_file, fields, share_dir = json.loads(out.stdout.strip().splitlines()[-1])
    version_xml = ET.parse(REPO / "package.xml").getroot().findtext("version").strip()
    assert version == version_xml
    assert Path(init_file).resolve().is_relative_to((ws / "install").resolve())
    assert fields[:4] == ["header", "joint_names", "position_names", "position"]
    expected_share = ws / "install" / "coriolis_ros" / "share" / "coriolis_ros"
    assert Path(share_dir).resolve() == expected_share.resolve()
