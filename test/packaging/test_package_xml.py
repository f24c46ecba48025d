"""package.xml declares what the code imports, and the launch test skips cleanly without its
test dependencies.

The imports are read from the sources (ast), so a new ROS import without a package.xml entry
fails here. The mapping from Python module to rosdep key is written by hand below; a module
missing from it fails too, so the mapping cannot silently fall behind.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Python top-level module -> rosdep key / ROS package name.
ROSDEP = {
    "ament_index_python": "ament_index_python",
    "builtin_interfaces": "builtin_interfaces",
    "diagnostic_msgs": "diagnostic_msgs",
    "example_robot_data": "example-robot-data",
    "launch": "launch",
    "launch_pytest": "launch_pytest",
    "launch_ros": "launch_ros",
    "launch_testing": "launch_testing",
    # Numba's own LLVM binding (kernels/streaming.py builds IR with it): rosdep has no key of
    # its own; python3-numba depends on python3-llvmlite, as pip's numba on llvmlite.
    "llvmlite": "python3-numba",
    "nav_msgs": "nav_msgs",
    "geometry_msgs": "geometry_msgs",
    "hypothesis": "python3-hypothesis",
    "numba": "python3-numba",
    "numpy": "python3-numpy",
    "pinocchio": "pinocchio",
    "pytest": "python3-pytest",
    "rcl_interfaces": "rcl_interfaces",
    "rclpy": "rclpy",
    "sensor_msgs": "sensor_msgs",
    "std_msgs": "std_msgs",
    "std_srvs": "std_srvs",
    "urdf_parser_py": "urdfdom_py",
    "xacro": "xacro",
    "yaml": "python3-yaml",
}


# Optional features of the ROS-free library, installed with pip extras (setup.cfg
# [options.extras_require]) rather than as ROS dependencies: `coriolis-ros bag` and its --plot,
# running it under Dask, and the demo's MuJoCo plant. They are imported inside the functions
# that need them.
OPTIONAL = {
    "rosbags": "bag",
    "matplotlib": "plot",
    "pyarrow": "parquet",
    "dask": "distributed",
    "distributed": "distributed",
    "mujoco": "demo",
}


def _depends(*kinds: str) -> set[str]:
    root = ET.parse(REPO / "package.xml").getroot()
    return {e.text.strip() for kind in kinds for e in root.findall(kind)}


def _imports(files, local: set[str]) -> dict[str, str]:
    """{top-level module: first file importing it}, without the stdlib and ``local`` modules."""
    found: dict[str, str] = {}
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names = [node.args[0].value]
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in local or top == "__future__":
                    continue
                found.setdefault(top, str(path.relative_to(REPO)))
    return found


def test_no_dependency_is_declared_twice():
    """catkin_pkg rejects a manifest with duplicate dependencies (e.g. after a merge)."""
    root = ET.parse(REPO / "package.xml").getroot()
    seen: dict[str, str] = {}
    for elem in root:
        if elem.tag.endswith("depend"):
            name = elem.text.strip()
            assert name not in seen, f"{name}: <{seen[name]}> and <{elem.tag}>"
            seen[name] = elem.tag


def test_optional_imports_are_pip_extras_and_imported_lazily():
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    extras = cfg["options.extras_require"]
    for module, extra in OPTIONAL.items():
        assert module in extras[extra], f"{module} not in the [{extra}] extra of setup.cfg"
    for path in sorted((REPO / "coriolis_ros").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level: would make the extra a hard dependency
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                    node.module or ""]  # fmt: skip
                assert not {n.split(".")[0] for n in names} & set(OPTIONAL), (path, names)


def test_runtime_imports_are_exec_dependencies():
    files = sorted((REPO / "coriolis_ros").rglob("*.py")) + sorted((REPO / "launch").glob("*.py"))
    imports = _imports(files, {"coriolis_ros"})
    imports = {m: f for m, f in imports.items() if m not in OPTIONAL}
    unmapped = {m: f for m, f in imports.items() if m not in ROSDEP}
    assert not unmapped, f"add these modules to ROSDEP (and package.xml): {unmapped}"
    declared = _depends("depend", "exec_depend")
    missing = {ROSDEP[m]: f for m, f in imports.items() if ROSDEP[m] not in declared}
    assert not missing, f"package.xml lacks exec_depend for {missing}"
    assert {"launch", "launch_ros"} <= declared  # the launch file's own


def test_test_imports_are_test_or_exec_dependencies():
    files = sorted((REPO / "test").rglob("*.py"))
    local = {p.stem for p in files} | {"coriolis_ros", "support"}
    imports = {m: f for m, f in _imports(files, local).items() if m not in OPTIONAL}
    unmapped = {m: f for m, f in imports.items() if m not in ROSDEP}
    assert not unmapped, f"add these modules to ROSDEP (and package.xml): {unmapped}"
    declared = _depends("depend", "exec_depend", "test_depend")
    missing = {ROSDEP[m]: f for m, f in imports.items() if ROSDEP[m] not in declared}
    assert not missing, f"package.xml lacks test_depend for {missing}"
    assert {"launch_pytest", "launch_testing", "ament_cmake_pytest"} <= _depends("test_depend")


def _run_launch_test(tmp_path, blocked: str):
    """pytest on the launch test in a child with ``blocked`` made unimportable."""
    shadow = tmp_path / "shadow" / blocked
    shadow.mkdir(parents=True)
    # what a missing module raises (importorskip skips only on ModuleNotFoundError)
    (shadow / "__init__.py").write_text(
        f"raise ModuleNotFoundError({f'No module named {blocked!r}'!r}, name={blocked!r})\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{tmp_path / 'shadow'}:{env.get('PYTHONPATH', '')}".rstrip(":")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(REPO / "test" / "packaging" / "test_launch_coriolis.py"),
            "-rs",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_launch_test_skips_cleanly_without_pinocchio(tmp_path):
    r = _run_launch_test(tmp_path, "pinocchio")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 skipped" in r.stdout and "error" not in r.stdout.lower(), r.stdout
    assert "missing: pinocchio (Pinocchio" in r.stdout, r.stdout  # skipped for that reason


def test_launch_test_documents_the_pytest_bound():
    launch_test = REPO / "test" / "packaging" / "test_launch_coriolis.py"
    doc = ast.get_docstring(ast.parse(launch_test.read_text()))
    install = (REPO / "docs" / "install.md").read_text()
    for text in (doc, install):
        assert "pytest < 8.4" in text
        assert "ros2/launch#947" in text and "#979" in text
