"""The package's import graph has no cycles (imports inside functions included), and importing
the library has no side effects on the environment, Numba's configuration or the disk."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "coriolis_ros"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SOURCE.rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of the package that ``name`` imports, anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports the module pkg.mod
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # a package's __init__ re-exporting its modules is not a cycle: drop child -> ancestor
    # package edges (Python imports the package first, whoever imports the child)
    for name, targets in graph.items():
        graph[name] = {t for t in targets if not name.startswith(t + ".")}
    return graph


def test_the_cycle_finder_finds_a_cycle_and_the_resolver_follows_relative_imports():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    graph = _graph()
    assert "coriolis_ros.dynamics.engine" in graph["coriolis_ros.dynamics.api"]
    assert (
        "coriolis_ros.dynamics.kernels.coordinate_change" in graph["coriolis_ros.dynamics.engine"]
    )


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def _raw_imports(path: Path) -> set[str]:
    """Every absolute module name a file imports (relative imports left out)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out


@pytest.mark.parametrize("room", ["dynamics", "stream", "offline"])
def test_the_ros_free_rooms_import_neither_rclpy_nor_the_node(room):
    """The library, the stream semantics and the offline tools install and run without ROS
    (setup.cfg leaves the node out of the pip package)."""
    for path in (SOURCE / room).rglob("*.py"):
        for name in _raw_imports(path):
            assert not name.startswith(("rclpy", "coriolis_ros.node", "coriolis_ros.demo")), (
                f"{path.relative_to(SOURCE.parent)} imports {name}"
            )


def test_the_ros_free_check_sees_an_import_of_the_node(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from coriolis_ros.node.params import validate\n")
    assert "coriolis_ros.node.params" in _raw_imports(path)


def _fresh_process(code: str, cache_home: Path, drop=("NUMBA_CACHE_DIR",)) -> str:
    """The last line ``code`` prints in a new interpreter whose user cache is ``cache_home``."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["XDG_CACHE_HOME"] = str(cache_home)
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    return out.strip().splitlines()[-1]


@pytest.mark.parametrize("module", ["coriolis_ros.dynamics", "coriolis_ros.dynamics.batch"])
def test_importing_the_library_has_no_side_effects(module, tmp_path):
    code = (
        "import json, os; from numba.core import config; "
        "before = (dict(os.environ), config.CACHE_DIR); "
        f"import {module}; "
        "after = (dict(os.environ), config.CACHE_DIR); "
        "print(json.dumps([before == after, after[1]]))"
    )
    line = _fresh_process(code, tmp_path / "cache", drop=("GOMP_SPINCOUNT", "NUMBA_CACHE_DIR"))
    unchanged, cache_dir = json.loads(line)
    assert unchanged and cache_dir == ""
    assert not (tmp_path / "cache").exists()


def test_the_cache_directory_is_chosen_by_the_first_compile(tmp_path):
    code = (
        "import json; from numba.core import config; "
        "from coriolis_ros.dynamics import Dynamics; from coriolis_ros.robots import robot_path; "
        "dyn = Dynamics.from_urdf(robot_path('arm7')); before = config.CACHE_DIR; "
        "dyn.gravity(dyn.neutral()); print(json.dumps([before, config.CACHE_DIR]))"
    )
    before, after = json.loads(_fresh_process(code, tmp_path / "cache"))
    assert before == ""
    assert after.startswith(str(tmp_path / "cache" / "coriolis_ros" / "numba"))
    assert any(Path(after).iterdir())  # the compiled kernel was written there


def test_a_coupled_model_compiled_first_leaves_the_tree_kernels_it_calls_cached(tmp_path):
    """The coupled kernels call the tree's: those must reach the disk cache too, whichever
    kind of model a process compiles first."""
    code = (
        "from coriolis_ros.dynamics import Dynamics, cache_dir; "
        "from coriolis_ros.robots import robot_path; "
        "dyn = Dynamics.from_urdf(robot_path('arm7_rotors')); "
        "dyn.christoffel(dyn.neutral()); print(cache_dir())"
    )
    names = [p.name for p in Path(_fresh_process(code, tmp_path / "cache")).rglob("*.nbi")]
    assert any(n.startswith("coordinate_change.reduced_christoffel") for n in names), names
    # Algorithm 2 runs inside it (through the map); the tree kernel it calls is Safeea's
    assert any(n.startswith("safeea.christoffel_safeea-") for n in names), names
