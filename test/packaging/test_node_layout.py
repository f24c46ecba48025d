"""The node's shape: no module of coriolis_ros/node/ over 400 lines, and the modules that hold
its behaviour import nothing from ROS (they run, and are tested, without it)."""

import json
import subprocess
import sys
from pathlib import Path

NODE = Path(__file__).resolve().parents[2] / "coriolis_ros" / "node"
MAX_LINES = 400
# The rclpy side: the node class, start-up, parameters as ROS parameters, the message.
ROS_MODULES = {"coriolis_node", "ros_node", "main", "odometry", "output_message", "ros_params",
               "wire", "__main__", "contact_publisher"}  # fmt: skip


def test_no_node_module_is_over_400_lines():
    sizes = {p.name: len(p.read_text().splitlines()) for p in NODE.glob("*.py")}
    assert "coriolis_node.py" in sizes and "ros_node.py" in sizes
    too_long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not too_long, f"over {MAX_LINES} lines: {too_long}"


def test_the_line_limit_bites(tmp_path):
    """The measurement above counts lines as a reader does: 401 lines are over the limit."""
    long = tmp_path / "x.py"
    long.write_text("pass\n" * (MAX_LINES + 1))
    assert len(long.read_text().splitlines()) > MAX_LINES
    long.write_text("pass\n" * MAX_LINES)
    assert len(long.read_text().splitlines()) == MAX_LINES


def test_behaviour_modules_import_no_ros():
    modules = sorted(
        f"coriolis_ros.node.{p.stem}" for p in NODE.glob("*.py") if p.stem not in ROS_MODULES
    )
    assert "coriolis_ros.node.ticker" in modules and "coriolis_ros.node.services" in modules
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in "
        "('rclpy', 'rosidl_runtime_py', 'rpyutils') or k.startswith(('coriolis_ros.msg', "
        "'coriolis_ros.srv')))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
