"""The package under test is the copy that `make install` put into the venv, and it is ours."""

from __future__ import annotations

import configparser
import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import coriolis_ros

REPO = Path(__file__).resolve().parents[2]
PREFIX = Path(sys.prefix)
SITE = Path(sysconfig.get_paths()["purelib"])


def _source_version() -> str:
    return ET.parse(REPO / "package.xml").getroot().findtext("version").strip()


def test_imported_package_is_the_installed_copy():
    installed = (SITE / "coriolis_ros" / "__init__.py").resolve()
    assert Path(coriolis_ros.__file__).resolve() == installed
    assert Path(coriolis_ros.__file__).resolve() != (REPO / "coriolis_ros" / "__init__.py")
    # Not the empty __init__.py that rosidl generates for the same package.
    assert installed.read_text() == (REPO / "coriolis_ros" / "__init__.py").read_text()


def test_version_matches_package_xml():
    assert coriolis_ros.__version__ == _source_version()
    assert importlib.metadata.version("coriolis_ros") == _source_version()


def test_every_source_module_is_installed():
    """`make install` installs the whole tree (contents are not compared: others may be editing)."""
    sources = [
        p.relative_to(REPO)
        for p in (REPO / "coriolis_ros").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]
    assert REPO.joinpath("coriolis_ros", "__init__.py").relative_to(REPO) in sources
    missing = [str(rel) for rel in sources if not (SITE / rel).is_file()]
    assert not missing, f"not installed (run `make install`): {missing}"


def test_ament_index_marker_and_share_files():
    marker = PREFIX / "share" / "ament_index" / "resource_index" / "packages" / "coriolis_ros"
    assert marker.is_file()
    share = PREFIX / "share" / "coriolis_ros"
    root = ET.parse(share / "package.xml").getroot()
    assert root.findtext("name") == "coriolis_ros"
    assert root.findtext("version").strip() == _source_version()
    assert root.findtext("export/build_type") == "ament_cmake"
    assert "rosidl_interface_packages" in [e.text for e in root.iter("member_of_group")]
    for iface in (
        "msg/CoriolisState.msg",
        "srv/GetChristoffelSymbols.srv",
        "srv/ComputeDynamics.srv",
    ):
        assert (share / iface).read_text() == (REPO / iface).read_text()


def test_ament_index_python_finds_the_package():
    from ament_index_python.packages import get_package_prefix, get_package_share_directory

    assert Path(get_package_prefix("coriolis_ros")).resolve() == PREFIX.resolve()
    share = Path(get_package_share_directory("coriolis_ros"))
    assert (share / "package.xml").is_file()


def test_bundled_urdfs_installed_to_share():
    urdfs = sorted(p.name for p in (REPO / "coriolis_ros" / "robots").glob("*.urdf"))
    for name in urdfs:
        src = REPO / "coriolis_ros" / "robots" / name
        assert (PREFIX / "share" / "coriolis_ros" / "urdf" / name).read_bytes() == src.read_bytes()
        assert (SITE / "coriolis_ros" / "robots" / name).read_bytes() == src.read_bytes()


def _launcher(path: Path, module: str) -> str:
    assert path.is_file(), f"{path} missing"
    assert os.access(path, os.X_OK), f"{path} not executable"
    text = path.read_text()
    shebang = text.splitlines()[0]
    assert shebang.startswith("#!")
    assert Path(shebang[2:].strip()).resolve() == Path(sys.executable).resolve()
    assert f"from {module} import main" in text
    return text


def test_node_launcher_installed_for_ros2_run():
    _launcher(PREFIX / "lib" / "coriolis_ros" / "coriolis_node", "coriolis_ros.node.coriolis_node")


def test_cli_launcher_installed_to_bin():
    _launcher(PREFIX / "bin" / "coriolis-ros", "coriolis_ros.cli")


def test_launcher_runs_main_and_exits_with_its_return_value(tmp_path):
    """The launcher really runs its target: pointed at a fake module, it calls its main()."""
    fake = tmp_path / "coriolis_fake_cli.py"
    fake.write_text("def main():\n    print('fake main ran')\n    return 3\n")
    text = (PREFIX / "bin" / "coriolis-ros").read_text()
    text = text.replace("coriolis_ros.cli", "coriolis_fake_cli")
    script = tmp_path / "launcher"
    script.write_text(text)
    script.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.strip() == "fake main ran"


def test_pip_wheel_is_the_ros_free_library(tmp_path):
    """`pip install .` metadata: ROS-free deps, console script, URDF package data, no node/demo."""
    src = tmp_path / "src"
    shutil.copytree(
        REPO,
        src,
        ignore=shutil.ignore_patterns(
            ".venv",
            ".git",
            "build",
            "install",
            "log",
            "__pycache__",
            "*.egg-info",
            ".pytest_cache",
            ".ruff_cache",
        ),
    )
    out = tmp_path / "dist"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-input",
            "-q",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = out.glob("coriolis_ros-*.whl")
    assert wheel.name.startswith(f"coriolis_ros-{_source_version()}-")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist_info = next(n.split("/")[0] for n in names if ".dist-info/" in n)
        metadata = zf.read(f"{dist_info}/METADATA").decode()
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
    assert "coriolis_ros/__init__.py" in names
    assert not any(n.startswith(("coriolis_ros/node/", "coriolis_ros/demo/")) for n in names)
    assert not any(n.startswith(("coriolis_ros/msg/", "coriolis_ros/srv/")) for n in names)
    for p in (REPO / "coriolis_ros").rglob("*.py"):
        rel = p.relative_to(REPO).as_posix()
        if rel.startswith(("coriolis_ros/node/", "coriolis_ros/demo/")):
            continue
        assert rel in names, f"{rel} missing from the wheel"
    for p in (REPO / "coriolis_ros" / "robots").glob("*.urdf"):
        assert p.relative_to(REPO).as_posix() in names
    requires = sorted(
        line.split(":", 1)[1].strip().split(">")[0].split("=")[0].split("<")[0].strip().lower()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    )
    assert requires == ["numba", "numpy", "pyyaml", "urdf-parser-py"]
    # optional extras: bags, the demo's MuJoCo plant, Dask, Parquet, plots, xacro; and the
    # message definition for bags
    extras = sorted(
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Provides-Extra:")
    )
    assert extras == ["bag", "demo", "distributed", "parquet", "plot", "xacro"]
    assert any(n.endswith(".data/data/share/coriolis_ros/msg/CoriolisState.msg") for n in names)
    eps = configparser.ConfigParser()
    eps.read_string(entry_points)
    assert eps["console_scripts"]["coriolis-ros"].strip() == "coriolis_ros.cli:main"
